//! The command line: every subcommand's arguments as clap declares them, and nothing else.
//! Clap stays here at the edge; [`crate::commands`] turns the parsed arguments into the
//! libraries' requests and runs them.

// The doc comments below are clap's help text, written for a terminal (`<job>`, bare URLs),
// not rustdoc markup.
#![allow(rustdoc::invalid_html_tags, rustdoc::bare_urls)]

use crate::exit;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;
use strata_filters::synth::{Placement, SynthParams};
use strata_proto::sampling::Sampling;
use strata_watch::{MonitorSet, OnHang};

#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about = "Stack trace analysis for hung parallel jobs: sample every rank, merge the stacks \
             into a call-graph prefix tree, read the handful of equivalence classes.",
    after_help = exit::table(),
    // A later option wins over an earlier one (scripts append to a base command line).
    args_override_self = true,
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render a saved result (result.json) as a tree, DOT, JSON or folded stacks.
    #[command(after_help = exit::table())]
    View(ViewArgs),
    /// Sample the stacks of a running job's ranks on this host, merge them into a
    /// call-graph prefix tree and show its equivalence classes.
    #[command(after_help = exit::table())]
    Attach(AttachArgs),
    /// Start a small hung job on this host (no MPI needed) and attach to it: what
    /// `strata attach` shows, on a fresh machine.
    #[command(after_help = exit::table())]
    Demo(DemoArgs),
    /// One rank of `strata demo`'s job (internal).
    #[command(hide = true)]
    DemoRank(DemoRankArgs),
    /// Watch a running job and detect a hang statistically (ParaStack): probe a few ranks
    /// at random moments, verify an alarm, snapshot and report; exit 3 on a hang.
    #[command(after_help = exit::table())]
    Watch(WatchArgs),
    /// Print every thread's stack of running processes (like `eu-stack -p` or
    /// `py-spy dump`); each process is stopped for microseconds and left running.
    #[command(after_help = exit::table())]
    Dump(DumpArgs),
    /// Launch a job with strata's PMPI library preloaded in every rank, so that `strata
    /// attach` reads each rank's exact MPI call (peers, communicators) without stopping it:
    /// `strata run -- mpirun -n 64 ./app`.
    #[command(after_help = exit::table())]
    Run(RunArgs),
    /// Emulate a large job (STATBench-style): synthetic daemons answer the real protocol,
    /// real commnodes merge; prints the time per phase, bytes per level, peak memory.
    #[command(after_help = exit::table())]
    Bench(BenchArgs),
    /// Emulated daemons of `strata bench` (internal).
    #[command(hide = true)]
    BenchDaemons(EmulatorArgs),
    /// A daemon of the tree network (started by `strata attach`, internal).
    #[command(hide = true)]
    Daemon(DaemonArgs),
    /// A communication process of the tree network (started by `strata attach`, internal).
    #[command(hide = true)]
    Commnode(CommnodeArgs),
    /// Builds the debug index of a large binary, read on stdin, into the index cache
    /// (started by a daemon, detached, internal).
    #[command(hide = true, name = strata_daemon::debug_index::detached::SUBCOMMAND)]
    IndexDebugInfo(IndexDebugInfoArgs),
}

#[derive(Debug, Args)]
pub struct IndexDebugInfoArgs {
    /// The index cache to write to.
    #[arg(long, value_name = "DIR")]
    pub cache: PathBuf,
    /// The entry's key (build-id and size): its lock is taken before the binary is read,
    /// and the binary must match it.
    #[arg(long)]
    pub key: String,
    /// Where separate debug files are looked for (default: the system's).
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
    /// The path the binary was mapped from (separate debug files are looked for next to
    /// it); its bytes come on stdin.
    pub name: String,
}

/// Which resource manager starts the daemons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ResourceManager {
    /// Processes on this host.
    Local,
    /// A Slurm job's nodes: one daemon per node through `srun`.
    Slurm,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").args(["job", "pids", "launcher_pid"])))]
pub struct AttachArgs {
    /// The resource manager's job id (Slurm: `1234`, or `1234.0` for one step): strata
    /// starts a daemon on each of the job's nodes. With no job id, --pids or
    /// --launcher-pid: the one MPI job of yours on this host (several are listed, exit 2;
    /// none is exit 5).
    #[arg(value_name = "JOBID")]
    pub job: Option<String>,
    /// The step to sample (default: the whole job when it has one step, else the step with
    /// the most tasks).
    #[arg(long, value_name = "STEP", requires = "job")]
    pub step: Option<u32>,
    /// The ranks' process ids on this host, in rank order (rank i is the i-th pid).
    #[arg(long, value_delimiter = ',', value_name = "PID,...", allow_negative_numbers = true, value_parser = parse_pid)]
    pub pids: Vec<i32>,
    /// A launcher on this host (mpirun, prterun, mpiexec, srun): its descendants that
    /// carry an MPI rank in their environment are the ranks.
    #[arg(long, value_name = "PID", allow_negative_numbers = true, value_parser = parse_pid)]
    pub launcher_pid: Option<i32>,
    /// Accept a --launcher-pid that is not a known MPI launcher (mpirun, mpiexec, prterun,
    /// orted, hydra_pmi_proxy, srun, ...): its descendants with an MPI rank are the ranks.
    #[arg(long, requires = "launcher_pid")]
    pub any_launcher: bool,
    /// Number of samples.
    #[arg(short = 'n', long, default_value_t = Sampling::DEFAULT_SAMPLES, value_parser = clap::value_parser!(u32).range(1..=Sampling::MAX_SAMPLES as i64))]
    pub samples: u32,
    /// Time between samples (`100ms`, `0.5s`, `2s`), varied by up to 20% at random.
    #[arg(long, default_value = Sampling::DEFAULT_INTERVAL_TEXT, value_parser = parse_duration, allow_hyphen_values = true)]
    pub interval: std::time::Duration,
    /// Sample every thread (by default the main thread of each rank).
    #[arg(long)]
    pub threads: bool,
    /// Also print these ranks' full stacks, every thread, from the last sample.
    #[arg(long, value_delimiter = ',', value_name = "R,...")]
    pub rank: Vec<u32>,
    /// Where to write the result files (default: strata-results/<job>-<time>/).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Write no result files.
    #[arg(long, conflicts_with = "output")]
    pub no_files: bool,
    /// Where separate debug information lives (repeatable; default /usr/lib/debug).
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
    #[command(flatten)]
    pub debug_cache: DebugCacheArgs,
    /// The cache is on a file system the nodes share, though strata does not recognize
    /// it as one (NFS, Lustre, GPFS, BeeGFS, Ceph, ... it does): each binary's index is
    /// then read once by the front end and sent down the tree instead of read by every
    /// daemon.
    #[arg(long, conflicts_with = "no_debug_cache")]
    pub debug_cache_shared: bool,
    /// Print the result as JSON on standard output (the format of result.json), for
    /// scripts; no progress bar.
    #[arg(long)]
    pub json: bool,
    /// The resource manager that starts the daemons (default: slurm for a job id, local
    /// for --pids and --launcher-pid).
    #[arg(long, value_enum)]
    pub rm: Option<ResourceManager>,
    /// Daemons to start with the local resource manager (default 1): they split this
    /// host's ranks among them (to run a real multi-level tree on one machine). Under
    /// Slurm there is one daemon per node of the job.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub daemons: Option<u32>,
    /// Most children per tree node (default: the shallowest tree with at most 64).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=65_536))]
    pub fanout: Option<u32>,
    /// Edges from the front end to a daemon (1: no commnodes).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub depth: Option<u32>,
    /// With a job id: run the commnodes inside the job's allocation too (one more launch),
    /// not on this host.
    #[arg(long, requires = "job")]
    pub commnodes_in_job: bool,
    /// Sample in this process, without daemons or a tree (for comparison and debugging).
    #[arg(long, conflicts_with_all = ["daemons", "fanout", "depth", "job"])]
    pub serial: bool,
    /// After sampling, read this variable in every rank (`FUNCTION:VARIABLE`, repeatable:
    /// `solve:it`, `Solver::step:n`): in the innermost frame of FUNCTION on each rank's main
    /// thread, the rank stopped for the read; prints the values merged into rank sets.
    /// `FUNCTION:@argN` (N = 1-6) is the N-th argument of the call that frame is making,
    /// from the DWARF call-site parameters of optimised code.
    #[arg(
        long = "var",
        value_name = "FUNCTION:VARIABLE",
        conflicts_with = "serial"
    )]
    pub var: Vec<strata_result::variables::VariableSpec>,
    /// Open the terminal UI on the live session: browse the tree, sample again, read a
    /// rank's full stacks, hand a rank to gdb; quitting detaches (docs/TUI.md).
    #[arg(short = 'i', long, conflicts_with_all = ["serial", "json", "rank"])]
    pub interactive: bool,
    #[command(flatten)]
    pub show: ShowArgs,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Number of ranks in the demo job.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(3..=256))]
    pub ranks: u32,
    /// Number of samples.
    #[arg(short = 'n', long, default_value_t = Sampling::DEFAULT_SAMPLES, value_parser = clap::value_parser!(u32).range(1..=Sampling::MAX_SAMPLES as i64))]
    pub samples: u32,
    /// Time between samples.
    #[arg(long, default_value = Sampling::DEFAULT_INTERVAL_TEXT, value_parser = parse_duration, allow_hyphen_values = true)]
    pub interval: std::time::Duration,
    /// Also print these ranks' full stacks.
    #[arg(long, value_delimiter = ',', value_name = "R,...")]
    pub rank: Vec<u32>,
    /// Write the result files here (by default the demo writes none).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Daemons sharing the job's ranks (at most one per rank).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub daemons: u32,
    /// Most children per tree node: with 4 daemons, 2 puts a level of commnodes between
    /// the front end and the daemons.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub fanout: u32,
    /// Print the result as JSON on standard output.
    #[arg(long)]
    pub json: bool,
    /// Open the terminal UI on the live demo job (as `strata attach -i`).
    #[arg(short = 'i', long, conflicts_with_all = ["json", "rank"])]
    pub interactive: bool,
    #[command(flatten)]
    pub show: ShowArgs,
}

#[derive(Debug, Args)]
pub struct DemoRankArgs {
    #[arg(long)]
    pub rank: u32,
}

/// A process id: a positive number. 0 and negative numbers name process groups in
/// `kill(2)`, never one process, so they are refused as a usage error.
pub(crate) fn parse_pid(text: &str) -> Result<i32, String> {
    match text.trim().parse::<i64>() {
        Ok(p) if p > 0 && p <= i64::from(i32::MAX) => Ok(p as i32),
        Ok(_) => Err(format!("{text} is not a process id (a positive number)")),
        Err(_) => Err(format!("'{text}' is not a process id (a positive number)")),
    }
}

/// `100ms`, `1.5s`, `2` (seconds).
pub(crate) fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (write 100ms, 0.5s or 2s)"))?;
    let secs = v * scale;
    if !(0.0..=3600.0).contains(&secs) {
        return Err(format!("'{text}': give a duration between 0 and 1 hour"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Where the debug indexes built from the binaries' debug information are kept, so that
/// each binary's is read once, not once per daemon and attach.
#[derive(Clone, Debug, Default, Args)]
pub struct DebugCacheArgs {
    /// The debug index cache: a directory per user, on a shared file system to serve a
    /// whole cluster [default: $XDG_CACHE_HOME/strata/debug-index, else
    /// ~/.cache/strata/debug-index].
    #[arg(long, value_name = "DIR")]
    pub debug_cache: Option<PathBuf>,
    /// Read every binary's debug information afresh, without the index cache.
    #[arg(long, conflicts_with = "debug_cache")]
    pub no_debug_cache: bool,
}

impl DebugCacheArgs {
    /// The cache directory to use, if any.
    pub fn dir(&self) -> Option<PathBuf> {
        if self.no_debug_cache {
            None
        } else {
            self.debug_cache
                .clone()
                .or_else(strata_daemon::debug_index::IndexCache::default_dir)
        }
    }
}

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Process ids (several, or comma-separated).
    #[arg(required = true, value_delimiter = ',', value_name = "PID", allow_negative_numbers = true, value_parser = parse_pid)]
    pub pids: Vec<i32>,
    /// Keep the processes stopped for this many seconds after the capture (so that other
    /// tools read the same moment); Ctrl-C releases them earlier.
    #[arg(long, value_name = "SECONDS")]
    pub hold: Option<f64>,
    /// At most this many frames per thread.
    #[arg(long, value_name = "N")]
    pub max_frames: Option<usize>,
    /// Where separate debug information lives (repeatable; default /usr/lib/debug).
    #[arg(long, value_name = "DIR")]
    pub debug_dir: Vec<PathBuf>,
    #[command(flatten)]
    pub debug_cache: DebugCacheArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Where to write the library: a directory that every node of the job reads [default:
    /// $XDG_CACHE_HOME/strata, else ~/.cache/strata; home directories are shared on most
    /// clusters].
    #[arg(long, value_name = "DIR")]
    pub library_dir: Option<PathBuf>,
    /// Print the launch command with the library preloaded, and exit without running it.
    #[arg(long)]
    pub dry_run: bool,
    /// The launch command: `mpirun -n 64 ./app`, `mpiexec -n 64 ./app`, `srun -n 64 ./app`.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Text,
    Dot,
    Json,
    Folded,
    /// A self-contained HTML report (the verdict, the tree as a graph, the classes, each
    /// rank's stack); `strata view -f html -o FILE` writes it to FILE.
    Html,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GranularityArg {
    /// Function names (STAT's default).
    Function,
    /// Function plus source file and line.
    Line,
    /// Module and offset.
    Module,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TreeArg {
    /// Trace/space: the last sample of each rank.
    #[value(name = "2d")]
    TwoD,
    /// Trace/space/time: all samples merged.
    #[value(name = "3d")]
    ThreeD,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
pub struct ViewArgs {
    /// A result file written by strata (result.json).
    pub result: PathBuf,
    #[command(flatten)]
    pub show: ShowArgs,
    /// Also write every rendering (result.json, tree.txt, tree-3d.dot, tree-2d.dot,
    /// stacks.folded, report.html) into this directory. With `-f html`: the file the
    /// report is written to (report.html in it, if it is a directory).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Print the tree as text even on a terminal (where `strata view` otherwise opens
    /// the interactive view).
    #[arg(long)]
    pub print: bool,
}

/// How a result is shown on standard output (shared by `view` and `attach`).
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Output format [default: text]. With `strata view` on a terminal, giving one prints
    /// it instead of opening the interactive view.
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<FormatArg>,
    /// Frame granularity, derived from the saved samples.
    #[arg(long, short = 'g', value_enum, default_value = "function")]
    pub granularity: GranularityArg,
    /// Keep the frames below the first MPI call (by default they are cut, because
    /// spin-polling ranks show different library frames in every sample).
    #[arg(long)]
    pub no_cut: bool,
    /// Show every frame as sampled: the start-up frames at the top of each stack
    /// (`_start`, `start_thread`, Rust's `lang_start`, hidden by default) and the frames
    /// below MPI calls. Result files always keep every frame.
    #[arg(long)]
    pub full_stacks: bool,
    /// With threads sampled, also show the MPI runtime's own threads (Open MPI's and PMIx's
    /// progress engines, UCX's and libfabric's event threads: a thread whose first
    /// function is in an MPI runtime library), which are left out by default.
    #[arg(long)]
    pub runtime_threads: bool,
    /// Which tree to draw.
    #[arg(long, value_enum, default_value = "3d")]
    pub tree: TreeArg,
    /// On a terminal, print every branch and every class (by default a node shows its 16
    /// largest branches and the class list its 10 smallest and 10 largest classes).
    #[arg(long)]
    pub all: bool,
    /// Colour in text output (NO_COLOR in the environment also turns it off).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorArg,
    /// Order the classes by progress (STAT's temporal order): who is behind, by position
    /// in the source code, least progressed first, with the evidence; labels frames
    /// `func@[T1.2]`. Reads the sources named by the debug info (docs/PROGRESS.md). With
    /// `-f json`, prints the progress order as JSON.
    #[arg(long)]
    pub progress: bool,
    /// Leave out the "Why it hangs" paragraph after the text tree (the verdict: which
    /// ranks hold the job up, and why). result.json keeps it.
    #[arg(long)]
    pub no_verdict: bool,
    /// Leave out of the HTML report what a ticket must not carry: source lines, host
    /// names and executables' paths.
    #[arg(long)]
    pub redact: bool,
    /// Where to look for source files the debug information names but that are not at
    /// that path (repeatable; like gdb's `directory`).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PlacementArg {
    /// Daemon d holds ranks d*k .. (d+1)*k.
    Block,
    /// Daemon d holds ranks d, d+D, d+2D, ...
    Cyclic,
}

/// The synthetic job (shared by `strata bench` and its emulator processes).
#[derive(Debug, Clone, Args)]
pub struct SynthArgs {
    /// Emulated daemons.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub daemons: u32,
    /// Tasks per daemon.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub tasks_per_daemon: u32,
    /// Equivalence classes (divergent call paths).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub eqclasses: u32,
    /// Frames from `_start` to the MPI entry.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(4..=1_000))]
    pub maxdepth: u32,
    /// Fraction of ranks in rank-specific leaves.
    #[arg(long, default_value_t = 0.001)]
    pub noise: f64,
    /// Samples per task.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub samples: u32,
    #[arg(long, value_enum, default_value = "block")]
    pub placement: PlacementArg,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl SynthArgs {
    pub fn params(&self) -> SynthParams {
        SynthParams {
            daemons: self.daemons,
            tasks_per_daemon: self.tasks_per_daemon,
            classes: self.eqclasses,
            depth: self.maxdepth,
            noise: self.noise.clamp(0.0, 1.0),
            samples: self.samples,
            threads_per_task: 0,
            placement: match self.placement {
                PlacementArg::Block => Placement::Block,
                PlacementArg::Cyclic => Placement::Cyclic,
            },
            seed: self.seed,
        }
    }

    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("--daemons={}", self.daemons),
            format!("--tasks-per-daemon={}", self.tasks_per_daemon),
            format!("--eqclasses={}", self.eqclasses),
            format!("--maxdepth={}", self.maxdepth),
            format!("--noise={}", self.noise),
            format!("--samples={}", self.samples),
            format!(
                "--placement={}",
                match self.placement {
                    PlacementArg::Block => "block",
                    PlacementArg::Cyclic => "cyclic",
                }
            ),
            format!("--seed={}", self.seed),
        ]
    }
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub synth: SynthArgs,
    /// Most children per tree node (default: the shallowest tree with at most 64).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=65_536))]
    pub fanout: Option<u32>,
    /// Edges from the front end to a daemon (1: no commnodes).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub depth: Option<u32>,
    /// OS processes the emulated daemons are spread over.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub emulators: u32,
    /// Compare the result with the trees built directly from the synthetic traces; exit 1
    /// when they differ.
    #[arg(long)]
    pub check: bool,
    /// Write the measurements as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Send job-wide bit vectors of global ranks at every level and merge them by union,
    /// as STAT did before the 208K paper: the baseline whose cost grows with the job.
    #[arg(long)]
    pub dense: bool,
    /// Also write the result directory here, as `strata attach -o` does (result.json,
    /// the tree files, report.html): a big result to open, at scales no machine has
    /// ranks for. Not with `--dense`.
    #[arg(long, value_name = "DIR", conflicts_with = "dense")]
    pub output: Option<PathBuf>,
}

/// The hidden role: `count` emulated daemons from `first` on.
#[derive(Debug, Args)]
pub struct EmulatorArgs {
    #[command(flatten)]
    pub synth: SynthArgs,
    #[arg(long, value_delimiter = ',', required = true)]
    pub parents: Vec<String>,
    #[arg(long)]
    pub first: u32,
    #[arg(long)]
    pub count: u32,
    /// The daemons' level in the tree (for their measurements).
    #[arg(long)]
    pub level: u32,
    /// Prepare replies of job-wide bit vectors (`strata bench --dense`).
    #[arg(long)]
    pub dense: bool,
}

#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// Addresses of the level above, comma-separated; the parent is chosen by index.
    #[arg(long, value_delimiter = ',', required = true)]
    pub parents: Vec<String>,
    /// Number of daemons in the session.
    #[arg(long)]
    pub daemons: u32,
    /// This daemon's index (default: the resource manager's node index).
    #[arg(long)]
    pub index: Option<u32>,
}

#[derive(Debug, Args, Default)]
pub struct CommnodeArgs {
    #[arg(long, required_unless_present = "in_job")]
    pub parent: Option<String>,
    #[arg(long, required_unless_present = "in_job")]
    pub index: Option<u32>,
    /// Its level in the tree (1: a child of the front end).
    #[arg(long, default_value_t = 1)]
    pub level: u32,
    /// Children's indices, `first-end` (end exclusive).
    #[arg(long, value_parser = parse_range, required_unless_present = "in_job")]
    pub children: Option<Range<u32>>,
    #[arg(long, value_parser = ["daemon", "commnode"], required_unless_present = "in_job")]
    pub child_role: Option<String>,
    /// Per child, the daemons below it (`first-end,...`), for reports.
    #[arg(long, value_delimiter = ',', value_parser = parse_range)]
    pub child_daemons: Vec<Range<u32>>,
    /// `HOST:PORT` to listen on; `auto` as the host: the address this host's name resolves to.
    #[arg(long, required_unless_present = "in_job")]
    pub listen: Option<String>,
    /// Launched into a job (one launch for a whole level): the arguments of every commnode
    /// of the level, one string each; this one takes the `SLURM_PROCID`-th.
    #[arg(
        long,
        allow_hyphen_values = true,
        conflicts_with_all = ["parent", "index", "children", "child_role", "listen"]
    )]
    pub in_job: Vec<String>,
}

fn parse_range(text: &str) -> Result<Range<u32>, String> {
    let (a, b) = text
        .split_once('-')
        .ok_or_else(|| format!("'{text}' is not a range first-end"))?;
    let a: u32 = a.parse().map_err(|_| format!("'{text}': bad start"))?;
    let b: u32 = b.parse().map_err(|_| format!("'{text}': bad end"))?;
    if a > b {
        return Err(format!("'{text}': start after end"));
    }
    Ok(a..b)
}

/// `--on-hang`: [`OnHang`] on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnHangArg {
    /// Detach and exit with code 3.
    Exit,
    /// Cancel the job (scancel; SIGTERM to the ranks of a local job), then exit 3.
    Cancel,
    /// Keep watching; report again only after the job has moved.
    Continue,
}

impl From<OnHangArg> for OnHang {
    fn from(a: OnHangArg) -> OnHang {
        match a {
            OnHangArg::Exit => OnHang::Exit,
            OnHangArg::Cancel => OnHang::Cancel,
            OnHangArg::Continue => OnHang::Continue,
        }
    }
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["job", "pids", "launcher_pid"])))]
pub struct WatchArgs {
    /// The job to watch: a Slurm job id (JOB or JOB.STEP).
    #[arg(value_name = "JOBID")]
    pub job: Option<String>,
    /// The job step to watch (default: the one with the most tasks).
    #[arg(long, value_name = "STEP", requires = "job")]
    pub step: Option<u32>,
    /// The ranks of a job on this host: the launcher (mpirun) ...
    #[arg(long, value_name = "PID", allow_negative_numbers = true, value_parser = parse_pid)]
    pub launcher_pid: Option<i32>,
    /// ... or the rank processes themselves, in rank order.
    #[arg(long, value_delimiter = ',', value_name = "PID,...", allow_negative_numbers = true, value_parser = parse_pid)]
    pub pids: Vec<i32>,
    /// Accept a --launcher-pid that is not a known MPI launcher (mpirun, mpiexec, prterun,
    /// orted, hydra_pmi_proxy, srun, ...): its descendants with an MPI rank are the ranks.
    #[arg(long, requires = "launcher_pid")]
    pub any_launcher: bool,
    /// Ranks monitored between alarms (ParaStack's random subset; another set is swapped in
    /// every 30 samples).
    #[arg(long, default_value_t = MonitorSet::DEFAULT_SIZE as u32, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub monitor: u32,
    /// The first sampling interval I (gaps are uniform in [I/2, 3I/2]; doubled while the
    /// samples are not random).
    #[arg(long, default_value = "400ms", value_parser = crate::cli::parse_duration, allow_hyphen_values = true)]
    pub interval: Duration,
    /// Significance of the hang test: a streak of k suspicious samples is a hang when
    /// q^k <= alpha.
    #[arg(long, default_value_t = 0.001)]
    pub alpha: f64,
    /// A frame whose function name matches this regex means "inside MPI", instead of
    /// strata's own definition (a frame of an MPI library or a C binding's name, in every
    /// binding's spelling, as "cut below MPI" and the verdict use; docs/MPI.md). For a site
    /// that wraps MPI in a layer of its own: `(?i)^(p?mpi_|comm_wait)`.
    #[arg(long, value_name = "REGEX")]
    pub mpi_pattern: Option<String>,
    /// Where the hang report goes (default: strata-watch-JOB-TIME in the current directory).
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
    /// What to do after reporting a hang.
    #[arg(long, value_enum, default_value = "exit")]
    pub on_hang: OnHangArg,
    /// Stop watching after this long without a hang (exit 0); default: until the job ends.
    #[arg(long = "for", value_name = "DURATION", value_parser = crate::cli::parse_duration)]
    pub watch_for: Option<Duration>,
    /// Samples of the snapshot taken when a hang is verified.
    #[arg(short = 'n', long, default_value_t = Sampling::DEFAULT_SAMPLES, value_parser = clap::value_parser!(u32).range(1..=Sampling::MAX_SAMPLES as i64))]
    pub samples: u32,
    /// Print the outcome as JSON on standard output (for cron and CI).
    #[arg(long)]
    pub json: bool,
    /// Print every probe (time, S_out, the detector's verdict) on stderr.
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Seed of the random choices (monitored ranks, gaps); default: from the clock.
    #[arg(long)]
    pub seed: Option<u64>,
    /// The resource manager (as for attach).
    #[arg(long, value_enum)]
    pub rm: Option<ResourceManager>,
    /// Daemons to start with the local resource manager.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub daemons: Option<u32>,
    /// Most children per tree node.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=65_536))]
    pub fanout: Option<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_default_text_is_the_sampling_default() {
        assert_eq!(
            parse_duration(Sampling::DEFAULT_INTERVAL_TEXT),
            Ok(Sampling::DEFAULT_INTERVAL)
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
