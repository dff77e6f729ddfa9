//! The remap at the root: from concatenated subtree-local indices to MPI rank order.
//!
//! The rank map is gathered once (each daemon lists the rank of each of its local tasks, and
//! the lists are concatenated up the tree in the merge's child order), then applied once to
//! the final tree. The remap is bottom-up: only the tasks that *end* at a node are mapped
//! index by index; a node's rank set is the union of those and its children's rank sets.
//! In a 2D tree every task ends at exactly one node, so the index-by-index work is one
//! lookup per task, and the unions are roaring container operations.

use crate::taskset::{RankSet, TaskRuns, TaskSet};
use crate::tree::{NodeId, PrefixTree};
use thiserror::Error;

/// Why a rank map cannot be applied.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum RemapError {
    #[error("the map lists {given} entries but the tree has {expected} {what}")]
    WrongLength {
        what: &'static str,
        given: usize,
        expected: u32,
    },
    #[error("{what} {value} appears twice in the map")]
    Duplicate { what: &'static str, value: u32 },
    #[error("{what} {value} is outside the job's {space} {what}s")]
    OutOfRange {
        what: &'static str,
        value: u32,
        space: u32,
    },
}

/// A map from concatenated local indices to global ids (MPI ranks, or global thread ids).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexMap {
    global: Vec<u32>,
    space: u32,
    /// `segment_end[i]`: one past the end of the run of consecutive ids containing `i`
    /// (`global[j+1] == global[j] + 1`). Block placement makes whole daemons one segment,
    /// so their runs remap as ranges instead of index by index.
    segment_end: Vec<u32>,
}

impl IndexMap {
    /// `global[i]` is the global id of local index `i`; ids must be distinct and below `space`.
    pub fn new(global: Vec<u32>, space: u32, what: &'static str) -> Result<Self, RemapError> {
        // A plain bit per id: the map is as large as the job anyway, and at a million ids
        // this is several times faster than inserting into a roaring bitmap.
        let mut seen = vec![0u64; space.div_ceil(64) as usize];
        for &g in &global {
            if g >= space {
                return Err(RemapError::OutOfRange {
                    what,
                    value: g,
                    space,
                });
            }
            let (word, bit) = ((g / 64) as usize, 1u64 << (g % 64));
            if seen[word] & bit != 0 {
                return Err(RemapError::Duplicate { what, value: g });
            }
            seen[word] |= bit;
        }
        let mut segment_end = vec![0u32; global.len()];
        let n = global.len();
        let mut i = n;
        while i > 0 {
            i -= 1;
            segment_end[i] = if i + 1 < n && global[i + 1] == global[i] + 1 {
                segment_end[i + 1]
            } else {
                (i + 1) as u32
            };
        }
        Ok(IndexMap {
            global,
            space,
            segment_end,
        })
    }

    /// The identity map over `n` indices.
    pub fn identity(n: u32, what: &'static str) -> Self {
        Self::new((0..n).collect(), n, what).expect("identity is a valid map")
    }

    /// Concatenates child maps in the merge's child order.
    pub fn concat<'a>(
        maps: impl IntoIterator<Item = &'a [u32]>,
        space: u32,
        what: &'static str,
    ) -> Result<Self, RemapError> {
        let mut global = Vec::new();
        for m in maps {
            global.extend_from_slice(m);
        }
        Self::new(global, space, what)
    }

    pub fn len(&self) -> usize {
        self.global.len()
    }

    pub fn is_empty(&self) -> bool {
        self.global.is_empty()
    }

    /// Size of the global id space (the job's rank count).
    pub fn space(&self) -> u32 {
        self.space
    }

    /// Global id of local index `i`.
    pub fn get(&self, i: u32) -> u32 {
        self.global[i as usize]
    }

    pub fn as_slice(&self) -> &[u32] {
        &self.global
    }

    /// Maps a set of local indices to global ids (allocates scratch space: in a loop, use
    /// [`IndexMap::map_set_with`]).
    pub fn map_set(&self, set: &TaskRuns) -> RankSet {
        self.map_set_with(&mut MapScratch::new(self.space), set)
    }

    /// Maps a set of local indices to global ids. Long runs of consecutive ids (block
    /// placement) become range inserts; everything else is set bit by bit in a dense scratch
    /// vector, which roaring then reads in one pass over the touched bytes. This avoids
    /// sorting: the index-by-index part of a 3D remap is millions of short runs.
    pub fn map_set_with(&self, scratch: &mut MapScratch, set: &TaskRuns) -> RankSet {
        let mut out = RankSet::new();
        let (mut lo, mut hi) = (usize::MAX, 0usize);
        let bytes = &mut scratch.bytes;
        for &(s, e) in set.as_runs() {
            let mut a = s;
            while a < e {
                if e - a < 64 {
                    // Too short for a range insert to pay off: skip the segment lookup, a
                    // cache miss of its own in a fragmented 3D tree.
                    for &r in &self.global[a as usize..e as usize] {
                        let byte = (r >> 3) as usize;
                        bytes[byte] |= 1 << (r & 7);
                        lo = lo.min(byte);
                        hi = hi.max(byte);
                    }
                    break;
                }
                let b = self.segment_end[a as usize].min(e);
                let g = self.global[a as usize];
                if b - a >= 64 {
                    out.insert_range(g..g + (b - a));
                } else {
                    for &r in &self.global[a as usize..b as usize] {
                        let byte = (r >> 3) as usize;
                        bytes[byte] |= 1 << (r & 7);
                        lo = lo.min(byte);
                        hi = hi.max(byte);
                    }
                }
                a = b;
            }
        }
        if lo <= hi {
            let singles = RankSet::from_lsb0_bytes((lo * 8) as u32, &bytes[lo..=hi]);
            bytes[lo..=hi].fill(0);
            if out.is_empty() {
                return singles;
            }
            out |= singles;
        }
        out
    }
}

/// Scratch space for [`IndexMap::map_set_with`]: one bit per global id, all zero between
/// uses. Reused across the nodes of a remap so it is allocated once.
#[derive(Debug)]
pub struct MapScratch {
    bytes: Vec<u8>,
}

impl MapScratch {
    /// Scratch for a map whose global space is `space` ids.
    pub fn new(space: u32) -> Self {
        MapScratch {
            bytes: vec![0; (space as usize).div_ceil(8)],
        }
    }
}

/// Remaps a merged tree to global ids. `threads` is needed when the tree records threads.
pub fn remap(
    tree: &PrefixTree<TaskRuns>,
    ranks: &IndexMap,
    threads: Option<&IndexMap>,
) -> Result<PrefixTree<RankSet>, RemapError> {
    check_len(ranks, tree.task_space(), "tasks")?;
    if tree.has_threads() {
        match threads {
            Some(t) => check_len(t, tree.thread_space(), "threads")?,
            None => {
                return Err(RemapError::WrongLength {
                    what: "threads",
                    given: 0,
                    expected: tree.thread_space(),
                });
            }
        }
    }
    let thread_space = if tree.has_threads() {
        threads.map_or(0, IndexMap::space)
    } else {
        0
    };
    let mut out: PrefixTree<RankSet> = tree.same_shape(ranks.space(), thread_space);
    // Phase 1, independent per node and nearly all of the work: map the tasks (threads)
    // that end at each node.
    let endings = map_endings(tree, ranks, threads.filter(|_| tree.has_threads()));
    // Phase 2, bottom-up: a node's set is its endings plus its children's sets.
    for (i, (ending_tasks, ending_threads)) in endings.into_iter().enumerate().rev() {
        let id = NodeId(i as u32);
        let kids = &tree.node(id).children;
        let mut tasks = RankSet::union_all(kids.iter().map(|&c| &out.node(c).tasks));
        tasks |= ending_tasks;
        let mut thr = RankSet::union_all(kids.iter().map(|&c| &out.node(c).threads));
        thr |= ending_threads;
        let n = out.node_mut(id);
        n.tasks = tasks;
        n.threads = thr;
    }
    Ok(out)
}

/// The global ids of the tasks and threads ending at each node, indexed by node. Nodes are
/// handed out to the machine's cores in blocks (the root of a large job runs on a login or
/// front-end node with cores to spare); small trees stay on the calling thread.
fn map_endings(
    tree: &PrefixTree<TaskRuns>,
    ranks: &IndexMap,
    threads: Option<&IndexMap>,
) -> Vec<(RankSet, RankSet)> {
    const BLOCK: usize = 256;
    let n = tree.len();
    let work = |ids: std::ops::Range<usize>,
                task_scratch: &mut MapScratch,
                thread_scratch: &mut MapScratch| {
        ids.map(|i| {
            let id = NodeId(i as u32);
            let t = ranks.map_set_with(task_scratch, &tree.tasks_ending_at(id));
            let h = threads.map_or_else(RankSet::new, |m| {
                m.map_set_with(thread_scratch, &tree.threads_ending_at(id))
            });
            (t, h)
        })
        .collect::<Vec<_>>()
    };
    let thread_space = threads.map_or(0, IndexMap::space);
    let workers = std::thread::available_parallelism()
        .map_or(1, |w| w.get())
        .min(16);
    if workers == 1 || n < 8 * BLOCK {
        let mut ts = MapScratch::new(ranks.space());
        let mut hs = MapScratch::new(thread_space);
        return work(0..n, &mut ts, &mut hs);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(RankSet, RankSet)> = vec![Default::default(); n];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut ts = MapScratch::new(ranks.space());
                    let mut hs = MapScratch::new(thread_space);
                    let mut done = Vec::new();
                    loop {
                        let start = next.fetch_add(BLOCK, std::sync::atomic::Ordering::Relaxed);
                        if start >= n {
                            return done;
                        }
                        let end = (start + BLOCK).min(n);
                        done.push((start, work(start..end, &mut ts, &mut hs)));
                    }
                })
            })
            .collect();
        for h in handles {
            for (start, sets) in h.join().expect("remap worker panicked") {
                for (i, set) in sets.into_iter().enumerate() {
                    out[start + i] = set;
                }
            }
        }
    });
    out
}

/// The straightforward remap (every node's set mapped index by index); kept as the
/// reference the benchmark compares the bottom-up remap against.
pub fn remap_naive(tree: &PrefixTree<TaskRuns>, ranks: &IndexMap) -> PrefixTree<RankSet> {
    let mut out: PrefixTree<RankSet> = PrefixTree::new(ranks.space(), 0);
    for f in tree.frames().iter() {
        out.intern(f);
    }
    for id in tree.node_ids() {
        let n = tree.node(id);
        let dst = match (n.parent, n.frame) {
            (Some(p), Some(f)) => out.child_or_insert(p, f),
            _ => NodeId::ROOT,
        };
        let mut set = RankSet::new();
        for i in n.tasks.indices() {
            set.insert(ranks.get(i));
        }
        out.node_mut(dst).tasks = set;
    }
    out
}

fn check_len(map: &IndexMap, expected: u32, what: &'static str) -> Result<(), RemapError> {
    if map.len() != expected as usize {
        return Err(RemapError::WrongLength {
            what,
            given: map.len(),
            expected,
        });
    }
    Ok(())
}
