//! Confirming an alarm with full samples, and classifying the hang.
//!
//! The statistical alarm only says that the monitored ranks have been inside MPI for an
//! improbably long streak. A long legitimate collective, an I/O phase or a slow node can do
//! that too, so before anything is reported (or a job cancelled) the watch takes
//! [`VERIFY_SAMPLES`] full samples of every rank and calls it a hang only if **no rank's
//! path changed** across them. Paths are at function level and cut below the MPI entry
//! ([`cut_below_mpi`]): a rank blocked in `MPI_Allreduce` spin-polls the progress engine, so
//! the frames below the entry differ from sample to sample although the rank makes no
//! progress; line numbers would likewise make a spinning loop look like movement.
//!
//! ParaStack's code also dismisses an alarm when more than 5% of the ranks are outside MPI.
//! That rule is not used: it is meant for hundreds of ranks, and in a job of 8 ranks one
//! rank stuck computing is 12.5% outside MPI, exactly the hang it would dismiss. Ranks that
//! stay outside MPI with an unchanged path are instead named as suspects.

use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use thiserror::Error;

/// How many full samples confirm an alarm.
pub const VERIFY_SAMPLES: usize = 5;

/// How many path classes a communication hang lists.
const MAX_CLASSES: usize = 5;

/// The default "inside MPI" frame pattern: a function name starting with `MPI_` or `PMPI_`,
/// any case (C entries `MPI_Send`/`PMPI_Send`, which Open MPI aliases to each other, and the
/// Fortran bindings `mpi_send_`/`pmpi_send_`).
pub const DEFAULT_MPI_PATTERN: &str = "(?i)^p?mpi_";

/// [`DEFAULT_MPI_PATTERN`], compiled.
pub fn default_mpi_pattern() -> Regex {
    Regex::new(DEFAULT_MPI_PATTERN).expect("the default pattern is valid")
}

/// Whether a thread is inside MPI: any of its frames' function names matches `pattern`.
/// Frame order does not matter.
pub fn in_mpi(frames: &[String], pattern: &Regex) -> bool {
    frames.iter().any(|f| pattern.is_match(f))
}

/// The path cut below MPI: `frames` outermost first (the order of the prefix tree), kept up
/// to and including the outermost frame matching `pattern`; unchanged when none matches.
/// The outermost match is the application's call into MPI; anything deeper (another `MPI_`
/// name the library calls internally, the progress engine) is the library's business.
pub fn cut_below_mpi<'a>(frames: &'a [String], pattern: &Regex) -> &'a [String] {
    match frames.iter().position(|f| pattern.is_match(f)) {
        Some(i) => &frames[..=i],
        None => frames,
    }
}

/// One rank in one full sample.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RankState {
    /// The main thread's path, function level, cut below MPI, outermost first.
    pub path: Vec<String>,
    /// Whether the main thread is inside MPI ([`in_mpi`]).
    pub in_mpi: bool,
}

/// The outcome of verification.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Some ranks moved: a false alarm; the caller resumes watching
    /// ([`super::Detector::dismissed`]).
    NotHung { changed_ranks: Vec<u32> },
    /// No rank moved.
    Hung(Classification),
}

/// What kind of hang.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// Ranks outside MPI in every sample, with an unchanged path: stuck computing (an
    /// infinite loop, a deadlock between threads), while the others wait for them.
    Computation { suspects: Vec<u32> },
    /// Every rank waits in MPI. The ranks of the least-populated paths (fewest ranks first,
    /// at most 5 classes) are the usual suspects: a rank in a different call than everyone
    /// else (a mismatched collective, a receive nobody sends to) stands out by being alone.
    Communication {
        smallest_classes: Vec<(Vec<String>, Vec<u32>)>,
    },
}

/// A verdict and the ranks it could not judge.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Verification {
    pub verdict: Verdict,
    /// Ranks missing from at least one sample (a daemon that timed out). They are left out
    /// of the verdict: a rank seen once cannot be said to have stayed put, and counting a
    /// gap as a change would let one lost node veto every hang report.
    pub unverified_ranks: Vec<u32>,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum VerifyError {
    #[error("verification needs at least 2 full samples, got {0}")]
    TooFewSamples(usize),
    #[error("no rank is present in every verification sample")]
    NoCommonRanks,
}

/// Judges the full samples (normally [`VERIFY_SAMPLES`] of them, in time order, spaced like
/// the watch's samples so that a healthy program has time to move between them).
///
/// A rank *changed* if its path or its in-MPI flag differs between any two samples. Any
/// changed rank means [`Verdict::NotHung`]. Otherwise the ranks outside MPI in every sample
/// are [`Classification::Computation`] suspects; if there are none, the ranks are grouped
/// by path and the smallest groups reported as [`Classification::Communication`] (ties
/// broken by lowest rank, so the result is deterministic).
pub fn verify(samples: &[BTreeMap<u32, RankState>]) -> Result<Verification, VerifyError> {
    if samples.len() < 2 {
        return Err(VerifyError::TooFewSamples(samples.len()));
    }
    let first = &samples[0];
    let present_everywhere = |r: &u32| samples.iter().all(|s| s.contains_key(r));
    // In key order, since `first` is a BTreeMap.
    let everywhere: Vec<u32> = first.keys().copied().filter(present_everywhere).collect();
    let unverified: BTreeSet<u32> = samples
        .iter()
        .flat_map(|s| s.keys().copied())
        .filter(|r| !present_everywhere(r))
        .collect();
    if everywhere.is_empty() {
        return Err(VerifyError::NoCommonRanks);
    }
    let unverified_ranks: Vec<u32> = unverified.into_iter().collect();

    let changed_ranks: Vec<u32> = everywhere
        .iter()
        .copied()
        .filter(|r| samples[1..].iter().any(|s| s[r] != first[r]))
        .collect();
    if !changed_ranks.is_empty() {
        return Ok(Verification {
            verdict: Verdict::NotHung { changed_ranks },
            unverified_ranks,
        });
    }

    // Nothing moved, so every sample holds the same state per rank: read the first.
    let suspects: Vec<u32> = everywhere
        .iter()
        .copied()
        .filter(|r| !first[r].in_mpi)
        .collect();
    let classification = if !suspects.is_empty() {
        Classification::Computation { suspects }
    } else {
        let mut classes: BTreeMap<&[String], Vec<u32>> = BTreeMap::new();
        for r in &everywhere {
            classes.entry(&first[r].path).or_default().push(*r);
        }
        let mut classes: Vec<(Vec<String>, Vec<u32>)> = classes
            .into_iter()
            .map(|(p, rs)| (p.to_vec(), rs))
            .collect();
        // Ranks are pushed in ascending order, so rs[0] is each class's lowest rank.
        classes.sort_by_key(|(_, rs)| (rs.len(), rs[0]));
        classes.truncate(MAX_CLASSES);
        Classification::Communication {
            smallest_classes: classes,
        }
    };
    Ok(Verification {
        verdict: Verdict::Hung(classification),
        unverified_ranks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> Vec<String> {
        s.split('>').map(str::to_string).collect()
    }

    fn state(p: &str) -> RankState {
        let path = path(p);
        let in_mpi = in_mpi(&path, &default_mpi_pattern());
        RankState { path, in_mpi }
    }

    fn sample(ranks: &[(u32, &str)]) -> BTreeMap<u32, RankState> {
        ranks.iter().map(|&(r, p)| (r, state(p))).collect()
    }

    #[test]
    fn in_mpi_matches_c_and_fortran_entries_any_case() {
        let re = default_mpi_pattern();
        for yes in [
            "main>MPI_Barrier",
            "main>PMPI_Allreduce>ompi_coll_base_allreduce",
            "MAIN__>solve_>mpi_allreduce_",
            "MAIN__>pmpi_waitall__",
            "main>mpi_Send",
        ] {
            assert!(in_mpi(&path(yes), &re), "{yes}");
        }
        for no in [
            "main>compute",
            "main>MPIR_Barrier_impl",
            "main>ompi_barrier_f",
            "main>xmpi_foo",
        ] {
            assert!(!in_mpi(&path(no), &re), "{no}");
        }
        assert!(!in_mpi(&[], &re));
        // Configurable: a site that wraps MPI in its own layer.
        let custom = Regex::new("^(?i:p?mpi_|comm_wait)").unwrap();
        assert!(in_mpi(&path("main>comm_wait_all"), &custom));
    }

    #[test]
    fn cut_below_the_outermost_mpi_frame() {
        let re = default_mpi_pattern();
        let full = path("main>solve>PMPI_Allreduce>MPI_Allreduce_intra>opal_progress");
        assert_eq!(
            cut_below_mpi(&full, &re),
            &path("main>solve>PMPI_Allreduce")[..]
        );
        let user = path("main>solve>dgemm");
        assert_eq!(cut_below_mpi(&user, &re), &user[..]);
    }

    #[test]
    fn a_moving_rank_means_not_hung() {
        let still = sample(&[
            (0, "main>MPI_Barrier"),
            (1, "main>MPI_Barrier"),
            (2, "main>f"),
        ]);
        let moved = sample(&[
            (0, "main>MPI_Barrier"),
            (1, "main>MPI_Barrier"),
            (2, "main>g"),
        ]);
        let samples = vec![still.clone(), still.clone(), moved, still.clone(), still];
        let v = verify(&samples).unwrap();
        assert_eq!(
            v.verdict,
            Verdict::NotHung {
                changed_ranks: vec![2]
            }
        );
        assert!(v.unverified_ranks.is_empty());
        // The in-MPI flag alone changing also counts.
        let mut flipped = sample(&[(0, "main>MPI_Barrier")]);
        flipped.get_mut(&0).unwrap().in_mpi = false;
        let v = verify(&[sample(&[(0, "main>MPI_Barrier")]), flipped]).unwrap();
        assert_eq!(
            v.verdict,
            Verdict::NotHung {
                changed_ranks: vec![0]
            }
        );
    }

    #[test]
    fn one_stuck_rank_in_a_small_job_is_a_computation_hang() {
        // 8 ranks, rank 5 computing forever: 12.5% outside MPI, which ParaStack's 5% rule
        // would have dismissed.
        let mut ranks: Vec<(u32, &str)> = (0..8).map(|r| (r, "main>step>MPI_Allreduce")).collect();
        ranks[5] = (5, "main>step>spin_forever");
        let s = sample(&ranks);
        let v = verify(&vec![s; VERIFY_SAMPLES]).unwrap();
        assert_eq!(
            v.verdict,
            Verdict::Hung(Classification::Computation { suspects: vec![5] })
        );
    }

    #[test]
    fn all_waiting_is_a_communication_hang_with_smallest_classes_first() {
        let mut ranks: Vec<(u32, &str)> = Vec::new();
        for r in 0..20 {
            ranks.push((r, "main>MPI_Barrier"));
        }
        for r in 20..23 {
            ranks.push((r, "main>exchange>MPI_Waitall"));
        }
        ranks.push((23, "main>exchange>MPI_Recv"));
        ranks.push((30, "main>io>MPI_File_write_all"));
        for r in 24..30 {
            ranks.push((r, "main>reduce>MPI_Reduce"));
        }
        for (i, r) in (31..33).enumerate() {
            ranks.push((r, ["main>a>MPI_Send", "main>b>MPI_Send"][i]));
        }
        let s = sample(&ranks);
        let v = verify(&vec![s; VERIFY_SAMPLES]).unwrap();
        let Verdict::Hung(Classification::Communication { smallest_classes }) = v.verdict else {
            panic!("{:?}", v.verdict)
        };
        let got: Vec<(String, Vec<u32>)> = smallest_classes
            .into_iter()
            .map(|(p, rs)| (p.join(">"), rs))
            .collect();
        assert_eq!(
            got,
            vec![
                ("main>exchange>MPI_Recv".to_string(), vec![23]),
                ("main>io>MPI_File_write_all".to_string(), vec![30]),
                ("main>a>MPI_Send".to_string(), vec![31]),
                ("main>b>MPI_Send".to_string(), vec![32]),
                ("main>exchange>MPI_Waitall".to_string(), vec![20, 21, 22]),
            ]
        );
    }

    #[test]
    fn missing_ranks_are_unverified_not_changed() {
        let full = sample(&[
            (0, "main>MPI_Barrier"),
            (1, "main>MPI_Barrier"),
            (2, "main>MPI_Recv"),
        ]);
        let partial = sample(&[(0, "main>MPI_Barrier"), (2, "main>MPI_Recv")]);
        let v = verify(&[full.clone(), partial, full]).unwrap();
        assert_eq!(v.unverified_ranks, vec![1]);
        assert!(matches!(
            v.verdict,
            Verdict::Hung(Classification::Communication { .. })
        ));
        assert_eq!(
            verify(&[sample(&[(0, "main>f")])]),
            Err(VerifyError::TooFewSamples(1))
        );
        assert_eq!(
            verify(&[sample(&[(0, "main>f")]), sample(&[(1, "main>f")])]),
            Err(VerifyError::NoCommonRanks)
        );
    }
}
