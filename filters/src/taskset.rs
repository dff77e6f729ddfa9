//! Task sets: which tasks (or threads) took an edge of the prefix tree.
//!
//! Two representations, one per stage of the pipeline (the 208K paper, section 5.2):
//!
//! * [`TaskRuns`] is *subtree-scoped*: a daemon numbers its own tasks `0..k`, and a merge
//!   concatenates its children's index spaces in a fixed child order. Concatenation only adds
//!   an offset, so a sorted list of runs is the natural representation: shifting and appending
//!   cost O(runs), independent of how many tasks the runs cover, and the sets stay run-shaped
//!   all the way up because every daemon numbers its tasks in rank order.
//! * [`RankSet`] (a roaring bitmap) is in *MPI rank order*, produced once at the root by
//!   [`crate::remap()`]. After the remap, sets can be arbitrarily fragmented (cyclic placement
//!   turns one daemon run into a stride), which is what roaring's containers are good at.
//!
//! Both implement [`TaskSet`], so the tree, the views and the class computation are generic.

use std::fmt::{self, Write as _};

use thiserror::Error;

pub use roaring::RoaringBitmap as RankSet;

/// A rank list a user or a file wrote that is not one (`0,2-255`, see [`parse_ranges`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ParseError {
    #[error("range '{0}' is reversed")]
    Reversed(String),
    #[error("index in '{0}' is too large")]
    TooLarge(String),
    #[error("'{0}' is not a rank number")]
    NotANumber(String),
}

/// Runs a peer sent that are not a valid [`TaskRuns`] (see [`TaskRuns::from_checked_runs`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum RunsError {
    #[error("empty or reversed run {0}-{1}")]
    Empty(u32, u32),
    #[error("run {start}-{end} exceeds the index space of {limit}")]
    OutsideSpace { start: u32, end: u32, limit: u32 },
    #[error("run {0}-{1} overlaps or touches the previous run")]
    Overlapping(u32, u32),
}

/// The operations the prefix tree needs from a set of task (or thread) indices.
pub trait TaskSet: Clone + Default + PartialEq + fmt::Debug {
    /// Adds one index.
    fn insert(&mut self, index: u32);
    /// `self = self ∪ other`.
    fn union_with(&mut self, other: &Self);
    /// `self \ other`.
    fn difference(&self, other: &Self) -> Self;
    /// Number of indices in the set.
    fn count(&self) -> u64;
    /// True when the set holds no index.
    fn is_empty(&self) -> bool {
        self.count() == 0
    }
    /// The indices in increasing order.
    fn indices(&self) -> Box<dyn Iterator<Item = u32> + '_>;
    /// The set as maximal runs `[start, end)` in increasing order.
    fn runs(&self) -> Vec<(u32, u32)> {
        let mut out: Vec<(u32, u32)> = Vec::new();
        for i in self.indices() {
            match out.last_mut() {
                Some(last) if last.1 == i => last.1 = i + 1,
                _ => out.push((i, i + 1)),
            }
        }
        out
    }
    /// Smallest index, if any.
    fn first(&self) -> Option<u32> {
        self.indices().next()
    }
    /// The union of many sets. Folding `union_with` is quadratic when the sets interleave
    /// (a node's thousands of noise leaves inside one large class), so implementations
    /// combine all inputs at once.
    fn union_all<'a>(sets: impl IntoIterator<Item = &'a Self>) -> Self
    where
        Self: 'a,
    {
        let mut acc = Self::default();
        for s in sets {
            acc.union_with(s);
        }
        acc
    }
}

impl TaskSet for RankSet {
    fn insert(&mut self, index: u32) {
        RankSet::insert(self, index);
    }
    fn union_with(&mut self, other: &Self) {
        *self |= other;
    }
    fn difference(&self, other: &Self) -> Self {
        self - other
    }
    fn count(&self) -> u64 {
        self.len()
    }
    fn is_empty(&self) -> bool {
        RankSet::is_empty(self)
    }
    fn indices(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        Box::new(self.iter())
    }
    fn first(&self) -> Option<u32> {
        self.min()
    }
    fn union_all<'a>(sets: impl IntoIterator<Item = &'a Self>) -> Self {
        roaring::MultiOps::union(sets)
    }
}

/// A sorted list of disjoint, non-adjacent half-open runs `[start, end)` of task indices.
///
/// Invariant: runs are sorted, non-empty, and separated by at least one missing index
/// (adjacent runs are always coalesced), so two equal sets have equal representations.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct TaskRuns {
    runs: Vec<(u32, u32)>,
}

impl fmt::Debug for TaskRuns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskRuns[{}]", format_runs(&self.runs))
    }
}

impl TaskRuns {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// All indices in `[start, end)`.
    pub fn range(start: u32, end: u32) -> Self {
        let mut set = Self::new();
        set.push_run(start, end);
        set
    }

    /// Builds a set from runs in any order, overlapping or not.
    pub fn from_runs(runs: impl IntoIterator<Item = (u32, u32)>) -> Self {
        let mut runs: Vec<(u32, u32)> = runs.into_iter().filter(|r| r.0 < r.1).collect();
        runs.sort_unstable();
        let mut set = Self::new();
        for (s, e) in runs {
            match set.runs.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => set.runs.push((s, e)),
            }
        }
        set
    }

    /// Checks that `runs` are sorted, non-empty, coalesced and below `limit`, as a
    /// peer-supplied set must be before it is trusted.
    pub fn from_checked_runs(runs: Vec<(u32, u32)>, limit: u32) -> Result<Self, RunsError> {
        let mut prev_end: Option<u32> = None;
        for &(s, e) in &runs {
            if s >= e {
                return Err(RunsError::Empty(s, e));
            }
            if e > limit {
                return Err(RunsError::OutsideSpace {
                    start: s,
                    end: e,
                    limit,
                });
            }
            if prev_end.is_some_and(|p| s <= p) {
                return Err(RunsError::Overlapping(s, e));
            }
            prev_end = Some(e);
        }
        Ok(Self { runs })
    }

    /// The runs, sorted and coalesced.
    pub fn as_runs(&self) -> &[(u32, u32)] {
        &self.runs
    }

    /// Number of runs (the size of the representation).
    pub fn run_count(&self) -> usize {
        self.runs.len()
    }

    /// One past the largest index, or 0 when empty.
    pub fn end(&self) -> u32 {
        self.runs.last().map_or(0, |r| r.1)
    }

    /// Appends `[start, end)`, which must not start before the current end.
    fn push_run(&mut self, start: u32, end: u32) {
        if start >= end {
            return;
        }
        debug_assert!(start >= self.end(), "push_run out of order");
        match self.runs.last_mut() {
            Some(last) if last.1 == start => last.1 = end,
            _ => self.runs.push((start, end)),
        }
    }

    /// Appends every index of `other` plus `offset`. All of them must lie at or after the
    /// current end: this is the concatenation step of the subtree-scoped merge, and it is
    /// O(runs of `other`).
    pub fn append_shifted(&mut self, other: &TaskRuns, offset: u32) {
        for &(s, e) in &other.runs {
            self.push_run(s + offset, e + offset);
        }
    }

    /// True when `index` is in the set.
    pub fn contains(&self, index: u32) -> bool {
        match self.runs.binary_search_by(|r| r.0.cmp(&index)) {
            Ok(_) => true,
            Err(0) => false,
            Err(i) => self.runs[i - 1].1 > index,
        }
    }
}

impl TaskSet for TaskRuns {
    fn insert(&mut self, index: u32) {
        // Fast path: daemons insert in increasing order.
        if index >= self.end() {
            self.push_run(index, index + 1);
            return;
        }
        let i = self.runs.partition_point(|r| r.1 < index);
        // runs[i] is the first run whose end >= index.
        let (s, e) = self.runs[i];
        if s <= index && index < e {
            return;
        }
        if e == index {
            self.runs[i].1 += 1;
            if i + 1 < self.runs.len() && self.runs[i + 1].0 == index + 1 {
                self.runs[i].1 = self.runs[i + 1].1;
                self.runs.remove(i + 1);
            }
        } else if s == index + 1 {
            self.runs[i].0 = index;
        } else {
            self.runs.insert(i, (index, index + 1));
        }
    }

    fn union_with(&mut self, other: &Self) {
        if other.runs.is_empty() {
            return;
        }
        if other.runs[0].0 > self.end() {
            self.runs.extend_from_slice(&other.runs);
            return;
        }
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.runs.len() + other.runs.len());
        let (mut a, mut b) = (self.runs.iter().peekable(), other.runs.iter().peekable());
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => {
                    if x.0 <= y.0 {
                        a.next()
                    } else {
                        b.next()
                    }
                }
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            let &(s, e) = next.expect("peeked");
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        self.runs = merged;
    }

    fn difference(&self, other: &Self) -> Self {
        let mut out = TaskRuns::new();
        let mut j = 0;
        for &(s, e) in &self.runs {
            let mut cur = s;
            while j < other.runs.len() && other.runs[j].1 <= cur {
                j += 1;
            }
            let mut k = j;
            while cur < e && k < other.runs.len() && other.runs[k].0 < e {
                let (os, oe) = other.runs[k];
                if os > cur {
                    out.push_run(cur, os);
                }
                cur = cur.max(oe);
                k += 1;
            }
            if cur < e {
                out.push_run(cur, e);
            }
        }
        out
    }

    fn count(&self) -> u64 {
        self.runs.iter().map(|r| u64::from(r.1 - r.0)).sum()
    }

    fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    fn indices(&self) -> Box<dyn Iterator<Item = u32> + '_> {
        Box::new(self.runs.iter().flat_map(|&(s, e)| s..e))
    }

    fn runs(&self) -> Vec<(u32, u32)> {
        self.runs.clone()
    }

    fn first(&self) -> Option<u32> {
        self.runs.first().map(|r| r.0)
    }

    fn union_all<'a>(sets: impl IntoIterator<Item = &'a Self>) -> Self {
        let sets: Vec<&TaskRuns> = sets.into_iter().filter(|s| !s.is_empty()).collect();
        let runs: usize = sets.iter().map(|s| s.runs.len()).sum();
        if sets.len() <= 2 || runs <= 64 {
            let mut acc = TaskRuns::new();
            for s in sets {
                acc.union_with(s);
            }
            return acc;
        }
        // Many interleaved sets (a spin loop's dozen leaves, thousands of noise leaves):
        // mark every run in a bit vector over their span and read the runs back. Linear in
        // the runs plus the span's words, where folding merges or sorting runs is not.
        let lo = sets.iter().map(|s| s.runs[0].0).min().expect("non-empty") & !63;
        let hi = sets.iter().map(|s| s.end()).max().expect("non-empty");
        let mut bits = vec![0u64; ((hi - lo) as usize).div_ceil(64)];
        for s in &sets {
            for &(a, b) in &s.runs {
                fill_bits(&mut bits, a - lo, b - lo);
            }
        }
        let mut out = TaskRuns::new();
        for (w, &word) in bits.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                let start = rest.trailing_zeros();
                let len = (!(rest >> start)).trailing_zeros();
                let base = lo + (w as u32) * 64;
                out.push_run(base + start, base + start + len);
                rest = if start + len >= 64 {
                    0
                } else {
                    rest & (u64::MAX << (start + len))
                };
            }
        }
        out
    }
}

/// Sets bits `[a, b)` of a word vector.
fn fill_bits(bits: &mut [u64], a: u32, b: u32) {
    let (a, b) = (a as usize, b as usize);
    let (wa, wb) = (a / 64, (b - 1) / 64);
    for (w, word) in bits.iter_mut().enumerate().take(wb + 1).skip(wa) {
        let from = if w == wa { a % 64 } else { 0 };
        let to = if w == wb { (b - 1) % 64 + 1 } else { 64 };
        *word |= (u64::MAX >> (64 - (to - from))) << from;
    }
}

/// Formats runs as STAT's compact rank list, `0,2-255` (without brackets).
pub fn format_runs(runs: &[(u32, u32)]) -> String {
    let mut out = String::new();
    for (i, &(s, e)) in runs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        if e - s == 1 {
            let _ = write!(out, "{s}");
        } else {
            let _ = write!(out, "{s}-{}", e - 1);
        }
    }
    out
}

/// Formats any task set as a compact rank list (`0,2-255`).
pub fn format_set<S: TaskSet>(set: &S) -> String {
    format_runs(&set.runs())
}

/// Formats a rank list that fits in `max_chars` characters (at least 16), ending in
/// `,...` when items were left out. Used for labels: the full list lives elsewhere.
pub fn format_set_shortened<S: TaskSet>(set: &S, max_chars: usize) -> String {
    let max_chars = max_chars.max(16);
    let runs = set.runs();
    let mut out = String::new();
    for (i, &(s, e)) in runs.iter().enumerate() {
        let item = if e - s == 1 {
            format!("{s}")
        } else {
            format!("{s}-{}", e - 1)
        };
        let sep = if i > 0 { 1 } else { 0 };
        let more = i + 1 < runs.len();
        // Keep room for ",..." if anything would follow.
        let reserve = if more { 4 } else { 0 };
        if out.len() + sep + item.len() + reserve > max_chars {
            out.push_str(if out.is_empty() { "..." } else { ",..." });
            return out;
        }
        if sep == 1 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out
}

/// Parses a compact rank list (`0,2-255`; whitespace allowed; empty string is the empty set).
pub fn parse_ranges(text: &str) -> Result<Vec<(u32, u32)>, ParseError> {
    let mut runs = Vec::new();
    let text = text.trim();
    if text.is_empty() {
        return Ok(runs);
    }
    for item in text.split(',') {
        let item = item.trim();
        let (s, e) = match item.split_once('-') {
            Some((a, b)) => (parse_index(a)?, parse_index(b)?),
            None => {
                let v = parse_index(item)?;
                (v, v)
            }
        };
        if s > e {
            return Err(ParseError::Reversed(item.to_string()));
        }
        let end = e
            .checked_add(1)
            .ok_or_else(|| ParseError::TooLarge(item.to_string()))?;
        runs.push((s, end));
    }
    Ok(runs)
}

fn parse_index(text: &str) -> Result<u32, ParseError> {
    text.trim()
        .parse::<u32>()
        .map_err(|_| ParseError::NotANumber(text.trim().to_string()))
}

/// Builds a [`RankSet`] from runs, using range inserts.
pub fn rankset_from_runs(runs: &[(u32, u32)]) -> RankSet {
    let mut set = RankSet::new();
    for &(s, e) in runs {
        set.insert_range(s..e);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn runs_of(v: &BTreeSet<u32>) -> TaskRuns {
        let mut t = TaskRuns::new();
        for &i in v {
            t.insert(i);
        }
        t
    }

    #[test]
    fn formats_like_stat() {
        let t = TaskRuns::from_runs([(0, 1), (2, 256)]);
        assert_eq!(format_set(&t), "0,2-255");
        assert_eq!(parse_ranges("0,2-255").unwrap(), vec![(0, 1), (2, 256)]);
        assert_eq!(parse_ranges("").unwrap(), vec![]);
        assert!(parse_ranges("5-3").is_err());
        assert!(parse_ranges("x").is_err());
        assert!(parse_ranges("4294967295").is_err());
    }

    #[test]
    fn shortened_lists_fit_and_say_so() {
        let t = TaskRuns::from_runs((0..1000).map(|i| (2 * i, 2 * i + 1)));
        let s = format_set_shortened(&t, 40);
        assert!(s.len() <= 40, "{s}");
        assert!(s.ends_with(",..."), "{s}");
        let short = TaskRuns::from_runs([(0, 4)]);
        assert_eq!(format_set_shortened(&short, 40), "0-3");
    }

    #[test]
    fn checked_runs_reject_garbage() {
        assert!(TaskRuns::from_checked_runs(vec![(0, 2), (2, 3)], 10).is_err());
        assert!(TaskRuns::from_checked_runs(vec![(3, 3)], 10).is_err());
        assert!(TaskRuns::from_checked_runs(vec![(0, 11)], 10).is_err());
        assert!(TaskRuns::from_checked_runs(vec![(0, 2), (4, 10)], 10).is_ok());
    }

    proptest! {
        #[test]
        fn runs_behave_like_a_set(a in prop::collection::btree_set(0u32..300, 0..80),
                                  b in prop::collection::btree_set(0u32..300, 0..80)) {
            let (ra, rb) = (runs_of(&a), runs_of(&b));
            prop_assert_eq!(ra.indices().collect::<BTreeSet<_>>(), a.clone());
            prop_assert_eq!(ra.count(), a.len() as u64);
            let mut u = ra.clone();
            u.union_with(&rb);
            prop_assert_eq!(u.indices().collect::<BTreeSet<_>>(), a.union(&b).copied().collect());
            prop_assert_eq!(&u, &TaskRuns::from_runs(u.as_runs().iter().copied()));
            let d = ra.difference(&rb);
            prop_assert_eq!(d.indices().collect::<BTreeSet<_>>(), a.difference(&b).copied().collect());
            for i in 0..300 {
                prop_assert_eq!(ra.contains(i), a.contains(&i));
            }
            let parsed = parse_ranges(&format_set(&ra)).unwrap();
            prop_assert_eq!(TaskRuns::from_runs(parsed), ra.clone());
            // The same operations on roaring agree.
            let (xa, xb): (RankSet, RankSet) = (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(xa.runs(), ra.runs());
            prop_assert_eq!(TaskSet::difference(&xa, &xb).runs(), d.runs());
            prop_assert_eq!(TaskRuns::union_all([&ra, &rb, &d]), u.clone());
            // Enough runs to take the bit-vector path.
            let singles: Vec<TaskRuns> = a.iter().chain(b.iter()).map(|&i| TaskRuns::range(i, i + 1)).collect();
            prop_assert_eq!(TaskRuns::union_all(singles.iter()), u.clone());
            prop_assert_eq!(RankSet::union_all([&xa, &xb]).runs(), u.runs());
        }

        #[test]
        fn append_shifted_is_concatenation(a in prop::collection::btree_set(0u32..100, 0..40),
                                           b in prop::collection::btree_set(0u32..100, 0..40)) {
            let mut ra = runs_of(&a);
            ra.append_shifted(&runs_of(&b), 100);
            let expect: BTreeSet<u32> = a.iter().copied().chain(b.iter().map(|x| x + 100)).collect();
            prop_assert_eq!(ra.indices().collect::<BTreeSet<_>>(), expect.clone());
            prop_assert_eq!(ra, runs_of(&expect));
        }
    }
}
