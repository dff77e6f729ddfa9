//! The tree the order is derived from: the 2D tree (the last sample) at line granularity, cut
//! below MPI, with only each rank's main thread when threads were sampled.

use rustc_hash::FxHashMap;
use strata_filters::{Granularity, NodeId, PrefixTree, RankSet, ViewOptions, view};
use strata_result::StrataResult;

/// The tree the order is derived from: the 2D tree at line granularity, cut below MPI, main
/// threads only.
pub(super) fn line_tree(result: &StrataResult) -> PrefixTree<RankSet> {
    view(
        &main_threads(result),
        ViewOptions {
            granularity: Granularity::Line,
            cut_below_mpi: true,
            hide_start_up: false,
            hide_interpreter: true,
            mpi_call_names: true,
            hide_runtime_threads: true,
        },
    )
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
