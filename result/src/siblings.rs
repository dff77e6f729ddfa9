//! The order siblings are drawn in, the same in every view of a tree (the text tree, the
//! terminal UI, the HTML report), so that a user moving between them finds a branch where
//! they left it.

use strata_filters::{NodeId, PrefixTree, RankSet, TaskSet};

use crate::annotation::Label;

/// The children of `id`: with a progress order's `labels`, least progressed first and
/// unordered (unlabelled) branches after; then by lowest rank, which reads naturally and
/// is stable across runs; on a tie (a rank on two paths of a 3D tree), the larger first.
pub fn sorted_children(
    tree: &PrefixTree<RankSet>,
    id: NodeId,
    labels: Option<&[Option<Label>]>,
) -> Vec<NodeId> {
    let mut children = tree.node(id).children.clone();
    children.sort_by_key(|&c| {
        let tasks = &tree.node(c).tasks;
        let label = labels.map(|l| {
            let l = l[c.index()].as_ref();
            (l.is_none(), l.cloned())
        });
        (label, tasks.min(), std::cmp::Reverse(tasks.count()))
    });
    children
}
