//! The strata daemon role: one per node, it finds the job's tasks on its node, captures and
//! unwinds their stacks with ptrace, and sends a subtree-scoped prefix tree up the tree.
//!
//! Design constraints: ptrace and `/proc` code (`procfs`, `capture`) stay apart from the
//! pure code that works on captured data, so that the latter can be tested on recorded
//! snapshots. A target process is never left stopped or traced.
//!
//! Modules: `procfs` and `discovery` (the job's tasks on this node), `capture` (ptrace),
//! `memory` (reading a target), `images` (its binaries), `unwind` (pure x86-64 CFI
//! unwinder), `stacks` (capture + unwind), `symbols` (source frames, demangled, from
//! embedded or separate debug info), `sampler` (samples into local prefix trees),
//! `stack_text` (a process's stacks as text), `variables` (a program variable's value in
//! a frame, from DWARF) and `agent` (the daemon's end of the tree
//! network: commands in, trees and rank maps out).

pub mod agent;
pub mod capture;
pub mod discovery;
pub mod images;
pub mod memory;
pub mod procfs;
pub mod sampler;
pub mod stack_text;
pub mod stacks;
pub mod symbols;
pub mod unwind;
pub mod variables;
