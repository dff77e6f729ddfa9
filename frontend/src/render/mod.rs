//! Renderings of a result: terminal text, STAT-compatible DOT, folded stacks, JSON.

pub mod dot;
pub mod folded;
pub mod text;

use crate::result::{StrataResult, TreeKind};
use std::str::FromStr;
use strata_filters::{Frame, Granularity, ViewOptions};

/// An output format of `strata view --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Dot,
    Json,
    Folded,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "text" => Ok(Format::Text),
            "dot" => Ok(Format::Dot),
            "json" => Ok(Format::Json),
            "folded" => Ok(Format::Folded),
            _ => Err(format!(
                "unknown format '{s}' (expected text, dot, json or folded)"
            )),
        }
    }
}

/// Renders `result` in `format`. JSON is always the whole result (all trees, finest
/// granularity); the other formats draw tree `kind` in view `opts`.
pub fn render(
    result: &StrataResult,
    format: Format,
    kind: TreeKind,
    opts: ViewOptions,
    text_opts: text::TextOptions,
) -> String {
    match format {
        Format::Text => text::render(result, kind, opts, text_opts),
        Format::Dot => dot::render(result, kind, opts),
        Format::Json => result.to_json(),
        Format::Folded => folded::render(result, kind, opts),
    }
}

/// What a frame looks like in a label of the given view. The frame is already projected
/// to the view's granularity, so what it carries is what the view shows.
pub fn frame_text(frame: &Frame) -> String {
    let Some(c) = frame.code() else {
        return frame.name();
    };
    let mut s = frame.name();
    if let (Some(_), Some(file), Some(line)) = (&c.function, &c.file, c.line) {
        let base = file.rsplit('/').next().unwrap_or(file);
        s.push_str(&format!(" @ {base}:{line}"));
    }
    if c.inlined {
        s.push_str(" [inlined]");
    }
    s
}

/// [`frame_text`] with a progress label after the function name, as in STAT's temporal
/// order views: `get_norm@[T1.2] @ solver.c:58`.
pub fn frame_text_labelled(frame: &Frame, label: Option<&crate::progress::order::Label>) -> String {
    let text = frame_text(frame);
    let Some(label) = label.filter(|l| !l.is_empty()) else {
        return text;
    };
    let name = frame.name();
    match text.strip_prefix(&name) {
        Some(rest) => format!("{name}@[{label}]{rest}"),
        None => format!("{text}@[{label}]"),
    }
}

/// The one-line summary above a tree.
pub fn header_line(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> String {
    header_parts(result, kind, opts).join(" · ")
}

/// The items of [`header_line`]: the job, ranks sampled, samples, tree and view. The
/// terminal UI wraps them over its status lines.
pub fn header_parts(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> Vec<String> {
    let m = &result.meta;
    let mut job = format!("job {} ({})", m.job.id, m.job.resource_manager);
    if let Some(step) = &m.job.step {
        job.push_str(&format!(" step {step}"));
    }
    let mut parts = vec![
        job,
        format!("{} of {} ranks", result.sampled_ranks(), m.job_size),
        format!(
            "{} sample{} @ {} ms",
            m.sampling.samples,
            if m.sampling.samples == 1 { "" } else { "s" },
            m.sampling.interval_ms
        ),
    ];
    if m.sampling.threads {
        parts.push("all threads".to_string());
    }
    parts.push(format!("{} tree", kind.as_str().to_uppercase()));
    parts.push(opts.granularity.to_string());
    if opts.cut_below_mpi {
        parts.push("cut below MPI".to_string());
    }
    parts
}

/// The granularity names for help texts.
pub fn granularity_names() -> String {
    Granularity::ALL.map(|g| g.as_str()).join(", ")
}
