//! Property tests of the trace model: the tree network's way of building the tree
//! (subtree-scoped daemon trees, merged up a tree of commnodes in any child order, remapped
//! once) gives exactly the tree built directly from rank-numbered traces.

use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use strata_filters::synth::{Placement, SynthJob, SynthParams};
use strata_filters::wire::{self, Limits};
use strata_filters::{
    ConcatMerge, Frame, Granularity, IndexMap, PrefixTree, RankSet, TaskRuns, TaskSet, ViewOptions,
    equivalence_classes, merge_concat, remap, view,
};

/// A job: per rank, per sample, a path over a small alphabet (so paths share prefixes).
#[derive(Clone, Debug)]
struct Job {
    traces: Vec<Vec<Vec<Frame>>>,
}

/// Frame names, start-up frames among them (the view hides those at the top of a path).
const ALPHABET: [&str; 11] = [
    "main",
    "_start",
    "start_thread",
    "std::rt::lang_start_internal",
    "solve",
    "PMPI_Barrier",
    "opal_progress",
    "PMPI_Waitall",
    "compute",
    "mpi_recv_",
    "MPI_Barrier",
];

fn path_strategy() -> impl Strategy<Value = Vec<Frame>> {
    prop::collection::vec(0..ALPHABET.len(), 0..6).prop_map(|ix| {
        ix.into_iter()
            .map(|i| Frame::function(ALPHABET[i]))
            .collect()
    })
}

fn job_strategy() -> impl Strategy<Value = Job> {
    (1usize..24, 1usize..4).prop_flat_map(|(ranks, samples)| {
        prop::collection::vec(prop::collection::vec(path_strategy(), samples), ranks)
            .prop_map(|traces| Job { traces })
    })
}

fn direct(job: &Job) -> PrefixTree<RankSet> {
    let mut t = PrefixTree::new(job.traces.len() as u32, 0);
    for (rank, samples) in job.traces.iter().enumerate() {
        for path in samples {
            t.add_trace(path, rank as u32, None);
        }
    }
    t
}

/// A daemon's tree over its own ranks, numbered 0..k in the given local order.
fn daemon_tree(job: &Job, ranks: &[u32]) -> PrefixTree<TaskRuns> {
    let mut t = PrefixTree::new(ranks.len() as u32, 0);
    for (local, &rank) in ranks.iter().enumerate() {
        for path in &job.traces[rank as usize] {
            t.add_trace(path, local as u32, None);
        }
    }
    t
}

/// Splits `0..n` into groups (a placement of ranks on daemons, local order shuffled).
fn placement_strategy(n: usize) -> impl Strategy<Value = Vec<Vec<u32>>> {
    (
        Just((0..n as u32).collect::<Vec<_>>()).prop_shuffle(),
        prop::collection::vec(any::<bool>(), n),
    )
        .prop_map(|(perm, cuts)| {
            let mut groups: Vec<Vec<u32>> = vec![Vec::new()];
            for (i, r) in perm.into_iter().enumerate() {
                if i > 0 && cuts[i] {
                    groups.push(Vec::new());
                }
                groups.last_mut().unwrap().push(r);
            }
            groups
        })
}

/// Merges daemon trees up a tree of commnodes of the given fanout, returning the root tree
/// and the concatenated rank map in matching order.
fn merge_up(
    mut level: Vec<(PrefixTree<TaskRuns>, Vec<u32>)>,
    fanout: usize,
) -> (PrefixTree<TaskRuns>, Vec<u32>) {
    while level.len() > 1 {
        level = level
            .chunks(fanout)
            .map(|group| {
                let tree = merge_concat(group.iter().map(|(t, _)| t));
                let map = group.iter().flat_map(|(_, m)| m.iter().copied()).collect();
                (tree, map)
            })
            .collect();
    }
    let (t, m) = level.pop().unwrap();
    // A single daemon is still merged once, like a root with one child.
    (merge_concat([&t]), m)
}

fn job_and_placement() -> impl Strategy<Value = (Job, Vec<Vec<u32>>, Vec<usize>, usize)> {
    job_strategy().prop_flat_map(|job| {
        let n = job.traces.len();
        placement_strategy(n).prop_flat_map(move |groups| {
            let g = groups.len();
            (
                Just(job.clone()),
                Just(groups),
                Just((0..g).collect::<Vec<_>>()).prop_shuffle(),
                2usize..5,
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Merge-then-remap equals the direct tree, whatever the placement, local task order,
    /// child order and tree shape.
    #[test]
    fn merge_then_remap_equals_direct((job, groups, order, fanout) in job_and_placement()) {
        let n = job.traces.len() as u32;
        let leaves: Vec<(PrefixTree<TaskRuns>, Vec<u32>)> =
            order.iter().map(|&g| (daemon_tree(&job, &groups[g]), groups[g].clone())).collect();
        let (merged, map) = merge_up(leaves, fanout);
        prop_assert_eq!(merged.task_space(), n);
        let map = IndexMap::new(map, n, "rank").unwrap();
        let remapped = remap(&merged, &map, None).unwrap();
        prop_assert_eq!(remapped.canonical(), direct(&job).canonical());
        let naive = strata_filters::remap::remap_naive(&merged, &map);
        prop_assert_eq!(naive.canonical(), remapped.canonical());
    }

    /// Hiding start-up frames in a tree is hiding them in each of its paths: the view
    /// equals the tree of the paths without their hidden prefix. One sample per rank: with
    /// more, a tree knows a rank ends at a node only when none of its paths goes deeper.
    #[test]
    fn hiding_start_up_frames_acts_on_each_path(job in job_strategy(), cut in any::<bool>()) {
        let job = Job { traces: job.traces.into_iter().map(|s| s[..1].to_vec()).collect() };
        let shown = ViewOptions { hide_start_up: false, cut_below_mpi: cut, ..ViewOptions::default() };
        let hidden = ViewOptions { hide_start_up: true, ..shown };
        let mut each: PrefixTree<RankSet> = PrefixTree::new(job.traces.len() as u32, 0);
        for (rank, samples) in job.traces.iter().enumerate() {
            let n = strata_filters::start_up::hidden_prefix(&samples[0]);
            each.add_trace(&samples[0][n..], rank as u32, None);
        }
        prop_assert_eq!(view(&direct(&job), hidden).canonical(), view(&each, shown).canonical());
    }

    /// Views commute with merging and with the remap.
    #[test]
    fn views_commute_with_merge((job, groups, order, _f) in job_and_placement(),
                                gran in 0usize..3, cut in any::<bool>(), hide in any::<bool>(),
                                names in any::<bool>()) {
        let opts = ViewOptions {
            granularity: Granularity::ALL[gran],
            cut_below_mpi: cut,
            hide_start_up: hide,
            hide_interpreter: hide,
            mpi_call_names: names,
            hide_runtime_threads: true,
        };
        let n = job.traces.len() as u32;
        let daemons: Vec<PrefixTree<TaskRuns>> = order.iter().map(|&g| daemon_tree(&job, &groups[g])).collect();
        let map: Vec<u32> = order.iter().flat_map(|&g| groups[g].iter().copied()).collect();
        let map = IndexMap::new(map, n, "rank").unwrap();
        let view_of_merge = view(&merge_concat(&daemons), opts);
        let viewed: Vec<_> = daemons.iter().map(|d| view(d, opts)).collect();
        let merge_of_views = merge_concat(&viewed);
        prop_assert_eq!(view_of_merge.canonical(), merge_of_views.canonical());
        prop_assert_eq!(
            remap(&view_of_merge, &map, None).unwrap().canonical(),
            view(&direct(&job), opts).canonical()
        );
    }

    /// Classes are exactly "ranks with the same set of path ends".
    #[test]
    fn classes_group_ranks_by_leaf_set(job in job_strategy()) {
        let tree = direct(&job);
        let classes = equivalence_classes(&tree);
        let mut expect: BTreeMap<BTreeSet<Vec<Frame>>, BTreeSet<u32>> = BTreeMap::new();
        for (rank, samples) in job.traces.iter().enumerate() {
            // A 3D tree keeps, per task, the maximal paths: a sample that ended at a proper
            // prefix of another sample's path leaves no trace of its own (as in STAT).
            let ends: BTreeSet<Vec<Frame>> = samples
                .iter()
                .filter(|p| !p.is_empty())
                .filter(|p| !samples.iter().any(|q| q.len() > p.len() && q.starts_with(p)))
                .cloned()
                .collect();
            if !ends.is_empty() {
                expect.entry(ends).or_default().insert(rank as u32);
            }
        }
        let mut got: BTreeMap<BTreeSet<Vec<Frame>>, BTreeSet<u32>> = BTreeMap::new();
        for c in &classes {
            let ends: BTreeSet<Vec<Frame>> = c.leaves.iter().map(|&l| tree.path_frames(l)).collect();
            prop_assert!(got.insert(ends, c.tasks.iter().collect()).is_none());
        }
        prop_assert_eq!(got, expect);
        let sizes: Vec<u64> = classes.iter().map(|c| c.tasks.count()).collect();
        prop_assert!(sizes.windows(2).all(|w| w[0] <= w[1]), "smallest first");
    }

    /// The wire encoding round-trips, and the decoder never panics on garbage.
    #[test]
    fn wire_round_trips((job, groups, _o, _f) in job_and_placement(), garbage in prop::collection::vec(any::<u8>(), 0..200)) {
        let t = daemon_tree(&job, &groups[0]);
        let back = wire::decode_bytes(&wire::encode_to_vec(&t), &Limits::default()).unwrap();
        prop_assert_eq!(back.canonical(), t.canonical());
        prop_assert_eq!(back.task_space(), t.task_space());
        let _ = wire::decode_bytes(&garbage, &Limits::default());
    }
}

#[test]
fn synthetic_jobs_merge_to_their_direct_tree() {
    for placement in [Placement::Block, Placement::Cyclic] {
        for threads in [0, 3] {
            let job = SynthJob::new(SynthParams {
                daemons: 7,
                tasks_per_daemon: 9,
                classes: 4,
                depth: 9,
                noise: 0.05,
                samples: 4,
                threads_per_task: threads,
                placement,
                seed: 42,
            });
            let mut m = ConcatMerge::new();
            let mut ranks = Vec::new();
            let mut thr = Vec::new();
            for d in 0..7 {
                m.push(&job.daemon_tree(d, 0));
                ranks.extend(job.rank_map(d));
                thr.extend(job.daemon_threads(d));
            }
            let merged = m.finish();
            let rmap = IndexMap::new(ranks, job.ranks(), "rank").unwrap();
            let tmap = IndexMap::new(thr, job.ranks() * threads, "thread").unwrap();
            let got = remap(&merged, &rmap, (threads > 0).then_some(&tmap)).unwrap();
            assert_eq!(
                got.canonical(),
                job.direct_tree(0).canonical(),
                "{placement:?} threads={threads}"
            );
            // The default view merges the spin-polling frames below MPI into one class per path.
            let classes = equivalence_classes(&view(&got, ViewOptions::default()));
            assert!(classes.len() >= 4, "{} classes", classes.len());
        }
    }
}

/// Long consecutive runs take the range path of the remap, short ones the bit-by-bit path.
#[test]
fn remap_paths_agree_on_large_daemons() {
    for placement in [Placement::Block, Placement::Cyclic] {
        let job = SynthJob::new(SynthParams {
            daemons: 5,
            tasks_per_daemon: 300,
            classes: 3,
            noise: 0.02,
            samples: 3,
            placement,
            ..SynthParams::default()
        });
        let trees: Vec<_> = (0..5).map(|d| job.daemon_tree(d, 0)).collect();
        let merged = merge_concat(&trees);
        let map: Vec<u32> = (0..5).flat_map(|d| job.rank_map(d)).collect();
        let map = IndexMap::new(map, job.ranks(), "rank").unwrap();
        let fast = remap(&merged, &map, None).unwrap();
        assert_eq!(
            fast.canonical(),
            strata_filters::remap::remap_naive(&merged, &map).canonical()
        );
        assert_eq!(
            fast.canonical(),
            job.direct_tree(0).canonical(),
            "{placement:?}"
        );
    }
}

/// A tree big enough (thousands of nodes) for the remap to spread its work over threads.
#[test]
fn parallel_remap_equals_naive() {
    let job = SynthJob::new(SynthParams {
        daemons: 10,
        tasks_per_daemon: 100,
        classes: 4,
        noise: 0.9,
        samples: 4,
        threads_per_task: 2,
        placement: Placement::Cyclic,
        ..SynthParams::default()
    });
    let trees: Vec<_> = (0..10).map(|d| job.daemon_tree(d, 0)).collect();
    let merged = merge_concat(&trees);
    assert!(
        merged.len() > 2 * 1024,
        "{} nodes: too few for the parallel path",
        merged.len()
    );
    let ranks = IndexMap::new(
        (0..10).flat_map(|d| job.rank_map(d)).collect(),
        job.ranks(),
        "rank",
    )
    .unwrap();
    let threads = IndexMap::new(
        (0..10).flat_map(|d| job.daemon_threads(d)).collect(),
        job.ranks() * 2,
        "thread",
    )
    .unwrap();
    let fast = remap(&merged, &ranks, Some(&threads)).unwrap();
    assert_eq!(fast.canonical(), job.direct_tree(0).canonical());
}

#[test]
fn remap_rejects_bad_maps() {
    let mut t: PrefixTree<TaskRuns> = PrefixTree::new(2, 0);
    t.add_trace(&[Frame::function("main")], 0, None);
    t.add_trace(&[Frame::function("main")], 1, None);
    assert!(IndexMap::new(vec![0, 0], 2, "rank").is_err());
    assert!(IndexMap::new(vec![0, 5], 2, "rank").is_err());
    let short = IndexMap::new(vec![0], 2, "rank").unwrap();
    assert!(remap(&t, &short, None).is_err());
}

#[test]
fn decoder_rejects_inconsistent_trees() {
    let job = SynthJob::new(SynthParams::default());
    let t = job.daemon_tree(0, 0);
    let good = wire::encode(&t);
    let mut bad = good.clone();
    bad.nodes[3].parent = 10_000;
    assert!(wire::decode(bad, &Limits::default()).is_err());
    let mut bad = good.clone();
    bad.nodes[1].tasks = vec![0, 1000];
    assert!(wire::decode(bad, &Limits::default()).is_err());
    let mut bad = good.clone();
    bad.nodes[1].frame = 99_999;
    assert!(wire::decode(bad, &Limits::default()).is_err());
    let mut bad = good.clone();
    let dup = bad.nodes[1].clone();
    bad.nodes.push(dup);
    assert!(wire::decode(bad, &Limits::default()).is_err());
    let small = Limits {
        max_nodes: 3,
        ..Limits::default()
    };
    assert!(wire::decode(good.clone(), &small).is_err());
    assert!(wire::decode(good, &Limits::default()).is_ok());
}
