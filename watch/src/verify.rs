//! Confirming an alarm with full samples, and classifying the hang.
//!
//! The statistical alarm only says that the monitored ranks have been inside MPI for an
//! improbably long streak. A long legitimate collective, an I/O phase or a slow node can do
//! that too, so before anything is reported (or a job cancelled) the watch takes
//! [`VERIFY_SAMPLES`] full samples of every rank and calls it a hang only if **no rank's
//! path changed** across them, and no rank with strata's PMPI library completed an MPI call
//! that got somewhere ([`RankState::progress`]). Paths are at function level and cut below the MPI entry
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

/// How a probed stack is told inside MPI, and where its path is cut.
#[derive(Clone, Debug)]
pub enum InsideMpi {
    /// strata's one definition of MPI in a stack (`strata_filters::mpi`: a frame of an MPI
    /// library or a C binding's name, in any binding's spelling), which the daemon applies
    /// because it knows each frame's library: the stack is in the MPI call the daemon found,
    /// and its path ends at that call, named by its C name.
    Frames,
    /// A user's pattern on function names (`--mpi-pattern`, for a site that wraps MPI in a
    /// layer of its own): the stack is inside MPI when a frame's name matches, and its path
    /// ends at the outermost match.
    Pattern(Regex),
}

/// One probed stack: the function names, outermost first, and the MPI call the daemon found
/// in it (the index of its entry frame and its C name).
#[derive(Clone, Copy, Debug)]
pub struct ProbedStack<'a> {
    pub functions: &'a [String],
    pub mpi_call: Option<(usize, &'a str)>,
    /// With strata's PMPI library: the rank's count of MPI calls that got somewhere.
    pub progress: Option<u64>,
}

impl InsideMpi {
    /// The rank's state in one sample: its path cut below MPI (the outermost MPI frame is
    /// the application's call; anything deeper, another `MPI_` name the library calls, the
    /// progress engine, is the library's business) and whether it is inside MPI.
    pub fn state(&self, stack: ProbedStack<'_>) -> RankState {
        let functions = stack.functions;
        let progress = stack.progress;
        match self {
            InsideMpi::Frames => match stack.mpi_call {
                // An index past the stack is no call (a reply is never trusted).
                Some((entry, call)) if entry < functions.len() => {
                    let mut path = functions[..entry].to_vec();
                    path.push(call.to_string());
                    RankState {
                        path,
                        in_mpi: true,
                        progress,
                    }
                }
                _ => RankState {
                    path: functions.to_vec(),
                    in_mpi: false,
                    progress,
                },
            },
            InsideMpi::Pattern(re) => match functions.iter().position(|f| re.is_match(f)) {
                Some(i) => RankState {
                    path: functions[..=i].to_vec(),
                    in_mpi: true,
                    progress,
                },
                None => RankState {
                    path: functions.to_vec(),
                    in_mpi: false,
                    progress,
                },
            },
        }
    }

    /// The user's pattern, if one replaces strata's definition.
    pub fn pattern(&self) -> Option<&str> {
        match self {
            InsideMpi::Frames => None,
            InsideMpi::Pattern(re) => Some(re.as_str()),
        }
    }
}

/// One rank in one full sample.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct RankState {
    /// The main thread's path, function level, cut below MPI, outermost first.
    pub path: Vec<String>,
    /// Whether the main thread is inside MPI ([`InsideMpi`]).
    pub in_mpi: bool,
    /// With strata's PMPI library, the rank's count of MPI calls that got somewhere
    /// (completed calls less the polls that found nothing): a rank whose count grows
    /// moves, whatever its path. A rank in one collective in a tight loop has one path in
    /// every sample; its count says it is not hung.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress: Option<u64>,
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

    /// A pattern as a site would give `--mpi-pattern`: C and Fortran entries, any case.
    fn pattern() -> InsideMpi {
        InsideMpi::Pattern(Regex::new("(?i)^p?mpi_").unwrap())
    }

    fn state(p: &str) -> RankState {
        let path = path(p);
        pattern().state(ProbedStack {
            functions: &path,
            mpi_call: None,
            progress: None,
        })
    }

    fn sample(ranks: &[(u32, &str)]) -> BTreeMap<u32, RankState> {
        ranks.iter().map(|&(r, p)| (r, state(p))).collect()
    }

    #[test]
    fn a_pattern_matches_and_cuts_at_the_outermost_match() {
        let in_mpi = |inside: &InsideMpi, p: &str| {
            let functions = path(p);
            let stack = ProbedStack {
                functions: &functions,
                mpi_call: None,
                progress: None,
            };
            inside.state(stack).in_mpi
        };
        for yes in [
            "main>MPI_Barrier",
            "main>PMPI_Allreduce>ompi_coll_base_allreduce",
            "MAIN__>solve_>mpi_allreduce_",
            "main>mpi_Send",
        ] {
            assert!(in_mpi(&pattern(), yes), "{yes}");
        }
        for no in ["main>compute", "main>MPIR_Barrier_impl", "main>xmpi_foo"] {
            assert!(!in_mpi(&pattern(), no), "{no}");
        }
        // A site that wraps MPI in its own layer.
        let custom = InsideMpi::Pattern(Regex::new("^(?i:p?mpi_|comm_wait)").unwrap());
        assert!(in_mpi(&custom, "main>comm_wait_all"));
        assert_eq!(custom.pattern(), Some("^(?i:p?mpi_|comm_wait)"));
        assert_eq!(
            state("main>solve>PMPI_Allreduce>MPI_Allreduce_intra>opal_progress").path,
            path("main>solve>PMPI_Allreduce")
        );
        assert_eq!(state("main>solve>dgemm").path, path("main>solve>dgemm"));
    }

    #[test]
    fn by_frames_the_daemons_call_decides_and_names_the_cut() {
        let functions = path("main>solve>PMPI_Allreduce>MPIR_Allreduce_impl>opal_progress");
        let at = |mpi_call| {
            InsideMpi::Frames.state(ProbedStack {
                functions: &functions,
                mpi_call,
                progress: None,
            })
        };
        let inside = at(Some((2, "MPI_Allreduce")));
        assert!(inside.in_mpi);
        assert_eq!(inside.path, path("main>solve>MPI_Allreduce"));
        // No call found (a Fortran program's own mpi_matrix_, say): outside, whole path.
        let outside = at(None);
        assert!(!outside.in_mpi);
        assert_eq!(outside.path, functions);
        // An entry past the stack is not believed.
        assert!(!at(Some((9, "MPI_Allreduce"))).in_mpi);
        assert_eq!(InsideMpi::Frames.pattern(), None);
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

    #[test]
    fn a_rank_whose_mpi_calls_get_somewhere_is_not_hung_whatever_its_path() {
        // Every rank in MPI_Allreduce in every sample; rank 1's calls complete.
        let functions = path("main>PMPI_Allreduce");
        let at = |rank: u32, progress: Option<u64>| {
            (
                rank,
                InsideMpi::Frames.state(ProbedStack {
                    functions: &functions,
                    mpi_call: Some((1, "MPI_Allreduce")),
                    progress,
                }),
            )
        };
        let samples: Vec<BTreeMap<u32, RankState>> = (0..VERIFY_SAMPLES as u64)
            .map(|i| [at(0, Some(7)), at(1, Some(100 + i)), at(2, None)].into())
            .collect();
        let v = verify(&samples).unwrap();
        assert_eq!(
            v.verdict,
            Verdict::NotHung {
                changed_ranks: vec![1]
            }
        );
        // Counts that stand still (a rank polling MPI_Iprobe adds nothing) are a hang, and
        // the ranks stay one path class whatever their counts.
        let samples: Vec<BTreeMap<u32, RankState>> = (0..VERIFY_SAMPLES)
            .map(|_| [at(0, Some(7)), at(1, Some(9)), at(2, None)].into())
            .collect();
        match verify(&samples).unwrap().verdict {
            Verdict::Hung(Classification::Communication { smallest_classes }) => {
                assert_eq!(smallest_classes.len(), 1, "{smallest_classes:?}");
                assert_eq!(smallest_classes[0].1, vec![0, 1, 2]);
            }
            other => panic!("{other:?}"),
        }
    }
}
