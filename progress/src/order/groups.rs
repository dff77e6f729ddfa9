//! The groups of tasks that part ways at a node: one per child, split by the iteration
//! values of the loops the child's line is in, and the tasks that end at the node itself.

use super::points::Points;
use crate::loops::{Loops, loops_of};
use crate::point::ProgramPoint;
use strata_filters::{Frame, NodeId, PrefixTree, RankSet};
use strata_result::annotation::Tag;

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

/// `tasks` split by `key`, in order of the key.
pub(super) fn partition<K: Ord>(tasks: &RankSet, key: impl Fn(u32) -> K) -> Vec<(K, RankSet)> {
    let mut parts: std::collections::BTreeMap<K, RankSet> = std::collections::BTreeMap::new();
    for t in tasks.iter() {
        parts.entry(key(t)).or_default().insert(t);
    }
    parts.into_iter().collect()
}

/// The groups that part ways at `id`: each child's tasks (split by the iteration values of
/// the loops the child's line is in), and the tasks ending at `id` itself.
pub(super) fn child_groups(
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
