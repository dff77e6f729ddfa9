//! The terminal tree: STAT-style edge labels (`254:[0,2-255]`), indentation that grows
//! only where paths branch (a 20-frame chain stays readable), and the equivalence classes.

use super::header::header_line;
use super::label::{count_label, edge_label, frame_text, frame_text_labelled};
use crate::annotation::{Annotation, Label};
use crate::model::{StrataResult, TreeKind};
use strata_filters::taskset::TaskSet;
use strata_filters::{
    EqClass, NodeId, PrefixTree, RankSet, ViewOptions, equivalence_classes, view,
};

/// How to draw.
#[derive(Clone, Copy, Debug, Default)]
pub struct TextOptions {
    /// ANSI colours.
    pub color: bool,
    /// Terminal width; rank lists in labels are shortened to fit. `None` (a file or a
    /// pipe) keeps them long.
    pub width: Option<usize>,
    /// At most this many branches below a node; the smaller rest is summarised in one line
    /// (at a million ranks, 1% noise is ten thousand one-rank leaves). `None`: all.
    pub max_branches: Option<usize>,
    /// At most this many classes in the list: half the smallest, half the largest.
    pub max_classes: Option<usize>,
}

impl TextOptions {
    /// What a terminal gets: colour as decided by the caller, width-fitted lists, and caps
    /// that keep a tree of a huge job on a few screens.
    pub fn terminal(color: bool, width: Option<usize>) -> Self {
        TextOptions {
            color,
            width,
            max_branches: Some(16),
            max_classes: Some(20),
        }
    }
}

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }
}

/// Renders the tree `kind` of `result` in view `opts` as terminal text.
pub fn render(
    result: &StrataResult,
    kind: TreeKind,
    opts: ViewOptions,
    text: TextOptions,
) -> String {
    render_annotated(result, kind, opts, text, None)
}

/// [`render`], with an analysis drawn over it: its labels on the frames (`get_norm@[T1]`),
/// branches in label order (least progressed first) and its section after the classes.
pub fn render_annotated(
    result: &StrataResult,
    kind: TreeKind,
    opts: ViewOptions,
    text: TextOptions,
    annotation: Option<&dyn Annotation>,
) -> String {
    let tree = view(result.tree(kind), opts);
    let labels = annotation.and_then(|a| a.node_labels(&tree));
    let style = Style { on: text.color };
    let max_list = text.width.map_or(4000, |w| (w * 2 / 5).max(16));
    let mut out = String::new();
    out.push_str(&style.paint("1", &header_line(result, kind, opts)));
    out.push('\n');
    for m in &result.meta.missing {
        out.push_str(&style.paint("33", &format!("missing ranks [{}]: {}", m.ranks, m.reason)));
        out.push('\n');
    }
    let roots = &tree.node(NodeId::ROOT).children;
    if roots.is_empty() {
        out.push_str("(no stack traces)\n");
        return out;
    }
    let mut w = Writer {
        tree: &tree,
        labels: labels.as_deref(),
        style: &style,
        max_list,
        max_branches: text.max_branches.unwrap_or(usize::MAX).max(2),
        out: &mut out,
    };
    w.below(NodeId::ROOT);
    let classes = equivalence_classes(&tree);
    out.push('\n');
    out.push_str(&classes_text(
        &tree,
        &classes,
        &style,
        max_list,
        text.max_classes,
        text.width,
    ));
    let asked = result.asked_variables();
    if !asked.is_empty() {
        out.push('\n');
        out.push_str(&crate::variables::text(&asked, max_list));
    }
    if let Some(report) = annotation
        .map(|a| a.report_text(max_list))
        .filter(|r| !r.is_empty())
    {
        out.push('\n');
        out.push_str(&report);
    }
    out
}

struct Writer<'a> {
    tree: &'a PrefixTree<RankSet>,
    /// Progress labels of the nodes, when the progress order was asked for.
    labels: Option<&'a [Option<Label>]>,
    style: &'a Style,
    max_list: usize,
    max_branches: usize,
    out: &'a mut String,
}

impl Writer<'_> {
    fn sorted_children(&self, id: NodeId) -> Vec<NodeId> {
        crate::siblings::sorted_children(self.tree, id, self.labels)
    }

    fn line(&mut self, prefix: &str, id: NodeId) {
        let frame = self.tree.node_frame(id).expect("non-root");
        let ends_here = !self.tree.tasks_ending_at(id).is_empty();
        let edge = self
            .style
            .paint("36", &edge_label(self.tree, id, self.max_list));
        let label = self.labels.and_then(|l| l[id.index()].as_ref());
        let mut name = frame_text_labelled(frame, label);
        name = if frame.code().is_none() {
            self.style.paint("1;31", &name)
        } else if frame.is_mpi_entry() {
            self.style.paint("33", &name)
        } else if ends_here {
            self.style.paint("1", &name)
        } else {
            name
        };
        self.out.push_str(&format!("{prefix}{edge}  {name}\n"));
    }

    /// Prints what lies below `root`. Depth-first with a stack of its own, not recursion:
    /// a tree may be as deep as a runaway recursion in the job (tens of thousands of
    /// frames).
    fn below(&mut self, root: NodeId) {
        let mut todo = Vec::new();
        self.children(root, String::new(), &mut todo);
        while let Some(step) = todo.pop() {
            match step {
                Step::Node { id, first, cont } => {
                    self.line(&first, id);
                    self.children(id, cont, &mut todo);
                }
                Step::Summary { line } => self.out.push_str(&line),
            }
        }
    }

    /// Pushes on `todo` what prints the children of `id`, first child on top.
    fn children(&mut self, id: NodeId, cont: String, todo: &mut Vec<Step>) {
        let mut kids = self.sorted_children(id);
        if kids.len() == 1 {
            // A chain: same indentation, no connector.
            todo.push(Step::Node {
                id: kids[0],
                first: cont.clone(),
                cont,
            });
            return;
        }
        let mut rest: Vec<NodeId> = Vec::new();
        if kids.len() > self.max_branches {
            // Keep the most populated branches (in rank order), summarise the others.
            let mut by_size = kids.clone();
            by_size.sort_by_key(|&n| std::cmp::Reverse(self.tree.node(n).tasks.len()));
            rest = by_size.split_off(self.max_branches - 1);
            let summarised: std::collections::HashSet<NodeId> = rest.iter().copied().collect();
            kids.retain(|k| !summarised.contains(k));
        }
        if !rest.is_empty() {
            let mut ranks = RankSet::new();
            for &r in &rest {
                ranks |= &self.tree.node(r).tasks;
            }
            let label = count_label(&ranks, self.max_list);
            let note = format!("… {} more branches (--all shows them)", rest.len());
            todo.push(Step::Summary {
                line: format!(
                    "{cont}└─ {}  {}\n",
                    self.style.paint("36", &label),
                    self.style.paint("2", &note)
                ),
            });
        }
        for (i, &k) in kids.iter().enumerate().rev() {
            let last = i + 1 == kids.len() && rest.is_empty();
            todo.push(Step::Node {
                id: k,
                first: format!("{cont}{}", if last { "└─ " } else { "├─ " }),
                cont: format!("{cont}{}", if last { "   " } else { "│  " }),
            });
        }
    }
}

/// What is left to print of the tree: a node and its subtree, or a summary line.
enum Step {
    Node {
        id: NodeId,
        first: String,
        cont: String,
    },
    Summary {
        line: String,
    },
}

/// The class list: one line per class, its label and the tail of each leaf path. With a
/// cap, the smallest and the largest classes are shown and the middle is summarised.
fn classes_text(
    tree: &PrefixTree<RankSet>,
    classes: &[EqClass<RankSet>],
    style: &Style,
    max_list: usize,
    max_classes: Option<usize>,
    width: Option<usize>,
) -> String {
    let mut out = format!(
        "{} equivalence class{} (smallest first):\n",
        classes.len(),
        if classes.len() == 1 { "" } else { "es" }
    );
    let cap = max_classes.unwrap_or(usize::MAX).max(2);
    let (head, hidden, tail) = if classes.len() > cap {
        let tail = cap / 2;
        let head = cap - tail;
        (
            &classes[..head],
            &classes[head..classes.len() - tail],
            &classes[classes.len() - tail..],
        )
    } else {
        (classes, &classes[..0], &classes[..0])
    };
    let label = |c: &EqClass<RankSet>| count_label(&c.tasks, max_list);
    let wide = head
        .iter()
        .chain(tail)
        .map(|c| label(c).chars().count())
        .max()
        .unwrap_or(0);
    let line = |c: &EqClass<RankSet>, out: &mut String| {
        let l = label(c);
        // On a terminal the paths share what is left of the line; at least the leaf frame
        // of each is kept.
        let room = width.map_or(usize::MAX, |w| {
            w.saturating_sub(wide + 4 + 5 * (c.leaves.len() - 1)) / c.leaves.len()
        });
        let paths: Vec<String> = c
            .leaves
            .iter()
            .map(|&leaf| path_tail(tree, leaf, 4, room))
            .collect();
        let pad = " ".repeat(wide - l.chars().count());
        out.push_str(&format!(
            "  {}{pad}  {}\n",
            style.paint("36", &l),
            paths.join("  |  ")
        ));
    };
    for c in head {
        line(c, &mut out);
    }
    if let (Some(first), Some(last)) = (hidden.first(), hidden.last()) {
        let ranks: u64 = hidden.iter().map(|c| c.tasks.count()).sum();
        let (lo, hi) = (first.tasks.count(), last.tasks.count());
        let sizes = if lo == hi {
            format!("of {lo} rank{} each", if lo == 1 { "" } else { "s" })
        } else {
            format!("of {lo} to {hi} ranks")
        };
        let note = format!(
            "  … {} more classes {sizes} ({ranks} ranks in all; --all shows them)",
            hidden.len()
        );
        out.push_str(&style.paint("2", &note));
        out.push('\n');
    }
    for c in tail {
        line(c, &mut out);
    }
    out
}

/// The last `keep` frames of a leaf's path, fewer if they do not fit in `room` characters
/// (the leaf frame always stays).
pub fn path_tail(tree: &PrefixTree<RankSet>, leaf: NodeId, keep: usize, room: usize) -> String {
    let frames: Vec<String> = tree.path_frames(leaf).iter().map(frame_text).collect();
    let mut skip = frames.len().saturating_sub(keep);
    loop {
        let mut parts: Vec<&str> = frames[skip..].iter().map(String::as_str).collect();
        if skip > 0 {
            parts.insert(0, "…");
        }
        let text = parts.join(" > ");
        if text.chars().count() <= room || skip + 1 >= frames.len() {
            return text;
        }
        skip += 1;
    }
}
