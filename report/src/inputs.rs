//! What a report is drawn from and how: the analyses and the options.

use std::path::PathBuf;
use strata_progress::order::ProgressOrder;
use strata_verdict::Verdict;

/// What a report is drawn from, besides the result.
#[derive(Clone, Copy, Debug)]
pub struct Analyses<'a> {
    pub verdict: &'a Verdict,
    pub progress: Option<&'a ProgressOrder>,
}

/// How to draw it.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Leave out source snippets, host names and executables' paths.
    pub redact: bool,
    /// Where to look for source files besides the paths the debug information names.
    pub source_dirs: Vec<PathBuf>,
}
