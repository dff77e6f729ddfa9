//! Command-line interface. Parsing (clap) stays here at the edge; subcommands return a
//! [`Failure`] that `main` turns into one line on stderr and an exit code from
//! [`crate::exit`].

use crate::exit::{self, Exit};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use strata_filters::{Granularity, ViewOptions};
use strata_result::annotation::Annotation;
use strata_result::directory as output;
use strata_result::render::{self, Format, text::TextOptions};
use strata_result::{StrataResult, TreeKind};

/// A failed command: the message (one line, says what to do) and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl From<strata_tui::TuiError> for Failure {
    fn from(e: strata_tui::TuiError) -> Self {
        Failure::new(Exit::Internal, e.to_string())
    }
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Failure {
            exit,
            message: message.into(),
        }
    }
}

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
    Watch(crate::commands::watch::WatchArgs),
    /// Print every thread's stack of running processes (like `eu-stack -p` or
    /// `py-spy dump`); each process is stopped for microseconds and left running.
    #[command(after_help = exit::table())]
    Dump(DumpArgs),
    /// Emulate a large job (STATBench-style): synthetic daemons answer the real protocol,
    /// real commnodes merge; prints the time per phase, bytes per level, peak memory.
    #[command(after_help = exit::table())]
    Bench(crate::bench::BenchArgs),
    /// Emulated daemons of `strata bench` (internal).
    #[command(hide = true)]
    BenchDaemons(crate::bench::EmulatorArgs),
    /// A daemon of the tree network (started by `strata attach`, internal).
    #[command(hide = true)]
    Daemon(crate::roles::DaemonArgs),
    /// A communication process of the tree network (started by `strata attach`, internal).
    #[command(hide = true)]
    Commnode(crate::roles::CommnodeArgs),
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
#[command(group(clap::ArgGroup::new("target").required(true).args(["job", "pids", "launcher_pid"])))]
pub struct AttachArgs {
    /// The resource manager's job id (Slurm: `1234`, or `1234.0` for one step): strata
    /// starts a daemon on each of the job's nodes.
    #[arg(value_name = "JOBID")]
    pub job: Option<String>,
    /// The step to sample (default: the whole job when it has one step, else the step with
    /// the most tasks).
    #[arg(long, value_name = "STEP", requires = "job")]
    pub step: Option<u32>,
    /// The ranks' process ids on this host, in rank order (rank i is the i-th pid).
    #[arg(long, value_delimiter = ',', value_name = "PID,...")]
    pub pids: Vec<i32>,
    /// A launcher on this host (mpirun, prterun, mpiexec, srun): its descendants that
    /// carry an MPI rank in their environment are the ranks.
    #[arg(long, value_name = "PID")]
    pub launcher_pid: Option<i32>,
    /// Number of samples.
    #[arg(short = 'n', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub samples: u32,
    /// Time between samples (`100ms`, `0.5s`, `2s`), varied by up to 20% at random.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
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
    #[arg(short = 'n', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub samples: u32,
    /// Time between samples.
    #[arg(long, default_value = "100ms", value_parser = parse_duration)]
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

#[derive(Debug, Args)]
pub struct DumpArgs {
    /// Process ids (several, or comma-separated).
    #[arg(required = true, value_delimiter = ',', value_name = "PID")]
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
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FormatArg {
    Text,
    Dot,
    Json,
    Folded,
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
    /// stacks.folded) into this directory.
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
    /// Where to look for source files the debug information names but that are not at
    /// that path (repeatable; like gdb's `directory`).
    #[arg(long, value_name = "DIR")]
    pub source_dir: Vec<PathBuf>,
}

impl ShowArgs {
    /// The terminal UI's first view: granularity, cut, tree, progress order, source dirs.
    pub fn view_state(&self) -> strata_tui::ViewState {
        let (opts, kind) = view_options(self);
        strata_tui::ViewState {
            kind,
            opts,
            progress: self.progress,
            source_dirs: self.source_dir.clone(),
            ..Default::default()
        }
    }

    /// The progress order of `result`, when `--progress` asks for it.
    pub fn progress_order(
        &self,
        result: &StrataResult,
    ) -> Option<strata_progress::order::ProgressOrder> {
        self.progress.then(|| {
            let mut sources = strata_progress::source::SourceIndex::new(self.source_dir.clone());
            strata_progress::order::analyze(result, &mut sources)
        })
    }
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, Failure> {
    match cli.command {
        Command::View(args) => view(args),
        Command::Dump(args) => crate::dump::run(args),
        Command::Attach(args) => crate::attach::run(args),
        Command::Demo(args) => crate::demo::run(args),
        Command::DemoRank(args) => crate::demo::rank_main(args),
        Command::Daemon(args) => crate::roles::daemon(args),
        Command::Bench(args) => crate::bench::run(args),
        Command::BenchDaemons(args) => crate::bench::emulate(args),
        Command::Commnode(args) => crate::roles::commnode(args),
        Command::Watch(args) => crate::commands::watch::run(args),
    }
}

fn view(args: ViewArgs) -> Result<Exit, Failure> {
    let result = StrataResult::read(&args.result)
        .map_err(|e| Failure::new(Exit::BadInput, e.to_string()))?;
    // The interactive view needs a terminal on both ends; a format asked for by name, a
    // pipe or a file get printed output, as scripts expect.
    let interactive = !args.print
        && args.show.format.is_none()
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    if interactive {
        if let Some(dir) = &args.output {
            write_files(&result, dir, args.show.progress_order(&result).as_ref())?;
        }
        let state = args.show.view_state();
        let color = color_on(args.show.color, true);
        let last = strata_tui::run(result, Box::new(strata_tui::Saved), state, color)?;
        return Ok(Exit::of_result(&last));
    }
    let progress = show(&result, &args.show)?;
    if let Some(dir) = args.output {
        write_files(&result, &dir, progress.as_ref())?;
    }
    Ok(Exit::of_result(&result))
}

/// The view and tree `args` ask for.
pub fn view_options(args: &ShowArgs) -> (ViewOptions, TreeKind) {
    let opts = ViewOptions {
        granularity: match args.granularity {
            GranularityArg::Function => Granularity::Function,
            GranularityArg::Line => Granularity::Line,
            GranularityArg::Module => Granularity::Module,
        },
        cut_below_mpi: !args.no_cut,
    };
    let kind = match args.tree {
        TreeArg::TwoD => TreeKind::TwoD,
        TreeArg::ThreeD => TreeKind::ThreeD,
    };
    (opts, kind)
}

/// Whether to use colour: `--color`, and for `auto` a terminal without `NO_COLOR` (set and
/// not empty: https://no-color.org).
pub fn color_on(choice: ColorArg, terminal: bool) -> bool {
    match choice {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// Prints `result` on standard output as `args` say; returns the progress order when
/// `--progress` asked for one (the result files carry it too).
pub fn show(
    result: &StrataResult,
    args: &ShowArgs,
) -> Result<Option<strata_progress::order::ProgressOrder>, Failure> {
    let (opts, kind) = view_options(args);
    let t = std::time::Instant::now();
    let progress = args.progress_order(result);
    if let Some(p) = &progress
        && std::env::var_os("STRATA_TIMINGS").is_some()
    {
        eprintln!(
            "strata: timing: progress order: {:.1} ms ({} classes, {} branching points)",
            t.elapsed().as_secs_f64() * 1e3,
            p.classes.len(),
            p.branch_points.len()
        );
    }
    let format = match args.format.unwrap_or(FormatArg::Text) {
        FormatArg::Text => Format::Text,
        FormatArg::Dot => Format::Dot,
        FormatArg::Json => Format::Json,
        FormatArg::Folded => Format::Folded,
    };
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let color = color_on(args.color, tty);
    let text_opts = if tty && !args.all {
        TextOptions::terminal(color, terminal_width())
    } else {
        TextOptions {
            color,
            ..TextOptions::default()
        }
    };
    let text = match (&progress, format) {
        (None, _) => render::render(result, format, kind, opts, text_opts),
        (Some(p), Format::Text) => {
            render::text::render_annotated(result, kind, opts, text_opts, Some(p))
        }
        (Some(p), Format::Dot) => render::dot::render_annotated(result, kind, opts, Some(p)),
        (Some(p), Format::Json) => strata_progress::report::json_text(p),
        (Some(_), Format::Folded) => render::render(result, format, kind, opts, text_opts),
    };
    write_stdout(&text)?;
    Ok(progress)
}

/// Writes `text` to standard output. A closed pipe (`strata ... | head`) is the reader's
/// choice, not an error.
pub fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::new(
            Exit::Internal,
            format!("cannot write to standard output: {e}"),
        )),
    }
}

/// Writes the result directory and says where on stderr; with a progress order, its labels
/// go into the tree files and `progress.txt`/`progress.json` are added.
pub fn write_files(
    result: &StrataResult,
    dir: &std::path::Path,
    progress: Option<&strata_progress::order::ProgressOrder>,
) -> Result<(), Failure> {
    let written =
        output::write_all(result, dir, progress.map(|p| p as &dyn Annotation)).map_err(|e| {
            Failure::new(
                Exit::BadInput,
                format!("cannot write result files to {}: {e}", dir.display()),
            )
        })?;
    eprintln!("strata: wrote {} files to {}", written.len(), dir.display());
    Ok(())
}

fn terminal_width() -> Option<usize> {
    if let Some(cols) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
    {
        return Some(cols);
    }
    terminal_size::terminal_size().map(|(w, _)| w.0 as usize)
}
