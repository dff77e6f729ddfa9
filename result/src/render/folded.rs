//! Folded stacks (`main;solve;MPI_Barrier 6`), the input format of flame-graph tools
//! (Brendan Gregg's flamegraph.pl, inferno, speedscope).
//!
//! Each line is one path where ranks end, and the number of ranks that end there. In the
//! 3D tree a rank is counted once per place it was seen, so counts are "ranks seen here".

use super::label::frame_text;
use crate::model::{StrataResult, TreeKind};
use strata_filters::{RankSet, ViewOptions, view};

/// Renders tree `kind` of `result` in view `opts` as folded stacks.
pub fn render(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> String {
    let tree = view(result.tree(kind), opts);
    let mut lines: Vec<String> = Vec::new();
    for id in tree.node_ids().skip(1) {
        let ending: RankSet = tree.tasks_ending_at(id);
        if ending.is_empty() {
            continue;
        }
        let frames: Vec<String> = tree
            .path_frames(id)
            .iter()
            // ';' separates frames; flame-graph tools split the count at the last space.
            .map(|f| frame_text(f).replace(';', ":"))
            .collect();
        lines.push(format!("{} {}", frames.join(";"), ending.len()));
    }
    lines.sort();
    let mut out = lines.join("\n");
    out.push('\n');
    out
}
