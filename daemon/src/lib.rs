//! The strata daemon: one per node (or a few, sharing the node's tasks), the leaf of the
//! tree network. It owns everything that touches the job's processes:
//!
//! - finding the job's tasks on its node and their ranks ([`discovery`], over [`procfs`]);
//! - stopping them with ptrace for as little time as possible and copying registers and
//!   stacks ([`capture`]), or holding them stopped for later reads;
//! - reading their memory ([`memory`]) and their binaries ([`images`]);
//! - unwinding the copied stacks ([`unwind`], a pure x86-64 CFI unwinder; [`stacks`] joins
//!   capture and unwind);
//! - symbolization: source frames, inlined calls and demangled names from embedded or
//!   separate debug info ([`symbols`]);
//! - sampling into subtree-scoped local prefix trees ([`sampler`]) and printing a process's
//!   stacks ([`stack_text`]);
//! - reading a program variable in a frame, from DWARF ([`variables`], a layer above the
//!   sampler);
//! - which debug indexes to ask the tree for, probing the stacks at set-up ([`wants`]);
//! - the daemon's end of the gRPC tree network ([`agent`]): commands in, trees, rank maps,
//!   stacks and values out.
//!
//! Design constraints, which every module keeps:
//! - A target is never left stopped or traced: seized with `PTRACE_SEIZE` and interrupted
//!   (never SIGSTOP), so the kernel detaches and resumes it if the daemon dies; a hold has
//!   a deadline; exited tracees are reaped so that their parent can reap them.
//! - ptrace calls for a tracee come from the OS thread that seized it: captures run on
//!   the [`capture::Capturer`]'s own threads, never on tokio's blocking pool.
//! - Memory is read behind the [`memory::MemoryReader`] trait ([`memory::ProcessMemory`]
//!   for a live process, stack copies and snapshots otherwise): the algorithms that work
//!   on captured data (unwinding, symbolization, variable evaluation) never touch ptrace
//!   or `/proc`, so they are tested on recorded data.
//! - No terminal: the daemon runs under a launcher, reads no input and prompts for
//!   nothing; what it has to say goes up the tree.
//! - Nothing from the network is trusted: the link is authenticated with the session key,
//!   commands are bounded and validated (sample counts, frame limits, read sizes), and
//!   bad DWARF, CFI or memory end in an error, never a panic or a wrong value.

pub mod agent;
pub mod calls;
pub mod capture;
pub mod debug_index;
pub mod discovery;
pub mod images;
pub mod maps_cache;
pub mod memory;
pub mod pmpi;
pub mod procfs;
pub mod python;
pub mod sampler;
pub mod stack_text;
pub mod stacks;
pub mod symbols;
pub mod unwind;
pub mod variables;
pub mod wants;
