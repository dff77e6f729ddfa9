//! The strata daemon role: one per node, it finds the job's tasks on its node, captures and
//! unwinds their stacks with ptrace, and sends a subtree-scoped prefix tree up the tree.
//!
//! Design constraints: ptrace and `/proc` code (`procfs`, `capture`) stay apart from the
//! pure code that works on captured data, so that the latter can be tested on recorded
//! snapshots. A target process is never left stopped or traced.
//!
//! Built so far (issue 3, in progress): `procfs`, `discovery`, `memory`, `images` (binary
//! images of a process), `unwind` (x86-64 CFI unwinder), `capture`, `stacks` and `symbols`
//! (issue 4: source frames, demangled, from embedded or separate debug info). Sampling is next.

pub mod capture;
pub mod discovery;
pub mod images;
pub mod memory;
pub mod procfs;
pub mod sampler;
pub mod stacks;
pub mod symbols;
pub mod unwind;
