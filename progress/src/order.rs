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

use super::loops::{Loops, loops_of};
use super::lov::Direction;
use super::point::{ProgramPoint, Relation, Step, compare};
use super::source::SourceIndex;
use rustc_hash::FxHashMap;
use strata_filters::{Frame, Granularity, NodeId, PrefixTree, RankSet, TaskSet, ViewOptions, view};
use strata_proto::overlay::VariableRequest;
use strata_result::StrataResult;
use strata_result::annotation::{Label, Tag};

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
    /// Loop-order variables decided, or helped: the loops both groups are in were compared
    /// by their iteration values, outer first. When the last fact's values differ it decides
    /// (by the variable's direction); when all are equal, `then` is how the rest of the
    /// points compares (or `None` at a node where only the iterations differ).
    Iterations {
        facts: Vec<IterationFact>,
        then: Option<Relation>,
    },
}

/// Two groups' values of one loop's loop-order variable.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationFact {
    pub file: String,
    pub line: u32,
    pub kind: &'static str,
    pub variable: String,
    pub direction: Direction,
    /// The values at the start of each group's current iteration: a rank past the
    /// variable's update (a statement in the loop body) has it one step further, and that
    /// step is taken back (`adjusted`).
    pub values: (i64, i64),
    pub adjusted: bool,
}

impl IterationFact {
    /// The order the values give, when they differ and the direction is known.
    fn order(&self) -> Option<std::cmp::Ordering> {
        let (a, b) = self.values;
        match self.direction {
            _ if a == b => Some(std::cmp::Ordering::Equal),
            Direction::Increasing => Some(a.cmp(&b)),
            Direction::Decreasing => Some(b.cmp(&a)),
            Direction::Unknown => None,
        }
    }
}

impl Evidence {
    /// True when the first group is strictly less progressed than the second.
    pub fn is_before(&self) -> bool {
        match self {
            Evidence::Source(Relation::Before)
            | Evidence::LineNumbers(std::cmp::Ordering::Less) => true,
            Evidence::Iterations { facts, then } => match facts.last().map(IterationFact::order) {
                Some(Some(std::cmp::Ordering::Equal)) | None => then == &Some(Relation::Before),
                Some(Some(o)) => o == std::cmp::Ordering::Less,
                Some(None) => false,
            },
            _ => false,
        }
    }

    pub fn reversed(&self) -> Evidence {
        match self {
            Evidence::Source(r) => Evidence::Source(r.reversed()),
            Evidence::LineNumbers(o) => Evidence::LineNumbers(o.reverse()),
            Evidence::Unordered(w) => Evidence::Unordered(w.clone()),
            Evidence::Iterations { facts, then } => Evidence::Iterations {
                facts: facts
                    .iter()
                    .map(|f| IterationFact {
                        values: (f.values.1, f.values.0),
                        ..f.clone()
                    })
                    .collect(),
                then: then.as_ref().map(Relation::reversed),
            },
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
    /// The values of the loop-order variables of the loops the point lies in, outer first,
    /// shared by every task of the group (`None` where not known).
    pub iterations: Vec<Option<i64>>,
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
    /// Problems with the sources, one line per file or frame ("cannot read ..."), and
    /// loop-order variables some ranks gave no value for.
    pub notes: Vec<String>,
    /// The loops of the frames, their loop-order variables and the values read.
    pub loops: Loops,
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

/// The tree the order is derived from: the 2D tree at line granularity, cut below MPI, main
/// threads only.
fn line_tree(result: &StrataResult) -> PrefixTree<RankSet> {
    view(
        &main_threads(result),
        ViewOptions {
            granularity: Granularity::Line,
            cut_below_mpi: true,
        },
    )
}

/// The loops enclosing the frames of `tree`, with their loop-order variables (static
/// analysis) and the values `result` holds for them.
fn collect_loops(
    tree: &PrefixTree<RankSet>,
    points: &mut Points<'_>,
    result: &StrataResult,
) -> Loops {
    let mut loops = Loops::default();
    // Frames only looked at for their loops must not fill the notes with the sources of
    // every library frame: only a comparison that needs a source reports it missing.
    let notes_before = points.notes.len();
    for id in tree.node_ids().skip(1) {
        let frame = tree.node_frame(id).cloned();
        let Ok(point) = points.of(frame.as_ref()) else {
            continue;
        };
        if loops_of(&point).is_empty() {
            continue;
        }
        let function = frame
            .as_ref()
            .and_then(Frame::code)
            .and_then(|c| c.function.clone())
            .unwrap_or_default();
        let ranks = tree.node(id).tasks.len();
        let sources = &mut *points.sources;
        loops.add(&point, &function, ranks, |file, line| {
            sources
                .loop_variables(file, line)
                .map(|v| v.best().cloned())
                .map_err(|e| e.to_string())
        });
    }
    points.notes.truncate(notes_before);
    points.cache.retain(|_, p| p.is_ok());
    loops.fill(&result.meta.variables);
    loops
}

/// The variables the progress order of `result` would use: the loop-order variables of the
/// loops its ranks' frames are in. `strata attach --progress` reads them before detaching.
pub fn loop_requests(result: &StrataResult, sources: &mut SourceIndex) -> Vec<VariableRequest> {
    let tree = line_tree(result);
    let mut points = Points {
        sources,
        cache: FxHashMap::default(),
        notes: Vec::new(),
    };
    collect_loops(&tree, &mut points, result).requests()
}

/// A node to visit: the tasks below it restricted to `filter` (a group split off by its
/// iteration values), and the label they carry.
struct Visit {
    node: NodeId,
    label: Label,
    filter: Option<RankSet>,
    /// The node's own loops already split these tasks.
    iterations_done: bool,
}

fn restrict(set: &RankSet, filter: &Option<RankSet>) -> RankSet {
    match filter {
        None => set.clone(),
        Some(f) => set & f,
    }
}

/// Runs the analysis on `result`'s 2D tree, reading sources through `sources`; loop-order
/// variables the result holds values of (`meta.variables`) order ranks inside loops.
pub fn analyze(result: &StrataResult, sources: &mut SourceIndex) -> ProgressOrder {
    let tree = line_tree(result);
    let mut points = Points {
        sources,
        cache: FxHashMap::default(),
        notes: Vec::new(),
    };
    let loops = collect_loops(&tree, &mut points, result);
    let mut branch_points = Vec::new();
    let mut classes = Vec::new();
    // Depth-first from the root, carrying each node's label.
    let mut stack = vec![Visit {
        node: NodeId::ROOT,
        label: Label::default(),
        filter: None,
        iterations_done: false,
    }];
    while let Some(v) = stack.pop() {
        let id = v.node;
        let tasks = restrict(&tree.node(id).tasks, &v.filter);
        if tasks.is_empty() {
            continue;
        }
        // Tasks at one line of a loop but in different iterations part ways here.
        if !v.iterations_done
            && id != NodeId::ROOT
            && let Some(bp) = iteration_branch(&tree, id, &v.label, &tasks, &mut points, &loops)
        {
            for g in &bp.groups {
                stack.push(Visit {
                    node: id,
                    label: bp.label_of(g),
                    filter: Some(g.tasks.clone()),
                    iterations_done: true,
                });
            }
            branch_points.push(bp);
            continue;
        }
        let children: Vec<(NodeId, RankSet)> = tree
            .node(id)
            .children
            .iter()
            .map(|&c| (c, &tree.node(c).tasks & &tasks))
            .filter(|(_, t)| !t.is_empty())
            .collect();
        let ending = &tree.tasks_ending_at(id) & &tasks;
        if children.is_empty() {
            if !ending.is_empty() {
                classes.push(ProgressClass {
                    label: v.label,
                    tasks: ending,
                    node: id,
                });
            }
            continue;
        }
        if children.len() == 1 && ending.is_empty() {
            let (c, t) = children.into_iter().next().expect("one child");
            stack.push(Visit {
                node: c,
                label: v.label,
                filter: Some(t),
                iterations_done: false,
            });
            continue;
        }
        let groups = child_groups(&tree, id, &children, ending, &mut points, &loops);
        let here = tree.node_frame(id).cloned();
        let bp = order_groups(id, here, v.label, groups, &mut points, &loops);
        for g in &bp.groups {
            match g.node {
                Some(c) => stack.push(Visit {
                    node: c,
                    label: bp.label_of(g),
                    filter: Some(g.tasks.clone()),
                    iterations_done: false,
                }),
                None => classes.push(ProgressClass {
                    label: bp.label_of(g),
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
    let mut notes = points.notes;
    for c in loops.counters.values() {
        // A loop only one rank is in cannot order anything.
        if c.ranks_inside > 1 {
            notes.extend(c.missing());
        }
        notes.extend(c.unread.iter().cloned());
    }
    ProgressOrder {
        tree,
        classes,
        branch_points,
        notes,
        loops,
        class_of,
    }
}

/// Splits `tasks` at node `id` by the iteration values of the loops its frame's line is in,
/// when they differ: the ranks at one line in iteration 4 are behind those in iteration 5.
fn iteration_branch(
    tree: &PrefixTree<RankSet>,
    id: NodeId,
    label: &Label,
    tasks: &RankSet,
    points: &mut Points<'_>,
    loops: &Loops,
) -> Option<BranchPoint> {
    let frame = tree.node_frame(id).cloned();
    // Only frames already placed while collecting the loops: a frame whose source is
    // missing has no loops to split by, and looking again would note it missing.
    let point = points.placed(frame.as_ref())?;
    if loops_of(&point).is_empty() {
        return None;
    }
    let parts = partition(tasks, |r| loops.tuple(&point, r));
    if parts.len() < 2 {
        return None;
    }
    let groups = parts
        .into_iter()
        .map(|(iterations, tasks)| Group {
            node: Some(id),
            tasks,
            frame: frame.clone(),
            point: Ok(point.clone()),
            iterations,
            tag: Tag { level: 0, tie: 0 },
        })
        .collect();
    Some(order_groups(
        id,
        frame,
        label.clone(),
        groups,
        points,
        loops,
    ))
}

/// `tasks` split by `key`, in order of the key.
fn partition<K: Ord>(tasks: &RankSet, key: impl Fn(u32) -> K) -> Vec<(K, RankSet)> {
    let mut parts: std::collections::BTreeMap<K, RankSet> = std::collections::BTreeMap::new();
    for t in tasks.iter() {
        parts.entry(key(t)).or_default().insert(t);
    }
    parts.into_iter().collect()
}

/// The groups that part ways at `id`: each child's tasks (split by the iteration values of
/// the loops the child's line is in), and the tasks ending at `id` itself.
fn child_groups(
    tree: &PrefixTree<RankSet>,
    id: NodeId,
    children: &[(NodeId, RankSet)],
    ending: RankSet,
    points: &mut Points<'_>,
    loops: &Loops,
) -> Vec<Group> {
    let mut groups = Vec::new();
    for (c, tasks) in children {
        let frame = tree.node_frame(*c).cloned();
        let point = points.of(frame.as_ref());
        let parts = match &point {
            Ok(p) if !loops_of(p).is_empty() => partition(tasks, |r| loops.tuple(p, r)),
            _ => vec![(Vec::new(), tasks.clone())],
        };
        for (iterations, tasks) in parts {
            groups.push(Group {
                node: Some(*c),
                tasks,
                frame: frame.clone(),
                point: point.clone(),
                iterations,
                tag: Tag { level: 0, tie: 0 },
            });
        }
    }
    if !ending.is_empty() {
        let here = tree.node_frame(id).cloned();
        groups.push(Group {
            node: None,
            tasks: ending,
            point: points.of(here.as_ref()),
            frame: here,
            iterations: Vec::new(),
            tag: Tag { level: 0, tie: 0 },
        });
    }
    groups
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
    /// The point of `frame` if it was already placed (no new lookup, no note).
    fn placed(&self, frame: Option<&Frame>) -> Option<ProgramPoint> {
        let code = frame?.code()?;
        let key = (code.file.clone()?, code.line?);
        self.cache.get(&key)?.as_ref().ok().cloned()
    }

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

/// Orders the groups that part ways at `id` (below its frame `here`).
fn order_groups(
    id: NodeId,
    here: Option<Frame>,
    label: Label,
    mut groups: Vec<Group>,
    points: &mut Points<'_>,
    loops: &Loops,
) -> BranchPoint {
    groups.sort_by_key(|g| g.tasks.min());
    let n = groups.len();
    if n > MAX_GROUPS {
        points.notes.push(format!(
            "{n} groups part ways below {}: more than {MAX_GROUPS}, not compared pairwise (left unordered)",
            here.as_ref().map_or("the root".to_string(), strata_result::render::frame_text)
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
            let e = evidence(&groups[i], &groups[j], here.as_ref(), loops);
            relations[j][i] = e.reversed();
            relations[i][j] = e;
        }
    }
    // Level: 1 + the longest chain of groups strictly before it ("before" is a strict
    // partial order: lexicographic on points and iteration values). Kahn's algorithm over
    // the "before" edges visits every group after all its predecessors.
    let mut preds = vec![0usize; n];
    for j in 0..n {
        preds[j] = (0..n).filter(|&i| relations[i][j].is_before()).count();
    }
    let mut ready: Vec<usize> = (0..n).filter(|&j| preds[j] == 0).collect();
    let mut level = vec![1u32; n];
    while let Some(i) = ready.pop() {
        for j in 0..n {
            if relations[i][j].is_before() {
                level[j] = level[j].max(level[i] + 1);
                preds[j] -= 1;
                if preds[j] == 0 {
                    ready.push(j);
                }
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
fn evidence(a: &Group, b: &Group, parent: Option<&Frame>, loops: &Loops) -> Evidence {
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
        let at = parent.map_or("the root".to_string(), strata_result::render::frame_text);
        return Evidence::Unordered(format!(
            "different functions ({} and {}) called from {at}: their order is not in the source",
            fa.name(),
            fb.name()
        ));
    }
    match (&a.point, &b.point) {
        (Ok(pa), Ok(pb)) => compare_with_iterations(pa, &a.iterations, pb, &b.iterations, loops),
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

/// [`compare`], with the loops' iteration values where both points are in a loop: the
/// first difference decides, an offset or an arm as in the paper's Definition 3.4, an
/// iteration placeholder by the loop-order variable's values when both are known.
fn compare_with_iterations(
    pa: &ProgramPoint,
    ia: &[Option<i64>],
    pb: &ProgramPoint,
    ib: &[Option<i64>],
    loops: &Loops,
) -> Evidence {
    let suffix = |p: &ProgramPoint, i: usize| ProgramPoint {
        steps: p.steps[i..].to_vec(),
        ..p.clone()
    };
    let wrap = |facts: Vec<IterationFact>, r: Relation| match (facts.is_empty(), r) {
        (true, Relation::Unrelated(why)) => Evidence::Unordered(why),
        (true, r) => Evidence::Source(r),
        (false, r) => Evidence::Iterations {
            facts,
            then: Some(r),
        },
    };
    let mut facts = Vec::new();
    let mut k = 0;
    let same_function = pa.file == pb.file && pa.function_lines == pb.function_lines;
    for (i, (sa, sb)) in pa.steps.iter().zip(&pb.steps).enumerate() {
        match (sa, sb) {
            (Step::Iteration { line, kind }, Step::Iteration { line: lb, .. })
                if same_function && line == lb =>
            {
                let counter = loops.get(&pa.file, *line);
                let raw = (ia.get(k).copied().flatten(), ib.get(k).copied().flatten());
                k += 1;
                let lov = counter.and_then(|c| c.lov.as_ref().ok());
                // A rank past a body update reads the next iteration's value: count from
                // the start of each rank's iteration.
                let past = |p: &ProgramPoint, c: &super::lov::Candidate| {
                    c.line != *line && p.line > c.line
                };
                let start = |v: Option<i64>, p: &ProgramPoint, c: &super::lov::Candidate| match (
                    v,
                    past(p, c),
                ) {
                    (Some(v), false) => Some(v),
                    (Some(v), true) => c.step.map(|s| v - s),
                    (None, _) => None,
                };
                let values =
                    lov.map_or((None, None), |c| (start(raw.0, pa, c), start(raw.1, pb, c)));
                match (values, lov) {
                    ((Some(x), Some(y)), Some(lov)) => {
                        facts.push(IterationFact {
                            file: pa.file.clone(),
                            line: *line,
                            kind,
                            variable: lov.variable.clone(),
                            direction: lov.direction,
                            values: (x, y),
                            adjusted: past(pa, lov) != past(pb, lov),
                        });
                        if x != y {
                            return Evidence::Iterations { facts, then: None };
                        }
                    }
                    // Not known: the plain comparison says what the count would decide.
                    _ => return wrap(facts, compare(&suffix(pa, i), &suffix(pb, i))),
                }
            }
            _ if sa == sb => {}
            _ => return wrap(facts, compare(&suffix(pa, i), &suffix(pb, i))),
        }
    }
    wrap(facts, compare(pa, pb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_filters::CodeFrame;
    use strata_result::variables::{ReadClass, Reading, VariableReads};
    use strata_result::{RankInfo, ResultMeta, StrataResult, ThreadInfo};

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

void run(void) {
    int it = 0;
    while (1) {
        before(it);
        it++;
        after(it);
    }
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

    fn reads(function: &str, variable: &str, values: &[(i64, &str)]) -> VariableReads {
        VariableReads {
            function: function.into(),
            variable: variable.into(),
            classes: values
                .iter()
                .map(|&(v, ranks)| ReadClass {
                    reading: Reading::Integer(v),
                    ranks: ranks.into(),
                    at: None,
                })
                .collect(),
        }
    }

    /// Every rank at the same line of the loop (one stack), rank 3 one iteration behind.
    #[test]
    fn one_stack_is_split_by_the_loop_counter_and_the_lowest_is_behind() {
        let fx = fixture();
        let f = fx.file.as_str();
        let stack = vec![
            Frame::function("main"),
            code("solve", f, 21),
            code("get_norm", f, 5),
            Frame::function("MPI_Allreduce"),
        ];
        let mut r = result(&[(&[0, 1, 2, 3, 4], stack)]);
        // Without values: one class, nothing to order.
        let o = analyze_in(&fx, &r);
        assert_eq!(labels(&o), vec![("T".into(), vec![0, 1, 2, 3, 4])]);
        assert_eq!(
            loop_requests(&r, &mut SourceIndex::new(Vec::new())),
            vec![VariableRequest {
                function: "solve".into(),
                variable: "it".into()
            }]
        );
        r.meta.variables = vec![reads("solve", "it", &[(3, "3"), (4, "0-2,4")])];
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2, 4])]
        );
        let text = super::super::report::text(&o, 100);
        assert!(text.contains("Least progressed: T1 (1 rank [3])"), "{text}");
        assert!(
            text.contains(
                "T1 before T2: an earlier iteration: it = 3 and 4 in the for loop at solver.c:19"
            ),
            "{text}"
        );
    }

    /// Ranks at two lines of one loop body: the iteration decides first, the line second.
    #[test]
    fn iteration_values_order_lines_of_one_loop() {
        let fx = fixture();
        let f = fx.file.as_str();
        let stall = vec![
            Frame::function("main"),
            code("solve", f, 20),
            Frame::function("relax"),
        ];
        let wait = vec![
            Frame::function("main"),
            code("solve", f, 21),
            code("get_norm", f, 5),
            Frame::function("MPI_Allreduce"),
        ];
        let mut r = result(&[(&[3], stall), (&[0, 1, 2], wait)]);
        // Rank 3 is at line 20 but one iteration ahead: the others are behind.
        r.meta.variables = vec![reads("solve", "it", &[(5, "3"), (4, "0-2")])];
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![0, 1, 2]), ("T2".into(), vec![3])]
        );
        // The same iteration: line 20 comes first.
        r.meta.variables = vec![reads("solve", "it", &[(4, "0-3")])];
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2])]
        );
        let text = super::super::report::text(&o, 100);
        assert!(
            text.contains("in the same iteration (it = 4 (for loop at solver.c:19)): line 20 comes before line 21 in solve"),
            "{text}"
        );
        // A group whose ranks are in different iterations splits: T1.x inside one child.
        r.meta.variables = vec![reads("solve", "it", &[(4, "0-1,3"), (5, "2")])];
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![
                ("T1".into(), vec![3]),
                ("T2".into(), vec![0, 1]),
                ("T3".into(), vec![2])
            ]
        );
    }

    /// `it++` in the middle of the body: a rank past it reads the next iteration's value.
    #[test]
    fn a_rank_past_the_update_is_counted_from_its_iterations_start() {
        let fx = fixture();
        let f = fx.file.as_str();
        let at = |line| {
            vec![
                Frame::function("main"),
                code("run", f, line),
                Frame::function("work"),
            ]
        };
        // Rank 0 before the update with it = 5 (iteration 5); rank 1 after it with it = 5
        // (iteration 4): rank 1 is behind although its line comes later.
        let mut r = result(&[(&[0], at(30)), (&[1], at(32))]);
        r.meta.variables = vec![reads("run", "it", &[(5, "0-1")])];
        let o = analyze_in(&fx, &r);
        assert_eq!(
            labels(&o),
            vec![("T1".into(), vec![1]), ("T2".into(), vec![0])]
        );
        let text = super::super::report::text(&o, 100);
        assert!(
            text.contains("it = 4 and 5 in the while loop at solver.c:29 (as each iteration began"),
            "{text}"
        );
        // it = 6 past the update is iteration 5, the same as rank 0's: the line decides.
        r.meta.variables = vec![reads("run", "it", &[(5, "0"), (6, "1")])];
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
