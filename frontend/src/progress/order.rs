//! The progress order: which classes of tasks are behind, by position in the code.
//!
//! STAT's temporal order analysis (Ahn et al., SC'09, sections 3 and 4.3): walk the prefix
//! tree from the root; at every branching point the groups of tasks that part ways are
//! ordered by the *first divergent frame*, the child frames that differ. Two such frames
//! are in the same function (the parent frame is a common call site), so their source
//! lines become program points ([`super::point`]) and the points are compared. Tasks
//! below one child keep the order decided at every branching point above them, so a
//! task's place is a hierarchical label, `T1.2`, and the least progressed tasks are the
//! ones with the smallest label.
//!
//! The analysis runs on the 2D tree (the last sample: one stack per task, the moment the
//! processes were stopped) at line granularity, cut below MPI (library internals are not
//! program points of the application). When threads were sampled only each rank's main
//! thread counts: a rank's progress is where its main thread is.
//!
//! What is never guessed: groups in different arms of one conditional are reported as
//! incomparable; groups whose order depends on a loop's iteration count are reported as
//! needing a loop variable (with the order they would have in the same iteration); groups
//! in different functions below one call site, or in frames without line information, are
//! reported as unordered, with the reason. When a source file cannot be read, the point
//! falls back to line numbers within one function, and the report says so.

use super::point::{ProgramPoint, Relation, compare};
use super::source::SourceIndex;
use crate::result::StrataResult;
use rustc_hash::FxHashMap;
use std::fmt;
use strata_filters::{Frame, Granularity, NodeId, PrefixTree, RankSet, TaskSet, ViewOptions, view};

/// One component of a label: the level at one branching point (1 = least progressed
/// there) and, when several groups share a level, which of them (1 = `a`, 2 = `b`, ...;
/// 0 when the group is alone at its level).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tag {
    pub level: u32,
    pub tie: u32,
}

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.level)?;
        match self.tie {
            0 => Ok(()),
            t @ 1..=26 => write!(f, "{}", (b'a' + (t - 1) as u8) as char),
            t => write!(f, "_{t}"),
        }
    }
}

/// A task's place in the progress order: one tag per branching point on its path, outermost
/// first. Labels sort least progressed first (`T1 < T1.2 < T2 < T2a < T2b`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Label(pub Vec<Tag>);

impl Label {
    /// The longest label both start with.
    pub fn common_prefix(&self, other: &Label) -> Label {
        Label(
            self.0
                .iter()
                .zip(&other.0)
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| *a)
                .collect(),
        )
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn child(&self, tag: Tag) -> Label {
        let mut l = self.0.clone();
        l.push(tag);
        Label(l)
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("T")?;
        for (i, t) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

/// How two groups at one branching point compare, and on what evidence.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// From the structure of the source ([`super::point::compare`]).
    Source(Relation),
    /// The source could not be read: the line numbers of one function decide (straight-line
    /// code assumed; loops and branches unseen).
    LineNumbers(std::cmp::Ordering),
    /// No comparison can be made, and why.
    Unordered(String),
}

impl Evidence {
    /// True when the first group is strictly less progressed than the second.
    pub fn is_before(&self) -> bool {
        matches!(
            self,
            Evidence::Source(Relation::Before) | Evidence::LineNumbers(std::cmp::Ordering::Less)
        )
    }

    pub fn reversed(&self) -> Evidence {
        match self {
            Evidence::Source(r) => Evidence::Source(r.reversed()),
            Evidence::LineNumbers(o) => Evidence::LineNumbers(o.reverse()),
            Evidence::Unordered(w) => Evidence::Unordered(w.clone()),
        }
    }
}

/// The tasks that part ways at a branching point through one child (or that end at the
/// branching point's frame itself).
#[derive(Clone, Debug)]
pub struct Group {
    /// The child node in the analysed tree; `None` for the tasks that end at the branching
    /// node itself (they are executing in its frame, not in a callee).
    pub node: Option<NodeId>,
    pub tasks: RankSet,
    /// The divergent frame (the child's), or the branching node's frame for `node: None`.
    pub frame: Option<Frame>,
    /// The frame's program point, or why there is none.
    pub point: Result<ProgramPoint, String>,
    pub tag: Tag,
}

/// A node of the analysed tree where tasks part ways, and how its groups were ordered.
#[derive(Clone, Debug)]
pub struct BranchPoint {
    pub node: NodeId,
    /// The branching node's frame (`None` at the root: the tasks' outermost frames differ).
    pub frame: Option<Frame>,
    /// The label every task below this point starts with.
    pub label: Label,
    /// Sorted by tag, least progressed first.
    pub groups: Vec<Group>,
    /// `relations[i][j]`: group `i` compared with group `j` (same indices as `groups`);
    /// empty when there were too many groups to compare pairwise ([`MAX_GROUPS`]).
    pub relations: Vec<Vec<Evidence>>,
}

impl BranchPoint {
    /// The full label of one of this point's groups.
    pub fn label_of(&self, g: &Group) -> Label {
        self.label.child(g.tag)
    }

    /// How group `i` compares with group `j`; `None` when the groups were not compared.
    pub fn relation(&self, i: usize, j: usize) -> Option<&Evidence> {
        self.relations.get(i)?.get(j)
    }
}

/// Most groups one branching point is ordered for. Pairwise comparison is quadratic; a
/// node with thousands of children (noise at a huge scale) is reported unordered instead.
pub const MAX_GROUPS: usize = 1024;

/// A temporal equivalence class: tasks with the same label.
#[derive(Clone, Debug)]
pub struct ProgressClass {
    pub label: Label,
    pub tasks: RankSet,
    /// Where these tasks' paths end in the analysed tree.
    pub node: NodeId,
}

/// The result of the analysis.
#[derive(Clone, Debug)]
pub struct ProgressOrder {
    /// The 2D tree, line granularity, cut below MPI (main threads only): node ids in
    /// [`BranchPoint`] and [`ProgressClass`] refer to it.
    pub tree: PrefixTree<RankSet>,
    /// Least progressed first.
    pub classes: Vec<ProgressClass>,
    pub branch_points: Vec<BranchPoint>,
    /// Problems with the sources, one line per file or frame ("cannot read ...").
    pub notes: Vec<String>,
    /// Class index of every rank (`None`: the rank is not in the 2D tree).
    class_of: Vec<Option<u32>>,
}

impl ProgressOrder {
    /// The label of `rank`, if it was sampled.
    pub fn label_of(&self, rank: u32) -> Option<&Label> {
        let c = (*self.class_of.get(rank as usize)?)?;
        Some(&self.classes[c as usize].label)
    }

    /// The label each node of `tree` (any view of the same result) shows: the longest label
    /// all its tasks share. Empty where the tasks below the node are not yet ordered
    /// against each other, or where no task was labelled.
    pub fn node_labels(&self, tree: &PrefixTree<RankSet>) -> Vec<Option<Label>> {
        let mut out: Vec<Option<Label>> = vec![None; tree.len()];
        // Children have larger ids than their parents: a backward pass sees them first.
        for id in tree.node_ids().rev() {
            let mut acc: Option<Label> = None;
            let mut fold = |l: &Label| {
                acc = Some(match acc.take() {
                    None => l.clone(),
                    Some(a) => a.common_prefix(l),
                });
            };
            for &c in &tree.node(id).children {
                if let Some(l) = &out[c.index()] {
                    fold(l);
                }
            }
            for t in tree.tasks_ending_at(id).indices() {
                if let Some(l) = self.label_of(t) {
                    fold(l);
                }
            }
            out[id.index()] = acc;
        }
        out
    }

    /// True when at least one branching point was found (else every task is in one place).
    pub fn has_order(&self) -> bool {
        !self.branch_points.is_empty()
    }
}

/// Runs the analysis on `result`'s 2D tree, reading sources through `sources`.
pub fn analyze(result: &StrataResult, sources: &mut SourceIndex) -> ProgressOrder {
    let base = main_threads(result);
    let tree = view(
        &base,
        ViewOptions {
            granularity: Granularity::Line,
            cut_below_mpi: true,
        },
    );
    let mut points = Points {
        sources,
        cache: FxHashMap::default(),
        notes: Vec::new(),
    };
    let mut branch_points = Vec::new();
    let mut classes = Vec::new();
    // Depth-first from the root, carrying each node's label.
    let mut stack: Vec<(NodeId, Label)> = vec![(NodeId::ROOT, Label::default())];
    while let Some((id, label)) = stack.pop() {
        let node = tree.node(id);
        let children: Vec<NodeId> = node
            .children
            .iter()
            .copied()
            .filter(|&c| !tree.node(c).tasks.is_empty())
            .collect();
        let ending = tree.tasks_ending_at(id);
        if children.is_empty() {
            if !ending.is_empty() {
                classes.push(ProgressClass {
                    label,
                    tasks: ending,
                    node: id,
                });
            }
            continue;
        }
        if children.len() == 1 && ending.is_empty() {
            stack.push((children[0], label));
            continue;
        }
        let bp = order_branch(&tree, id, label, &children, ending, &mut points);
        for g in &bp.groups {
            let l = bp.label.child(g.tag);
            match g.node {
                Some(c) => stack.push((c, l)),
                None => classes.push(ProgressClass {
                    label: l,
                    tasks: g.tasks.clone(),
                    node: id,
                }),
            }
        }
        branch_points.push(bp);
    }
    classes.sort_by(|a, b| {
        a.label
            .cmp(&b.label)
            .then(a.tasks.min().cmp(&b.tasks.min()))
    });
    branch_points.sort_by(|a, b| a.label.cmp(&b.label));
    let mut class_of = vec![None; result.meta.job_size as usize];
    for (i, c) in classes.iter().enumerate() {
        for t in c.tasks.iter() {
            if let Some(slot) = class_of.get_mut(t as usize) {
                *slot = Some(i as u32);
            }
        }
    }
    let notes = points.notes;
    ProgressOrder {
        tree,
        classes,
        branch_points,
        notes,
        class_of,
    }
}

/// The 2D tree with only main threads' paths when threads were sampled: a rank whose
/// helper threads wait in a pool is where its main thread is.
fn main_threads(result: &StrataResult) -> PrefixTree<RankSet> {
    let tree = &result.tree_2d;
    if !tree.has_threads() || result.meta.threads.is_empty() {
        return tree.clone();
    }
    let pid_of: FxHashMap<u32, u32> = result
        .meta
        .ranks
        .iter()
        .filter_map(|r| Some((r.rank, r.pid?)))
        .collect();
    // Thread id -> rank, for main threads (tid == the rank's pid).
    let main: FxHashMap<u32, u32> = result
        .meta
        .threads
        .iter()
        .filter(|t| pid_of.get(&t.rank) == Some(&t.tid))
        .map(|t| (t.id, t.rank))
        .collect();
    if main.is_empty() {
        return tree.clone();
    }
    let mut out = tree.clone();
    for id in tree.node_ids() {
        let mut tasks = RankSet::new();
        for t in tree.node(id).threads.iter() {
            if let Some(&r) = main.get(&t) {
                tasks.insert(r);
            }
        }
        let (ts, _) = out.node_sets_mut(id);
        if id != NodeId::ROOT {
            *ts = tasks;
        }
    }
    out
}

/// Program points of frames, looked up once per (file, line).
struct Points<'a> {
    sources: &'a mut SourceIndex,
    cache: FxHashMap<(String, u32), Result<ProgramPoint, String>>,
    notes: Vec<String>,
}

impl Points<'_> {
    fn of(&mut self, frame: Option<&Frame>) -> Result<ProgramPoint, String> {
        let Some(frame) = frame else {
            return Err("no frame".into());
        };
        let Some(code) = frame.code() else {
            return Err(format!("{} is not a code location", frame.name()));
        };
        let (Some(file), Some(line)) = (&code.file, code.line) else {
            return Err(format!(
                "{} has no line information (no debug info for it; build with -g)",
                frame.name()
            ));
        };
        if let Some(hit) = self.cache.get(&(file.clone(), line)) {
            return hit.clone();
        }
        let got = self.sources.point(file, line).map_err(|e| e.to_string());
        match &got {
            Err(e) => {
                if !self.notes.contains(e) {
                    self.notes.push(e.clone());
                }
            }
            Ok(p) => {
                if let (Some(src), Some(bin)) = (&p.function, &code.function)
                    && !same_function_name(src, bin)
                {
                    let note = format!(
                        "{file}:{line} is in {src}() in the source but in {bin} in the binary: \
                         the source may have changed since the build"
                    );
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                }
            }
        }
        self.cache.insert((file.clone(), line), got.clone());
        got
    }
}

/// Whether a name read from the source and a (demangled) debug-info name are one function:
/// the last `::` component without parameters or template arguments, case-insensitively
/// (Fortran names are case-insensitive; DWARF has them in lower case).
fn same_function_name(source: &str, binary: &str) -> bool {
    fn base(n: &str) -> String {
        let n = n.split('(').next().unwrap_or(n);
        let n = n.split('<').next().unwrap_or(n);
        let n = n.rsplit("::").next().unwrap_or(n);
        n.trim().to_ascii_lowercase()
    }
    base(source) == base(binary)
}

/// Orders the groups that part ways at `id`.
fn order_branch(
    tree: &PrefixTree<RankSet>,
    id: NodeId,
    label: Label,
    children: &[NodeId],
    ending: RankSet,
    points: &mut Points<'_>,
) -> BranchPoint {
    let here = tree.node_frame(id).cloned();
    let mut groups: Vec<Group> = children
        .iter()
        .map(|&c| {
            let frame = tree.node_frame(c).cloned();
            Group {
                node: Some(c),
                tasks: tree.node(c).tasks.clone(),
                point: points.of(frame.as_ref()),
                frame,
                tag: Tag { level: 0, tie: 0 },
            }
        })
        .collect();
    if !ending.is_empty() {
        groups.push(Group {
            node: None,
            tasks: ending,
            point: points.of(here.as_ref()),
            frame: here.clone(),
            tag: Tag { level: 0, tie: 0 },
        });
    }
    groups.sort_by_key(|g| g.tasks.min());
    let n = groups.len();
    if n > MAX_GROUPS {
        points.notes.push(format!(
            "{n} groups part ways below {}: more than {MAX_GROUPS}, not compared pairwise (left unordered)",
            here.as_ref().map_or("the root".to_string(), crate::render::frame_text)
        ));
        for (i, g) in groups.iter_mut().enumerate() {
            g.tag = Tag {
                level: 1,
                tie: i as u32 + 1,
            };
        }
        return BranchPoint {
            node: id,
            frame: here,
            label,
            groups,
            relations: Vec::new(),
        };
    }
    let mut relations = vec![vec![Evidence::Unordered(String::new()); n]; n];
    for i in 0..n {
        relations[i][i] = Evidence::Source(Relation::Same);
        for j in i + 1..n {
            let e = evidence(&groups[i], &groups[j], here.as_ref());
            relations[j][i] = e.reversed();
            relations[i][j] = e;
        }
    }
    // Level: 1 + the longest chain of groups strictly before it. "Before" only holds
    // between lines of one function and implies a smaller line number (an earlier offset,
    // or a condition before its arms), so increasing line order is a topological order:
    // one pass in it settles every level.
    let line = |g: &Group| g.frame.as_ref().and_then(Frame::code).and_then(|c| c.line);
    let mut topo: Vec<usize> = (0..n).collect();
    topo.sort_by_key(|&i| (line(&groups[i]).is_none(), line(&groups[i])));
    let mut level = vec![1u32; n];
    for (k, &j) in topo.iter().enumerate() {
        for &i in &topo[..k] {
            if relations[i][j].is_before() {
                level[j] = level[j].max(level[i] + 1);
            }
        }
    }
    for (i, g) in groups.iter_mut().enumerate() {
        g.tag.level = level[i];
    }
    // Groups sharing a level get letters, in order of their lowest rank.
    let mut per_level: FxHashMap<u32, u32> = FxHashMap::default();
    for &l in &level {
        *per_level.entry(l).or_default() += 1;
    }
    let mut next_tie: FxHashMap<u32, u32> = FxHashMap::default();
    for g in groups.iter_mut() {
        if per_level[&g.tag.level] > 1 {
            let t = next_tie.entry(g.tag.level).or_default();
            *t += 1;
            g.tag.tie = *t;
        }
    }
    // Sort by tag, carrying the relation matrix along.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| groups[i].tag);
    let groups_sorted: Vec<Group> = order.iter().map(|&i| groups[i].clone()).collect();
    let relations_sorted: Vec<Vec<Evidence>> = order
        .iter()
        .map(|&i| order.iter().map(|&j| relations[i][j].clone()).collect())
        .collect();
    BranchPoint {
        node: id,
        frame: here,
        label,
        groups: groups_sorted,
        relations: relations_sorted,
    }
}

/// How group `a` compares with group `b` below the frame `parent`.
fn evidence(a: &Group, b: &Group, parent: Option<&Frame>) -> Evidence {
    let (Some(fa), Some(fb)) = (&a.frame, &b.frame) else {
        return Evidence::Unordered("the outermost frames differ".into());
    };
    let (Some(ca), Some(cb)) = (fa.code(), fb.code()) else {
        let special = if fa.code().is_none() { fa } else { fb };
        return Evidence::Unordered(format!(
            "{} is not a code location: nothing to compare",
            special.name()
        ));
    };
    if a.node.is_none() || b.node.is_none() {
        // Tasks executing in the parent frame itself against tasks in a callee called
        // from the same line: the same statement.
        return Evidence::Unordered(format!(
            "one group executes in {} itself, the other in a function it calls from the same line",
            fa.name()
        ));
    }
    if ca.function != cb.function || ca.file != cb.file {
        let at = parent.map_or("the root".to_string(), crate::render::frame_text);
        return Evidence::Unordered(format!(
            "different functions ({} and {}) called from {at}: their order is not in the source",
            fa.name(),
            fb.name()
        ));
    }
    match (&a.point, &b.point) {
        (Ok(pa), Ok(pb)) => match compare(pa, pb) {
            Relation::Unrelated(why) => Evidence::Unordered(why),
            r => Evidence::Source(r),
        },
        _ => match (ca.line, cb.line) {
            (Some(la), Some(lb)) => Evidence::LineNumbers(la.cmp(&lb)),
            _ => Evidence::Unordered(format!(
                "no line information for {}",
                if ca.line.is_none() {
                    fa.name()
                } else {
                    fb.name()
                }
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::{RankInfo, ResultMeta, StrataResult, ThreadInfo};
    use strata_filters::CodeFrame;

    /// A solver in C; the tests point frames at its lines.
    const SOLVER: &str = r#"#include <mpi.h>
static double get_norm(int rank) {
    double local = 1.0, global;
    if (rank == 3) stall();
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

static void finish(int rank) {
    if (rank == 3) {
        stall();
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

void solve(int rank) {
    setup(rank);
    for (int it = 0; it < 10; it++) {
        relax(rank);
        get_norm(rank);
    }
    finish(rank);
    report(rank);
}
"#;

    fn code(function: &str, file: &str, line: u32) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(function.to_string()),
            file: (!file.is_empty()).then(|| file.to_string()),
            line: (line > 0).then_some(line),
            ..CodeFrame::default()
        })
    }

    struct Fixture {
        dir: tempfile::TempDir,
        file: String,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("solver.c");
        std::fs::write(&path, SOLVER).unwrap();
        let file = path.to_str().unwrap().to_string();
        Fixture { dir, file }
    }

    /// A result whose 2D tree has `paths[i]` for the ranks `paths[i].0`.
    fn result(paths: &[(&[u32], Vec<Frame>)]) -> StrataResult {
        let size = paths
            .iter()
            .flat_map(|p| p.0.iter())
            .max()
            .map_or(0, |m| m + 1);
        let mut tree: PrefixTree<RankSet> = PrefixTree::new(size, 0);
        for (ranks, path) in paths {
            for &r in *ranks {
                tree.add_trace(path, r, None);
            }
        }
        StrataResult {
            meta: ResultMeta {
                job_size: size,
                ranks: (0..size)
                    .map(|rank| RankInfo {
                        rank,
                        ..RankInfo::default()
                    })
                    .collect(),
                ..ResultMeta::default()
            },
            tree_3d: tree.clone(),
            tree_2d: tree,
        }
    }

    fn path(f: &str, tail: &[Frame]) -> Vec<Frame> {
        let mut p = vec![Frame::function("main"), code("solve", f, 23)];
        p.extend_from_slice(tail);
        p
    }

    fn labels(o: &ProgressOrder) -> Vec<(String, Vec<u32>)> {
        o.classes
            .iter()
            .map(|c| (c.label.to_string(), c.tasks.iter().collect()))
            .collect()
    }

    fn analyze_in(fx: &Fixture, r: &StrataResult) -> ProgressOrder {
        let _ = &fx.dir;
        analyze(r, &mut SourceIndex::new(Vec::new()))
    }

    #[test]
    fn a_stall_earlier_in_straight_line_code_is_least_progressed() {
        let fx = fixture();
        let f = fx.file.as_str();
        // In get_norm, rank 3 stalls at line 4 and the others wait at line 5.
        let r = result(&[
            (
                &[3],
                path(f, &[code("get_norm", f, 4), Frame::function("stall")]),
            ),
            (
                &[0, 1, 2, 4],
                path(
                    f,
                    &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
                ),
            ),
        ]);
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2, 4])]
        );
        assert!(o.notes.is_empty(), "{:?}", o.notes);
        assert_eq!(o.label_of(3).unwrap().to_string(), "T1");
        assert_eq!(o.label_of(9), None);
        let bp = &o.branch_points[0];
        assert!(bp.relations[0][1].is_before());
        assert!(!bp.relations[1][0].is_before());
        // Labels carry over to any view: the function view's nodes.
        let fv = view(&r.tree_2d, ViewOptions::default());
        let nl = o.node_labels(&fv);
        let by_name = |n: &str| {
            fv.node_ids()
                .find(|&id| fv.node_frame(id).is_some_and(|f| f.name() == n))
                .map(|id| nl[id.index()].clone().unwrap().to_string())
                .unwrap()
        };
        assert_eq!(by_name("stall"), "T1");
        assert_eq!(by_name("MPI_Allreduce"), "T2");
        // Above the branching point the tasks are not ordered against each other.
        assert_eq!(by_name("get_norm"), "T");
    }

    #[test]
    fn different_arms_are_incomparable_and_never_ordered() {
        let fx = fixture();
        let f = fx.file.as_str();
        let r = result(&[
            (
                &[3],
                path(f, &[code("finish", f, 11), Frame::function("stall")]),
            ),
            (
                &[0, 1, 2],
                path(f, &[code("finish", f, 13), Frame::function("MPI_Barrier")]),
            ),
        ]);
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1a".into(), vec![0, 1, 2]), ("T1b".into(), vec![3])]
        );
        let bp = &o.branch_points[0];
        assert!(matches!(
            bp.relations[0][1],
            Evidence::Source(Relation::Incomparable { line: 10, .. })
        ));
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("incomparable"), "{text}");
        assert!(text.contains("not decided by the code alone"), "{text}");
    }

    #[test]
    fn lines_of_one_loop_need_the_iteration_count() {
        let fx = fixture();
        let f = fx.file.as_str();
        let r = result(&[
            (
                &[3],
                vec![
                    Frame::function("main"),
                    code("solve", f, 20),
                    Frame::function("relax"),
                ],
            ),
            (
                &[0, 1, 2],
                vec![
                    Frame::function("main"),
                    code("solve", f, 21),
                    code("get_norm", f, 5),
                    Frame::function("MPI_Allreduce"),
                ],
            ),
        ]);
        let o = analyze_in(&fx, &r);
        let bp = &o.branch_points[0];
        let Evidence::Source(Relation::NeedsIteration {
            line,
            if_same_iteration,
            ..
        }) = &bp.relations[0][1]
        else {
            panic!("{:?}", bp.relations[0][1]);
        };
        assert_eq!(*line, 19);
        // Ranks 0-2 (line 21) come after rank 3 (line 20) in the same iteration.
        assert_eq!(**if_same_iteration, Relation::After);
        assert_eq!(o.classes[0].label.0[0].level, 1);
        assert_eq!(o.classes[1].label.0[0].level, 1);
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("(needs loop variable)"), "{text}");
        assert!(text.contains("for loop at solver.c:19"), "{text}");
    }

    #[test]
    fn levels_follow_the_longest_chain_and_labels_nest() {
        let fx = fixture();
        let f = fx.file.as_str();
        // In solve: setup (18) < the loop (19-22) < finish (23) < report (24); inside the
        // loop branch, get_norm's two lines part the ranks again.
        let r = result(&[
            (
                &[5],
                vec![
                    Frame::function("main"),
                    code("solve", f, 24),
                    Frame::function("report"),
                ],
            ),
            (
                &[4],
                vec![
                    Frame::function("main"),
                    code("solve", f, 18),
                    Frame::function("setup"),
                ],
            ),
            (
                &[3],
                vec![
                    Frame::function("main"),
                    code("solve", f, 21),
                    code("get_norm", f, 4),
                    Frame::function("stall"),
                ],
            ),
            (
                &[0, 1, 2],
                vec![
                    Frame::function("main"),
                    code("solve", f, 21),
                    code("get_norm", f, 5),
                    Frame::function("MPI_Allreduce"),
                ],
            ),
        ]);
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![
                ("T1".into(), vec![4]),
                ("T2.1".into(), vec![3]),
                ("T2.2".into(), vec![0, 1, 2]),
                ("T3".into(), vec![5]),
            ]
        );
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("Least progressed: T1 (1 rank [4])"), "{text}");
    }

    #[test]
    fn different_callees_of_one_line_and_special_frames_are_unordered() {
        let fx = fixture();
        let f = fx.file.as_str();
        let r = result(&[
            (&[0], path(f, &[Frame::function("alpha")])),
            (&[1], path(f, &[Frame::function("beta")])),
            (
                &[2],
                path(f, &[Frame::Special(strata_filters::Special::TaskExited)]),
            ),
        ]);
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![
                ("T1a".into(), vec![0]),
                ("T1b".into(), vec![1]),
                ("T1c".into(), vec![2])
            ]
        );
        let bp = &o.branch_points[0];
        let Evidence::Unordered(why) = &bp.relations[0][1] else {
            panic!()
        };
        assert!(why.contains("different functions"), "{why}");
        let Evidence::Unordered(why) = &bp.relations[0][2] else {
            panic!()
        };
        assert!(why.contains("not a code location"), "{why}");
    }

    #[test]
    fn an_unreadable_source_falls_back_to_line_numbers_and_says_so() {
        let f = "/nonexistent/strata-test/solver.c";
        let r = result(&[
            (
                &[1],
                path(f, &[code("finish", f, 13), Frame::function("MPI_Barrier")]),
            ),
            (
                &[0],
                path(f, &[code("finish", f, 11), Frame::function("stall")]),
            ),
        ]);
        let o = analyze(&r, &mut SourceIndex::new(Vec::new()));
        // By line number only (the branch structure is not seen: that is the fallback).
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![0]), ("T2".into(), vec![1])]
        );
        assert!(matches!(
            o.branch_points[0].relations[0][1],
            Evidence::LineNumbers(std::cmp::Ordering::Less)
        ));
        assert_eq!(o.notes.len(), 1, "{:?}", o.notes);
        assert!(o.notes[0].contains("/nonexistent/strata-test/solver.c"));
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("by line number only"), "{text}");
    }

    #[test]
    fn with_threads_only_the_main_thread_places_a_rank() {
        let fx = fixture();
        let f = fx.file.as_str();
        let mut tree: PrefixTree<RankSet> = PrefixTree::new(2, 4);
        // Rank 0: main thread (id 0) stalls; its helper (id 1) waits in MPI.
        tree.add_trace(
            &path(f, &[code("get_norm", f, 4), Frame::function("stall")]),
            0,
            Some(0),
        );
        tree.add_trace(
            &path(
                f,
                &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
            ),
            0,
            Some(1),
        );
        // Rank 1: main thread (id 2) in MPI, helper (id 3) too.
        tree.add_trace(
            &path(
                f,
                &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
            ),
            1,
            Some(2),
        );
        tree.add_trace(
            &path(
                f,
                &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
            ),
            1,
            Some(3),
        );
        let thread = |id, rank, tid| ThreadInfo {
            id,
            rank,
            tid,
            name: None,
        };
        let r = StrataResult {
            meta: ResultMeta {
                job_size: 2,
                ranks: vec![
                    RankInfo {
                        rank: 0,
                        pid: Some(100),
                        ..RankInfo::default()
                    },
                    RankInfo {
                        rank: 1,
                        pid: Some(200),
                        ..RankInfo::default()
                    },
                ],
                threads: vec![
                    thread(0, 0, 100),
                    thread(1, 0, 101),
                    thread(2, 1, 200),
                    thread(3, 1, 201),
                ],
                ..ResultMeta::default()
            },
            tree_3d: tree.clone(),
            tree_2d: tree,
        };
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![0]), ("T2".into(), vec![1])]
        );
    }

    #[test]
    fn too_many_groups_are_left_unordered_with_a_note() {
        let names: Vec<String> = (0..=MAX_GROUPS).map(|i| format!("f{i}")).collect();
        let ranks: Vec<[u32; 1]> = (0..=MAX_GROUPS as u32).map(|r| [r]).collect();
        let paths: Vec<(&[u32], Vec<Frame>)> = ranks
            .iter()
            .zip(&names)
            .map(|(r, n)| (&r[..], vec![Frame::function("main"), Frame::function(n)]))
            .collect();
        let o = analyze(&result(&paths), &mut SourceIndex::new(Vec::new()));
        assert_eq!(o.classes.len(), MAX_GROUPS + 1);
        assert!(o.classes.iter().all(|c| c.label.0[0].level == 1));
        assert!(
            o.notes.iter().any(|n| n.contains("not compared pairwise")),
            "{:?}",
            o.notes
        );
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("too many to compare pairwise"), "{text}");
    }

    #[test]
    fn tags_and_labels_print_and_sort_least_progressed_first() {
        let t = |level, tie| Tag { level, tie };
        let a = Label(vec![t(1, 0)]);
        let b = Label(vec![t(1, 0), t(2, 0)]);
        let c = Label(vec![t(2, 1)]);
        let d = Label(vec![t(2, 2)]);
        assert_eq!(
            [&a, &b, &c, &d].map(|l| l.to_string()),
            ["T1", "T1.2", "T2a", "T2b"]
        );
        assert!(a < b && b < c && c < d);
        assert_eq!(b.common_prefix(&a), a);
        assert_eq!(c.common_prefix(&d).to_string(), "T");
        assert_eq!(t(3, 27).to_string(), "3_27");
    }
}
