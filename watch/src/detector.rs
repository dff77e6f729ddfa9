//! The hang detector: S_out samples in, alarms out.
//!
//! # Per sample
//!
//! 1. **Learning.** With fewer than [`MIN_SAMPLES`] (11) samples in the model the slides give
//!    no level, so the sample just joins the model and the detector never alarms.
//! 2. **Level.** With `n` samples in the model, [`table`] gives `p̂` and `d`; the threshold is
//!    `t = F^-1(p̂)` ([`Ecdf::quantile`]), and the suspicion probability is estimated by `q`
//!    ([`QRule`]). The streak length that would be significant is the least `k` with
//!    `q^k <= alpha` ([`required_k`]).
//! 3. **Suspicion.** `S_out <= t` is suspicious: the sample is held back (see below) and the
//!    streak grows; when it reaches the required `k`, [`Status::Alarm`]. A sample above `t`
//!    ends the streak. When `q >= 1` no streak can be significant ([`Status::Uninformative`]:
//!    low S_out is too common in this program for S_out to show a hang).
//!
//! # What enters the model, and when
//!
//! Suspicious samples are **held out of `F` while their streak runs**. The slides' model is
//! "the distribution of S_out of the healthy program"; if a hang's samples entered it, each
//! would raise `F(0)`, and with it the threshold's share and `q`, so the longer the hang the
//! more normal it would look and the later (or never) the alarm. Holding them also freezes
//! `F`, `t` and `q` for the length of a streak, so the streak is judged against one fixed
//! level. They are not thrown away: when the streak ends (a sample above `t`) or the alarm
//! is dismissed by verification ([`Detector::dismissed`]), they were healthy after all and
//! join the model in order. Dropping them instead would remove exactly the low values from
//! `F`, making low S_out look rarer than it is and alarms more frequent over time.
//!
//! # Randomness of the samples
//!
//! The runs test ([`runs_test()`]) runs on consecutive, non-overlapping windows of
//! `runs_window` (30) samples *as they join the model* (so a hang's held-back samples never
//! make the sampling look non-random), until one window is judged random; then the
//! interval is accepted ("until randomness is assured", as the slides say) and no more
//! tests are run. Testing forever would, at a 5% level, reject a healthy sequence every 20
//! windows by chance and creep the interval up to the cap. The price: a program whose
//! dynamics slow down later is not re-tested (the stats show when calibration happened).
//!
//! * Not random: the interval doubles and **the model is discarded** (and whatever of the
//!   current batch had not joined it yet). Those samples were taken too close together:
//!   their marginal distribution is right, but they overstate `n` (the table would grant a
//!   tighter `p̂`, `d` than the data supports) and they are the correlated data the test just
//!   rejected. The cost is relearning: 11 samples at the new interval before alarms resume.
//! * Not random at the cap: nothing left to double; the model is kept and calibration ends
//!   as [`Calibration::GaveUpAtCap`] (shown in the stats: the `q^k` bound is then optimistic).
//! * Inconclusive (a constant window, e.g. a program always inside MPI at these moments,
//!   whose samples join the model as [`Status::Uninformative`]): no evidence either way;
//!   the samples stay and the next window is tested.
//!
//! Alarms are not held back until calibration succeeds: a job hung from its first minutes
//! could otherwise never be reported (its samples, held as suspicious, never reach the
//! runs test). An alarm before calibration costs one verification; the simulation that
//! starts at 10 ms measures how many that is.
//!
//! # Why `q` is read from the data ([`QRule::Observed`])
//!
//! The slides estimate the true suspicion probability `p` by `q = p̂ + d`, where `p̂` is "the
//! observed suspicion probability" and `d` its 95% margin at this `n` (the table's `d` is
//! `1.96 sqrt(p̂ (1 - p̂) / n)` at the bottom of each band, e.g. `0.06, 86 -> 0.05`). For a
//! continuous S_out the observed share `F(t)` is `p̂` (up to `1/n`). But S_out is a share of
//! 10 ranks: `t` is a multiple of 0.1 and `F(t)` can be far above `p̂` (10 ranks outside MPI
//! with probability 0.3 each: `t = 0.1`, `F(t) = 0.15`; with 0.1 each: `t = 0`, `F(t) = 0.35`).
//! `q = p̂ + d = 0.11` then underestimates `p`, the false-positive case the slides add `d`
//! to avoid. The simulations measure it: with 0.1 each, 914 alarms in 100,000 healthy
//! samples against the `alpha` bound of 100 (8 with `F(t) + d`). Worse, with few distinct
//! values `t` can be the largest value seen, making *every* sample suspicious: a program
//! alternating between S_out 0 and 0.5 alarms after 27 samples under the literal rule (a
//! unit test). The default therefore keeps the slides' reasoning with the share actually
//! observed: `q = F(t) + d`, which equals `p̂ + d` up to `1/n` when values do not repeat.

use super::ecdf::Ecdf;
use super::runs_test::{self, RunsOutcome, RunsTest, runs_test};
use super::schedule::{DEFAULT_INITIAL_INTERVAL, DEFAULT_MAX_INTERVAL, Schedule};
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Duration;
use thiserror::Error;

/// Below this many samples in the model the slides give no level: never alarm.
pub const MIN_SAMPLES: usize = 11;

/// The runs tests kept for the report (the oldest are dropped; `runs_tests_total` counts
/// all). Calibration normally ends after one or a few; a program whose windows are
/// always inconclusive would otherwise grow the list by one per window for ever.
const RUNS_HISTORY: usize = 64;

/// Bins of the S_out histogram in the stats: width 0.05, so each multiple of 1/10 (and of
/// 1/20) has its own bin.
const HISTOGRAM_BINS: usize = 20;

/// The slides' table: `(p̂, d)` for a model of `n` samples, `None` below 11.
///
/// | n | p̂ | d |
/// |---|---|---|
/// | [11, 19) | 0.47 | 0.3 |
/// | [19, 42) | 0.27 | 0.2 |
/// | [42, 86) | 0.12 | 0.1 |
/// | 86 and more | 0.06 | 0.05 |
pub fn table(n: usize) -> Option<(f64, f64)> {
    match n {
        0..=10 => None,
        11..=18 => Some((0.47, 0.3)),
        19..=41 => Some((0.27, 0.2)),
        42..=85 => Some((0.12, 0.1)),
        _ => Some((0.06, 0.05)),
    }
}

/// The least `k >= 1` with `q^k <= alpha`: the streak of suspicious samples that would have
/// probability at most `alpha` if each were suspicious with probability `q`. `None` when
/// `q >= 1` (no streak is improbable: S_out cannot tell this program's hang from its normal
/// behaviour) or `alpha <= 0`.
pub fn required_k(q: f64, alpha: f64) -> Option<u32> {
    if q.is_nan() || q >= 1.0 || alpha.is_nan() || alpha <= 0.0 {
        return None;
    }
    if q <= alpha {
        return Some(1);
    }
    // ln(alpha) / ln(q), then corrected against q^k itself so that the boundary (0.1^3 vs
    // 0.001) does not depend on logarithm rounding.
    let mut k = ((alpha.ln() / q.ln()).ceil() as u32).max(1);
    while k > 1 && q.powi(k as i32 - 1) <= alpha {
        k -= 1;
    }
    while q.powi(k as i32) > alpha {
        k += 1;
    }
    Some(k)
}

/// How `q`, the upper estimate of the suspicion probability, is computed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QRule {
    /// `q = F(t) + d`: the share of the model at or below the threshold, plus the margin
    /// (see the module docs). The default.
    #[default]
    Observed,
    /// `q = p̂ + d`, the slides' formula taken literally. Kept to measure the difference.
    Slides,
}

/// The detector's settings.
#[derive(Clone, Debug)]
pub struct DetectorConfig {
    /// Significance of the hang test: alarm when `q^k <= alpha`. The slides use 0.001.
    pub alpha: f64,
    /// Two-sided level of the runs test (5%).
    pub runs_level: f64,
    /// Samples per runs test (30; at least 2). The slides give no size. 30 is where the
    /// normal approximation is good (about 15 per side) and the test has some power: on
    /// the simulated program sampled at 320 ms (lag-1 autocorrelation 0.44), windows of 20
    /// accepted the interval in 10 seeds of 40, windows of 30 and 40 in 2, windows of 60 in
    /// none, but each doubling then costs 60 samples of relearning.
    pub runs_window: usize,
    /// The first sampling interval (400 ms).
    pub initial_interval: Duration,
    /// The interval's cap (60 s).
    pub max_interval: Duration,
    pub q_rule: QRule,
}

impl Default for DetectorConfig {
    fn default() -> DetectorConfig {
        DetectorConfig {
            alpha: 0.001,
            runs_level: runs_test::DEFAULT_RUNS_LEVEL,
            runs_window: 30,
            initial_interval: DEFAULT_INITIAL_INTERVAL,
            max_interval: DEFAULT_MAX_INTERVAL,
            q_rule: QRule::Observed,
        }
    }
}

/// An S_out outside `[0, 1]` (or NaN): a bug in the caller, refused rather than let into
/// the model.
#[derive(Debug, Error, PartialEq)]
#[error("S_out must be a share in [0, 1], got {0}")]
pub struct InvalidSample(pub f64);

/// The decision level computed from the current model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Level {
    /// Samples in the model.
    pub n: usize,
    pub p_hat: f64,
    pub d: f64,
    /// `t = F^-1(p̂)`: S_out at or below it is suspicious.
    pub threshold: f64,
    /// `F(t)`: the share of the model that is suspicious (>= p̂).
    pub suspicion_rate: f64,
    pub q: f64,
    /// The least `k` with `q^k <= alpha`; `None` when `q >= 1` (never alarms).
    pub needed_k: Option<u32>,
}

/// A statistically significant streak: the caller verifies it ([`super::verify()`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Alarm {
    /// Consecutive suspicious samples.
    pub k: u32,
    pub q: f64,
    pub p_hat: f64,
    pub d: f64,
    pub threshold: f64,
    pub suspicion_rate: f64,
    /// Samples in the model.
    pub n: usize,
    pub alpha: f64,
    /// `q^k`, at most `alpha`.
    pub probability: f64,
}

/// What one sample meant.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Fewer than [`MIN_SAMPLES`] in the model (after this one): no judgement yet.
    Learning { n: usize },
    /// Above the threshold (any streak ended).
    Normal,
    /// At or below the threshold, `k` in a row, not yet significant.
    Suspicious { k: u32, needed_k: u32 },
    /// At or below the threshold, but so much of the model is at or below it that `q >= 1`:
    /// no streak can be significant, S_out cannot tell a hang from this program's normal
    /// behaviour at the current `n`. The sample joins the model (nothing to hold it for).
    Uninformative,
    /// Significant. Repeated, with the growing `k`, for every further suspicious sample
    /// until a sample above the threshold or [`Detector::dismissed`].
    Alarm(Alarm),
}

/// The detector's answer to one sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Observation {
    pub status: Status,
    /// The runs test rejected the samples and the interval was doubled to this (the
    /// detector owns the [`Schedule`]: the caller only needs to log it).
    pub doubled_to: Option<Duration>,
}

/// Where the search for a random sampling interval stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Calibration {
    /// No window judged random yet.
    Calibrating,
    /// A window at the current interval was judged random; no more runs tests.
    Calibrated,
    /// Not random even at the cap: the model is used anyway.
    GaveUpAtCap,
}

/// What a runs test led to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunsAction {
    Accepted,
    Doubled,
    KeptAtCap,
    NextWindow,
}

/// One runs test, for the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunsRecord {
    /// The interval the tested samples were taken at.
    pub interval_ms: f64,
    pub test: RunsTest,
    pub action: RunsAction,
}

/// One histogram bin: `[lo, hi)`, the last one closed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct HistogramBin {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// The detector's state for the watch report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    /// Valid S_out samples fed so far (refused ones are not counted).
    pub samples_seen: u64,
    /// Samples in the model `F` (the `n` of the table).
    pub n: usize,
    /// The current interval `I`.
    pub interval_ms: f64,
    pub calibration: Calibration,
    pub alpha: f64,
    pub q_rule: QRule,
    /// `p̂`, `d`, `t`, `F(t)`, `q` and the needed `k`; `None` while learning.
    pub level: Option<Level>,
    /// The current streak of suspicious samples (held out of `F`).
    pub k: u32,
    /// Samples dropped from the model when the interval doubled.
    pub discarded: u64,
    /// Streaks that reached significance.
    pub alarms: u64,
    /// Alarms the caller dismissed after verification.
    pub dismissals: u64,
    /// The latest runs tests, oldest first.
    pub runs_tests: Vec<RunsRecord>,
    pub runs_tests_total: u64,
    /// S_out in the model, in bins of 0.05 from 0 to 1.
    pub histogram: Vec<HistogramBin>,
}

/// ParaStack's detector over a stream of S_out samples. See the module docs for the rules.
#[derive(Debug)]
pub struct Detector {
    config: DetectorConfig,
    schedule: Schedule,
    model: Ecdf,
    /// Samples that joined the model since the last runs test (while calibrating).
    window: Vec<f64>,
    calibration: Calibration,
    /// The current streak of suspicious samples, oldest first, not in the model.
    pending: Vec<f64>,
    /// The level of the current model, computed on demand.
    level: Option<Level>,
    runs: VecDeque<RunsRecord>,
    runs_total: u64,
    seen: u64,
    discarded: u64,
    alarms: u64,
    dismissals: u64,
}

impl Detector {
    /// A detector whose sampling gaps are drawn from `seed`.
    pub fn new(config: DetectorConfig, seed: u64) -> Detector {
        let schedule = Schedule::new(config.initial_interval, seed).with_max(config.max_interval);
        let config = DetectorConfig {
            runs_window: config.runs_window.max(2),
            ..config
        };
        Detector {
            config,
            schedule,
            model: Ecdf::new(),
            window: Vec::new(),
            calibration: Calibration::Calibrating,
            pending: Vec::new(),
            level: None,
            runs: VecDeque::new(),
            runs_total: 0,
            seen: 0,
            discarded: 0,
            alarms: 0,
            dismissals: 0,
        }
    }

    /// How long to wait before the next sample.
    pub fn next_gap(&mut self) -> Duration {
        self.schedule.next_gap()
    }

    /// The current interval `I`.
    pub fn interval(&self) -> Duration {
        self.schedule.interval()
    }

    pub fn config(&self) -> &DetectorConfig {
        &self.config
    }

    /// The current streak length.
    pub fn streak(&self) -> u32 {
        self.pending.len() as u32
    }

    /// Feeds the next S_out, in sampling order. An S_out outside `[0, 1]` is refused and
    /// changes nothing.
    pub fn observe(&mut self, s_out: f64) -> Result<Observation, InvalidSample> {
        if !(0.0..=1.0).contains(&s_out) {
            return Err(InvalidSample(s_out));
        }
        self.seen += 1;
        let x = s_out + 0.0; // -0.0 -> 0.0
        let Some(level) = self.current_level() else {
            // Learning. (Nothing is pending: streaks only start once there is a level, and
            // the model only shrinks in `commit`, which takes the pending samples first.)
            let doubled_to = self.commit(vec![x]);
            return Ok(Observation {
                status: Status::Learning {
                    n: self.model.len(),
                },
                doubled_to,
            });
        };
        if x <= level.threshold && level.needed_k.is_none() {
            // No streak could ever be significant at this level, so there is nothing to hold
            // the sample back for; holding it would only grow `pending` without bound (a
            // program whose S_out never changes) and starve the runs test.
            let doubled_to = self.commit(vec![x]);
            return Ok(Observation {
                status: Status::Uninformative,
                doubled_to,
            });
        }
        if x <= level.threshold {
            self.pending.push(x);
            let k = self.streak();
            let status = match level.needed_k {
                Some(needed) if k < needed => Status::Suspicious {
                    k,
                    needed_k: needed,
                },
                _ => {
                    if Some(k) == level.needed_k {
                        self.alarms += 1;
                    }
                    Status::Alarm(Alarm {
                        k,
                        q: level.q,
                        p_hat: level.p_hat,
                        d: level.d,
                        threshold: level.threshold,
                        suspicion_rate: level.suspicion_rate,
                        n: level.n,
                        alpha: self.config.alpha,
                        probability: level.q.powi(k as i32),
                    })
                }
            };
            return Ok(Observation {
                status,
                doubled_to: None,
            });
        }
        let mut batch = std::mem::take(&mut self.pending);
        batch.push(x);
        let doubled_to = self.commit(batch);
        Ok(Observation {
            status: Status::Normal,
            doubled_to,
        })
    }

    /// Verification found the job moving: the streak was healthy. Its samples join the
    /// model and the streak restarts from zero. Returns the new interval if committing them
    /// completed a runs-test window that doubled it.
    pub fn dismissed(&mut self) -> Option<Duration> {
        self.dismissals += 1;
        let batch = std::mem::take(&mut self.pending);
        self.commit(batch)
    }

    /// The report's view of the detector.
    pub fn stats(&self) -> Stats {
        let mut histogram: Vec<HistogramBin> = (0..HISTOGRAM_BINS)
            .map(|i| HistogramBin {
                lo: i as f64 / HISTOGRAM_BINS as f64,
                hi: (i + 1) as f64 / HISTOGRAM_BINS as f64,
                count: 0,
            })
            .collect();
        for (x, count) in self.model.values() {
            // The 1e-9 keeps 0.3 (= 2.9999999999999996 / 10 in the worst case) in its bin.
            let bin = ((x * HISTOGRAM_BINS as f64 + 1e-9).floor() as usize).min(HISTOGRAM_BINS - 1);
            histogram[bin].count += count;
        }
        Stats {
            samples_seen: self.seen,
            n: self.model.len(),
            interval_ms: self.interval().as_secs_f64() * 1e3,
            calibration: self.calibration,
            alpha: self.config.alpha,
            q_rule: self.config.q_rule,
            level: self.level.or_else(|| self.compute_level()),
            k: self.streak(),
            discarded: self.discarded,
            alarms: self.alarms,
            dismissals: self.dismissals,
            runs_tests: self.runs.iter().cloned().collect(),
            runs_tests_total: self.runs_total,
            histogram,
        }
    }

    fn current_level(&mut self) -> Option<Level> {
        if self.level.is_none() {
            self.level = self.compute_level();
        }
        self.level
    }

    fn compute_level(&self) -> Option<Level> {
        let n = self.model.len();
        let (p_hat, d) = table(n)?;
        let threshold = self.model.quantile(p_hat)?;
        let suspicion_rate = self.model.cdf(threshold);
        let q = match self.config.q_rule {
            QRule::Observed => suspicion_rate.max(p_hat) + d,
            QRule::Slides => p_hat + d,
        };
        Some(Level {
            n,
            p_hat,
            d,
            threshold,
            suspicion_rate,
            q,
            needed_k: required_k(q, self.config.alpha),
        })
    }

    /// Adds samples to the model in order, running the runs test on each full window while
    /// calibrating. Returns the new interval if a test doubled it (the rest of the batch,
    /// taken at the old interval, is then discarded with the model).
    fn commit(&mut self, batch: Vec<f64>) -> Option<Duration> {
        self.level = None;
        let total = batch.len();
        for (i, x) in batch.into_iter().enumerate() {
            self.model.insert(x);
            if self.calibration != Calibration::Calibrating {
                continue;
            }
            self.window.push(x);
            if self.window.len() < self.config.runs_window {
                continue;
            }
            let test = runs_test(&self.window, self.config.runs_level);
            self.window.clear();
            let interval_ms = self.interval().as_secs_f64() * 1e3;
            let action = match test.outcome {
                RunsOutcome::Random => {
                    self.calibration = Calibration::Calibrated;
                    RunsAction::Accepted
                }
                RunsOutcome::Inconclusive(_) => RunsAction::NextWindow,
                RunsOutcome::NotRandom(_) if self.schedule.double() => RunsAction::Doubled,
                RunsOutcome::NotRandom(_) => {
                    self.calibration = Calibration::GaveUpAtCap;
                    RunsAction::KeptAtCap
                }
            };
            self.record(RunsRecord {
                interval_ms,
                test,
                action,
            });
            if action == RunsAction::Doubled {
                let unjoined = total - i - 1;
                self.discarded += (self.model.len() + unjoined) as u64;
                self.model.clear();
                return Some(self.interval());
            }
        }
        None
    }

    fn record(&mut self, r: RunsRecord) {
        self.runs_total += 1;
        if self.runs.len() == RUNS_HISTORY {
            self.runs.pop_front();
        }
        self.runs.push_back(r);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_boundaries() {
        for n in 0..=10 {
            assert_eq!(table(n), None, "n = {n}");
        }
        assert_eq!(table(11), Some((0.47, 0.3)));
        assert_eq!(table(18), Some((0.47, 0.3)));
        assert_eq!(table(19), Some((0.27, 0.2)));
        assert_eq!(table(41), Some((0.27, 0.2)));
        assert_eq!(table(42), Some((0.12, 0.1)));
        assert_eq!(table(85), Some((0.12, 0.1)));
        assert_eq!(table(86), Some((0.06, 0.05)));
        assert_eq!(table(1_000_000), Some((0.06, 0.05)));
    }

    #[test]
    fn required_k_by_hand() {
        // 0.11^3 = 0.001331 > 0.001, 0.11^4 = 0.000146 -> 4.
        assert_eq!(required_k(0.06 + 0.05, 0.001), Some(4));
        // 0.1^3 = 0.001 exactly in decimal; in f64 0.1^3 = 0.0010000000000000002 > 0.001.
        assert_eq!(required_k(0.1, 0.001), Some(4));
        // 0.77 (p̂ 0.47 + d 0.3): ln(0.001)/ln(0.77) = 26.4 -> 27.
        assert_eq!(required_k(0.77, 0.001), Some(27));
        assert!(0.77f64.powi(26) > 0.001 && 0.77f64.powi(27) <= 0.001);
        // 0.47 (0.27 + 0.2): 0.47^9 = 0.00112, 0.47^10 = 0.00053 -> 10.
        assert_eq!(required_k(0.47, 0.001), Some(10));
        // 0.22 (0.12 + 0.1): 0.22^4 = 0.00234, 0.22^5 = 0.000515 -> 5.
        assert_eq!(required_k(0.22, 0.001), Some(5));
        assert_eq!(required_k(0.0005, 0.001), Some(1));
        assert_eq!(required_k(1.0, 0.001), None);
        assert_eq!(required_k(1.3, 0.001), None);
        assert_eq!(required_k(0.5, 0.0), None);
        // Exhaustively: the least k, against powi.
        for qi in 1..1000 {
            let q = qi as f64 / 1000.0;
            let k = required_k(q, 0.001).unwrap();
            assert!(q.powi(k as i32) <= 0.001, "q {q} k {k}");
            assert!(k == 1 || q.powi(k as i32 - 1) > 0.001, "q {q} k {k}");
        }
    }

    fn detector() -> Detector {
        Detector::new(DetectorConfig::default(), 1)
    }

    /// Feeds values, returning the statuses.
    fn feed(d: &mut Detector, xs: &[f64]) -> Vec<Status> {
        xs.iter().map(|&x| d.observe(x).unwrap().status).collect()
    }

    #[test]
    fn learning_never_alarms_and_then_levels_apply() {
        let mut d = detector();
        let s = feed(&mut d, &[0.0; 10]);
        assert_eq!(s.last(), Some(&Status::Learning { n: 10 }));
        assert!(d.stats().level.is_none());
        // The 11th joins too (the level is computed before the sample: n = 10, none).
        assert_eq!(d.observe(0.0).unwrap().status, Status::Learning { n: 11 });
        // n = 11, all zeros: t = 0, F(t) = 1, q = 1.3: never significant.
        let level = d.stats().level.unwrap();
        assert_eq!(
            (level.n, level.threshold, level.suspicion_rate),
            (11, 0.0, 1.0)
        );
        assert_eq!(level.needed_k, None);
        assert_eq!(d.observe(0.0).unwrap().status, Status::Uninformative);
        assert_eq!((d.stats().n, d.stats().k), (12, 0));
    }

    /// A hand-built model: 100 samples, S_out = i/100 for i in 0..100 (all distinct), so
    /// every number below can be computed on paper.
    fn with_uniform_model(rule: QRule) -> Detector {
        let config = DetectorConfig {
            q_rule: rule,
            runs_window: 1000, // no runs test in the way of the arithmetic
            ..DetectorConfig::default()
        };
        let mut d = Detector::new(config, 1);
        for i in 0..100 {
            d.observe(f64::from(i) / 100.0).unwrap();
        }
        d
    }

    #[test]
    fn level_by_hand_and_alarm_at_k_4() {
        let mut d = with_uniform_model(QRule::Observed);
        // n = 100: p̂ 0.06, d 0.05; t = x(ceil 6) = 0.05; F(t) = 6/100; q = 0.11 -> k 4.
        let level = d.stats().level.unwrap();
        assert_eq!(level.n, 100);
        assert_eq!((level.p_hat, level.d, level.threshold), (0.06, 0.05, 0.05));
        assert!((level.suspicion_rate - 0.06).abs() < 1e-12);
        assert!((level.q - 0.11).abs() < 1e-12);
        assert_eq!(level.needed_k, Some(4));
        // 0.05 is suspicious (<=), 0.051 is not.
        assert_eq!(d.observe(0.051).unwrap().status, Status::Normal);
        let n = d.stats().n;
        assert_eq!(n, 101);
        // n = 101: ceil(6.06) = 7th smallest, now 0.051; F(t) = 7/101, q = 0.1193 -> k 4.
        let level = d.stats().level.unwrap();
        assert_eq!(level.threshold, 0.051);
        let s = feed(&mut d, &[0.0, 0.051, 0.01]);
        assert_eq!(
            s,
            vec![
                Status::Suspicious { k: 1, needed_k: 4 },
                Status::Suspicious { k: 2, needed_k: 4 },
                Status::Suspicious { k: 3, needed_k: 4 },
            ]
        );
        let Status::Alarm(alarm) = d.observe(0.0).unwrap().status else {
            panic!("no alarm at k = 4")
        };
        assert_eq!(
            (alarm.k, alarm.n, alarm.threshold, alarm.p_hat),
            (4, 101, 0.051, 0.06)
        );
        assert!((alarm.q - (7.0 / 101.0 + 0.05)).abs() < 1e-12);
        assert!(alarm.probability <= 0.001);
        // The streak is held out of F: n is still 101.
        assert_eq!(d.stats().n, 101);
        assert_eq!(d.stats().k, 4);
        // Further suspicious samples keep alarming, counted once.
        assert!(matches!(
            d.observe(0.0).unwrap().status,
            Status::Alarm(Alarm { k: 5, .. })
        ));
        assert_eq!(d.stats().alarms, 1);
        // Dismissed: the 5 join the model, the streak restarts.
        assert_eq!(d.dismissed(), None);
        let stats = d.stats();
        assert_eq!((stats.n, stats.k, stats.dismissals), (106, 0, 1));
        assert_eq!(
            d.observe(0.0).unwrap().status,
            Status::Suspicious {
                k: 1,
                needed_k: stats.level.unwrap().needed_k.unwrap()
            }
        );
    }

    #[test]
    fn a_streak_ended_by_a_normal_sample_joins_the_model() {
        let mut d = with_uniform_model(QRule::Observed);
        feed(&mut d, &[0.0, 0.0]);
        assert_eq!(d.stats().n, 100);
        assert_eq!(d.observe(0.9).unwrap().status, Status::Normal);
        let stats = d.stats();
        assert_eq!((stats.n, stats.k), (103, 0));
        assert_eq!(stats.alarms, 0);
    }

    /// A detector whose model is exactly `xs` (bypassing the streak logic).
    fn with_model(q_rule: QRule, xs: &[f64]) -> Detector {
        let mut d = Detector::new(
            DetectorConfig {
                q_rule,
                ..DetectorConfig::default()
            },
            1,
        );
        for &x in xs {
            d.model.insert(x);
        }
        d
    }

    #[test]
    fn ties_raise_q_under_the_observed_rule_only() {
        // 100 samples: 35 zeros, the rest 0.5. t = F^-1(0.06) = 0 but F(0) = 0.35.
        let xs: Vec<f64> = (0..100).map(|i| if i < 35 { 0.0 } else { 0.5 }).collect();
        let o = with_model(QRule::Observed, &xs).stats().level.unwrap();
        let s = with_model(QRule::Slides, &xs).stats().level.unwrap();
        assert_eq!((o.threshold, s.threshold), (0.0, 0.0));
        assert!((o.suspicion_rate - 0.35).abs() < 1e-12);
        assert!((o.q - 0.40).abs() < 1e-12);
        assert!((s.q - 0.11).abs() < 1e-12);
        // 0.4^7 = 0.0016, 0.4^8 = 0.00066 -> 8; the slides' 0.11 -> 4.
        assert_eq!((o.needed_k, s.needed_k), (Some(8), Some(4)));
    }

    #[test]
    fn a_two_valued_healthy_sequence_alarms_only_under_the_literal_rule() {
        // S_out alternating between blocks of 7 zeros and 13 halves. Once fewer than 47% of
        // the model are zeros, t = F^-1(0.47) = 0.5, the largest value: every sample is
        // "suspicious". The literal q = 0.47 + 0.3 = 0.77 then alarms after 27 samples of a
        // perfectly regular program; the observed F(t) = 1 makes q >= 1 (uninformative).
        let xs: Vec<f64> = (0..100)
            .map(|i| if i % 20 < 7 { 0.0 } else { 0.5 })
            .collect();
        let alarms = |q_rule| {
            let config = DetectorConfig {
                q_rule,
                runs_window: 1000,
                ..DetectorConfig::default()
            };
            let mut d = Detector::new(config, 1);
            let statuses = feed(&mut d, &xs);
            statuses
                .iter()
                .filter(|s| matches!(s, Status::Alarm(_)))
                .count()
        };
        assert_eq!(alarms(QRule::Observed), 0);
        assert!(alarms(QRule::Slides) > 0);
    }

    #[test]
    fn not_random_doubles_and_discards_the_old_interval() {
        let mut d = detector();
        assert_eq!(d.interval(), Duration::from_millis(400));
        // 30 sorted samples (the default window): two runs, not random.
        let mut doubled = None;
        for i in 0..30 {
            let o = d.observe(f64::from(i) / 30.0).unwrap();
            if let Some(to) = o.doubled_to {
                doubled = Some((i, to));
            }
        }
        assert_eq!(doubled, Some((29, Duration::from_millis(800))));
        let stats = d.stats();
        assert_eq!((stats.n, stats.discarded), (0, 30));
        assert_eq!(stats.calibration, Calibration::Calibrating);
        assert_eq!(stats.runs_tests.len(), 1);
        assert_eq!(stats.runs_tests[0].action, RunsAction::Doubled);
        assert_eq!(stats.runs_tests[0].interval_ms, 400.0);
        assert!(stats.level.is_none(), "relearning after the discard");
        // A random-looking window at 800 ms calibrates.
        let mut rng = fastrand::Rng::with_seed(3);
        while d.stats().calibration == Calibration::Calibrating {
            let x = (0..10).filter(|_| rng.f64() < 0.3).count() as f64 / 10.0;
            assert_eq!(d.observe(x).unwrap().doubled_to, None);
        }
        let stats = d.stats();
        assert_eq!(stats.calibration, Calibration::Calibrated);
        assert_eq!(stats.interval_ms, 800.0);
        assert_eq!(
            stats.runs_tests.last().unwrap().action,
            RunsAction::Accepted
        );
    }

    #[test]
    fn held_back_streak_can_complete_a_window_and_double() {
        // The window fills when a dismissed streak joins the model: the remaining samples of
        // the batch, taken at the old interval, are discarded too.
        let config = DetectorConfig {
            runs_window: 20,
            ..DetectorConfig::default()
        };
        let mut d = Detector::new(config, 1);
        // 16 alternating high values (15 learn, then Normal), then a suspicious streak.
        feed(&mut d, &[0.9, 1.0].repeat(8));
        assert_eq!(d.stats().n, 16);
        let s = feed(&mut d, &[0.0; 8]);
        assert!(
            s.iter()
                .all(|s| !matches!(s, Status::Normal | Status::Learning { .. }))
        );
        // 16 + 8 = 24 > 20: committing the streak completes the window (16 high, 4 low: too
        // few runs) at the 4th, the other 4 are discarded with the model.
        assert_eq!(d.dismissed(), Some(Duration::from_millis(800)));
        let stats = d.stats();
        assert_eq!((stats.n, stats.k, stats.discarded), (0, 0, 24));
    }

    #[test]
    fn at_the_cap_the_model_is_kept() {
        let config = DetectorConfig {
            max_interval: Duration::from_millis(400),
            ..DetectorConfig::default()
        };
        let mut d = Detector::new(config, 1);
        for i in 0..30 {
            assert_eq!(d.observe(f64::from(i) / 30.0).unwrap().doubled_to, None);
        }
        let stats = d.stats();
        assert_eq!((stats.n, stats.calibration), (30, Calibration::GaveUpAtCap));
        assert_eq!(stats.runs_tests[0].action, RunsAction::KeptAtCap);
    }

    #[test]
    fn constant_windows_are_inconclusive_and_kept() {
        let mut d = detector();
        feed(&mut d, &[0.2; 30]);
        let stats = d.stats();
        assert_eq!((stats.n, stats.discarded), (30, 0));
        assert_eq!(stats.calibration, Calibration::Calibrating);
        assert_eq!(stats.runs_tests[0].action, RunsAction::NextWindow);
        assert_eq!(stats.interval_ms, 400.0);
    }

    #[test]
    fn invalid_samples_are_refused() {
        let mut d = detector();
        for bad in [f64::NAN, -0.1, 1.5, f64::INFINITY] {
            assert!(d.observe(bad).is_err(), "{bad}");
        }
        assert_eq!(d.stats().samples_seen, 0);
        assert!(d.observe(-0.0).is_ok());
        assert!(d.observe(1.0).is_ok());
    }

    #[test]
    fn stats_serialize_with_a_histogram() {
        let mut d = detector();
        feed(
            &mut d,
            &[0.0, 0.1, 0.1, 0.3, 0.3, 0.3, 0.7, 1.0, 0.2, 0.1, 0.6, 0.4],
        );
        let stats = d.stats();
        let counts: Vec<u64> = stats.histogram.iter().map(|b| b.count).collect();
        let mut want = vec![0u64; 20];
        for (bin, c) in [
            (0, 1),
            (2, 3),
            (4, 1),
            (6, 3),
            (8, 1),
            (12, 1),
            (14, 1),
            (19, 1),
        ] {
            want[bin] = c;
        }
        assert_eq!(counts, want);
        assert_eq!(stats.histogram.iter().map(|b| b.count).sum::<u64>(), 12);
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json["n"], 12);
        assert_eq!(json["interval_ms"], 400.0);
        assert_eq!(json["calibration"], "calibrating");
        assert_eq!(json["level"]["p_hat"], 0.47);
        assert_eq!(json["level"]["threshold"], 0.3);
        assert_eq!(json["histogram"][6]["count"], 3);
    }
}
