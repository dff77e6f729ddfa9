//! The core of `strata watch`: ParaStack's hang detector as pure code, and the hang report.
//!
//! `strata watch <JOBID>` keeps the tree network up beside a running job and, at random
//! moments, asks a few monitored ranks one question: is your main thread inside MPI? From the
//! answers it decides, statistically, whether the job has stopped making progress, and only
//! then pays for full samples of every rank to confirm. This crate is the decision part and
//! the report ([`report`]: a directory of result files, the summary and the timeline). It
//! starts no process, attaches to nothing and opens no connection (the only I/O is writing
//! the report), so every rule here is tested with seeded simulations instead of a cluster;
//! the front end's session code that samples the live job feeds it.
//!
//! # The model ("ParaStack: Efficient Hang Detection for MPI Programs at Large Scale", Li, Chen
//! & Gupta, SC 2017, and its talk slides)
//!
//! * [`MonitorSet`]: a random subset of the job's ranks (10 by default) is monitored; a second,
//!   disjoint where possible, set is swapped in every 30 samples, as the authors' code does.
//! * [`Schedule`]: samples are taken at random gaps, uniform in `[I/2, 3I/2]` with `I`
//!   starting at 400 ms, so that the sample times do not lock onto the program's iteration
//!   period.
//! * S_out ([`s_out`]) is the share of the monitored ranks that are *outside* MPI. A healthy
//!   iterative program keeps moving between user code and MPI, so S_out keeps changing; a hung
//!   program ends up with (almost) every rank waiting inside MPI, so S_out stays small.
//! * [`runs_test()`]: the model below treats samples as independent draws. A runs test checks
//!   that; while the samples are not random (the interval is short against the program's
//!   phases, so consecutive samples see the same phase) the interval is doubled.
//! * [`Detector`]: `F` is the empirical distribution of S_out. With `n` samples the slides give
//!   a level `p̂` and a margin `d`; a sample is *suspicious* when `S_out <= F^-1(p̂)`. Under
//!   "healthy", a run of `k` suspicious samples has probability at most `q^k`, with `q` an
//!   upper bound on the suspicion probability; `q^k <= alpha` (0.001) raises an [`Alarm`].
//! * [`stall()`] (strata's, with its PMPI library): every monitored rank idle far past the
//!   longest it ever went between two MPI transitions starts a verification at once.
//! * [`verify()`]: before anything is reported, five full samples of every rank; it is a hang
//!   only if no rank's call path (function level, cut below MPI) changed across them. The hang
//!   is then classified: ranks outside MPI in every sample are computation-hang suspects,
//!   otherwise it is a communication hang and the least-populated path classes are listed.
//!
//! # Decisions where the slides are silent (each is documented where it is made)
//!
//! * Values equal to the mean are dropped by the runs test ([`runs_test()`]).
//! * The runs test runs on consecutive windows of 30 samples until one looks random; samples
//!   taken at an interval found not random are discarded when it doubles ([`Detector`]).
//! * `F^-1(p) = min{x : F(x) >= p}`, the smallest sample with at least `p` of the samples at or
//!   below it ([`Ecdf::quantile`]).
//! * `q` is the *observed* suspicion rate `F(t)` plus `d`, not the table's `p̂ + d`: S_out is
//!   a multiple of 1/10, so `F(t)` can be far above `p̂` and the slides' `q` would then
//!   underestimate the suspicion probability, which is exactly the false-positive case the
//!   slides add `d` to prevent ([`QRule`]; the simulations measure both).
//! * Suspicious samples are held out of `F` while their streak runs and added when it ends or
//!   when an alarm is dismissed, so a hang cannot teach the model that hanging is normal, and
//!   healthy low values are not lost from it either ([`Detector::observe`]).

mod detector;
mod ecdf;
pub mod events;
mod monitor;
pub mod report;
mod runs_test;
mod schedule;
mod stall;
mod verify;

#[cfg(test)]
mod simulation;

pub use detector::{
    Alarm, Calibration, Detector, DetectorConfig, HistogramBin, InvalidSample, Level, MIN_SAMPLES,
    Observation, QRule, RunsAction, RunsRecord, Stats, Status, required_k, table,
};
pub use ecdf::Ecdf;
pub use events::{OnHang, Probed, STILLNESS_SAMPLES, Trigger};
pub use monitor::MonitorSet;
pub use runs_test::{
    DEFAULT_RUNS_LEVEL, Deviation, Inconclusive, RunsOutcome, RunsTest, runs_test,
};
pub use schedule::{DEFAULT_INITIAL_INTERVAL, DEFAULT_MAX_INTERVAL, Schedule};
pub use stall::{MIN_STALL_S, STALL_FACTOR, Stall, stall};
pub use verify::{
    Classification, InsideMpi, ProbedStack, RankState, VERIFY_SAMPLES, Verdict, Verification,
    VerifyError, verify,
};

/// S_out of one sample: the share of the sampled ranks that are outside MPI, given for each
/// monitored rank whether its main thread is inside MPI. `None` when no rank answered (there
/// is no share of nobody; the caller skips the sample rather than feeding a made-up value).
pub fn s_out<I: IntoIterator<Item = bool>>(in_mpi: I) -> Option<f64> {
    let (mut total, mut outside) = (0usize, 0usize);
    for inside in in_mpi {
        total += 1;
        outside += usize::from(!inside);
    }
    (total > 0).then(|| outside as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s_out_is_the_share_outside_mpi() {
        assert_eq!(s_out([true, false, true, true]), Some(0.25));
        assert_eq!(s_out([true; 10]), Some(0.0));
        assert_eq!(s_out([false; 3]), Some(1.0));
        assert_eq!(s_out(std::iter::empty()), None);
    }
}
