//! The tree network's messages: one bidirectional stream per parent-child link.
//!
//! A child (daemon or commnode) opens the `Link` stream to its parent. It sends [`Hello`];
//! the parent answers [`Challenge`] (its proof plus a nonce); the child answers [`Proof`];
//! the parent admits it with a [`Heartbeat`] (or ends the stream with its refusal).
//! Only then does the parent send [`Command`]s down; the child answers each with one reply,
//! sent as [`ReplyChunk`]s (at most [`MAX_CHUNK`] bytes each) whose concatenated `data` is
//! the encoded reply message of that command (`SetupReply` for `Setup`, ...). Progress and
//! heartbeats flow beside it. Each field number is part of the contract: never reuse one.

/// The payload of one reply chunk, at most: well under tonic's 4 MiB message limit.
pub const MAX_CHUNK: usize = 1 << 20;

/// What a child sends up.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Up {
    #[prost(oneof = "UpKind", tags = "1, 2, 3, 4, 5, 6")]
    pub kind: Option<UpKind>,
}

/// [`Up::kind`]: defined here, not in `up`, so that the parent's structs do not name an item
/// of a child module (that would make `overlay` and `overlay::up` depend on each other).
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum UpKind {
    #[prost(message, tag = "1")]
    Hello(Hello),
    #[prost(message, tag = "2")]
    Proof(Proof),
    #[prost(message, tag = "3")]
    Reply(ReplyChunk),
    #[prost(message, tag = "4")]
    Progress(Progress),
    #[prost(message, tag = "5")]
    Heartbeat(Heartbeat),
    #[prost(message, tag = "6")]
    Lost(Lost),
}

/// The oneof's former home, now an alias: callers' `up::Kind::Hello` paths still compile, and
/// only the child names its parent.
pub mod up {
    pub use super::UpKind as Kind;
}

impl From<UpKind> for Up {
    fn from(kind: UpKind) -> Up {
        Up { kind: Some(kind) }
    }
}

impl From<DownKind> for Down {
    fn from(kind: DownKind) -> Down {
        Down { kind: Some(kind) }
    }
}

impl Command {
    /// Detach and exit, for a whole subtree (sent when a parent is gone or interrupted).
    pub fn shutdown(id: u64) -> Command {
        Command {
            id,
            timeout_ms: 10_000,
            action: Some(CommandAction::Shutdown(Shutdown {})),
        }
    }

    /// Detach and shutdown stop whatever runs below: they are sent down at once.
    pub fn is_urgent(&self) -> bool {
        matches!(
            self.action,
            Some(CommandAction::Detach(_)) | Some(CommandAction::Shutdown(_))
        )
    }
}

/// What a parent sends down.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Down {
    #[prost(oneof = "DownKind", tags = "1, 2, 3")]
    pub kind: Option<DownKind>,
}

/// [`Down::kind`], at the parent's level for the reason given at [`UpKind`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum DownKind {
    #[prost(message, tag = "1")]
    Challenge(Challenge),
    #[prost(message, tag = "2")]
    Command(Command),
    #[prost(message, tag = "3")]
    Heartbeat(Heartbeat),
}

/// The oneof's former home, now an alias (see [`up`]).
pub mod down {
    pub use super::DownKind as Kind;
}

/// Which role a child plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Role {
    Unknown = 0,
    Daemon = 1,
    Commnode = 2,
}

/// The child's first message.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Hello {
    #[prost(uint32, tag = "1")]
    pub protocol_version: u32,
    #[prost(enumeration = "Role", tag = "2")]
    pub role: i32,
    /// The child's index among its level's processes (daemon `i` of `D`).
    #[prost(uint32, tag = "3")]
    pub index: u32,
    /// A fresh random nonce ([`crate::auth::NONCE_LEN`] bytes) the parent must prove on.
    #[prost(bytes = "vec", tag = "4")]
    pub nonce: Vec<u8>,
    #[prost(string, tag = "5")]
    pub host: String,
    #[prost(uint32, tag = "6")]
    pub pid: u32,
}

/// The parent's answer to [`Hello`]: its own nonce and its proof of the session secret.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Challenge {
    #[prost(uint32, tag = "1")]
    pub protocol_version: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub nonce: Vec<u8>,
    #[prost(bytes = "vec", tag = "3")]
    pub mac: Vec<u8>,
}

/// The child's proof of the session secret, over both nonces.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Proof {
    #[prost(bytes = "vec", tag = "1")]
    pub mac: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Heartbeat {}

/// A piece of the reply to command `command`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReplyChunk {
    #[prost(uint64, tag = "1")]
    pub command: u64,
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
    /// More chunks of this reply follow.
    #[prost(bool, tag = "3")]
    pub more: bool,
}

/// A process of the tree below the sender that went silent while it may still live
/// (stopped, hung): sent up at once, without waiting for a command, so that the root has
/// whoever launched it end it and the kernel lets go of any rank it had stopped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Lost {
    #[prost(enumeration = "Role", tag = "1")]
    pub role: i32,
    /// Its index among its level's processes.
    #[prost(uint32, tag = "2")]
    pub index: u32,
    /// Its host and pid, as its authenticated hello said.
    #[prost(string, tag = "3")]
    pub host: String,
    #[prost(uint32, tag = "4")]
    pub pid: u32,
    /// How it is named in reports (`daemon 3`, `commnode 1 (daemons 2-3)`).
    #[prost(string, tag = "5")]
    pub who: String,
    /// Why it is lost (`silent for 10 s`).
    #[prost(string, tag = "6")]
    pub reason: String,
}

/// Work done so far on command `command` in the sender's subtree (tasks times samples).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Progress {
    #[prost(uint64, tag = "1")]
    pub command: u64,
    #[prost(uint64, tag = "2")]
    pub done: u64,
    #[prost(uint64, tag = "3")]
    pub total: u64,
}

/// A command for the whole subtree below the receiver.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Command {
    /// Chosen by the front end, increasing; replies name it.
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// The receiver must reply within this many milliseconds of receiving it, reporting
    /// the children that did not answer in time as missing.
    #[prost(uint64, tag = "2")]
    pub timeout_ms: u64,
    #[prost(oneof = "CommandAction", tags = "3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13")]
    pub action: Option<CommandAction>,
}

/// [`Command::action`], at the parent's level for the reason given at [`UpKind`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum CommandAction {
    /// Find the target tasks; reply [`SetupReply`] (the rank map).
    #[prost(message, tag = "3")]
    Setup(Setup),
    /// Sample them; reply [`SampleReply`].
    #[prost(message, tag = "4")]
    Sample(Sample),
    /// Full stacks of chosen ranks from the last sample; reply [`StacksReply`].
    #[prost(message, tag = "5")]
    Stacks(Stacks),
    /// Stop chosen ranks and keep them stopped; reply [`HoldReply`].
    #[prost(message, tag = "6")]
    Hold(Hold),
    /// Let every held task run again; reply [`HoldReply`].
    #[prost(message, tag = "7")]
    Release(Release),
    /// Read memory of held tasks; reply [`ReadMemoryReply`].
    #[prost(message, tag = "8")]
    ReadMemory(ReadMemory),
    /// Stop what is running and detach from every task; reply [`Done`].
    #[prost(message, tag = "9")]
    Detach(Detach),
    /// Detach, reply [`Done`], close the link and exit.
    #[prost(message, tag = "10")]
    Shutdown(Shutdown),
    /// Where chosen ranks' main threads are now, one capture each and no tree; reply
    /// [`ProbeReply`] (`strata watch` asks a few ranks at random moments).
    #[prost(message, tag = "11")]
    Probe(Probe),
    /// Read variables in chosen ranks' main-thread frames, each rank stopped while it is
    /// read; reply [`VariablesReply`] (`--var`, loop-order variables).
    #[prost(message, tag = "12")]
    ReadVariables(ReadVariables),
    /// A piece of a debug index some daemons asked for in their [`SetupReply::wants`],
    /// read once by the front end and sent down the tree (STAT's SBRS); reply [`Done`].
    #[prost(message, tag = "13")]
    Provide(Provide),
}

/// The oneof's former home, now an alias (see [`up`]).
pub mod command {
    pub use super::CommandAction as Action;
}

/// Which processes are the job's tasks.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Setup {
    /// The user who started the session: daemons use only tasks this user owns.
    #[prost(uint32, tag = "1")]
    pub uid: u32,
    #[prost(oneof = "SetupTarget", tags = "2, 3, 6")]
    pub target: Option<SetupTarget>,
    /// Daemons on one host split the tasks they find: daemon `i` of `share` takes the
    /// `i`-th block in rank order (the local launcher). 0 or 1: each takes all.
    #[prost(uint32, tag = "4")]
    pub share: u32,
    /// Directories of separate debug information.
    #[prost(string, repeated, tag = "5")]
    pub debug_dirs: Vec<String>,
    /// The debug-index cache directory, the same for every daemon of the session (the
    /// front end resolves the default); absent or empty: no cache.
    #[prost(string, optional, tag = "7")]
    pub debug_cache: Option<String>,
    /// The cache is on a file system the nodes share (`--debug-cache-shared`): daemons
    /// take its indexes from the tree rather than each reading them.
    #[prost(bool, tag = "8")]
    pub debug_cache_shared: bool,
}

/// [`Setup::target`], at the parent's level for the reason given at [`UpKind`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum SetupTarget {
    /// Process ids in rank order.
    #[prost(message, tag = "2")]
    Pids(PidList),
    /// A launcher's pid: its descendants with an MPI rank.
    #[prost(uint32, tag = "3")]
    LauncherPid(u32),
    /// A Slurm job (and step): its processes on the daemon's node.
    #[prost(message, tag = "6")]
    Slurm(SlurmTarget),
}

/// The oneof's former home, now an alias (see [`up`]).
pub mod setup {
    pub use super::SetupTarget as Target;
}

/// The processes of a Slurm job on a node: every step's, or one step's.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SlurmTarget {
    #[prost(uint32, tag = "1")]
    pub job: u32,
    #[prost(uint32, optional, tag = "2")]
    pub step: Option<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PidList {
    #[prost(uint32, repeated, tag = "1")]
    pub pids: Vec<u32>,
}

/// The rank map of a subtree: its daemons in subtree order, each with its tasks in the
/// order of that daemon's task indices. Concatenated, they give the subtree's task space.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SetupReply {
    #[prost(message, repeated, tag = "1")]
    pub daemons: Vec<DaemonMap>,
    /// Daemons (or whole subtrees) that did not answer: their ranks are unknown.
    #[prost(message, repeated, tag = "2")]
    pub missing: Vec<Missing>,
    /// The debug indexes the subtree's daemons would otherwise read or build from their
    /// own file systems, each key once (at most [`MAX_WANTS`]).
    #[prost(message, repeated, tag = "3")]
    pub wants: Vec<IndexWant>,
}

/// Most [`SetupReply::wants`] a reply carries: a job maps a few dozen distinct binaries.
pub const MAX_WANTS: usize = 1024;

/// A debug index a daemon lacks: its cache key (build-id and size) and the binary's path
/// on the daemon's node, which the front end opens to see whether it has the same binary.
#[derive(Clone, PartialEq, prost::Message)]
pub struct IndexWant {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub path: String,
    /// The addresses in the binary (its own, unrelocated: lookup pc minus load bias) that
    /// the daemon's stacks hit when it probed them at set-up, sorted and distinct: an
    /// index of the units covering them serves the attach. Empty when `whole`.
    #[prost(uint64, repeated, tag = "3")]
    pub svmas: Vec<u64>,
    /// The daemon needs the whole index: it could not probe the stacks of a task mapping
    /// the binary, or its stacks hit more than [`MAX_WANT_ADDRESSES`] addresses.
    #[prost(bool, tag = "4")]
    pub whole: bool,
}

/// Most [`IndexWant::svmas`] a want carries; past it, the want is for the whole index.
pub const MAX_WANT_ADDRESSES: usize = 4096;

impl IndexWant {
    /// Adds `other`'s addresses (the same key, from another daemon of the subtree) to this
    /// want's: a commnode passes one want per key up, as it passes each frame once.
    pub fn absorb(&mut self, other: &IndexWant) {
        if self.whole || other.whole {
            self.whole = true;
            self.svmas.clear();
            return;
        }
        self.svmas.extend_from_slice(&other.svmas);
        self.svmas.sort_unstable();
        self.svmas.dedup();
        if self.svmas.len() > MAX_WANT_ADDRESSES {
            self.whole = true;
            self.svmas.clear();
        }
    }
}

/// Bytes `offset..offset + data.len()` of the debug index `key` (`total` bytes in all),
/// sent in order; a daemon that did not want it ignores it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Provide {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(uint64, tag = "2")]
    pub total: u64,
    #[prost(uint64, tag = "3")]
    pub offset: u64,
    #[prost(bytes = "vec", tag = "4")]
    pub data: Vec<u8>,
}

/// The largest debug index sent down the tree: larger ones are left to each daemon (read
/// lazily, indexed in the background; see the daemon's `SymbolOptions::inline_limit`).
pub const MAX_PROVIDED: u64 = 256 << 20;

#[derive(Clone, PartialEq, prost::Message)]
pub struct DaemonMap {
    #[prost(uint32, tag = "1")]
    pub index: u32,
    #[prost(string, tag = "2")]
    pub host: String,
    /// Executable paths, indexed by [`TaskEntry::executable`].
    #[prost(string, repeated, tag = "3")]
    pub executables: Vec<String>,
    #[prost(message, repeated, tag = "4")]
    pub tasks: Vec<TaskEntry>,
    /// One line each: processes that matched but cannot be used.
    #[prost(string, repeated, tag = "5")]
    pub problems: Vec<String>,
    /// Ranks claimed by several unrelated processes (left out).
    #[prost(uint32, repeated, tag = "6")]
    pub duplicate_ranks: Vec<u32>,
    /// Discovery failed on this daemon: why, and the exit code class.
    #[prost(string, optional, tag = "7")]
    pub error: Option<String>,
    #[prost(enumeration = "ErrorKind", tag = "8")]
    pub error_kind: i32,
}

/// How a failure maps onto strata's exit codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum ErrorKind {
    None = 0,
    NotFound = 1,
    PermissionDenied = 2,
    Internal = 3,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskEntry {
    #[prost(uint32, tag = "1")]
    pub rank: u32,
    #[prost(uint32, tag = "2")]
    pub pid: u32,
    #[prost(uint32, tag = "3")]
    pub executable: u32,
    /// The job's rank count, when the task's environment says.
    #[prost(uint32, optional, tag = "4")]
    pub job_size: Option<u32>,
}

/// Part of a subtree that did not answer. `first..end` is its range in the sender's task
/// space when known (the rank map had arrived), else empty.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Missing {
    #[prost(uint32, tag = "1")]
    pub first: u32,
    #[prost(uint32, tag = "2")]
    pub end: u32,
    /// Which processes: `daemon 3 (host n1)`, `commnode 1 (daemons 2-3)`.
    #[prost(string, tag = "3")]
    pub who: String,
    /// Why: `connection lost`, `no answer within 12 s`, ...
    #[prost(string, tag = "4")]
    pub reason: String,
}

/// Sampling options.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(uint32, tag = "1")]
    pub samples: u32,
    #[prost(uint64, tag = "2")]
    pub interval_us: u64,
    #[prost(double, tag = "3")]
    pub jitter: f64,
    #[prost(bool, tag = "4")]
    pub threads: bool,
    #[prost(uint32, tag = "5")]
    pub max_frames: u32,
    /// Task sets as job-wide bit vectors of global ranks at every level, as STAT had them
    /// before the 208K paper (`strata bench --dense`, a baseline to measure against).
    /// Emulated daemons honour it; a real daemon's runs are refused in such a round.
    #[prost(bool, tag = "6")]
    pub dense: bool,
}

/// A subtree's sampling result, task indices in its task space.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SampleReply {
    #[prost(message, optional, tag = "1")]
    pub tree_2d: Option<crate::Tree>,
    #[prost(message, optional, tag = "2")]
    pub tree_3d: Option<crate::Tree>,
    /// The thread index space, in order.
    #[prost(message, repeated, tag = "3")]
    pub threads: Vec<ThreadEntry>,
    /// What sampling learned per task; one per task, in task order.
    #[prost(message, repeated, tag = "4")]
    pub notes: Vec<TaskNote>,
    #[prost(message, repeated, tag = "5")]
    pub missing: Vec<Missing>,
    /// Samples taken (the fewest of the subtree).
    #[prost(uint32, tag = "6")]
    pub samples: u32,
    /// Microseconds since the Unix epoch: earliest start, latest end.
    #[prost(uint64, tag = "7")]
    pub started_us: u64,
    #[prost(uint64, tag = "8")]
    pub finished_us: u64,
    /// What each node of the subtree spent on this reply (measurements; `strata bench`).
    #[prost(message, repeated, tag = "9")]
    pub stats: Vec<NodeStat>,
    /// The places of the subtree's MPI call sites, each once: the notes' history sites name
    /// theirs by index ([`PmpiSiteNote::place`]). Ranks of one program share them, so they
    /// travel once per subtree rather than once per rank (`strata_filters::places`).
    #[prost(message, repeated, tag = "10")]
    pub pmpi_places: Vec<PmpiPlaceNote>,
}

/// Where the program called an MPI function: the call, and its function, file and line.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiPlaceNote {
    #[prost(string, tag = "1")]
    pub call: String,
    #[prost(string, optional, tag = "2")]
    pub function: Option<String>,
    #[prost(string, optional, tag = "3")]
    pub file: Option<String>,
    #[prost(uint32, optional, tag = "4")]
    pub line: Option<u32>,
}

/// One tree node's cost for one sample reply.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeStat {
    /// Tree level (1: the front end's children; the daemons' level is the deepest; 0: a
    /// real daemon, which does not know its depth).
    #[prost(uint32, tag = "1")]
    pub level: u32,
    #[prost(uint32, tag = "2")]
    pub index: u32,
    /// Merging the children's replies (decode, merge, encode), microseconds.
    #[prost(uint64, tag = "3")]
    pub merge_us: u64,
    /// Reply bytes received from the children, and sent up.
    #[prost(uint64, tag = "4")]
    pub bytes_in: u64,
    #[prost(uint64, tag = "5")]
    pub bytes_out: u64,
    /// The process's peak resident memory so far (VmHWM), KiB.
    #[prost(uint64, tag = "6")]
    pub peak_rss_kib: u64,
    /// A daemon's debug information so far this session: binaries indexed, bytes of
    /// separate debug files read, microseconds spent, and the build-ids indexed (the
    /// measure of "read once per job": the same build-id indexed by several daemons is
    /// the 208K paper's shared-file-system problem).
    #[prost(uint32, tag = "7")]
    pub debug_indexed: u32,
    #[prost(uint64, tag = "8")]
    pub debug_bytes_read: u64,
    #[prost(uint64, tag = "9")]
    pub debug_load_us: u64,
    #[prost(string, repeated, tag = "10")]
    pub debug_build_ids: Vec<String>,
    /// Binaries whose debug index came from the index cache (no DWARF read), and the
    /// cache entries it could not use or write, one line each.
    #[prost(uint32, tag = "11")]
    pub debug_cache_hits: u32,
    #[prost(string, repeated, tag = "12")]
    pub debug_cache_warnings: Vec<String>,
    /// A daemon's CPU time so far (user and system, microseconds): what the tree costs
    /// each node, whatever the machine's load.
    #[prost(uint64, tag = "13")]
    pub cpu_us: u64,
    /// Binaries too large to index during the attach: read lazily this time, their index
    /// handed to a background build for the next attach.
    #[prost(uint32, tag = "14")]
    pub debug_index_deferred: u32,
    /// Debug indexes received down the tree instead of read from the file system.
    #[prost(uint32, tag = "15")]
    pub debug_provided: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadEntry {
    /// Its task, in the sender's task space.
    #[prost(uint32, tag = "1")]
    pub task: u32,
    #[prost(uint32, tag = "2")]
    pub tid: u32,
    #[prost(string, tag = "3")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskNote {
    /// Scheduler state letter of the main thread at its last sample (empty: unknown).
    #[prost(string, tag = "1")]
    pub state: String,
    #[prost(string, optional, tag = "2")]
    pub error: Option<String>,
    #[prost(bool, tag = "3")]
    pub exited: bool,
    #[prost(bool, tag = "4")]
    pub waits_on_threads: bool,
    #[prost(bool, tag = "5")]
    pub no_debug_info: bool,
    #[prost(string, optional, tag = "6")]
    pub build_id: Option<String>,
    #[prost(uint32, tag = "7")]
    pub samples_ok: u32,
    /// What strata's PMPI library recorded in the task (absent: not loaded).
    #[prost(message, optional, tag = "8")]
    pub pmpi: Option<PmpiNote>,
    /// The task runs CPython and its frames were read: the version (`3.11.2`).
    #[prost(string, optional, tag = "9")]
    pub python: Option<String>,
    /// The task runs CPython but its frames could not be read: why (`Python 3.14 layout
    /// not verified`).
    #[prost(string, optional, tag = "10")]
    pub python_error: Option<String>,
}

/// A task's MPI call as strata's PMPI library recorded it (`crate::pmpi`).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiNote {
    /// Why the record could not be read (another layout version, ...); nothing else is set.
    #[prost(string, optional, tag = "1")]
    pub error: Option<String>,
    /// The call's C name; empty outside MPI.
    #[prost(string, tag = "2")]
    pub call: String,
    /// The peer, a rank of the call's communicator.
    #[prost(sint64, optional, tag = "3")]
    pub peer: Option<i64>,
    #[prost(bool, tag = "4")]
    pub any_source: bool,
    #[prost(bool, tag = "5")]
    pub proc_null: bool,
    #[prost(sint64, optional, tag = "6")]
    pub tag: Option<i64>,
    /// `world`, `self`, `members`, `unknown`, or empty when the call has none.
    #[prost(string, tag = "7")]
    pub communicator: String,
    /// With `members`: world rank of each rank of the communicator.
    #[prost(uint32, repeated, tag = "8")]
    pub members: Vec<u32>,
    #[prost(uint64, tag = "9")]
    pub entered: u64,
    #[prost(uint64, tag = "10")]
    pub completed: u64,
    #[prost(sint64, optional, tag = "11")]
    pub world_rank: Option<i64>,
    /// In a completion call: the requests it was passed.
    #[prost(message, repeated, tag = "12")]
    pub requests: Vec<PmpiRequestNote>,
    /// Active requests the call was passed (more than `requests` holds past the library's
    /// cap; fewer in a long waitall, whose records are those still pending).
    #[prost(uint64, tag = "13")]
    pub requests_active: u64,
    /// The members (world ranks) of the requests' derived communicators, each once.
    #[prost(message, repeated, tag = "14")]
    pub communicators: Vec<Members>,
    /// The program was given `MPI_THREAD_MULTIPLE`: the record may be another thread's.
    #[prost(bool, tag = "15")]
    pub thread_multiple: bool,
    /// Polls (`MPI_Iprobe`, `MPI_Test`...) that found nothing, of `completed`.
    #[prost(uint64, tag = "16")]
    pub found_nothing: u64,
    /// The task's history (absent before its first call, or when it could not be read).
    #[prost(message, optional, tag = "17")]
    pub history: Option<PmpiHistoryNote>,
    /// Calls that made progress (completed, less the polls that found nothing) between the
    /// first sample and this read; absent when not read at both.
    #[prost(uint64, optional, tag = "18")]
    pub progress_while_sampled: Option<u64>,
}

/// A task's MPI history as the PMPI library keeps it: its call sites, the transitions
/// between them (a semi-Markov model of the task), its last calls. Times in seconds; absent
/// when the library's clock could not yet say.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiHistoryNote {
    /// Why the history could not be read; nothing else is set.
    #[prost(string, optional, tag = "1")]
    pub error: Option<String>,
    #[prost(message, repeated, tag = "2")]
    pub sites: Vec<PmpiSiteNote>,
    #[prost(message, repeated, tag = "3")]
    pub transitions: Vec<PmpiTransitionNote>,
    /// The last calls, oldest first.
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<PmpiEventNote>,
    /// Calls whose site found the library's table full.
    #[prost(uint64, tag = "5")]
    pub sites_lost: u64,
    #[prost(uint64, tag = "6")]
    pub transitions_lost: u64,
    /// Calls completed since the library loaded (`events` are the last of them).
    #[prost(uint64, tag = "7")]
    pub events_written: u64,
    /// In a call: for how long, when read.
    #[prost(double, optional, tag = "8")]
    pub in_call_s: Option<f64>,
    /// Since the last call returned, when read.
    #[prost(double, optional, tag = "9")]
    pub since_return_s: Option<f64>,
}

/// One call site: where the program called an MPI function, and what it counted.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiSiteNote {
    /// The library's index of the site (transitions and events name sites by it).
    #[prost(uint32, tag = "1")]
    pub index: u32,
    #[prost(string, tag = "2")]
    pub call: String,
    /// The return address, in the task.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(string, optional, tag = "4")]
    pub function: Option<String>,
    #[prost(string, optional, tag = "5")]
    pub file: Option<String>,
    #[prost(uint32, optional, tag = "6")]
    pub line: Option<u32>,
    #[prost(uint64, tag = "7")]
    pub entered: u64,
    #[prost(uint64, tag = "8")]
    pub completed: u64,
    #[prost(uint64, tag = "9")]
    pub found_nothing: u64,
    /// Time in its completed calls, and the longest of them.
    #[prost(double, optional, tag = "10")]
    pub seconds_in: Option<f64>,
    #[prost(double, optional, tag = "11")]
    pub longest_s: Option<f64>,
    /// Its place in the reply's [`SampleReply::pmpi_places`]; when set, `call`,
    /// `function`, `file` and `line` are not.
    #[prost(uint32, optional, tag = "12")]
    pub place: Option<u32>,
}

/// Times of one transition's part: summed, squares summed, the longest (seconds).
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiTimesNote {
    #[prost(double, tag = "1")]
    pub sum_s: f64,
    #[prost(double, tag = "2")]
    pub squares_s2: f64,
    #[prost(double, tag = "3")]
    pub max_s: f64,
}

/// One transition: a call at `from` followed, in the same thread, by one at `to`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiTransitionNote {
    /// Site indices; `from` is absent for a thread's first call.
    #[prost(uint32, optional, tag = "1")]
    pub from: Option<u32>,
    #[prost(uint32, tag = "2")]
    pub to: u32,
    #[prost(uint64, tag = "3")]
    pub count: u64,
    /// The computation between the two calls, and the time in the first.
    #[prost(message, optional, tag = "4")]
    pub between: Option<PmpiTimesNote>,
    #[prost(message, optional, tag = "5")]
    pub within: Option<PmpiTimesNote>,
}

/// One completed call.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiEventNote {
    #[prost(string, tag = "1")]
    pub call: String,
    /// Its site index; absent when the site table was full.
    #[prost(uint32, optional, tag = "2")]
    pub site: Option<u32>,
    #[prost(bool, tag = "3")]
    pub found_nothing: bool,
    #[prost(sint64, optional, tag = "4")]
    pub peer: Option<i64>,
    #[prost(bool, tag = "5")]
    pub any_source: bool,
    #[prost(bool, tag = "6")]
    pub proc_null: bool,
    #[prost(sint64, optional, tag = "7")]
    pub tag: Option<i64>,
    /// How long before the read it returned, and how long it lasted.
    #[prost(double, optional, tag = "8")]
    pub returned_before_s: Option<f64>,
    #[prost(double, optional, tag = "9")]
    pub seconds: Option<f64>,
}

/// A request a completion call was passed, as the PMPI library recorded its start.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PmpiRequestNote {
    /// The call that started it (`MPI_Irecv`); empty when the library did not see it.
    #[prost(string, tag = "1")]
    pub started_by: String,
    #[prost(sint64, optional, tag = "2")]
    pub peer: Option<i64>,
    #[prost(bool, tag = "3")]
    pub any_source: bool,
    #[prost(bool, tag = "4")]
    pub proc_null: bool,
    #[prost(sint64, optional, tag = "5")]
    pub tag: Option<i64>,
    /// As [`PmpiNote::communicator`].
    #[prost(string, tag = "6")]
    pub communicator: String,
    /// With `members`: the index of its members in [`PmpiNote::communicators`].
    #[prost(uint32, optional, tag = "7")]
    pub members: Option<u32>,
}

/// World ranks, rank 0 of the communicator first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Members {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
}

/// Ranks whose full stacks are wanted.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Stacks {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StacksReply {
    #[prost(message, repeated, tag = "1")]
    pub ranks: Vec<RankText>,
}

/// Capture the main thread of these ranks once (every rank of the daemon when empty).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Probe {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
    /// Frames per stack before the walk is cut (0: the daemon's default).
    #[prost(uint32, tag = "2")]
    pub max_frames: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ProbeReply {
    #[prost(message, repeated, tag = "1")]
    pub ranks: Vec<RankProbe>,
}

/// One rank's main thread at one moment.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RankProbe {
    #[prost(uint32, tag = "1")]
    pub rank: u32,
    /// Function names, outermost first (`??` where no symbol is known; inlined calls
    /// included).
    #[prost(string, repeated, tag = "2")]
    pub functions: Vec<String>,
    /// The rank's process has exited.
    #[prost(bool, tag = "3")]
    pub exited: bool,
    /// Why there is no stack (capture refused, exited, ...).
    #[prost(string, optional, tag = "4")]
    pub error: Option<String>,
    /// Index in `functions` of the entry frame of the MPI call the stack is in (the
    /// outermost MPI frame, by `strata_filters::mpi`, which needs each frame's library: the
    /// daemon knows it, the names alone do not), when it is in one.
    #[prost(uint32, optional, tag = "5")]
    pub mpi_entry: Option<u32>,
    /// That call's C name (`MPI_Recv` for `PMPI_Recv`, `mpi_recv_`, ...).
    #[prost(string, optional, tag = "6")]
    pub mpi_call: Option<String>,
    /// With strata's PMPI library: the rank's MPI calls that got somewhere so far (completed
    /// calls less the polls that found nothing), read right after the stack.
    #[prost(uint64, optional, tag = "7")]
    pub mpi_progress: Option<u64>,
    /// With the library's history: seconds since the rank's last MPI transition (its entry
    /// into the call it is in, or its return from the last one).
    #[prost(double, optional, tag = "8")]
    pub mpi_idle_s: Option<f64>,
    /// With the library's history: the longest the rank has gone between two transitions
    /// (in a call, or computing between two).
    #[prost(double, optional, tag = "9")]
    pub mpi_longest_s: Option<f64>,
}

/// Read variables in the main thread of these ranks (every rank of the daemon when empty).
/// Each rank is stopped once for all its reads and let go at once (or stays stopped, when a
/// [`Hold`] holds it).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadVariables {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
    #[prost(message, repeated, tag = "2")]
    pub requests: Vec<VariableRequest>,
}

/// One variable: `variable` as seen from the innermost frame of `function` on the stack
/// (inlined frames count; the name matches the whole function name, or its last `::` part
/// without parameters, case-insensitively for Fortran). Locals and parameters in scope at
/// the frame's pc come first, then globals and statics of the function's compilation unit.
#[derive(Clone, PartialEq, prost::Message)]
pub struct VariableRequest {
    #[prost(string, tag = "1")]
    pub function: String,
    #[prost(string, tag = "2")]
    pub variable: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct VariablesReply {
    #[prost(message, repeated, tag = "1")]
    pub ranks: Vec<RankVariables>,
}

/// One rank's values, one per request in request order (unless `error` is set).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RankVariables {
    #[prost(uint32, tag = "1")]
    pub rank: u32,
    #[prost(message, repeated, tag = "2")]
    pub values: Vec<VariableValue>,
    /// Why nothing could be read (the rank exited, could not be stopped, ...).
    #[prost(string, optional, tag = "3")]
    pub error: Option<String>,
}

/// One variable of one rank.
#[derive(Clone, PartialEq, prost::Message)]
pub struct VariableValue {
    /// The value as a user reads it (`42`, `-3`, `2.5`, `true`, `0x7ffc...`).
    #[prost(string, optional, tag = "1")]
    pub text: Option<String>,
    /// Integer (and boolean, character, enum) values as a number, for ordering.
    #[prost(sint64, optional, tag = "2")]
    pub integer: Option<i64>,
    /// The variable exists but has no location at this pc (optimized out).
    #[prost(bool, tag = "3")]
    pub optimized_out: bool,
    /// Why there is no value (no frame of the function on the stack, no such variable, no
    /// debug information, an unsupported location, a memory read that failed).
    #[prost(string, optional, tag = "4")]
    pub error: Option<String>,
    /// Where it was read: the frame's function, source file and line.
    #[prost(string, optional, tag = "5")]
    pub function: Option<String>,
    #[prost(string, optional, tag = "6")]
    pub file: Option<String>,
    #[prost(uint32, tag = "7")]
    pub line: u32,
}

/// A rank's answer as text (its stacks, or why there are none).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RankText {
    #[prost(uint32, tag = "1")]
    pub rank: u32,
    #[prost(string, tag = "2")]
    pub text: String,
    #[prost(string, optional, tag = "3")]
    pub error: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Hold {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Release {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct HoldReply {
    /// Ranks now held (Hold) or let go (Release); failures carry an error.
    #[prost(message, repeated, tag = "1")]
    pub ranks: Vec<RankText>,
}

/// Reads `length` bytes at `address` in the main thread's address space of each rank.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadMemory {
    #[prost(uint32, repeated, tag = "1")]
    pub ranks: Vec<u32>,
    #[prost(uint64, tag = "2")]
    pub address: u64,
    #[prost(uint32, tag = "3")]
    pub length: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReadMemoryReply {
    #[prost(message, repeated, tag = "1")]
    pub ranks: Vec<MemoryBytes>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MemoryBytes {
    #[prost(uint32, tag = "1")]
    pub rank: u32,
    #[prost(bytes = "vec", tag = "2")]
    pub data: Vec<u8>,
    #[prost(string, optional, tag = "3")]
    pub error: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Detach {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Shutdown {}

/// The reply to `Detach` and `Shutdown`: who confirmed.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Done {
    #[prost(uint32, tag = "1")]
    pub daemons: u32,
    #[prost(message, repeated, tag = "2")]
    pub missing: Vec<Missing>,
}

/// Largest `ReadMemory.length` a daemon serves.
pub const MAX_READ: u32 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    // The oneof enums moved from their child modules to this one; peers of other builds
    // read the bytes, so the tags must not have moved with them. The expected bytes are
    // written by hand from the tags (key = tag << 3 | wire type).
    #[test]
    fn the_oneofs_keep_their_tags_and_old_paths() {
        let up: Up = up::Kind::Heartbeat(Heartbeat {}).into();
        assert_eq!(up.encode_to_vec(), [5 << 3 | 2, 0]);
        let cmd = Command {
            id: 1,
            timeout_ms: 2,
            action: Some(command::Action::Detach(Detach {})),
        };
        assert_eq!(cmd.encode_to_vec(), [1 << 3, 1, 2 << 3, 2, 9 << 3 | 2, 0]);
        let down: Down = DownKind::Command(cmd.clone()).into();
        let bytes = down.encode_to_vec();
        assert_eq!(bytes, [2 << 3 | 2, 6, 1 << 3, 1, 2 << 3, 2, 9 << 3 | 2, 0]);
        let back = Down::decode(bytes.as_slice()).unwrap();
        assert!(matches!(back.kind, Some(down::Kind::Command(c)) if c == cmd));
        let setup = Setup {
            target: Some(setup::Target::LauncherPid(7)),
            ..Setup::default()
        };
        assert_eq!(setup.encode_to_vec(), [3 << 3, 7]);
        assert_eq!(
            Setup::decode(&[3 << 3, 7][..]).unwrap().target,
            Some(SetupTarget::LauncherPid(7))
        );
    }

    #[test]
    fn wants_absorb_addresses_until_too_many() {
        let want = |svmas: Vec<u64>, whole| IndexWant {
            key: "k".into(),
            path: "/lib/x".into(),
            svmas,
            whole,
        };
        let mut a = want(vec![1, 5], false);
        a.absorb(&want(vec![5, 3], false));
        assert_eq!((a.svmas.clone(), a.whole), (vec![1, 3, 5], false));
        a.absorb(&want(Vec::new(), true));
        assert_eq!((a.svmas.is_empty(), a.whole), (true, true));
        a.absorb(&want(vec![7], false));
        assert!(a.whole && a.svmas.is_empty(), "whole stays whole");
        let mut b = want((0..MAX_WANT_ADDRESSES as u64).collect(), false);
        b.absorb(&want(vec![u64::MAX], false));
        assert!(
            b.whole && b.svmas.is_empty(),
            "past the limit: the whole index"
        );
    }
}
