//! Printing a result and writing its files, as `view`, `attach`, `demo` and `watch` do.

use crate::cli::{ColorArg, FormatArg, GranularityArg, ShowArgs, TreeArg};
use crate::exit::Exit;

use crate::failure::Failure;
use std::io::{IsTerminal, Write};
use strata_filters::{Granularity, ViewOptions};
use strata_result::annotation::{Annotation, Annotations};
use strata_result::directory as output;
use strata_result::render::{self, Format, text::TextOptions};
use strata_result::{StrataResult, TreeKind};

/// The progress order of `result`, when `--progress` asks for it.
pub fn progress_order(
    args: &ShowArgs,
    result: &StrataResult,
) -> Option<strata_progress::order::ProgressOrder> {
    args.progress.then(|| {
        let mut sources = strata_progress::source::SourceIndex::new(args.source_dir.clone());
        strata_progress::order::analyze(result, &mut sources)
    })
}

/// The view and tree `args` ask for.
pub fn view_options(args: &ShowArgs) -> (ViewOptions, TreeKind) {
    let opts = ViewOptions {
        granularity: match args.granularity {
            GranularityArg::Function => Granularity::Function,
            GranularityArg::Line => Granularity::Line,
            GranularityArg::Module => Granularity::Module,
        },
        cut_below_mpi: !args.no_cut && !args.full_stacks,
        hide_start_up: !args.full_stacks,
        hide_interpreter: !args.full_stacks,
        mpi_call_names: !args.full_stacks,
        hide_runtime_threads: !args.full_stacks && !args.runtime_threads,
    };
    let kind = match args.tree {
        TreeArg::TwoD => TreeKind::TwoD,
        TreeArg::ThreeD => TreeKind::ThreeD,
    };
    (opts, kind)
}

/// Whether to use colour: `--color`, and for `auto` a terminal without `NO_COLOR` (set and
/// not empty: <https://no-color.org>).
pub fn color_on(choice: ColorArg, terminal: bool) -> bool {
    match choice {
        ColorArg::Always => true,
        ColorArg::Never => false,
        ColorArg::Auto => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    }
}

/// The analyses drawn over a result: the verdict always, the progress order when
/// `--progress` asked for it. Computed once, shown on screen and kept in the files.
#[derive(Debug)]
pub struct Analyses {
    pub progress: Option<strata_progress::order::ProgressOrder>,
    pub verdict: strata_verdict::Verdict,
    /// How the HTML report is drawn: where the sources are, and `--redact`.
    pub report: strata_report::Options,
}

impl Analyses {
    /// The verdict on `result` (timed under `STRATA_TIMINGS`), with `progress`; the MPI
    /// calls' arguments are read from the sources, found as DWARF names them or under
    /// `source_dirs`.
    pub fn new(
        result: &StrataResult,
        progress: Option<strata_progress::order::ProgressOrder>,
        source_dirs: &[std::path::PathBuf],
    ) -> Analyses {
        let t = std::time::Instant::now();
        let mut sources = strata_progress::source::SourceIndex::new(source_dirs.to_vec());
        let verdict = strata_verdict::Verdict::of(result, &mut sources, progress.as_ref());
        if std::env::var_os("STRATA_TIMINGS").is_some() {
            eprintln!(
                "strata: timing: verdict: {:.2} ms ({})",
                t.elapsed().as_secs_f64() * 1e3,
                verdict.decision.kind.as_str()
            );
        }
        let report = strata_report::Options {
            redact: false,
            source_dirs: source_dirs.to_vec(),
        };
        Analyses {
            progress,
            verdict,
            report,
        }
    }

    /// The HTML report of `result`.
    pub fn html(&self, result: &StrataResult) -> String {
        let drawn = strata_report::Analyses {
            verdict: &self.verdict,
            progress: self.progress.as_ref(),
        };
        strata_report::html(result, drawn, &self.report)
    }
}

/// The HTML report was asked for (`-f html`): the caller writes it where `-o` says, or
/// on standard output.
#[derive(Debug)]
pub struct Html;

/// Prints `result` on standard output as `args` say; returns the analyses it drew (the
/// result files carry them too). For `-f html` nothing is printed: the caller writes
/// [`Analyses::html`].
pub fn show(result: &StrataResult, args: &ShowArgs) -> Result<(Analyses, Option<Html>), Failure> {
    let (opts, kind) = view_options(args);
    let t = std::time::Instant::now();
    let progress = progress_order(args, result);
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
        FormatArg::Html => {
            let mut analyses = Analyses::new(result, progress, &args.source_dir);
            analyses.report.redact = args.redact;
            return Ok((analyses, Some(Html)));
        }
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
    let mut analyses = Analyses::new(result, progress, &args.source_dir);
    analyses.report.redact = args.redact;
    let (progress, verdict) = (&analyses.progress, &analyses.verdict);
    let text = match (progress, format) {
        // The whole result for scripts, with the verdict's object.
        (None, Format::Json) => result.to_json_with(Some(verdict)),
        (Some(p), Format::Json) => {
            strata_progress::report::json_text_with(p, &verdict.result_fields())
        }
        (_, Format::Text) => {
            // After the tree: the progress order's report, then "Why it hangs".
            let mut drawn: Vec<&dyn Annotation> = Vec::new();
            if let Some(p) = progress {
                drawn.push(p);
            }
            if !args.no_verdict {
                drawn.push(verdict);
            }
            render::text::render_annotated(result, kind, opts, text_opts, Some(&Annotations(drawn)))
        }
        (Some(p), Format::Dot) => render::dot::render_annotated(result, kind, opts, Some(p)),
        (_, Format::Dot | Format::Folded) => render::render(result, format, kind, opts, text_opts),
    };
    write_stdout(&text)?;
    Ok((analyses, None))
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

/// What writing a result directory cost: `strata attach` prints it under
/// `STRATA_TIMINGS`, `strata bench --output` reports it.
#[derive(Debug, Clone, Copy)]
pub struct Written {
    /// result.json, the tree files and the texts.
    pub files: std::time::Duration,
    /// Drawing and writing report.html.
    pub report: std::time::Duration,
    pub report_bytes: usize,
}

/// Writes the result directory and says where on stderr. `result.json` carries the verdict;
/// with a progress order, its labels go into the tree files and
/// `progress.txt`/`progress.json` are added.
pub fn write_files(
    result: &StrataResult,
    dir: &std::path::Path,
    analyses: &Analyses,
) -> Result<Written, Failure> {
    // progress.json carries the verdict too: a script reading the order reads the answer.
    let progress = analyses
        .progress
        .as_ref()
        .map(|order| strata_progress::report::WithFields {
            order,
            fields: analyses.verdict.result_fields(),
        });
    let mut drawn: Vec<&dyn Annotation> = Vec::new();
    if let Some(p) = &progress {
        drawn.push(p);
    }
    drawn.push(&analyses.verdict);
    let cannot = |e: std::io::Error| {
        Failure::new(
            Exit::BadInput,
            format!("cannot write result files to {}: {e}", dir.display()),
        )
    };
    let t = std::time::Instant::now();
    let mut written = output::write_all(result, dir, Some(&Annotations(drawn))).map_err(cannot)?;
    let files = t.elapsed();
    let t = std::time::Instant::now();
    let report = dir.join(strata_report::FILE);
    let html = analyses.html(result);
    std::fs::write(&report, &html).map_err(cannot)?;
    written.push(report);
    let cost = Written {
        files,
        report: t.elapsed(),
        report_bytes: html.len(),
    };
    eprintln!("strata: wrote {} files to {}", written.len(), dir.display());
    Ok(cost)
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

/// The terminal UI's first view: granularity, cut, tree, progress order, source dirs.
pub fn view_state(args: &ShowArgs) -> strata_tui::ViewState {
    let (opts, kind) = view_options(args);
    strata_tui::ViewState {
        kind,
        opts,
        progress: args.progress,
        source_dirs: args.source_dir.clone(),
        ..Default::default()
    }
}
