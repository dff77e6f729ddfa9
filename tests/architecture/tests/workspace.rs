//! The architecture rules, checked over the real workspace (every member of the root
//! `Cargo.toml`). Each test fails listing every problem, not just the first.

use std::path::Path;
use strata_architecture::check::{frontend_share, module_cycles, oversized_files};
use strata_architecture::workspace::Workspace;

/// Longest a source file may be: past this a file holds more than one idea.
const MAX_FILE_LINES: usize = 1200;
/// The front end's most share of the workspace's source lines: logic belongs in the crates
/// it drives (filters, daemon, commnode, launcher), where it is reusable and tested alone.
const MAX_FRONTEND_PERCENT: usize = 25;

fn workspace() -> Workspace {
    Workspace::discover(Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_or_else(|e| panic!("cannot read the workspace: {e}"))
}

#[test]
fn no_module_cycles() {
    let report = module_cycles(&workspace());
    assert!(report.is_empty(), "\n{report}");
}

#[test]
fn no_source_file_over_1200_lines() {
    let report = oversized_files(&workspace(), MAX_FILE_LINES)
        .unwrap_or_else(|e| panic!("cannot count lines: {e}"));
    assert!(report.is_empty(), "\n{report}");
}

#[test]
fn frontend_is_thin() {
    // This crate checks the others; its own size says nothing about the front end's.
    let report = frontend_share(
        &workspace(),
        "strata-frontend",
        &["strata-architecture"],
        MAX_FRONTEND_PERCENT,
    )
    .unwrap_or_else(|e| panic!("cannot count lines: {e}"));
    assert!(report.is_empty(), "\n{report}");
}
