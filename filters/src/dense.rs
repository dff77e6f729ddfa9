//! Dense job-wide bit vectors: the task sets STAT used before the 208K paper, kept as a
//! benchmark baseline (`strata bench --dense`).
//!
//! In this mode every daemon sets the bits of its tasks' *global MPI ranks* in a bit vector
//! as long as the whole job, every edge of the tree carries such vectors, and a merge is the
//! union (bitwise or) of trees that share one index space. No remap is needed at the root,
//! but every node of every message costs `job_size / 8` bytes however few tasks it holds, so
//! a daemon's message, each merge and the root's work all grow linearly with the job: the
//! scaling problem the paper's subtree-scoped task lists ([`crate::TaskRuns`]) removed
//! (section 5.2). strata keeps it only to measure that difference on its own code.

use std::fmt;

use thiserror::Error;

use crate::remap::IndexMap;
use crate::taskset::{RankSet, TaskRuns, TaskSet};
use crate::tree::{NodeId, PrefixTree};

/// A peer's bit vector that does not fit the job (see [`DenseBits::from_bytes`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BitsError {
    #[error("a bit vector of {bytes} bytes, the job's {space} tasks need {needed}")]
    Length {
        bytes: usize,
        space: u32,
        needed: usize,
    },
    #[error("a bit vector sets a task past the job's {0}")]
    PastSpace(u32),
}

/// A set of global ranks as a plain bit vector (bit `r` of word `r / 64`).
///
/// Words past the last one stored are zero, so an empty set allocates nothing; equality
/// ignores trailing zero words.
#[derive(Clone, Default)]
pub struct DenseBits {
    words: Vec<u64>,
}

impl DenseBits {
    /// An empty set sized for `space` indices (what a job-wide vector costs).
    pub fn with_space(space: u32) -> Self {
        DenseBits {
            words: vec![0; space.div_ceil(64) as usize],
        }
    }

    /// The set as little-endian bytes, exactly `space.div_ceil(8)` of them: the wire form,
    /// whose size depends on the job, never on the set.
    pub fn to_bytes(&self, space: u32) -> Vec<u8> {
        let len = space.div_ceil(8) as usize;
        let mut out = Vec::with_capacity(len);
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.resize(len, 0);
        out
    }

    /// Reads the wire form; refuses a length other than `space.div_ceil(8)` and bits at or
    /// past `space`.
    pub fn from_bytes(bytes: &[u8], space: u32) -> Result<Self, BitsError> {
        let len = space.div_ceil(8) as usize;
        if bytes.len() != len {
            return Err(BitsError::Length {
                bytes: bytes.len(),
                space,
                needed: len,
            });
        }
        let words: Vec<u64> = bytes
            .chunks(8)
            .map(|c| {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                u64::from_le_bytes(w)
            })
            .collect();
        let set = DenseBits { words };
        if !space.is_multiple_of(64)
            && let Some(&last) = set.words.last()
            && last >> (space % 64) != 0
        {
            return Err(BitsError::PastSpace(space));
        }
        Ok(set)
    }

    /// The same set as a roaring bitmap (the root's representation).
    pub fn to_rankset(&self) -> RankSet {
        let mut out = RankSet::new();
        for (i, &w) in self.words.iter().enumerate() {
            let mut w = w;
            while w != 0 {
                let b = w.trailing_zeros();
                out.insert(i as u32 * 64 + b);
                w &= w - 1;
            }
        }
        out
    }

    fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }
}

impl PartialEq for DenseBits {
    fn eq(&self, other: &Self) -> bool {
        let n = self.words.len().max(other.words.len());
        (0..n).all(|i| self.word(i) == other.word(i))
    }
}

impl fmt::Debug for DenseBits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", crate::taskset::format_set(self))
    }
}

impl TaskSet for DenseBits {
    fn insert(&mut self, index: u32) {
        let i = (index / 64) as usize;
        if self.words.len() <= i {
            self.words.resize(i + 1, 0);
        }
        self.words[i] |= 1 << (index % 64);
    }
    fn union_with(&mut self, other: &Self) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }
    fn difference(&self, other: &Self) -> Self {
        DenseBits {
            words: self
                .words
                .iter()
                .enumerate()
                .map(|(i, w)| w & !other.word(i))
                .collect(),
        }
    }
    fn count(&self) -> u64 {
        self.words.iter().map(|w| w.count_ones() as u64).sum()
    }
    fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    fn indices(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        Box::new(self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros();
                    w &= w - 1;
                    i as u32 * 64 + b
                })
            })
        }))
    }
}

/// A daemon's subtree-scoped tree with its tasks renumbered to global ranks in job-wide
/// vectors: what a daemon of the original STAT sent. Every node's vector is allocated for
/// the whole job, as it was there. Thread sets are not carried in this mode.
pub fn densify(tree: &PrefixTree<TaskRuns>, ranks: &IndexMap) -> PrefixTree<DenseBits> {
    let space = ranks.space();
    let mut out: PrefixTree<DenseBits> = tree.same_shape(space, 0);
    for id in tree.node_ids() {
        let mut set = DenseBits::with_space(space);
        for &(s, e) in tree.node(id).tasks.as_runs() {
            for local in s..e {
                set.insert(ranks.get(local));
            }
        }
        out.node_sets_mut(id).0.union_with(&set);
    }
    out
}

/// The union merge of trees over the same job-wide index space (STAT's original filter):
/// each child's node sets are or-ed into the node with the same call path.
pub fn merge_union<'a>(
    children: impl IntoIterator<Item = &'a PrefixTree<DenseBits>>,
) -> PrefixTree<DenseBits> {
    let mut merged: Option<PrefixTree<DenseBits>> = None;
    for c in children {
        match &mut merged {
            None => merged = Some(c.clone()),
            Some(m) => m.absorb(c),
        }
    }
    merged.unwrap_or_else(|| PrefixTree::new(0, 0))
}

/// The merged tree in the root's representation (the dense mode's stand-in for the remap:
/// the vectors already hold ranks, but each must be scanned in full).
pub fn to_rank_tree(tree: &PrefixTree<DenseBits>) -> PrefixTree<RankSet> {
    let mut out: PrefixTree<RankSet> = tree.same_shape(tree.task_space(), 0);
    for id in tree.node_ids() {
        *out.node_sets_mut(id).0 = tree.node(id).tasks.to_rankset();
    }
    debug_assert!(out.node(NodeId::ROOT).tasks.len() <= tree.task_space() as u64);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{Placement, SynthJob, SynthParams};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn dense_bits_behave_like_a_rank_set(
            a in proptest::collection::btree_set(0u32..300, 0..80),
            b in proptest::collection::btree_set(0u32..300, 0..80),
        ) {
            let (mut da, mut db) = (DenseBits::default(), DenseBits::with_space(300));
            a.iter().for_each(|&i| da.insert(i));
            b.iter().for_each(|&i| db.insert(i));
            let (ra, rb): (RankSet, RankSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(da.count(), ra.len());
            prop_assert_eq!(da.indices().collect::<Vec<_>>(), ra.iter().collect::<Vec<_>>());
            prop_assert_eq!(da.difference(&db).to_rankset(), &ra - &rb);
            let mut u = da.clone();
            u.union_with(&db);
            prop_assert_eq!(u.to_rankset(), &ra | &rb);
            let back = DenseBits::from_bytes(&da.to_bytes(300), 300).unwrap();
            prop_assert_eq!(back, da);
        }
    }

    #[test]
    fn the_wire_form_is_as_long_as_the_job_and_checked() {
        let mut s = DenseBits::default();
        s.insert(3);
        assert_eq!(s.to_bytes(1000).len(), 125);
        assert!(DenseBits::from_bytes(&[0; 124], 1000).is_err());
        // Bit 1000 of a 1001-task job is past its end.
        let mut past = vec![0u8; 126];
        past[125] = 0b10;
        assert!(DenseBits::from_bytes(&past, 1001).is_err());
        assert!(DenseBits::from_bytes(&past[..126], 1002).is_ok());
    }

    #[test]
    fn densified_daemon_trees_union_to_the_direct_tree() {
        for placement in [Placement::Block, Placement::Cyclic] {
            let job = SynthJob::new(SynthParams {
                daemons: 7,
                tasks_per_daemon: 5,
                noise: 0.2,
                placement,
                ..SynthParams::default()
            });
            let trees: Vec<_> = (0..7)
                .map(|d| {
                    let ranks = IndexMap::new(job.rank_map(d), job.ranks(), "rank").unwrap();
                    densify(&job.daemon_tree(d, 0), &ranks)
                })
                .collect();
            let merged = to_rank_tree(&merge_union(&trees));
            assert_eq!(merged.canonical(), job.direct_tree(0).canonical());
        }
    }
}
