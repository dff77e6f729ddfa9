//! What the page's script needs, as one JSON object embedded in the page.
//!
//! The four views (2D and 3D tree, function and line granularity) are derived here, not in
//! the browser, with the same view options, classes and sibling order as the terminal, so
//! the report and `strata view` never disagree. Each view's nodes are listed in display
//! order (depth first, siblings least progressed first, then by lowest rank), in columns
//! (one array per field) to keep a large tree's page small; frame texts are shared through
//! one string table.

use crate::inputs::{Analyses, Options};
use crate::snippets::Snippets;
use rustc_hash::FxHashMap;
use serde::Serialize;
use strata_filters::taskset::format_set;
use strata_filters::{
    Frame, Granularity, NodeClass, NodeId, PrefixTree, RankSet, TaskSet, ViewOptions,
    equivalence_classes, node_classes, view,
};
use strata_result::render::{frame_text, header_line};
use strata_result::{StrataResult, TreeKind};

/// Jobs up to this size carry each rank's host, pid and state; a larger one names them in
/// `result.json` only (a million ranks' rows would be most of the page).
pub const MAX_RANK_ROWS: u32 = 65_536;

/// The whole object.
#[derive(Debug, Serialize)]
pub struct ReportData {
    /// Frame texts and details, indexed by the views' `text` and `detail` columns.
    pub strings: Vec<String>,
    /// `2d-function`, `2d-line`, `3d-function`, `3d-line`.
    pub views: Vec<(String, ViewData)>,
    /// Each rank's row, when the job has at most [`MAX_RANK_ROWS`] ranks.
    pub ranks: Option<Vec<RankRow>>,
    /// The states the verdict saw the ranks in: (the whole rank list, the line).
    pub seen: Vec<(String, String)>,
    /// Source lines around program frames, indexed by the views' `snippet` column.
    pub snippets: Snippets,
    pub job_size: u32,
    pub threads: bool,
}

/// One view's tree.
#[derive(Debug, Default, Serialize)]
pub struct ViewData {
    /// The header line (`job 4711 (slurm) · 32 of 32 ranks · ...`).
    pub header: String,
    /// Per node, in display order (node 0 is the root): its parent's index (-1 for the
    /// root), frame text and detail (indices into `strings`), task count and rank list,
    /// thread count (with threads), class (-1: several), progress label (empty: none),
    /// kind (`m` MPI call, `s` special frame, `y` Python, `c` other code), snippet (-1:
    /// none).
    pub parent: Vec<i64>,
    pub text: Vec<u32>,
    pub detail: Vec<u32>,
    pub count: Vec<u64>,
    pub ranks: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<Vec<u64>>,
    pub class: Vec<i64>,
    pub label: Vec<String>,
    pub kind: String,
    pub snippet: Vec<i64>,
    /// The view's equivalence classes, smallest first.
    pub classes: Vec<ClassData>,
}

/// One equivalence class of a view.
#[derive(Debug, Serialize)]
pub struct ClassData {
    pub count: u64,
    pub ranks: String,
    /// The lowest rank: the one to hand to a debugger.
    pub representative: u32,
    /// The nodes (display-order indices) its tasks' paths end at.
    pub leaves: Vec<u32>,
}

/// One rank's row.
#[derive(Debug, Serialize)]
pub struct RankRow {
    pub rank: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
}

/// The view options of each of the report's views: what `strata attach` prints, at
/// `granularity`.
pub fn view_options(granularity: Granularity) -> ViewOptions {
    ViewOptions {
        granularity,
        ..ViewOptions::default()
    }
}

/// The report's views: (key, tree kind, granularity), the first the one shown first.
pub const VIEWS: [(&str, TreeKind, Granularity); 4] = [
    ("3d-function", TreeKind::ThreeD, Granularity::Function),
    ("3d-line", TreeKind::ThreeD, Granularity::Line),
    ("2d-function", TreeKind::TwoD, Granularity::Function),
    ("2d-line", TreeKind::TwoD, Granularity::Line),
];

impl ReportData {
    pub fn new(result: &StrataResult, analyses: Analyses, options: &Options) -> ReportData {
        let mut strings = Strings::default();
        let mut snippets = Snippets::new(&options.source_dirs, !options.redact);
        let views = VIEWS
            .iter()
            .map(|&(key, kind, granularity)| {
                let opts = view_options(granularity);
                let tree = view(result.tree(kind), opts);
                let mut data = ViewData::of(&tree, analyses, &mut strings, &mut snippets);
                data.header = header_line(result, kind, opts);
                (key.to_string(), data)
            })
            .collect();
        let observations = &analyses.verdict.observations;
        let seen = observations
            .groups()
            .iter()
            .map(|g| format_set(&g.ranks))
            .zip(strata_verdict::text::seen_lines(
                observations,
                strata_verdict::text::PROSE_LIST,
            ))
            .collect();
        ReportData {
            strings: strings.list,
            views,
            ranks: rank_rows(result, options.redact),
            seen,
            snippets,
            job_size: result.meta.job_size,
            threads: result.meta.sampling.threads,
        }
    }

    /// The object as JSON that is safe inside a `<script>` element: no `</` can close it.
    pub fn to_script_json(&self) -> String {
        let json = serde_json::to_string(self).expect("report data serializes");
        json.replace("</", "<\\/").replace("<!--", "<\\!--")
    }
}

impl ViewData {
    fn of(
        tree: &PrefixTree<RankSet>,
        analyses: Analyses,
        strings: &mut Strings,
        snippets: &mut Snippets,
    ) -> ViewData {
        let classes = equivalence_classes(tree);
        let class_of = node_classes(tree, &classes);
        let labels = analyses.progress.map(|p| p.node_labels(tree));
        let order = display_order(tree, labels.as_deref());
        let mut index_of = vec![0u32; tree.len()];
        for (i, n) in order.iter().enumerate() {
            index_of[n.index()] = i as u32;
        }
        let mut d = ViewData {
            threads: tree.has_threads().then(Vec::new),
            ..ViewData::default()
        };
        for &id in &order {
            let node = tree.node(id);
            d.parent
                .push(node.parent.map_or(-1, |p| i64::from(index_of[p.index()])));
            let frame = tree.node_frame(id);
            d.text
                .push(strings.id(frame.map_or_else(|| "(all)".to_string(), frame_text)));
            d.detail
                .push(strings.id(frame.map_or_else(String::new, detail)));
            d.count.push(node.tasks.count());
            d.ranks.push(format_set(&node.tasks));
            if let Some(t) = &mut d.threads {
                t.push(node.threads.count());
            }
            d.class.push(match class_of[id.index()] {
                NodeClass::One(c) => c as i64,
                NodeClass::Mixed => -1,
            });
            d.label.push(
                labels
                    .as_ref()
                    .and_then(|l| l[id.index()].as_ref())
                    .filter(|l| !l.is_empty())
                    .map(|l| l.to_string())
                    .unwrap_or_default(),
            );
            d.kind.push(kind(frame));
            d.snippet
                .push(frame.and_then(|f| snippets.of(f)).map_or(-1, i64::from));
        }
        d.classes = classes
            .iter()
            .map(|c| ClassData {
                count: c.tasks.count(),
                ranks: format_set(&c.tasks),
                representative: c.tasks.min().unwrap_or(0),
                leaves: c.leaves.iter().map(|l| index_of[l.index()]).collect(),
            })
            .collect();
        d
    }
}

/// Every node, depth first from the root, siblings in every view's order
/// ([`strata_result::siblings::sorted_children`]).
pub fn display_order(
    tree: &PrefixTree<RankSet>,
    labels: Option<&[Option<strata_result::annotation::Label>]>,
) -> Vec<NodeId> {
    let mut order = Vec::with_capacity(tree.len());
    let mut stack = vec![NodeId::ROOT];
    while let Some(n) = stack.pop() {
        order.push(n);
        let children = strata_result::siblings::sorted_children(tree, n, labels);
        stack.extend(children.iter().rev());
    }
    order
}

/// `m` an MPI call, `s` a special frame (`[task exited]`), `y` Python, `c` other code.
fn kind(frame: Option<&Frame>) -> char {
    match frame {
        None => 's',
        Some(Frame::Special(_)) => 's',
        Some(Frame::Code(c)) if c.mpi_call().is_some() => 'm',
        Some(Frame::Code(c)) if c.kind == strata_filters::CodeKind::Python => 'y',
        Some(Frame::Code(_)) => 'c',
    }
}

/// Everything the frame says, for the details pane: function, file and line, module and
/// offset.
fn detail(frame: &Frame) -> String {
    let Some(c) = frame.code() else {
        return frame.name();
    };
    let mut parts = vec![frame.name()];
    if let Some(file) = &c.file {
        parts.push(match c.line {
            Some(line) => format!("{file}:{line}"),
            None => file.clone(),
        });
    }
    if let Some(m) = &c.module {
        parts.push(match c.offset {
            Some(o) => format!("{} + {o:#x}", m.path),
            None => m.path.clone(),
        });
    }
    if c.is_recovered_call() {
        parts.push("called (recovered from the caller)".into());
    } else if c.inlined {
        parts.push("inlined".into());
    }
    parts.join("\n")
}

fn rank_rows(result: &StrataResult, redact: bool) -> Option<Vec<RankRow>> {
    (result.meta.job_size <= MAX_RANK_ROWS).then(|| {
        result
            .meta
            .ranks
            .iter()
            .map(|r| RankRow {
                rank: r.rank,
                host: r.host.clone().filter(|_| !redact),
                pid: r.pid,
                state: r.state.clone(),
                error: r.error.clone(),
                executable: r.executable.clone().filter(|_| !redact),
            })
            .collect()
    })
}

/// A string table: each distinct string once.
#[derive(Default)]
struct Strings {
    list: Vec<String>,
    ids: FxHashMap<String, u32>,
}

impl Strings {
    fn id(&mut self, s: String) -> u32 {
        if let Some(&id) = self.ids.get(&s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.clone());
        self.ids.insert(s, id);
        id
    }
}
