//! What the UI shows: the view settings a user edits ([`ViewState`]) and the tree derived
//! from them ([`Display`]), with its classes, the class colour of every node, its nodes in
//! display order and the visible rows.
//!
//! The result keeps the sampled trees; every edit derives a new display tree from them
//! (a view is a projection, so this costs one pass over the tree and never a re-sample).
//! Node ids change with each derivation, so whatever must survive an edit (the selection,
//! collapsed nodes, the focus) is kept as a path of frames and looked up again.

use regex::Regex;
use std::collections::HashSet;
use strata_filters::{
    EqClass, Frame, Granularity, NodeClass, NodeId, PrefixTree, RankSet, ViewOptions,
    equivalence_classes, node_classes, view_with_cut,
};
use strata_progress::order::ProgressOrder;
use strata_result::annotation::Label;
use strata_result::render::frame_text_labelled;
use strata_result::{StrataResult, TreeKind};
use thiserror::Error;

/// The view a user has chosen; the undo stack holds these.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ViewState {
    pub kind: TreeKind,
    pub opts: ViewOptions,
    /// Cut below frames whose name matches this regex (besides MPI entries).
    pub cut_pattern: Option<String>,
    /// The focused node's path from the root, outermost frame first.
    pub focus: Option<Vec<Frame>>,
    /// Progress order on: frames labelled `func@[T1]`, branches least progressed first.
    pub progress: bool,
    /// Where to look for sources the debug info names (`--source-dir`).
    pub source_dirs: Vec<std::path::PathBuf>,
}

impl ViewState {
    /// The granularity after this one: function, line, module, function...
    pub fn next_granularity(&self) -> Granularity {
        let all = Granularity::ALL;
        let i = all
            .iter()
            .position(|g| *g == self.opts.granularity)
            .unwrap_or(0);
        all[(i + 1) % all.len()]
    }
}

/// A derived tree ready to show.
#[derive(Debug)]
pub struct Display {
    /// The view; when focused, the focused node is the root's only child.
    pub tree: PrefixTree<RankSet>,
    /// The frames above the focused node (empty without focus).
    pub prefix: Vec<Frame>,
    pub classes: Vec<EqClass<RankSet>>,
    /// Per node (by index), its class.
    pub class_of: Vec<NodeClass>,
    /// Per node, its children in display order (rank order of the first member, as the
    /// text rendering; larger first on ties).
    pub children: Vec<Vec<NodeId>>,
    /// Every node but the root in display order (depth first), collapsed or not: the
    /// order of search hits and of ties.
    pub order: Vec<NodeId>,
    /// Per node, its position in `order` (the root's is unused).
    pub rank_in_order: Vec<usize>,
    /// Per node, its progress label, when the progress order is on.
    pub labels: Option<Vec<Option<Label>>>,
}

/// One visible line of the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub node: NodeId,
    /// Connectors (`├─ `, `│  `...) before the node; a chain keeps its parent's.
    pub prefix: String,
    pub has_children: bool,
    pub expanded: bool,
}

/// A pattern the user typed (a cut, a search) that is no regex.
#[derive(Debug, Error)]
#[error("bad regex '{pattern}': {source}")]
pub struct BadRegex {
    pub pattern: String,
    pub source: regex::Error,
}

impl BadRegex {
    pub fn new(pattern: &str, source: regex::Error) -> BadRegex {
        BadRegex {
            pattern: pattern.to_string(),
            source,
        }
    }
}

/// Compiles a user's cut pattern (case-sensitive: frame names are).
pub fn cut_regex(pattern: &str) -> Result<Regex, BadRegex> {
    Regex::new(pattern).map_err(|e| BadRegex::new(pattern, e))
}

impl Display {
    /// Derives the display of `result` in `state`. A focus whose path is not in the new
    /// view is dropped: the returned state says what was used.
    pub fn build(
        result: &StrataResult,
        state: &ViewState,
        progress: Option<&ProgressOrder>,
    ) -> Result<(Display, ViewState), BadRegex> {
        let cut = state.cut_pattern.as_deref().map(cut_regex).transpose()?;
        let full = view_with_cut(result.tree(state.kind), state.opts, |f| {
            cut.as_ref().is_some_and(|re| re.is_match(&f.name()))
        });
        let mut used = state.clone();
        let (tree, prefix) = match &state.focus {
            None => (full, Vec::new()),
            Some(path) => match find_path(&full, NodeId::ROOT, path) {
                Some((node, true)) => {
                    let parent = full.node(node).parent.expect("not the root");
                    (subtree(&full, node), full.path_frames(parent))
                }
                _ => {
                    used.focus = None;
                    (full, Vec::new())
                }
            },
        };
        let progress = progress.filter(|_| state.progress);
        Ok((Display::new(tree, prefix, progress), used))
    }

    fn new(
        tree: PrefixTree<RankSet>,
        prefix: Vec<Frame>,
        progress: Option<&ProgressOrder>,
    ) -> Display {
        let classes = equivalence_classes(&tree);
        let class_of = node_classes(&tree, &classes);
        let labels = progress.map(|p| p.node_labels(&tree));
        let children: Vec<Vec<NodeId>> = tree
            .node_ids()
            .map(|id| strata_result::siblings::sorted_children(&tree, id, labels.as_deref()))
            .collect();
        let mut order = Vec::with_capacity(tree.len());
        let mut stack: Vec<NodeId> = children[0].iter().rev().copied().collect();
        while let Some(n) = stack.pop() {
            order.push(n);
            stack.extend(children[n.index()].iter().rev());
        }
        let mut rank_in_order = vec![0; tree.len()];
        for (i, n) in order.iter().enumerate() {
            rank_in_order[n.index()] = i;
        }
        Display {
            tree,
            prefix,
            classes,
            class_of,
            children,
            order,
            rank_in_order,
            labels,
        }
    }

    /// The visible rows when the nodes in `collapsed` are collapsed. Indentation grows only
    /// where paths branch, as in the text rendering, so a long chain stays readable.
    pub fn rows(&self, collapsed: &HashSet<NodeId>) -> Vec<Row> {
        let mut rows = Vec::new();
        // (node, prefix for its line, prefix for what lies below it)
        let mut stack: Vec<(NodeId, String, String)> = Vec::new();
        self.push_children(NodeId::ROOT, "", &mut stack);
        while let Some((node, first, cont)) = stack.pop() {
            let has_children = !self.children[node.index()].is_empty();
            let expanded = has_children && !collapsed.contains(&node);
            rows.push(Row {
                node,
                prefix: first,
                has_children,
                expanded,
            });
            if expanded {
                self.push_children(node, &cont, &mut stack);
            }
        }
        rows
    }

    fn push_children(&self, node: NodeId, cont: &str, stack: &mut Vec<(NodeId, String, String)>) {
        let kids = &self.children[node.index()];
        if let [only] = kids.as_slice() {
            stack.push((*only, cont.to_string(), cont.to_string()));
            return;
        }
        for (i, &k) in kids.iter().enumerate().rev() {
            let last = i + 1 == kids.len();
            stack.push((
                k,
                format!("{cont}{}", if last { "└─ " } else { "├─ " }),
                format!("{cont}{}", if last { "   " } else { "│  " }),
            ));
        }
    }

    /// The path of `node` from the real root (above any focus), outermost first.
    pub fn full_path(&self, node: NodeId) -> Vec<Frame> {
        let mut p = self.prefix.clone();
        p.extend(self.tree.path_frames(node));
        p
    }

    /// The node at `path` (a [`Display::full_path`], possibly of another view), or the
    /// deepest node found along it; the flag says whether all of it was found.
    pub fn find(&self, path: &[Frame]) -> Option<(NodeId, bool)> {
        let rest = path.strip_prefix(self.prefix.as_slice())?;
        find_path(&self.tree, NodeId::ROOT, rest)
    }

    /// Nodes where some of `tasks` end, in display order.
    pub fn ending_nodes(&self, tasks: &RankSet) -> Vec<NodeId> {
        self.order
            .iter()
            .copied()
            .filter(|&n| !(&self.tree.tasks_ending_at(n) & tasks).is_empty())
            .collect()
    }

    /// Nodes where tasks end (the leaves of the classes), in display order.
    pub fn leaves(&self) -> Vec<NodeId> {
        self.order
            .iter()
            .copied()
            .filter(|&n| !self.tree.tasks_ending_at(n).is_empty())
            .collect()
    }

    /// The frame text of a node as the view shows it.
    pub fn text(&self, node: NodeId) -> String {
        let label = self
            .labels
            .as_ref()
            .and_then(|l| l.get(node.index())?.as_ref());
        self.tree
            .node_frame(node)
            .map(|f| frame_text_labelled(f, label))
            .unwrap_or_default()
    }

    /// The class a node's colour and hand-off refer to: its own when it has one, else the
    /// class of its lowest rank.
    pub fn class_for(&self, node: NodeId) -> Option<usize> {
        match self.class_of[node.index()] {
            NodeClass::One(c) => Some(c),
            NodeClass::Mixed => {
                let low = self.tree.node(node).tasks.min()?;
                self.classes.iter().position(|c| c.tasks.contains(low))
            }
        }
    }
}

/// Looks `path` up below `from`, each frame matched exactly or, failing that, by name (so
/// that a path survives a change of granularity: `main > sleep` at function granularity
/// finds `main @ ring.c:38 > sleep @ sleep.c:55` at line granularity, trying each `main`
/// until one leads on). Returns the node the whole path leads to, else the deepest node
/// matched, with a flag saying which.
fn find_path(tree: &PrefixTree<RankSet>, from: NodeId, path: &[Frame]) -> Option<(NodeId, bool)> {
    struct Walk<'a> {
        tree: &'a PrefixTree<RankSet>,
        path: &'a [Frame],
        deepest: Option<(NodeId, usize)>,
        /// Nodes left to try: same-named siblings at every level could make the search
        /// exponential in a pathological tree.
        budget: usize,
    }
    impl Walk<'_> {
        fn from(&mut self, node: NodeId, depth: usize) -> Option<NodeId> {
            let Some(want) = self.path.get(depth) else {
                return Some(node);
            };
            let name = want.name();
            let kids = &self.tree.node(node).children;
            let frame = |c: NodeId| self.tree.node_frame(c).expect("not the root");
            let exact = kids.iter().filter(|&&c| frame(c) == want);
            let named = kids
                .iter()
                .filter(|&&c| frame(c) != want && frame(c).name() == name);
            let candidates: Vec<NodeId> = exact.chain(named).copied().collect();
            for c in candidates {
                if self.budget == 0 {
                    return None;
                }
                self.budget -= 1;
                if self.deepest.is_none_or(|(_, d)| depth + 1 > d) {
                    self.deepest = Some((c, depth + 1));
                }
                if let Some(found) = self.from(c, depth + 1) {
                    return Some(found);
                }
            }
            None
        }
    }
    if path.is_empty() {
        return None;
    }
    let mut walk = Walk {
        tree,
        path,
        deepest: None,
        budget: 10_000,
    };
    match walk.from(from, 0) {
        Some(n) => Some((n, true)),
        None => walk.deepest.map(|(n, _)| (n, false)),
    }
}

/// `node`'s subtree as a tree of its own: the root holds `node`'s sets and has `node` as
/// its only child.
fn subtree(tree: &PrefixTree<RankSet>, node: NodeId) -> PrefixTree<RankSet> {
    let mut out: PrefixTree<RankSet> = PrefixTree::new(tree.task_space(), tree.thread_space());
    let copy_sets = |out: &mut PrefixTree<RankSet>, from: NodeId, to: NodeId| {
        let n = tree.node(from);
        let (t, th) = out.node_sets_mut(to);
        *t = n.tasks.clone();
        *th = n.threads.clone();
    };
    copy_sets(&mut out, node, NodeId::ROOT);
    let mut stack = vec![(node, NodeId::ROOT)];
    while let Some((src, parent)) = stack.pop() {
        let frame = out.intern(tree.node_frame(src).expect("not the root"));
        let dst = out.child_or_insert(parent, frame);
        copy_sets(&mut out, src, dst);
        stack.extend(tree.node(src).children.iter().map(|&c| (c, dst)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_result::example::ring_result;

    fn names(d: &Display, rows: &[Row]) -> Vec<String> {
        rows.iter()
            .map(|r| format!("{}{}", r.prefix, d.text(r.node)))
            .collect()
    }

    #[test]
    fn the_ring_shows_its_three_classes_with_branches_indented() {
        let r = ring_result();
        let (d, used) = Display::build(&r, &ViewState::default(), None).unwrap();
        assert_eq!(used, ViewState::default());
        assert_eq!(d.classes.len(), 3);
        let rows = d.rows(&HashSet::new());
        assert_eq!(
            names(&d, &rows),
            // The start-up frames above main are hidden by default.
            [
                "main",
                "├─ MPI_Barrier",
                "├─ sleep",
                "│  __GI___nanosleep",
                "│  __GI___clock_nanosleep",
                "└─ MPI_Waitall",
            ]
        );
        // main holds every class; each branch one.
        let main = rows[0].node;
        assert_eq!(d.class_of[main.index()], NodeClass::Mixed);
        let sleep = rows[2].node;
        let one = d.classes.iter().position(|c| c.tasks.contains(1)).unwrap();
        assert_eq!(d.class_of[sleep.index()], NodeClass::One(one));
        assert_eq!(
            d.class_for(main),
            d.classes.iter().position(|c| c.tasks.contains(0))
        );
    }

    #[test]
    fn collapsing_hides_the_subtree() {
        let r = ring_result();
        let (d, _) = Display::build(&r, &ViewState::default(), None).unwrap();
        let rows = d.rows(&HashSet::new());
        let collapsed: HashSet<NodeId> = [rows[2].node].into();
        let rows2 = d.rows(&collapsed);
        assert_eq!(rows2.len(), rows.len() - 2);
        assert!(!rows2[2].expanded && rows2[2].has_children);
    }

    #[test]
    fn focus_keeps_the_subtree_and_survives_a_granularity_change() {
        let r = ring_result();
        let (d, _) = Display::build(&r, &ViewState::default(), None).unwrap();
        let rows = d.rows(&HashSet::new());
        let sleep_path = d.full_path(rows[2].node);
        let state = ViewState {
            focus: Some(sleep_path.clone()),
            ..ViewState::default()
        };
        let (f, used) = Display::build(&r, &state, None).unwrap();
        assert_eq!(used.focus.as_ref(), Some(&sleep_path));
        assert_eq!(
            f.prefix.len(),
            1,
            "main, the start-up frames above it hidden"
        );
        assert_eq!(
            names(&f, &f.rows(&HashSet::new())),
            ["sleep", "__GI___nanosleep", "__GI___clock_nanosleep"]
        );
        assert_eq!(f.classes.len(), 1);
        assert_eq!(f.find(&sleep_path).map(|(_, all)| all), Some(true));
        // At line granularity the same path is found by name.
        let line = ViewState {
            opts: ViewOptions {
                granularity: Granularity::Line,
                ..ViewOptions::default()
            },
            ..state.clone()
        };
        let (l, used) = Display::build(&r, &line, None).unwrap();
        assert!(used.focus.is_some());
        assert_eq!(l.text(l.order[0]), "sleep @ sleep.c:55");
        // A path that is not in the view drops the focus.
        let gone = ViewState {
            focus: Some(vec![Frame::function("nowhere")]),
            ..ViewState::default()
        };
        let (_, used) = Display::build(&r, &gone, None).unwrap();
        assert_eq!(used.focus, None);
    }

    #[test]
    fn a_user_cut_ends_paths_at_the_matching_frame() {
        let r = ring_result();
        let state = ViewState {
            cut_pattern: Some("^sleep$".into()),
            ..ViewState::default()
        };
        let (d, _) = Display::build(&r, &state, None).unwrap();
        let all: Vec<String> = d.order.iter().map(|&n| d.text(n)).collect();
        assert!(all.contains(&"sleep".to_string()));
        assert!(!all.iter().any(|t| t.contains("nanosleep")), "{all:?}");
        assert!(
            Display::build(
                &r,
                &ViewState {
                    cut_pattern: Some("(".into()),
                    ..ViewState::default()
                },
                None
            )
            .unwrap_err()
            .to_string()
            .contains("bad regex")
        );
    }
}
