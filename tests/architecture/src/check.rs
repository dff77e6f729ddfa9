//! The three workspace checks, each returning its failure text (empty when the workspace
//! passes), so the tests only assert and print.

use crate::cycles::{Cycle, find_cycles};
use crate::error::Error;
use crate::graph::ModuleGraph;
use crate::lines::{FileLines, member_sources};
use crate::modtree::ModuleTree;
use crate::report;
use crate::workspace::{CrateRoot, Workspace};
use std::fmt::Write;
use std::path::Path;

/// One crate's module graph, its cycles, and the files that could not be read.
#[derive(Debug)]
pub struct CrateCycles {
    pub name: String,
    pub graph: ModuleGraph,
    pub cycles: Vec<Cycle>,
    pub problems: Vec<Error>,
}

/// Builds the module graph of the crate rooted at `root` and finds its cycles.
pub fn crate_cycles(root: &CrateRoot) -> CrateCycles {
    let tree = ModuleTree::load(&root.root_file);
    let graph = ModuleGraph::build(&tree);
    let cycles = find_cycles(&graph);
    CrateCycles {
        name: root.name.clone(),
        graph,
        cycles,
        problems: tree.problems,
    }
}

impl CrateCycles {
    /// The failure text for this crate: unreadable files, then cycles. Empty if clean.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for problem in &self.problems {
            let _ = writeln!(out, "crate {}: {problem}", self.name);
        }
        out + &report::crate_cycles(&self.name, &self.graph, &self.cycles)
    }
}

/// Every crate of every member: cycles and unreadable files. Empty if there are none.
pub fn module_cycles(workspace: &Workspace) -> String {
    let mut out = String::new();
    let mut total = 0;
    for member in &workspace.members {
        for root in &member.crates {
            let checked = crate_cycles(root);
            total += checked.cycles.len();
            out += &checked.report();
        }
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "{total} module cycles in the workspace (an edge A -> B: A's own code names an item defined in B)\n{out}"
    )
}

/// Every `.rs` file under a member's `src/` longer than `limit` lines, longest first.
pub fn oversized_files(workspace: &Workspace, limit: usize) -> Result<String, Error> {
    let mut offenders: Vec<FileLines> = Vec::new();
    for member in &workspace.members {
        offenders.extend(
            member_sources(member)?
                .into_iter()
                .filter(|f| f.lines > limit),
        );
    }
    offenders.sort_by(|a, b| b.lines.cmp(&a.lines).then_with(|| a.path.cmp(&b.path)));
    let mut out = String::new();
    if offenders.is_empty() {
        return Ok(out);
    }
    let _ = writeln!(out, "{} source files over {limit} lines:", offenders.len());
    for file in offenders {
        let path = relative(&workspace.root, &file.path);
        let _ = writeln!(out, "  {:>6} {path}", file.lines);
    }
    Ok(out)
}

/// Whether `frontend`'s `src/` lines are under `max_percent` of all members' `src/` lines
/// (members in `excluded` counted in neither). The failure text has the per-member table.
pub fn frontend_share(
    workspace: &Workspace,
    frontend: &str,
    excluded: &[&str],
    max_percent: usize,
) -> Result<String, Error> {
    let mut table = Vec::new();
    for member in &workspace.members {
        if excluded.contains(&member.package.as_str()) {
            continue;
        }
        let lines: usize = member_sources(member)?.iter().map(|f| f.lines).sum();
        table.push((member.package.clone(), lines));
    }
    let total: usize = table.iter().map(|(_, lines)| lines).sum();
    let Some(&(_, front)) = table.iter().find(|(package, _)| package == frontend) else {
        return Ok(format!("no member package named {frontend}\n"));
    };
    if front * 100 < total * max_percent {
        return Ok(String::new());
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{frontend} has {front} of {total} source lines ({:.1}%), not under {max_percent}%:",
        percent(front, total)
    );
    for (package, lines) in &table {
        let _ = writeln!(
            out,
            "  {package:<24} {lines:>7} {:>5.1}%",
            percent(*lines, total)
        );
    }
    Ok(out)
}

// Reporting only: the counts are far below f64's exact integer range.
#[allow(clippy::cast_precision_loss)]
fn percent(part: usize, total: usize) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * part as f64 / total as f64
    }
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
