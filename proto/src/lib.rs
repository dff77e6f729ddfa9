//! strata's wire protocol.
//!
//! Messages are protobuf (prost) structs declared in Rust, and the gRPC service is
//! generated from a description in `build.rs`, so building strata needs no `protoc`.
//! [`overlay`] holds the tree network's messages, [`auth`] the session handshake,
//! [`link`] a child's end of a link, [`sampling`] the sampling settings with the one home of
//! their defaults and bounds, [`service`] the generated `Overlay` client and server.
//!
//! Design constraints: field numbers are the compatibility contract: never reuse or
//! renumber one. Everything here is untrusted input when it arrives: the receiving side
//! validates it (see `strata_filters::wire`) and bounds its size before decoding. No
//! ptrace, no terminal, no analysis: this crate only carries and authenticates.

/// Version of the messages in this crate; a peer with another major version is refused.
/// Re-exported so users of the messages need no direct prost dependency.
pub use prost::Message;

pub const PROTOCOL_VERSION: u32 = 1;

/// The environment variable that marks strata's own processes (`daemon`, `commnode`, ...),
/// so that discovery never takes one of them for a rank.
pub const ROLE_ENV: &str = "STRATA_ROLE";

pub mod auth;
pub mod link;
pub mod overlay;
pub mod sampling;

/// The generated gRPC service: `overlay_client::OverlayClient` and
/// `overlay_server::{Overlay, OverlayServer}`.
#[allow(missing_debug_implementations, clippy::all)]
pub mod service {
    include!(concat!(env!("OUT_DIR"), "/strata.v1.Overlay.rs"));
}

/// A prefix tree as a daemon or commnode sends it up: frames once, then nodes in
/// parent-first order, task sets as subtree-local runs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Tree {
    /// Size of the sender's task index space (its subtree's task count).
    #[prost(uint32, tag = "1")]
    pub task_space: u32,
    /// Size of the sender's thread index space; 0 when threads were not sampled.
    #[prost(uint32, tag = "2")]
    pub thread_space: u32,
    #[prost(message, repeated, tag = "3")]
    pub frames: Vec<Frame>,
    /// Node `i + 1` (the root, node 0, is implicit apart from its sets below).
    #[prost(message, repeated, tag = "4")]
    pub nodes: Vec<Node>,
    /// The root's task runs (every task sampled).
    #[prost(uint32, repeated, tag = "5")]
    pub root_tasks: Vec<u32>,
    #[prost(uint32, repeated, tag = "6")]
    pub root_threads: Vec<u32>,
    /// True when task sets are job-wide bit vectors of global ranks (`task_bits`), the
    /// encoding of STAT before hierarchical task lists; only `strata bench --dense` uses it.
    #[prost(bool, tag = "7")]
    pub dense: bool,
    #[prost(bytes = "vec", tag = "8")]
    pub root_task_bits: Vec<u8>,
}

/// One node: its parent's index, its frame's index, and its sets.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Node {
    #[prost(uint32, tag = "1")]
    pub parent: u32,
    #[prost(uint32, tag = "2")]
    pub frame: u32,
    /// Runs as `start, length` pairs, each start relative to the previous run's end
    /// (so small numbers, small varints).
    #[prost(uint32, repeated, tag = "3")]
    pub tasks: Vec<u32>,
    #[prost(uint32, repeated, tag = "4")]
    pub threads: Vec<u32>,
    /// Dense trees only: bit `r` set when rank `r` took this node; `task_space / 8` bytes.
    #[prost(bytes = "vec", tag = "5")]
    pub task_bits: Vec<u8>,
}

/// A frame. `special` is non-zero for frames that are not code.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Frame {
    #[prost(string, optional, tag = "1")]
    pub function: Option<String>,
    #[prost(string, optional, tag = "2")]
    pub module_path: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub build_id: Option<String>,
    #[prost(uint64, optional, tag = "4")]
    pub offset: Option<u64>,
    #[prost(string, optional, tag = "5")]
    pub file: Option<String>,
    #[prost(uint32, optional, tag = "6")]
    pub line: Option<u32>,
    #[prost(bool, tag = "7")]
    pub inlined: bool,
    #[prost(enumeration = "SpecialFrame", tag = "8")]
    pub special: i32,
    /// Machine code (0), a Python function, or the Python interpreter's own code.
    #[prost(enumeration = "CodeKind", tag = "9")]
    pub kind: i32,
}

/// What kind of code a frame is in (see `strata_filters::CodeKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum CodeKind {
    Native = 0,
    Python = 1,
    Interpreter = 2,
}

/// Frames that are not code (see `strata_filters::Special`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum SpecialFrame {
    NotSpecial = 0,
    TaskExited = 1,
    UnwindError = 2,
    DaemonUnreachable = 3,
    RanksUnknown = 4,
    NotAttached = 5,
    Truncated = 6,
    Uninterruptible = 7,
    NotStopped = 8,
}
