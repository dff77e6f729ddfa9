//! A hang signal from the ranks' own MPI history (strata's PMPI library): a rank that has
//! gone far longer than ever before without an MPI transition (entering a call, or
//! returning from one) is not in an iteration like the ones it made. The library keeps, per
//! rank, the longest time it spent in a call and between two calls (the time distributions
//! of its semi-Markov model, as AutomaDeD ("Probabilistic diagnosis of performance faults
//! in large-scale parallel applications", 2012) models a task); when every monitored rank
//! has been idle for more than [`STALL_FACTOR`] times its own longest, and at least
//! [`MIN_STALL_S`], the watch verifies at once instead of waiting for the statistical test,
//! which needs rare S_out values a hang that began early never gives.
//!
//! The signal only starts a verification: a rank that computes longer than ever before
//! (a new phase) triggers one too, and the verification's full samples decide.

use serde::Serialize;

/// How many times its own longest a rank must have been idle.
pub const STALL_FACTOR: f64 = 2.0;
/// And at least this long: a job that has made a few quick calls has a small longest.
pub const MIN_STALL_S: f64 = 1.0;

/// Every monitored rank idle past its own longest.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stall {
    /// Monitored ranks that answered, all with the library's history.
    pub ranks: usize,
    /// The shortest idle time among them, in seconds.
    pub idle_s: f64,
    /// The largest of their longest times between two transitions, in seconds.
    pub longest_s: f64,
}

/// A stall when every rank of `ranks` (the monitored ranks that answered: for each, its
/// idle time and its longest time between two transitions, `None` without the library's
/// history) has a history and has been idle past [`STALL_FACTOR`] times its longest and
/// [`MIN_STALL_S`].
pub fn stall(ranks: &[Option<(f64, f64)>]) -> Option<Stall> {
    if ranks.is_empty() {
        return None;
    }
    let mut found = Stall {
        ranks: ranks.len(),
        idle_s: f64::INFINITY,
        longest_s: 0.0,
    };
    for &rank in ranks {
        let (idle, longest) = rank?;
        if !(idle.is_finite() && longest.is_finite()) {
            return None;
        }
        if idle <= (longest * STALL_FACTOR).max(MIN_STALL_S) {
            return None;
        }
        found.idle_s = found.idle_s.min(idle);
        found.longest_s = found.longest_s.max(longest);
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rank_idle_past_its_own_longest() {
        let hung = stall(&[Some((5.0, 0.02)), Some((4.0, 1.5))]).unwrap();
        assert_eq!((hung.ranks, hung.idle_s, hung.longest_s), (2, 4.0, 1.5));
        // One rank still within twice its longest: no stall.
        assert_eq!(stall(&[Some((5.0, 0.02)), Some((2.9, 1.5))]), None);
        // Quick iterations, but not yet a second without a transition.
        assert_eq!(stall(&[Some((0.9, 0.001))]), None);
        // A rank without the library's history: nothing to judge it by.
        assert_eq!(stall(&[Some((5.0, 0.02)), None]), None);
        assert_eq!(stall(&[]), None);
        assert_eq!(stall(&[Some((f64::NAN, 0.1))]), None);
    }
}
