//! Synthetic hangs: traces shaped like real hung MPI jobs, for tests and benchmarks.
//!
//! Every trace is a pure function of `(params, rank, sample)`, so the same job can be built
//! the way the tree network builds it (one subtree-scoped tree per daemon, merged and
//! remapped) and directly from rank-numbered traces, and the two compared.
//!
//! The shape follows what a hung job looks like: a common prefix (`_start`,
//! `__libc_start_main`, `main`, shared solver phases), then `classes` divergent call paths
//! that each end in an MPI entry, and below the entry a progress-engine chain that changes
//! from sample to sample (spin-polling). A `noise` fraction of ranks sits in a rank-specific
//! leaf instead.

use crate::frame::{CodeFrame, Frame, FrameId, Module};
use crate::taskset::{RankSet, TaskRuns, TaskSet};
use crate::tree::{NodeId, PrefixTree};

/// How ranks are placed on daemons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Daemon `d` holds ranks `d*k .. (d+1)*k`.
    Block,
    /// Daemon `d` holds ranks `d, d+D, d+2D, ...`.
    Cyclic,
}

/// The shape of a synthetic job.
#[derive(Clone, Debug)]
pub struct SynthParams {
    pub daemons: u32,
    pub tasks_per_daemon: u32,
    /// Number of divergent call paths (before noise).
    pub classes: u32,
    /// Frames from `_start` to the MPI entry.
    pub depth: u32,
    /// Fraction of ranks in rank-specific leaves.
    pub noise: f64,
    /// Samples per task (1 gives a 2D tree).
    pub samples: u32,
    /// Threads per task; 0 when threads are not sampled.
    pub threads_per_task: u32,
    pub placement: Placement,
    pub seed: u64,
}

impl Default for SynthParams {
    fn default() -> Self {
        SynthParams {
            daemons: 4,
            tasks_per_daemon: 8,
            classes: 3,
            depth: 8,
            noise: 0.0,
            samples: 3,
            threads_per_task: 0,
            placement: Placement::Block,
            seed: 1,
        }
    }
}

/// A generated job: its frame catalogue and parameters.
#[derive(Clone, Debug)]
pub struct SynthJob {
    pub params: SynthParams,
    catalogue: Vec<Frame>,
    /// Catalogue index of the first frame of each named group.
    prefix: Vec<u32>,
    class_frames: Vec<Vec<u32>>,
    mpi_entry: Vec<u32>,
    progress: Vec<u32>,
    spin_variants: u32,
}

const MPI_ENTRIES: [&str; 6] = [
    "PMPI_Barrier",
    "PMPI_Waitall",
    "PMPI_Allreduce",
    "PMPI_Recv",
    "PMPI_Bcast",
    "PMPI_Wait",
];
const PROGRESS: [&str; 5] = [
    "ompi_request_default_wait_all",
    "ompi_sync_wait_mt",
    "opal_progress",
    "mca_btl_vader_component_progress",
    "mca_pml_ob1_progress",
];

fn mix(a: u64, b: u64, c: u64) -> u64 {
    // splitmix64 over a combination of the inputs.
    let mut z = a
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(b.wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add(c.wrapping_mul(0x94D0_49BB_1331_11EB))
        .wrapping_add(0x2545_F491_4F6C_DD1D);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn module(name: &str) -> Module {
    Module {
        path: format!("/opt/app/lib/{name}"),
        build_id: Some(format!(
            "{:040x}",
            mix(name.len() as u64, name.as_bytes()[0] as u64, 7)
        )),
    }
}

fn code(function: &str, module_name: &str, offset: u64, file: &str, line: u32) -> Frame {
    Frame::Code(CodeFrame {
        function: Some(function.to_string()),
        module: Some(module(module_name)),
        offset: Some(offset),
        file: Some(file.to_string()),
        line: Some(line),
        inlined: false,
        recovered: false,
        kind: crate::frame::CodeKind::Native,
    })
}

impl SynthJob {
    pub fn new(params: SynthParams) -> Self {
        assert!(
            params.depth >= 4,
            "depth must leave room for _start, libc, main and MPI"
        );
        assert!(params.classes >= 1 && params.daemons >= 1 && params.tasks_per_daemon >= 1);
        let mut catalogue = Vec::new();
        let mut push = |f: Frame| {
            catalogue.push(f);
            (catalogue.len() - 1) as u32
        };
        let shared_levels = (params.depth - 1) / 2;
        let mut prefix = vec![
            push(code("_start", "app", 0x1020, "start.S", 120)),
            push(code(
                "__libc_start_main",
                "libc.so.6",
                0x27249,
                "libc-start.c",
                360,
            )),
            push(code("main", "app", 0x1300, "main.c", 42)),
        ];
        for l in 3..shared_levels.max(3) {
            prefix.push(push(code(
                &format!("phase_{l}"),
                "app",
                0x2000 + l as u64 * 64,
                "solver.c",
                100 + l,
            )));
        }
        let own_levels = params.depth - 1 - prefix.len() as u32;
        let mut class_frames = Vec::new();
        let mut mpi_entry = Vec::new();
        for c in 0..params.classes {
            let frames = (0..own_levels)
                .map(|l| {
                    push(code(
                        &format!("step_{c}_{l}"),
                        "app",
                        0x4000 + (c as u64) * 0x400 + l as u64 * 32,
                        "step.c",
                        200 + c * 20 + l,
                    ))
                })
                .collect();
            class_frames.push(frames);
            let name = MPI_ENTRIES[c as usize % MPI_ENTRIES.len()];
            mpi_entry.push(push(code(
                name,
                "libmpi.so.40",
                0x9_0000 + c as u64 * 0x100,
                "barrier.c",
                60,
            )));
        }
        let spin_variants = 4;
        let mut progress = Vec::new();
        for (i, name) in PROGRESS.iter().enumerate() {
            for v in 0..spin_variants {
                // Different return addresses / innermost PCs inside the same function.
                progress.push(push(code(
                    name,
                    "libopen-pal.so.40",
                    0x3_0000 + i as u64 * 0x200 + v as u64 * 8,
                    "progress.c",
                    300 + i as u32 * 10 + v,
                )));
            }
        }
        SynthJob {
            params,
            catalogue,
            prefix,
            class_frames,
            mpi_entry,
            progress,
            spin_variants,
        }
    }

    /// Total ranks.
    pub fn ranks(&self) -> u32 {
        self.params.daemons * self.params.tasks_per_daemon
    }

    /// The frames a catalogue index stands for.
    pub fn frame(&self, i: u32) -> &Frame {
        &self.catalogue[i as usize]
    }

    fn is_noise(&self, rank: u32) -> bool {
        let h = mix(self.params.seed, rank as u64, 1);
        (h as f64 / u64::MAX as f64) < self.params.noise
    }

    fn class_of(&self, rank: u32) -> u32 {
        // Contiguous blocks of uneven size, like a domain decomposition: class
        // `floor(classes * (rank / n)^2)`, so low classes are large and high ones small.
        let n = u128::from(self.ranks());
        let c = u128::from(self.params.classes) * u128::from(rank) * u128::from(rank) / (n * n);
        c.min(u128::from(self.params.classes - 1)) as u32
    }

    /// The path of rank `rank` in sample `sample` (outermost first). Frames are catalogue
    /// indices except rank-specific leaves, which are returned in the second value.
    fn trace_parts(&self, rank: u32, sample: u32) -> (Vec<u32>, Option<Frame>) {
        let mut path = self.prefix.clone();
        let c = self.class_of(rank);
        path.extend(&self.class_frames[c as usize]);
        if self.is_noise(rank) {
            let leaf = code(
                &format!("local_work_r{rank}"),
                "app",
                0x8000 + rank as u64,
                "work.c",
                10 + sample,
            );
            return (path, Some(leaf));
        }
        path.push(self.mpi_entry[c as usize]);
        // Below the entry: a progress chain whose depth and innermost PC vary per sample.
        let h = mix(self.params.seed, rank as u64, 100 + sample as u64);
        let depth = 1 + (h % 3) as u32;
        for k in 0..depth {
            let func = if k + 1 == depth {
                2 + ((h >> 8) % 3) as u32
            } else {
                k
            };
            let variant = if k + 1 == depth {
                ((h >> 16) % self.spin_variants as u64) as u32
            } else {
                0
            };
            path.push(self.progress[(func * self.spin_variants + variant) as usize]);
        }
        (path, None)
    }

    /// The full path of `rank` in `sample`.
    pub fn trace(&self, rank: u32, sample: u32) -> Vec<Frame> {
        let (ids, leaf) = self.trace_parts(rank, sample);
        let mut out: Vec<Frame> = ids.iter().map(|&i| self.frame(i).clone()).collect();
        out.extend(leaf);
        out
    }

    /// The ranks daemon `d` holds, in its local task order (ascending rank).
    pub fn daemon_ranks(&self, d: u32) -> Vec<u32> {
        let (k, nd) = (self.params.tasks_per_daemon, self.params.daemons);
        match self.params.placement {
            Placement::Block => (d * k..(d + 1) * k).collect(),
            Placement::Cyclic => (0..k).map(|i| d + i * nd).collect(),
        }
    }

    /// Global thread ids of daemon `d`'s local threads (rank-major).
    pub fn daemon_threads(&self, d: u32) -> Vec<u32> {
        let t = self.params.threads_per_task;
        self.daemon_ranks(d)
            .into_iter()
            .flat_map(|r| (0..t).map(move |i| r * t + i))
            .collect()
    }

    /// The traces of one thread: thread 0 runs the rank's main path; helper threads wait in
    /// the progress thread's poll loop.
    fn thread_trace(&self, rank: u32, thread: u32, sample: u32) -> Vec<Frame> {
        if thread == 0 {
            return self.trace(rank, sample);
        }
        vec![
            code("clone3", "libc.so.6", 0xfe9c0, "clone3.S", 78),
            code(
                "start_thread",
                "libc.so.6",
                0x89134,
                "pthread_create.c",
                442,
            ),
            code(
                "progress_engine",
                "libopen-pal.so.40",
                0x5_0000 + thread as u64,
                "progress.c",
                500,
            ),
            code("epoll_wait", "libc.so.6", 0xfa3e6, "epoll_wait.c", 30),
        ]
    }

    /// The tree daemon `d` builds: subtree-scoped task (and thread) indices, all samples
    /// (`samples_from..samples`), i.e. the 3D tree; pass `samples - 1` for the 2D tree.
    pub fn daemon_tree(&self, d: u32, samples_from: u32) -> PrefixTree<TaskRuns> {
        let p = &self.params;
        let ranks = self.daemon_ranks(d);
        let t = p.threads_per_task;
        let mut tree: PrefixTree<TaskRuns> =
            PrefixTree::new(ranks.len() as u32, ranks.len() as u32 * t);
        let mut ids: Vec<Option<FrameId>> = vec![None; self.catalogue.len()];
        for (local, &rank) in ranks.iter().enumerate() {
            let local = local as u32;
            if t > 0 {
                for th in 0..t {
                    for s in samples_from..p.samples {
                        tree.add_trace(
                            &self.thread_trace(rank, th, s),
                            local,
                            Some(local * t + th),
                        );
                    }
                }
                continue;
            }
            for s in samples_from..p.samples {
                let (path, leaf) = self.trace_parts(rank, s);
                let mut node = NodeId::ROOT;
                tree.node_mut(node).tasks.insert(local);
                for i in path {
                    let f = *ids[i as usize]
                        .get_or_insert_with(|| tree.intern(&self.catalogue[i as usize]));
                    node = tree.child_or_insert(node, f);
                    tree.node_mut(node).tasks.insert(local);
                }
                if let Some(leaf) = leaf {
                    let f = tree.intern(&leaf);
                    node = tree.child_or_insert(node, f);
                    tree.node_mut(node).tasks.insert(local);
                }
            }
        }
        tree
    }

    /// The rank map of daemon `d` (its local task `i` is rank `map[i]`).
    pub fn rank_map(&self, d: u32) -> Vec<u32> {
        self.daemon_ranks(d)
    }

    /// The whole job's tree built directly from rank-numbered traces: the reference the
    /// tree network's merge-and-remap must reproduce.
    pub fn direct_tree(&self, samples_from: u32) -> PrefixTree<RankSet> {
        let p = &self.params;
        let t = p.threads_per_task;
        let mut tree: PrefixTree<RankSet> = PrefixTree::new(self.ranks(), self.ranks() * t);
        for rank in 0..self.ranks() {
            for s in samples_from..p.samples {
                if t == 0 {
                    tree.add_trace(&self.trace(rank, s), rank, None);
                } else {
                    for th in 0..t {
                        tree.add_trace(&self.thread_trace(rank, th, s), rank, Some(rank * t + th));
                    }
                }
            }
        }
        tree
    }
}
