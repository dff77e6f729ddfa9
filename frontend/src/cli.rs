//! Command-line interface. Parsing (clap) stays here at the edge; subcommands return a
//! [`Failure`] that `main` turns into one line on stderr and an exit code from
//! [`crate::exit`].

use crate::exit::{self, Exit};
use crate::output;
use crate::render::{self, Format, text::TextOptions};
use crate::result::{StrataResult, TreeKind};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use strata_filters::{Granularity, ViewOptions};

/// A failed command: the message (one line, says what to do) and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
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
    /// Print every thread's stack of running processes (like `eu-stack -p` or
    /// `py-spy dump`); each process is stopped for microseconds and left running.
    #[command(after_help = exit::table())]
    Dump(DumpArgs),
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
    /// Output format.
    #[arg(long, short = 'f', value_enum, default_value = "text")]
    pub format: FormatArg,
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
    /// Also write every rendering (result.json, tree.txt, tree-3d.dot, tree-2d.dot,
    /// stacks.folded) into this directory.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// On a terminal, print every branch and every class (by default a node shows its 16
    /// largest branches and the class list its 10 smallest and 10 largest classes).
    #[arg(long)]
    pub all: bool,
    /// Colour in text output (NO_COLOR in the environment also turns it off).
    #[arg(long, value_enum, default_value = "auto")]
    pub color: ColorArg,
}

/// Runs a parsed command line.
pub fn run(cli: Cli) -> Result<Exit, Failure> {
    match cli.command {
        Command::View(args) => view(args),
        Command::Dump(args) => crate::dump::run(args),
    }
}

fn view(args: ViewArgs) -> Result<Exit, Failure> {
    let result = StrataResult::read(&args.result)
        .map_err(|e| Failure::new(Exit::BadInput, e.to_string()))?;
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
    let format = match args.format {
        FormatArg::Text => Format::Text,
        FormatArg::Dot => Format::Dot,
        FormatArg::Json => Format::Json,
        FormatArg::Folded => Format::Folded,
    };
    let stdout = std::io::stdout();
    let tty = stdout.is_terminal();
    let color = match args.color {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let text_opts = if tty && !args.all {
        TextOptions::terminal(color, terminal_width())
    } else {
        TextOptions {
            color,
            ..TextOptions::default()
        }
    };
    let body = render::render(&result, format, kind, opts, text_opts);
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(body.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe (`strata view r.json | head`) is the reader's choice, not an error.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return Err(Failure::new(
                Exit::Internal,
                format!("cannot write to standard output: {e}"),
            ));
        }
    }
    if let Some(dir) = args.output {
        let written = output::write_all(&result, &dir).map_err(|e| {
            Failure::new(
                Exit::BadInput,
                format!("cannot write result files to {}: {e}", dir.display()),
            )
        })?;
        eprintln!("strata: wrote {} files to {}", written.len(), dir.display());
    }
    Ok(if result.meta.missing.is_empty() {
        Exit::Complete
    } else {
        Exit::Partial
    })
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
