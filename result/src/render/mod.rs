//! Renderings of a result: terminal text, STAT-compatible DOT, folded stacks, JSON.

pub mod dot;
pub mod folded;
pub mod header;
pub mod label;
pub mod text;

pub use header::{granularity_names, header_line, header_parts};
pub use label::{count_label, frame_text, frame_text_labelled};

use crate::model::{StrataResult, TreeKind};
use std::str::FromStr;
use strata_filters::ViewOptions;

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
