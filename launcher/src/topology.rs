//! The shape of the tree: how many processes on each level, and who is whose parent.
//!
//! Level 0 is the front end, the last level the daemons, the levels between commnodes.
//! Like STAT, strata picks by default the shallowest tree whose fanout (children per node)
//! is at most [`DEFAULT_MAX_FANOUT`]: one level of daemons under the front end up to 64
//! daemons, one commnode level up to 4,096, and so on. Each level is as small as the
//! fanout allows, and children are split among the nodes above them in contiguous blocks
//! (see [`children_of`]), so a daemon computes its parent from its index alone: what a
//! bulk launch, where every daemon gets the same command line, needs.

use std::ops::Range;

pub const DEFAULT_MAX_FANOUT: u32 = 64;

/// Processes per level, front end first, daemons last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topology {
    levels: Vec<u32>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TopologyError {
    #[error("a tree needs at least one daemon")]
    NoDaemons,
    #[error("--fanout must be at least 2 (got {0})")]
    Fanout(u32),
    #[error("--depth must be between 1 and 8 (got {0})")]
    Depth(u32),
}

impl Topology {
    /// The shallowest tree over `daemons` daemons whose fanout is at most `max_fanout`.
    pub fn with_fanout(daemons: u32, max_fanout: u32) -> Result<Topology, TopologyError> {
        if daemons == 0 {
            return Err(TopologyError::NoDaemons);
        }
        if max_fanout < 2 {
            return Err(TopologyError::Fanout(max_fanout));
        }
        let mut depth = 1;
        let mut reach = max_fanout as u64;
        while reach < daemons as u64 {
            reach *= max_fanout as u64;
            depth += 1;
        }
        Ok(Topology::build(daemons, depth, max_fanout))
    }

    /// A tree of `depth` edges from the front end to the daemons (1: the front end talks to
    /// the daemons directly), with the smallest fanout that reaches them.
    pub fn with_depth(daemons: u32, depth: u32) -> Result<Topology, TopologyError> {
        if daemons == 0 {
            return Err(TopologyError::NoDaemons);
        }
        if !(1..=8).contains(&depth) {
            return Err(TopologyError::Depth(depth));
        }
        let mut fanout = 2u32.max((daemons as f64).powf(1.0 / depth as f64).floor() as u32);
        while (fanout as u64).pow(depth) < daemons as u64 {
            fanout += 1;
        }
        Ok(Topology::build(daemons, depth, fanout))
    }

    /// Both given, or the default.
    pub fn choose(
        daemons: u32,
        fanout: Option<u32>,
        depth: Option<u32>,
    ) -> Result<Topology, TopologyError> {
        match (fanout, depth) {
            (_, Some(d)) => {
                let t = Topology::with_depth(daemons, d)?;
                match fanout {
                    Some(f) if f < 2 => Err(TopologyError::Fanout(f)),
                    _ => Ok(t),
                }
            }
            (f, None) => Topology::with_fanout(daemons, f.unwrap_or(DEFAULT_MAX_FANOUT)),
        }
    }

    fn build(daemons: u32, depth: u32, fanout: u32) -> Topology {
        // From the daemons up: each level holds ceil(below / fanout) nodes; the front end
        // is alone on top.
        let mut levels = vec![daemons];
        for _ in 1..depth {
            let below = *levels.last().expect("non-empty");
            levels.push(below.div_ceil(fanout).max(1));
        }
        levels.push(1);
        levels.reverse();
        Topology { levels }
    }

    /// Processes per level, front end first.
    pub fn levels(&self) -> &[u32] {
        &self.levels
    }

    /// Edges from the front end to a daemon.
    pub fn depth(&self) -> u32 {
        (self.levels.len() - 1) as u32
    }

    pub fn daemons(&self) -> u32 {
        *self.levels.last().expect("non-empty")
    }

    /// The commnode levels (between the front end and the daemons).
    pub fn commnode_levels(&self) -> &[u32] {
        &self.levels[1..self.levels.len() - 1]
    }

    /// The largest number of children of any node.
    pub fn max_fanout(&self) -> u32 {
        self.levels
            .windows(2)
            .map(|w| {
                (0..w[0])
                    .map(|j| children_of(j, w[1], w[0]).len() as u32)
                    .max()
                    .unwrap_or(0)
            })
            .max()
            .unwrap_or(0)
    }

    /// The daemons below node `index` of `level` (a daemon: itself).
    pub fn daemons_below(&self, level: usize, index: u32) -> Range<u32> {
        let mut r = index..index + 1;
        for l in level..self.levels.len() - 1 {
            let (above, below) = (self.levels[l], self.levels[l + 1]);
            let first = children_of(r.start, below, above).start;
            let end = children_of(r.end - 1, below, above).end;
            r = first..end;
        }
        r
    }

    /// `1 -> 2 -> 4` for a front end, 2 commnodes, 4 daemons.
    pub fn describe(&self) -> String {
        let parts: Vec<String> = self.levels.iter().map(|n| n.to_string()).collect();
        parts.join(" -> ")
    }
}

/// The children (indices in the level below, of `below` nodes) of node `parent` of a
/// level of `above` nodes: contiguous blocks, sizes differing by at most one.
pub fn children_of(parent: u32, below: u32, above: u32) -> Range<u32> {
    let start = |j: u32| ((j as u64 * below as u64) / above as u64) as u32;
    start(parent)..start(parent + 1)
}

/// The parent of node `child` of a level of `below` nodes, in the level of `above` nodes
/// above it: the inverse of [`children_of`].
pub fn parent_of(child: u32, below: u32, above: u32) -> u32 {
    // The largest j with floor(j * below / above) <= child.
    (((child as u64 + 1) * above as u64 - 1) / below as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_default_is_the_shallowest_tree_with_fanout_at_most_64() {
        assert_eq!(Topology::with_fanout(1, 64).unwrap().levels(), &[1, 1]);
        assert_eq!(Topology::with_fanout(64, 64).unwrap().levels(), &[1, 64]);
        assert_eq!(Topology::with_fanout(65, 64).unwrap().levels(), &[1, 2, 65]);
        assert_eq!(
            Topology::with_fanout(4096, 64).unwrap().levels(),
            &[1, 64, 4096]
        );
        assert_eq!(Topology::with_fanout(4097, 64).unwrap().depth(), 3);
    }

    #[test]
    fn four_daemons_at_fanout_two_need_one_commnode_level() {
        let t = Topology::choose(4, Some(2), None).unwrap();
        assert_eq!(t.levels(), &[1, 2, 4]);
        assert_eq!(t.commnode_levels(), &[2]);
        assert_eq!(t.daemons_below(1, 0), 0..2);
        assert_eq!(t.daemons_below(1, 1), 2..4);
        assert_eq!(t.daemons_below(0, 0), 0..4);
        assert_eq!(t.max_fanout(), 2);
        assert_eq!(t.describe(), "1 -> 2 -> 4");
    }

    #[test]
    fn depth_picks_the_smallest_fanout_that_reaches() {
        assert_eq!(Topology::with_depth(16, 2).unwrap().levels(), &[1, 4, 16]);
        assert_eq!(Topology::with_depth(5, 1).unwrap().levels(), &[1, 5]);
        assert_eq!(Topology::with_depth(8, 3).unwrap().levels(), &[1, 2, 4, 8]);
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert_eq!(Topology::with_fanout(0, 4), Err(TopologyError::NoDaemons));
        assert_eq!(Topology::with_fanout(4, 1), Err(TopologyError::Fanout(1)));
        assert_eq!(Topology::with_depth(4, 0), Err(TopologyError::Depth(0)));
    }

    proptest! {
        #[test]
        fn parent_of_inverts_children_of(below in 1u32..5000, above in 1u32..200) {
            prop_assume!(above <= below);
            let mut next = 0;
            for j in 0..above {
                let kids = children_of(j, below, above);
                prop_assert_eq!(kids.start, next);
                prop_assert!(!kids.is_empty());
                for c in kids.clone() {
                    prop_assert_eq!(parent_of(c, below, above), j);
                }
                next = kids.end;
            }
            prop_assert_eq!(next, below);
        }

        #[test]
        fn every_tree_respects_its_fanout(daemons in 1u32..100_000, fanout in 2u32..80) {
            let t = Topology::with_fanout(daemons, fanout).unwrap();
            prop_assert!(t.max_fanout() <= fanout);
            prop_assert_eq!(t.daemons(), daemons);
            prop_assert_eq!(t.daemons_below(0, 0), 0..daemons);
            // The shallowest: one level less would not reach.
            prop_assert!((fanout as u64).pow(t.depth() - 1) < daemons as u64 || t.depth() == 1);
        }
    }
}
