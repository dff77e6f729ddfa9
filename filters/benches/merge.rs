//! The merge's scale benchmark: 4,096 daemons x 256 tasks (1,048,576 tasks) merged up a
//! fanout-64 tree, the root remap, root-side views and classes, the task-set representation
//! choice, and the size of what one daemon sends. Results and how to read them:
//! `docs/PERFORMANCE.md`.
//!
//! Run: `cargo bench -p strata-filters --bench merge` (add a filter such as `-- remap/` to run
//! one group; fixtures are built lazily, so a filter only pays for what it needs).

use criterion::{BenchmarkId, Criterion, criterion_group};
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use strata_filters::remap::remap_naive;
use strata_filters::synth::{Placement, SynthJob, SynthParams};
use strata_filters::tree::NodeId;
use strata_filters::{
    ConcatMerge, IndexMap, PrefixTree, RankSet, TaskRuns, TaskSet, ViewOptions,
    equivalence_classes, merge_concat, remap, view, wire,
};

const DAEMONS: u32 = 4096;
const TASKS_PER_DAEMON: u32 = 256;
const FANOUT: usize = 64;
const SAMPLES: u32 = 10;

fn params(daemons: u32, placement: Placement) -> SynthParams {
    SynthParams {
        daemons,
        tasks_per_daemon: TASKS_PER_DAEMON,
        classes: 10,
        depth: 20,
        noise: 0.01,
        samples: SAMPLES,
        threads_per_task: 0,
        placement,
        seed: 2,
    }
}

/// Everything the root of one job sees: the daemons' trees and rank maps.
struct Job {
    daemon_trees: Vec<PrefixTree<TaskRuns>>,
    rank_maps: Vec<Vec<u32>>,
    ranks: u32,
}

impl Job {
    /// Builds every daemon's tree. Generation is the slow part of the fixture (seconds), not
    /// something the merge pays for, so it runs once, split over the machine's cores.
    fn build(placement: Placement, samples_from: u32) -> Job {
        let t0 = Instant::now();
        let job = SynthJob::new(params(DAEMONS, placement));
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let chunk = DAEMONS.div_ceil(workers);
        let daemon_trees: Vec<PrefixTree<TaskRuns>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let job = &job;
                    s.spawn(move || {
                        let lo = (w * chunk).min(DAEMONS);
                        let hi = ((w + 1) * chunk).min(DAEMONS);
                        (lo..hi)
                            .map(|d| job.daemon_tree(d, samples_from))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("generator thread"))
                .collect()
        });
        let rank_maps = (0..DAEMONS).map(|d| job.rank_map(d)).collect();
        eprintln!(
            "fixture: {placement:?} samples {samples_from}..{SAMPLES}: {DAEMONS} daemon trees \
             ({} nodes in all) built in {:.1} s",
            daemon_trees.iter().map(PrefixTree::len).sum::<usize>(),
            t0.elapsed().as_secs_f64()
        );
        Job {
            daemon_trees,
            rank_maps,
            ranks: job.ranks(),
        }
    }

    /// The commnode level: commnode `c` merges daemons `c*64 .. (c+1)*64` in order.
    fn commnode_trees(&self) -> Vec<PrefixTree<TaskRuns>> {
        self.daemon_trees.chunks(FANOUT).map(merge_concat).collect()
    }

    /// The whole merge as the tree network runs it: 64 commnodes, then the root.
    fn merge_all(&self) -> PrefixTree<TaskRuns> {
        merge_concat(&self.commnode_trees())
    }

    /// The rank map the root applies: daemon maps concatenated in the merge's child order
    /// (daemon order, since each commnode holds a contiguous slice of daemons).
    fn rank_map(&self) -> IndexMap {
        IndexMap::concat(self.rank_maps.iter().map(Vec::as_slice), self.ranks, "rank")
            .expect("valid rank map")
    }
}

fn block_3d() -> &'static Job {
    static J: OnceLock<Job> = OnceLock::new();
    J.get_or_init(|| Job::build(Placement::Block, 0))
}

fn block_2d() -> &'static Job {
    static J: OnceLock<Job> = OnceLock::new();
    J.get_or_init(|| Job::build(Placement::Block, SAMPLES - 1))
}

fn cyclic_3d() -> &'static Job {
    static J: OnceLock<Job> = OnceLock::new();
    J.get_or_init(|| Job::build(Placement::Cyclic, 0))
}

/// Merged tree and rank map of a job, computed once and shared by the root-side groups.
struct Root {
    merged: PrefixTree<TaskRuns>,
    map: IndexMap,
}

fn root_of(job: &'static Job, cell: &'static OnceLock<Root>) -> &'static Root {
    cell.get_or_init(|| {
        let merged = job.merge_all();
        eprintln!(
            "fixture: merged tree: {} nodes, {} runs, task space {}",
            merged.len(),
            merged
                .nodes()
                .iter()
                .map(|n| n.tasks.run_count())
                .sum::<usize>(),
            merged.task_space()
        );
        Root {
            merged,
            map: job.rank_map(),
        }
    })
}

fn cyclic_2d() -> &'static Job {
    static J: OnceLock<Job> = OnceLock::new();
    J.get_or_init(|| Job::build(Placement::Cyclic, SAMPLES - 1))
}

fn block_root_2d() -> &'static Root {
    static R: OnceLock<Root> = OnceLock::new();
    root_of(block_2d(), &R)
}

fn cyclic_root_2d() -> &'static Root {
    static R: OnceLock<Root> = OnceLock::new();
    root_of(cyclic_2d(), &R)
}

fn block_root() -> &'static Root {
    static R: OnceLock<Root> = OnceLock::new();
    root_of(block_3d(), &R)
}

fn cyclic_root() -> &'static Root {
    static R: OnceLock<Root> = OnceLock::new();
    root_of(cyclic_3d(), &R)
}

fn bench_merge(c: &mut Criterion) {
    let mut g = c.benchmark_group("merge");
    // Iterations take tens to hundreds of milliseconds: ten samples give a stable median
    // without making the full run take many minutes on a 2-core machine.
    g.sample_size(10).measurement_time(Duration::from_secs(5));

    g.bench_function("level1_one_commnode_64x256", |b| {
        let job = block_3d();
        let children = &job.daemon_trees[..FANOUT];
        b.iter(|| {
            let mut m = ConcatMerge::new();
            for t in children {
                m.push(black_box(t));
            }
            black_box(m.finish())
        });
    });
    g.bench_function("total_1M_fanout64", |b| {
        let job = block_3d();
        b.iter(|| black_box(job.merge_all()));
    });
    g.bench_function("total_1M_fanout64_2d", |b| {
        let job = block_2d();
        b.iter(|| black_box(job.merge_all()));
    });
    g.bench_function("total_1M_fanout64_cyclic", |b| {
        let job = cyclic_3d();
        b.iter(|| black_box(job.merge_all()));
    });
    g.finish();
}

fn bench_remap(c: &mut Criterion) {
    let mut g = c.benchmark_group("remap");
    g.sample_size(10).measurement_time(Duration::from_secs(5));

    g.bench_function("1M_block", |b| {
        let r = block_root();
        b.iter(|| black_box(remap(black_box(&r.merged), &r.map, None).expect("remap")));
    });
    g.bench_function("1M_cyclic", |b| {
        let r = cyclic_root();
        b.iter(|| black_box(remap(black_box(&r.merged), &r.map, None).expect("remap")));
    });
    // The 2D tree (last sample only): every task ends at exactly one node.
    g.bench_function("1M_block_2d", |b| {
        let r = block_root_2d();
        b.iter(|| black_box(remap(black_box(&r.merged), &r.map, None).expect("remap")));
    });
    g.bench_function("1M_cyclic_2d", |b| {
        let r = cyclic_root_2d();
        b.iter(|| black_box(remap(black_box(&r.merged), &r.map, None).expect("remap")));
    });
    g.bench_function("1M_block_naive", |b| {
        let r = block_root();
        b.iter(|| black_box(remap_naive(black_box(&r.merged), &r.map)));
    });
    g.bench_function("1M_cyclic_naive", |b| {
        let r = cyclic_root();
        b.iter(|| black_box(remap_naive(black_box(&r.merged), &r.map)));
    });
    // Building (and validating) the concatenated rank map is root work too.
    g.bench_function("rank_map_concat_1M_cyclic", |b| {
        let job = cyclic_3d();
        b.iter(|| black_box(job.rank_map()));
    });
    g.finish();
}

fn bench_root_views(c: &mut Criterion) {
    let mut g = c.benchmark_group("root");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    for (name, root) in [
        ("block", block_root as fn() -> &'static Root),
        ("cyclic", cyclic_root),
    ] {
        let remapped = OnceLock::new();
        let viewed = OnceLock::new();
        let get_remapped = || {
            remapped.get_or_init(|| {
                let r = root();
                remap(&r.merged, &r.map, None).expect("remap")
            })
        };
        g.bench_function(BenchmarkId::new("view_default_1M", name), |b| {
            let t = get_remapped();
            b.iter(|| black_box(view(black_box(t), ViewOptions::default())));
        });
        g.bench_function(BenchmarkId::new("classes_1M", name), |b| {
            let v = viewed.get_or_init(|| view(get_remapped(), ViewOptions::default()));
            b.iter(|| black_box(equivalence_classes(black_box(v))));
        });
        if let Some(v) = viewed.get() {
            let classes = equivalence_classes(v);
            eprintln!(
                "fixture: {name}: default view has {} nodes, {} equivalence classes",
                v.len(),
                classes.len()
            );
        }
    }
    g.finish();
}

/// Finds the node reached from the root by following `path` (frames compared by value).
fn find_path(tree: &PrefixTree<TaskRuns>, path: &[strata_filters::Frame]) -> Option<NodeId> {
    let mut cur = NodeId::ROOT;
    for f in path {
        cur = *tree
            .node(cur)
            .children
            .iter()
            .find(|&&c| tree.node_frame(c) == Some(f))?;
    }
    Some(cur)
}

/// The sets the root merge concatenates for one node: that node's set in each of the 64
/// commnode trees, with the offset each commnode's index space starts at.
fn sets_at(
    commnodes: &[PrefixTree<TaskRuns>],
    path: &[strata_filters::Frame],
) -> Vec<(TaskRuns, u32)> {
    let mut off = 0;
    commnodes
        .iter()
        .map(|t| {
            let set = find_path(t, path).map_or_else(TaskRuns::new, |n| t.node(n).tasks.clone());
            let here = off;
            off += t.task_space();
            (set, here)
        })
        .collect()
}

fn bench_taskset_concat(c: &mut Criterion) {
    let mut g = c.benchmark_group("concat_64_commnode_sets");
    g.sample_size(10).measurement_time(Duration::from_secs(3));

    // Three nodes of the root merge, from dense to fragmented: the root (one run per
    // commnode), the MPI entry of the largest class (runs broken by noise ranks), and the
    // spin leaf with the most runs in the final tree (per-sample progress frames).
    let cases = OnceLock::new();
    let get_cases = || {
        cases.get_or_init(|| {
            let commnodes = block_3d().commnode_trees();
            let merged = &block_root().merged;
            let mpi = merged
                .node_ids()
                .filter(|&n| merged.node_frame(n).is_some_and(|f| f.is_mpi_entry()))
                .max_by_key(|&n| merged.node(n).tasks.count())
                .expect("an MPI entry node");
            let frag = merged
                .node_ids()
                .max_by_key(|&n| merged.node(n).tasks.run_count())
                .expect("nodes");
            let mut out = Vec::new();
            for (name, node) in [
                ("root", NodeId::ROOT),
                ("mpi_entry", mpi),
                ("most_runs", frag),
            ] {
                let sets = sets_at(&commnodes, &merged.path_frames(node));
                let runs: usize = sets.iter().map(|(s, _)| s.run_count()).sum();
                let tasks: u64 = sets.iter().map(|(s, _)| s.count()).sum();
                eprintln!("fixture: concat case {name}: {tasks} tasks in {runs} runs");
                let roaring: Vec<(RankSet, u32)> = sets
                    .iter()
                    .map(|(s, o)| (s.indices().collect::<RankSet>(), *o))
                    .collect();
                out.push((name, sets, roaring));
            }
            out
        })
    };
    for name in ["root", "mpi_entry", "most_runs"] {
        g.bench_function(BenchmarkId::new("task_runs_append_shifted", name), |b| {
            let (_, sets, _) = get_cases().iter().find(|c| c.0 == name).expect("case");
            b.iter(|| {
                let mut out = TaskRuns::new();
                for (s, off) in sets {
                    out.append_shifted(black_box(s), *off);
                }
                black_box(out)
            });
        });
        g.bench_function(BenchmarkId::new("roaring_iterate_push", name), |b| {
            let (_, _, sets) = get_cases().iter().find(|c| c.0 == name).expect("case");
            b.iter(|| {
                // roaring has no shift: every index is read and pushed at its new place
                // (try_push is the cheap append path, valid because offsets only grow).
                let mut out = RankSet::new();
                for (s, off) in sets {
                    for i in black_box(s) {
                        out.try_push(i + off).expect("ascending");
                    }
                }
                black_box(out)
            });
        });
    }
    g.finish();
}

/// Not timed: the bytes one 256-task daemon sends, for the same daemon in jobs of growing
/// size. Printed once so the numbers in `docs/PERFORMANCE.md` can be regenerated.
fn report_daemon_sizes() {
    eprintln!("daemon tree size (wire::encode_to_vec of daemon 0, 256 tasks, 10 samples):");
    eprintln!("  placement  job tasks   3D bytes  2D bytes  3D nodes");
    for placement in [Placement::Block, Placement::Cyclic] {
        for daemons in [4u32, 64, 4096] {
            let job = SynthJob::new(params(daemons, placement));
            let t3 = job.daemon_tree(0, 0);
            let t2 = job.daemon_tree(0, SAMPLES - 1);
            eprintln!(
                "  {:<9}  {:>9}  {:>9}  {:>8}  {:>8}",
                format!("{placement:?}"),
                job.ranks(),
                wire::encode_to_vec(&t3).len(),
                wire::encode_to_vec(&t2).len(),
                t3.len()
            );
        }
    }
}

criterion_group!(
    benches,
    bench_merge,
    bench_remap,
    bench_root_views,
    bench_taskset_concat
);

fn main() {
    report_daemon_sizes();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
