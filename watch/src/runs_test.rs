//! The Wald-Wolfowitz runs test: do consecutive samples look independent?
//!
//! The hang test multiplies per-sample probabilities, which is only right when samples are
//! independent. Sampled too often, a program's slow phases show up as long stretches of high
//! or low S_out; sampled slowly enough, S_out jumps about. The runs test tells the two apart
//! from the sequence alone, which is what the slides prescribe: mark each value above the
//! mean `+` and below it `-`, count the runs (maximal blocks of equal marks), and reject
//! randomness when there are too few runs (stretches: the interval is too short) or too many
//! (a strict alternation, e.g. sampling in step with the iterations).

use serde::Serialize;
use strata_model::normal::erfc;

/// The default two-sided significance level.
pub const DEFAULT_RUNS_LEVEL: f64 = 0.05;

/// A value this close to the mean (relative to the data's magnitude, at least 1) counts as
/// equal to it. Exact float equality would make the test depend on rounding: `mean(x + c)`
/// is not bit-for-bit `mean(x) + c`, and S_out, a multiple of 1/m, hits the mean exactly
/// whenever the mean is itself such a multiple.
const TIE_TOLERANCE: f64 = 1e-9;

/// What the test concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunsOutcome {
    /// The number of runs is within the non-rejection region.
    Random,
    /// Randomness is rejected at the level.
    NotRandom(Deviation),
    /// The sequence cannot tell: neither random nor not random.
    Inconclusive(Inconclusive),
}

/// How a non-random sequence deviates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Deviation {
    /// Long stretches on one side of the mean: consecutive samples are alike.
    TooFewRuns,
    /// More alternation than chance gives: the samples move in step with something.
    TooManyRuns,
}

/// Why the test could not decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Inconclusive {
    /// Every value is on one side of the mean, i.e. (up to the tie tolerance) they are all
    /// equal to it: a constant sequence, or an empty one. A constant S_out says nothing about
    /// how often it would change, so this is not evidence either way.
    OneSided,
    /// One value above and one below the mean: the number of runs has zero variance under
    /// randomness (it is always 2), so there is nothing to test.
    TooShort,
}

/// The test's numbers, kept for the watch report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunsTest {
    /// Values tested.
    pub len: usize,
    pub mean: f64,
    /// Values above the mean (`n1`).
    pub above: usize,
    /// Values below the mean (`n2`).
    pub below: usize,
    /// Values equal to the mean, left out of the count (see [`runs_test()`]).
    pub ties: usize,
    /// Runs among the values that are above or below.
    pub runs: usize,
    /// `E[R] = 2 n1 n2 / n + 1`, `None` when inconclusive.
    pub expected_runs: Option<f64>,
    /// `sd(R) = sqrt(2 n1 n2 (2 n1 n2 - n) / (n^2 (n - 1)))`.
    pub std_dev: Option<f64>,
    /// `(R - E[R]) / sd(R)`.
    pub z: Option<f64>,
    /// Two-sided p-value from the normal approximation.
    pub p_value: Option<f64>,
    /// The significance level it was tested at.
    pub level: f64,
    pub outcome: RunsOutcome,
}

impl RunsTest {
    /// `Some(true)` random, `Some(false)` not random, `None` inconclusive.
    pub fn is_random(&self) -> Option<bool> {
        match self.outcome {
            RunsOutcome::Random => Some(true),
            RunsOutcome::NotRandom(_) => Some(false),
            RunsOutcome::Inconclusive(_) => None,
        }
    }
}

/// Runs test of `xs` dichotomised about its mean, two-sided at `level` (e.g.
/// [`DEFAULT_RUNS_LEVEL`]), with the normal approximation of the number of runs.
///
/// Values equal to the mean are dropped before the runs are counted, the usual convention
/// (it is R `randtests`' "discard" rule): the slides mark only values "bigger" and "smaller"
/// than the average, and putting ties on either side would bias the count towards that side
/// (S_out is a multiple of 1/10, so ties happen whenever the mean is one). Dropping a tie
/// joins its neighbours, so `+ = +` is one run: a tie is not evidence of a change.
///
/// The normal approximation is rough below about 10 values per side; the detector tests
/// windows of 30 samples, where it is close: on independent sequences of 20 and 30 it
/// rejects 4-5% of the time at the 5% level (a unit test measures it). The slides' worked example
/// (R = 4 with 7 above and 9 below, rejected) is reproduced in the tests.
///
/// # Panics
/// On a non-finite value (a NaN has no side of the mean).
pub fn runs_test(xs: &[f64], level: f64) -> RunsTest {
    assert!(
        xs.iter().all(|x| x.is_finite()),
        "runs_test: non-finite value"
    );
    let len = xs.len();
    let mean = if len == 0 {
        0.0
    } else {
        xs.iter().sum::<f64>() / len as f64
    };
    let scale = xs.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    let tolerance = TIE_TOLERANCE * scale;
    let (mut above, mut below, mut ties, mut runs) = (0usize, 0usize, 0usize, 0usize);
    let mut last: Option<bool> = None;
    for &x in xs {
        let side = if x > mean + tolerance {
            true
        } else if x < mean - tolerance {
            false
        } else {
            ties += 1;
            continue;
        };
        if side {
            above += 1;
        } else {
            below += 1;
        }
        if last != Some(side) {
            runs += 1;
            last = Some(side);
        }
    }
    let mut test = RunsTest {
        len,
        mean,
        above,
        below,
        ties,
        runs,
        expected_runs: None,
        std_dev: None,
        z: None,
        p_value: None,
        level,
        outcome: RunsOutcome::Inconclusive(Inconclusive::OneSided),
    };
    if above == 0 || below == 0 {
        return test;
    }
    let (n1, n2) = (above as f64, below as f64);
    let n = n1 + n2;
    let expected = 2.0 * n1 * n2 / n + 1.0;
    let variance = 2.0 * n1 * n2 * (2.0 * n1 * n2 - n) / (n * n * (n - 1.0));
    test.expected_runs = Some(expected);
    if variance <= 0.0 {
        test.outcome = RunsOutcome::Inconclusive(Inconclusive::TooShort);
        return test;
    }
    let sd = variance.sqrt();
    let z = (runs as f64 - expected) / sd;
    let p = normal_two_sided_p(z);
    test.std_dev = Some(sd);
    test.z = Some(z);
    test.p_value = Some(p);
    test.outcome = if p >= level {
        RunsOutcome::Random
    } else if z < 0.0 {
        RunsOutcome::NotRandom(Deviation::TooFewRuns)
    } else {
        RunsOutcome::NotRandom(Deviation::TooManyRuns)
    };
    test
}

/// `P(|Z| >= |z|)` for a standard normal `Z`: `erfc(|z| / sqrt 2)`.
fn normal_two_sided_p(z: f64) -> f64 {
    erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn normal_tail_matches_tables() {
        assert!(close(normal_two_sided_p(0.0), 1.0, 1e-7));
        assert!(close(normal_two_sided_p(1.959_964), 0.05, 1e-6));
        assert!(close(normal_two_sided_p(-1.959_964), 0.05, 1e-6));
        assert!(close(normal_two_sided_p(2.575_829), 0.01, 1e-6));
        assert!(close(normal_two_sided_p(1.0), 0.317_310_5, 1e-6));
        assert!(close(erfc(-1.0), 1.842_700_8, 1e-6));
    }

    #[test]
    fn the_slides_example_is_not_random() {
        // "0.2 0.1 0.1 0.2 0.1 0.1 0.0 0.0 0.8 0.9 1.0 0.8 0.9 0.1 0.9 0.9: average 0.44375,
        // R = 4, outside the non-rejection region, so double I."
        let xs = [
            0.2, 0.1, 0.1, 0.2, 0.1, 0.1, 0.0, 0.0, 0.8, 0.9, 1.0, 0.8, 0.9, 0.1, 0.9, 0.9,
        ];
        let t = runs_test(&xs, DEFAULT_RUNS_LEVEL);
        assert!(close(t.mean, 0.44375, 1e-12));
        assert_eq!((t.above, t.below, t.ties, t.runs), (7, 9, 0, 4));
        // E[R] = 2*7*9/16 + 1 = 8.875; var = 126 * 110 / (256 * 15) = 3.609375.
        assert!(close(t.expected_runs.unwrap(), 8.875, 1e-12));
        assert!(close(t.std_dev.unwrap(), 3.609_375f64.sqrt(), 1e-12));
        assert!(close(t.z.unwrap(), -4.875 / 3.609_375f64.sqrt(), 1e-12));
        assert_eq!(t.outcome, RunsOutcome::NotRandom(Deviation::TooFewRuns));
        assert_eq!(t.is_random(), Some(false));
    }

    #[test]
    fn alternation_has_too_many_runs() {
        let xs: Vec<f64> = (0..30).map(|i| (i % 2) as f64).collect();
        let t = runs_test(&xs, DEFAULT_RUNS_LEVEL);
        assert_eq!((t.above, t.below, t.runs), (15, 15, 30));
        // E[R] = 16, var = 450 * 420 / (900 * 29) = 7.241..., z = 14 / 2.691 = 5.20.
        assert!(close(
            t.z.unwrap(),
            14.0 / (450.0f64 * 420.0 / (900.0 * 29.0)).sqrt(),
            1e-12
        ));
        assert_eq!(t.outcome, RunsOutcome::NotRandom(Deviation::TooManyRuns));
    }

    #[test]
    fn sorted_has_too_few_runs() {
        let xs: Vec<f64> = (0..20).map(|i| i as f64 / 20.0).collect();
        let t = runs_test(&xs, DEFAULT_RUNS_LEVEL);
        assert_eq!((t.above, t.below, t.runs), (10, 10, 2));
        assert_eq!(t.outcome, RunsOutcome::NotRandom(Deviation::TooFewRuns));
    }

    #[test]
    fn a_seeded_random_sequence_is_random() {
        let mut rng = fastrand::Rng::with_seed(7);
        let xs: Vec<f64> = (0..40).map(|_| rng.f64()).collect();
        let t = runs_test(&xs, DEFAULT_RUNS_LEVEL);
        assert_eq!(t.outcome, RunsOutcome::Random, "{t:?}");
        assert!(t.p_value.unwrap() >= 0.05);
    }

    #[test]
    fn ties_with_the_mean_are_dropped() {
        // Mean 0.3 (exactly a sample value): the three 0.3s drop out, leaving + - + -.
        let xs = [0.5, 0.3, 0.1, 0.3, 0.5, 0.3, 0.1];
        let t = runs_test(&xs, DEFAULT_RUNS_LEVEL);
        assert_eq!((t.above, t.below, t.ties, t.runs), (2, 2, 3, 4));
        // A tie between two equal marks does not split their run.
        let t = runs_test(&[1.0, 0.5, 1.0, 0.0, 0.0], DEFAULT_RUNS_LEVEL);
        assert!(close(t.mean, 0.5, 1e-15));
        assert_eq!((t.above, t.below, t.ties, t.runs), (2, 2, 1, 2));
    }

    #[test]
    fn degenerate_sequences_are_inconclusive_not_random_or_not() {
        for xs in [&[][..], &[0.4][..], &[0.0; 25][..], &[0.7; 3][..]] {
            let t = runs_test(xs, DEFAULT_RUNS_LEVEL);
            assert_eq!(
                t.outcome,
                RunsOutcome::Inconclusive(Inconclusive::OneSided),
                "{xs:?}"
            );
            assert_eq!(t.is_random(), None);
            assert_eq!(t.z, None);
        }
        let t = runs_test(&[0.0, 1.0], DEFAULT_RUNS_LEVEL);
        assert_eq!(t.outcome, RunsOutcome::Inconclusive(Inconclusive::TooShort));
        let t = runs_test(&[0.0, 0.5, 1.0], DEFAULT_RUNS_LEVEL);
        assert_eq!(t.outcome, RunsOutcome::Inconclusive(Inconclusive::TooShort));
    }

    /// The normal approximation at windows of 20 and 30 (the detector's default): its
    /// false-rejection rate on independent data should be near the nominal 5% (a much
    /// higher rate would double the sampling interval of healthy programs for nothing).
    #[test]
    fn false_rejection_rate_at_20_and_30_samples_is_near_the_level() {
        let mut rng = fastrand::Rng::with_seed(20);
        let trials = 20_000;
        for len in [20, 30] {
            let (mut rejected, mut rejected_s_out) = (0, 0);
            for _ in 0..trials {
                let xs: Vec<f64> = (0..len).map(|_| rng.f64()).collect();
                rejected +=
                    usize::from(runs_test(&xs, DEFAULT_RUNS_LEVEL).is_random() == Some(false));
                // S_out of 10 ranks each outside MPI with probability 0.3: discrete, with ties.
                let xs: Vec<f64> = (0..len)
                    .map(|_| (0..10).filter(|_| rng.f64() < 0.3).count() as f64 / 10.0)
                    .collect();
                rejected_s_out +=
                    usize::from(runs_test(&xs, DEFAULT_RUNS_LEVEL).is_random() == Some(false));
            }
            let rate = rejected as f64 / trials as f64;
            let rate_s_out = rejected_s_out as f64 / trials as f64;
            println!(
                "runs test at n = {len}, level 5%: rejects {rate:.4} (uniform), {rate_s_out:.4} (S_out)"
            );
            assert!((0.02..=0.08).contains(&rate), "{rate}");
            assert!((0.02..=0.08).contains(&rate_s_out), "{rate_s_out}");
        }
    }

    proptest! {
        #[test]
        fn invariant_under_adding_a_constant(
            ks in proptest::collection::vec(0u32..=10, 0..80),
            c in -10.0f64..10.0,
        ) {
            // S_out-like values (multiples of 1/10), where ties with the mean really occur.
            let xs: Vec<f64> = ks.iter().map(|&k| f64::from(k) / 10.0).collect();
            let shifted: Vec<f64> = xs.iter().map(|x| x + c).collect();
            let (a, b) = (runs_test(&xs, DEFAULT_RUNS_LEVEL), runs_test(&shifted, DEFAULT_RUNS_LEVEL));
            prop_assert_eq!((a.above, a.below, a.ties, a.runs), (b.above, b.below, b.ties, b.runs));
            prop_assert_eq!(a.outcome, b.outcome);
        }

        #[test]
        fn continuous_values_invariant_under_adding_a_constant(
            xs in proptest::collection::vec(0.0f64..1.0, 0..80),
            c in -10.0f64..10.0,
        ) {
            let shifted: Vec<f64> = xs.iter().map(|x| x + c).collect();
            let (a, b) = (runs_test(&xs, DEFAULT_RUNS_LEVEL), runs_test(&shifted, DEFAULT_RUNS_LEVEL));
            prop_assert_eq!(a.runs, b.runs);
            prop_assert_eq!(a.outcome, b.outcome);
        }
    }
}
