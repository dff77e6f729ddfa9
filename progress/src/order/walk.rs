//! The walk down the prefix tree from the root: at every branching point the parting groups
//! are ordered, and each task's label extends the label of the point above; the result,
//! [`ProgressOrder`], and the loop-order variables the walk would read.

use super::groups::{Group, child_groups, partition};
use super::levels::{BranchPoint, order_groups};
use super::points::Points;
use super::tree::line_tree;
use crate::loops::{Loops, loops_of};
use crate::source::SourceIndex;
use rustc_hash::FxHashMap;
use strata_filters::{Frame, NodeId, PrefixTree, RankSet, TaskSet};
use strata_proto::overlay::VariableRequest;
use strata_result::StrataResult;
use strata_result::annotation::{Label, Tag};

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
