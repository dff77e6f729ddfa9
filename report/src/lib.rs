//! The HTML report: one self-contained file (`report.html`) that anyone can open in a
//! browser, attach to a ticket or print. It leads with the verdict (the ranks to debug and
//! why), then draws the prefix tree as a graph (collapsible, zoom and pan, STAT's
//! `count:[ranks]` edge labels, nodes coloured by equivalence class as in the terminal UI)
//! in the 2D or 3D tree at function or line granularity, the classes with their
//! representatives, each rank's stack on request with the source lines around its
//! frames, the progress order, the variables read and the wait-for graph.
//!
//! * [`data`]: what the page's script needs, as one JSON object: the four views' trees in
//!   display order, their classes, the ranks and the source snippets.
//! * [`snippets`]: the source lines around the program's frames, where the sources are
//!   found.
//! * [`page`]: the page itself. Everything a reader must see without the script (the job,
//!   the verdict, the classes, the progress order, the wait-for graph as SVG) is written
//!   as HTML, so a PDF printed from it and a browser with scripts off show it too; the
//!   script (`assets/report.js`) draws the tree and answers clicks and keys.
//!
//! Design constraints: pure code over a result and its analyses; the only I/O is reading
//! the source files for the snippets. The page loads nothing: no network, no fonts, no
//! external scripts. `redact` leaves out what a ticket must not carry (source lines, host
//! names, executables' paths).

pub mod data;
mod escape;
mod inputs;
pub mod page;
pub mod snippets;
mod wait_for;

pub use inputs::{Analyses, Options};

use strata_result::StrataResult;

/// The report's file name in a result directory.
pub const FILE: &str = "report.html";

/// The report of `result` as one HTML document.
pub fn html(result: &StrataResult, analyses: Analyses, options: &Options) -> String {
    let data = data::ReportData::new(result, analyses, options);
    page::render(result, analyses, options, &data)
}
