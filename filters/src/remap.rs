//! The remap at the root: from concatenated subtree-local indices to MPI rank order.
//!
//! The rank map is gathered once (each daemon lists the rank of each of its local tasks, and
//! the lists are concatenated up the tree in the merge's child order), then applied once to
//! the final tree. The remap is bottom-up: only the tasks that *end* at a node are mapped
//! index by index; a node's rank set is the union of those and its children's rank sets.
//! In a 2D tree every task ends at exactly one node, so the index-by-index work is one
//! lookup per task, and the unions are roaring container operations.

use crate::taskset::{RankSet, TaskRuns, TaskSet};
use crate::tree::{Node, NodeId, PrefixTree};
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
        let mut seen = RankSet::new();
        for &g in &global {
            if g >= space {
                return Err(RemapError::OutOfRange {
                    what,
                    value: g,
                    space,
                });
            }
            if !seen.insert(g) {
                return Err(RemapError::Duplicate { what, value: g });
            }
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

    /// Maps a set of local indices to global ids.
    pub fn map_set(&self, set: &TaskRuns) -> RankSet {
        let mut out = RankSet::new();
        let mut singles: Vec<u32> = Vec::new();
        for &(s, e) in set.as_runs() {
            let mut a = s;
            while a < e {
                let b = self.segment_end[a as usize].min(e);
                let g = self.global[a as usize];
                if b - a >= 8 {
                    out.insert_range(g..g + (b - a));
                } else {
                    singles.extend((a..b).map(|i| self.global[i as usize]));
                }
                a = b;
            }
        }
        if !singles.is_empty() {
            singles.sort_unstable();
            if out.is_empty() {
                return RankSet::from_sorted_iter(singles).expect("sorted");
            }
            out |= RankSet::from_sorted_iter(singles).expect("sorted");
        }
        out
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
    let mut out: PrefixTree<RankSet> = PrefixTree::new(ranks.space(), thread_space);
    // Same shape, same node ids: copy the structure first, sets after.
    for f in tree.frames().iter() {
        out.intern(f);
    }
    for id in tree.node_ids().skip(1) {
        let n = tree.node(id);
        let made = out.child_or_insert(n.parent.expect("non-root"), n.frame.expect("non-root"));
        debug_assert_eq!(made, id);
    }
    let mut task_marks = Marks::new(tree.task_space());
    let mut thread_marks = Marks::new(tree.thread_space());
    for id in tree.node_ids().rev() {
        let mut tasks = ranks.map_set(&task_marks.ending(tree, id, |n| &n.tasks));
        let mut thr = match threads {
            Some(t) if tree.has_threads() => {
                t.map_set(&thread_marks.ending(tree, id, |n| &n.threads))
            }
            _ => RankSet::new(),
        };
        for &c in &tree.node(id).children {
            tasks |= &out.node(c).tasks;
            thr |= &out.node(c).threads;
        }
        let n = out.node_mut(id);
        n.tasks = tasks;
        n.threads = thr;
    }
    Ok(out)
}

/// A scratch bit vector over a tree's local index space, all zero between uses, for
/// computing the indices that end at a node (in the node's set, in no child's).
///
/// [`PrefixTree::tasks_ending_at`] unions the children one by one; when a node has many
/// children whose sets interleave (a 3D tree's spin-loop leaves below an MPI entry, or the
/// thousands of rank-specific noise leaves beside one large class) each union rewrites the
/// accumulated run list, which is quadratic and dominated the 1M-task remap (see
/// `docs/PERFORMANCE.md`). Marking the children's runs and reading the node's runs back is
/// linear in the runs plus the words the node's runs span.
struct Marks {
    words: Vec<u64>,
}

impl Marks {
    fn new(space: u32) -> Self {
        Marks {
            words: vec![0; (space as usize).div_ceil(64)],
        }
    }

    /// Sets (`on`) or clears every bit of `[s, e)`.
    fn fill(&mut self, s: u32, e: u32, on: bool) {
        let (s, e) = (s as usize, e as usize);
        let (ws, we) = (s / 64, (e - 1) / 64);
        for w in ws..=we {
            let lo = if w == ws { s % 64 } else { 0 };
            let hi = if w == we { (e - 1) % 64 + 1 } else { 64 };
            let mask = (u64::MAX >> (64 - (hi - lo))) << lo;
            if on {
                self.words[w] |= mask;
            } else {
                self.words[w] &= !mask;
            }
        }
    }

    /// Appends to `out` the indices of `[s, e)` whose bit is clear, as runs.
    fn push_clear(&self, s: u32, e: u32, out: &mut TaskRuns) {
        let (s, e) = (s as usize, e as usize);
        let (ws, we) = (s / 64, (e - 1) / 64);
        for w in ws..=we {
            let lo = if w == ws { s % 64 } else { 0 };
            let hi = if w == we { (e - 1) % 64 + 1 } else { 64 };
            let mask = (u64::MAX >> (64 - (hi - lo))) << lo;
            let mut clear = !self.words[w] & mask;
            while clear != 0 {
                let a = clear.trailing_zeros() as usize;
                // Length of the run of ones starting at bit `a`.
                let len = (!(clear >> a)).trailing_zeros() as usize;
                let base = (w * 64) as u32;
                out.push_run(base + a as u32, base + (a + len) as u32);
                clear &= if a + len >= 64 {
                    0
                } else {
                    u64::MAX << (a + len)
                };
            }
        }
    }

    /// The indices of the set `sel` selects that end at `id`. Same result as
    /// [`PrefixTree::tasks_ending_at`] (or `threads_ending_at`), without its quadratic case.
    fn ending(
        &mut self,
        tree: &PrefixTree<TaskRuns>,
        id: NodeId,
        sel: impl Fn(&Node<TaskRuns>) -> &TaskRuns,
    ) -> TaskRuns {
        let n = tree.node(id);
        match n.children.as_slice() {
            [] => sel(n).clone(),
            // One child: a linear run-list difference, no scratch words to touch.
            &[c] => sel(n).difference(sel(tree.node(c))),
            children => {
                for &c in children {
                    for &(s, e) in sel(tree.node(c)).as_runs() {
                        self.fill(s, e, true);
                    }
                }
                let mut out = TaskRuns::new();
                for &(s, e) in sel(n).as_runs() {
                    self.push_clear(s, e, &mut out);
                }
                // Clear by the children's runs, not the node's: a tree from a peer is not
                // trusted to keep children inside their parent.
                for &c in children {
                    for &(s, e) in sel(tree.node(c)).as_runs() {
                        self.fill(s, e, false);
                    }
                }
                out
            }
        }
    }
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
