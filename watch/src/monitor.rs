//! Which ranks the watch samples between full snapshots.
//!
//! Sampling every rank every few hundred milliseconds would cost as much as an attach each
//! time; ParaStack samples 10 random ranks, which is enough because a hang spreads: once one
//! rank stops, everybody ends up waiting in MPI within a few collectives, whichever ten are
//! watched. The authors' code keeps a second random set and swaps it in every 30 samples,
//! so that an unrepresentative draw (ten ranks of an I/O-heavy group, say) does not shape
//! the model for the whole run.

/// The monitored ranks: an active set and a standby set, alternated every `swap_every`
/// samples. Deterministic given the seed.
#[derive(Clone, Debug)]
pub struct MonitorSet {
    active: Vec<u32>,
    standby: Vec<u32>,
    swap_every: u32,
    since_swap: u32,
    swaps: u64,
}

impl MonitorSet {
    /// The slides' default number of monitored ranks.
    pub const DEFAULT_SIZE: usize = 10;
    /// The authors' code swaps the sets every 30 samples.
    pub const DEFAULT_SWAP_EVERY: u32 = 30;

    /// Draws the two sets from the job's `ranks` (duplicates ignored): `size` ranks each
    /// (at least 1), or all ranks when the job has no more than `size`.
    ///
    /// The standby set is disjoint from the active one when the job has at least `2 * size`
    /// ranks. Between `size` and `2 * size` it takes every rank the active set left out and
    /// fills up with random active ones, so both sets keep `size` ranks: S_out is a share of
    /// `size`, and two sets of different sizes would give S_out two different grids of
    /// values in one distribution. With `size` ranks or fewer both sets are the whole job
    /// and swapping changes nothing. Each set is sorted.
    pub fn new(ranks: &[u32], size: usize, seed: u64) -> MonitorSet {
        let mut rng = fastrand::Rng::with_seed(seed);
        let mut all = ranks.to_vec();
        all.sort_unstable();
        all.dedup();
        let size = size.max(1);
        let (mut active, mut standby) = if all.len() <= size {
            (all.clone(), all)
        } else {
            rng.shuffle(&mut all);
            let active = all[..size].to_vec();
            let mut standby: Vec<u32> = all[size..].iter().copied().take(size).collect();
            if standby.len() < size {
                let mut refill = active.clone();
                rng.shuffle(&mut refill);
                let missing = size - standby.len();
                standby.extend_from_slice(&refill[..missing]);
            }
            (active, standby)
        };
        active.sort_unstable();
        standby.sort_unstable();
        MonitorSet {
            active,
            standby,
            swap_every: Self::DEFAULT_SWAP_EVERY,
            since_swap: 0,
            swaps: 0,
        }
    }

    /// Swap every `n` samples instead (0 never swaps).
    pub fn with_swap_every(mut self, n: u32) -> MonitorSet {
        self.swap_every = n;
        self
    }

    /// The ranks to sample now.
    pub fn ranks(&self) -> &[u32] {
        &self.active
    }

    /// The ranks that will be swapped in next.
    pub fn standby(&self) -> &[u32] {
        &self.standby
    }

    /// How many swaps so far.
    pub fn swaps(&self) -> u64 {
        self.swaps
    }

    /// Call once per sample taken; swaps the sets after every `swap_every` samples and then
    /// returns true.
    pub fn sampled(&mut self) -> bool {
        if self.swap_every == 0 {
            return false;
        }
        self.since_swap += 1;
        if self.since_swap < self.swap_every {
            return false;
        }
        self.since_swap = 0;
        self.swaps += 1;
        std::mem::swap(&mut self.active, &mut self.standby);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn job(n: u32) -> Vec<u32> {
        (0..n).collect()
    }

    #[test]
    fn large_job_gets_two_disjoint_sets_of_ten() {
        let m = MonitorSet::new(&job(1000), MonitorSet::DEFAULT_SIZE, 42);
        let a: BTreeSet<u32> = m.ranks().iter().copied().collect();
        let b: BTreeSet<u32> = m.standby().iter().copied().collect();
        assert_eq!((a.len(), b.len()), (10, 10));
        assert!(a.is_disjoint(&b));
        assert!(a.iter().chain(&b).all(|&r| r < 1000));
        assert!(m.ranks().is_sorted() && m.standby().is_sorted());
        // Random, not the first ten.
        assert_ne!(m.ranks(), &job(10)[..]);
    }

    #[test]
    fn deterministic_given_the_seed() {
        let a = MonitorSet::new(&job(500), 10, 7);
        let b = MonitorSet::new(&job(500), 10, 7);
        let c = MonitorSet::new(&job(500), 10, 8);
        assert_eq!((a.ranks(), a.standby()), (b.ranks(), b.standby()));
        assert_ne!(a.ranks(), c.ranks());
    }

    #[test]
    fn small_jobs_monitor_every_rank() {
        let m = MonitorSet::new(&[3, 1, 2, 2], 10, 1);
        assert_eq!(m.ranks(), &[1, 2, 3]);
        assert_eq!(m.standby(), &[1, 2, 3]);
        let m = MonitorSet::new(&job(10), 10, 1);
        assert_eq!(m.ranks(), &job(10)[..]);
        assert!(MonitorSet::new(&[], 10, 1).ranks().is_empty());
    }

    #[test]
    fn between_size_and_twice_size_the_standby_covers_the_rest() {
        let m = MonitorSet::new(&job(14), 10, 5);
        let a: BTreeSet<u32> = m.ranks().iter().copied().collect();
        let b: BTreeSet<u32> = m.standby().iter().copied().collect();
        assert_eq!((a.len(), b.len()), (10, 10));
        // The 4 ranks the active set left out are all in the standby set, 6 overlap.
        assert_eq!(a.union(&b).count(), 14);
        assert_eq!(a.intersection(&b).count(), 6);
    }

    #[test]
    fn swaps_every_thirty_samples() {
        let mut m = MonitorSet::new(&job(100), 10, 3);
        let (first, second) = (m.ranks().to_vec(), m.standby().to_vec());
        for _ in 0..29 {
            assert!(!m.sampled());
        }
        assert!(m.sampled());
        assert_eq!(m.ranks(), &second[..]);
        for _ in 0..29 {
            assert!(!m.sampled());
        }
        assert!(m.sampled());
        assert_eq!(m.ranks(), &first[..]);
        assert_eq!(m.swaps(), 2);
        let mut never = MonitorSet::new(&job(100), 10, 3).with_swap_every(0);
        assert!((0..100).all(|_| !never.sampled()));
    }
}
