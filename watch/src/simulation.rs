//! Seeded simulations of the whole statistical pipeline: healthy programs must not alarm
//! (more often than `alpha` allows), injected hangs must alarm within a few samples.
//!
//! Every alarm on a healthy program is answered with [`Detector::dismissed`], as
//! verification of a moving program would, and counted. Run with `--nocapture` to read the
//! measured rates and delays.
//!
//! # The false-alarm bound
//!
//! An alarm at sample `i` needs the `k` samples ending at `i` all suspicious, with `q^k <=
//! alpha`. If the samples are independent and each is suspicious with probability `p <= q`
//! (which is what `q`, an upper confidence bound, is for), that has probability at most
//! `p^k <= q^k <= alpha`, so over `N` samples the expected number of alarms is at most
//! `alpha * N` (100 per 100,000 at `alpha = 0.001`). `alpha` is a per-sample rate, not a
//! per-run one: a day of watching at 400 ms can see a few statistical alarms, and each
//! costs one verification round (five full samples), which dismisses it. The tests assert
//! the bound and print the measured rate; the literal `q = p̂ + d` breaks it when S_out
//! repeats values, which is why [`QRule::Observed`] is the default.

use super::*;
use std::time::Duration;

const ALPHA: f64 = 0.001;

/// S_out of `ranks` ranks each outside MPI with probability `p`, independently.
fn binomial(rng: &mut fastrand::Rng, ranks: usize, p: f64) -> f64 {
    (0..ranks).filter(|_| rng.f64() < p).count() as f64 / ranks as f64
}

/// An iterative program in continuous time: each iteration computes for `C` ms (uniform in
/// `compute_ms`), each rank finishing its share at a random `0.6..1.0` of `C` (load
/// imbalance) and then waiting in MPI, followed by a communication phase of `M` ms (uniform
/// in `comm_ms`) with every rank inside MPI.
struct PhaseProgram {
    rng: fastrand::Rng,
    compute_ms: (f64, f64),
    comm_ms: (f64, f64),
    start: f64,
    len: f64,
    finish: Vec<f64>,
}

impl PhaseProgram {
    fn new(seed: u64, ranks: usize, compute_ms: (f64, f64), comm_ms: (f64, f64)) -> Self {
        let mut p = PhaseProgram {
            rng: fastrand::Rng::with_seed(seed),
            compute_ms,
            comm_ms,
            start: 0.0,
            len: 0.0,
            finish: vec![0.0; ranks],
        };
        p.iterate();
        p
    }

    fn uniform(&mut self, (lo, hi): (f64, f64)) -> f64 {
        lo + (hi - lo) * self.rng.f64()
    }

    fn iterate(&mut self) {
        self.start += self.len;
        let c = self.uniform(self.compute_ms);
        for i in 0..self.finish.len() {
            self.finish[i] = c * (0.6 + 0.4 * self.rng.f64());
        }
        self.len = c + self.uniform(self.comm_ms);
    }

    /// S_out at time `t_ms` (non-decreasing between calls).
    fn s_out_at(&mut self, t_ms: f64) -> f64 {
        while t_ms >= self.start + self.len {
            self.iterate();
        }
        let offset = t_ms - self.start;
        self.finish.iter().filter(|&&f| offset < f).count() as f64 / self.finish.len() as f64
    }
}

fn config(q_rule: QRule) -> DetectorConfig {
    DetectorConfig {
        alpha: ALPHA,
        q_rule,
        ..DetectorConfig::default()
    }
}

/// Feeds `n` healthy samples from `next` (given the gap before the sample, in ms),
/// dismissing every alarm. Returns the alarms and the detector.
fn healthy_run(
    mut detector: Detector,
    n: u64,
    mut next: impl FnMut(f64) -> f64,
) -> (u64, Detector) {
    let mut alarms = 0;
    for _ in 0..n {
        let gap = detector.next_gap().as_secs_f64() * 1e3;
        let status = detector.observe(next(gap)).unwrap().status;
        if let Status::Alarm(_) = status {
            alarms += 1;
            detector.dismissed();
        }
    }
    (alarms, detector)
}

fn report_healthy(name: &str, n: u64, alarms: u64, d: &Detector) {
    let s = d.stats();
    let level = s.level.unwrap();
    println!(
        "{name}: {alarms} alarms in {n} samples (rate {:.2e}, bound alpha = {ALPHA:.0e}); \
         I = {} ms ({:?}, {} runs tests); t = {}, F(t) = {:.3}, q = {:.3}, k needed {:?}",
        alarms as f64 / n as f64,
        s.interval_ms,
        s.calibration,
        s.runs_tests_total,
        level.threshold,
        level.suspicion_rate,
        level.q,
        level.needed_k,
    );
}

const HEALTHY_SAMPLES: u64 = 100_000;

#[test]
fn healthy_binomial_stays_under_the_alpha_bound() {
    let mut rng = fastrand::Rng::with_seed(11);
    let (alarms, d) = healthy_run(
        Detector::new(config(QRule::Observed), 1),
        HEALTHY_SAMPLES,
        |_| binomial(&mut rng, 10, 0.3),
    );
    report_healthy(
        "binomial(10, 0.3), q = F(t) + d",
        HEALTHY_SAMPLES,
        alarms,
        &d,
    );
    assert!(alarms as f64 <= ALPHA * HEALTHY_SAMPLES as f64, "{alarms}");
    // Expected, from the model: P(S_out <= 0.1) = 0.7^10 + 10 * 0.3 * 0.7^9 = 0.149, q about
    // 0.2, k = 5, so about (1 - 0.149) * 0.149^5 = 6e-5 per sample: a handful, not zero.
    assert_eq!(d.stats().level.unwrap().threshold, 0.1);
}

#[test]
fn the_slides_literal_q_breaks_the_bound_when_s_out_repeats() {
    // A communication-heavy program: each of 10 ranks outside MPI with probability 0.1, so
    // S_out = 0 in 35% of samples. t = F^-1(0.06) = 0 and the true suspicion probability is
    // 0.35, but the literal q = p̂ + d is 0.11: streaks of 4 zeros (probability 0.015) alarm.
    let mut rng = fastrand::Rng::with_seed(12);
    let (observed, d) = healthy_run(
        Detector::new(config(QRule::Observed), 2),
        HEALTHY_SAMPLES,
        |_| binomial(&mut rng, 10, 0.1),
    );
    report_healthy(
        "binomial(10, 0.1), q = F(t) + d",
        HEALTHY_SAMPLES,
        observed,
        &d,
    );
    let mut rng = fastrand::Rng::with_seed(12);
    let (slides, d) = healthy_run(
        Detector::new(config(QRule::Slides), 2),
        HEALTHY_SAMPLES,
        |_| binomial(&mut rng, 10, 0.1),
    );
    report_healthy(
        "binomial(10, 0.1), q = p_hat + d",
        HEALTHY_SAMPLES,
        slides,
        &d,
    );
    let bound = ALPHA * HEALTHY_SAMPLES as f64;
    assert!(observed as f64 <= bound, "{observed}");
    assert!(
        slides as f64 > bound,
        "the literal rule stayed under the bound: {slides}"
    );
}

#[test]
fn healthy_iterative_program_stays_under_the_alpha_bound() {
    // Iterations of 100-300 ms compute + 20-60 ms communication, sampled at 400 ms.
    let mut program = PhaseProgram::new(21, 10, (100.0, 300.0), (20.0, 60.0));
    let mut now = 0.0;
    let (alarms, d) = healthy_run(
        Detector::new(config(QRule::Observed), 3),
        HEALTHY_SAMPLES,
        |gap| {
            now += gap;
            program.s_out_at(now)
        },
    );
    report_healthy("iterative program at 400 ms", HEALTHY_SAMPLES, alarms, &d);
    assert!(alarms as f64 <= ALPHA * HEALTHY_SAMPLES as f64, "{alarms}");
    assert_eq!(d.stats().calibration, Calibration::Calibrated);
}

#[test]
fn too_short_an_interval_is_doubled_until_samples_are_random() {
    // The slides' P* experiment: start at 10 ms on a program whose iterations last 1.2-3.6 s
    // (compute 1-3 s, communication 0.2-0.6 s). Consecutive samples then see the same phase;
    // the runs test must push I up. Measured on this program, the lag-1 autocorrelation of
    // S_out is 0.75 at 160 ms, 0.44 at 320 ms and -0.10 at 640 ms.
    let seeds = 20u64;
    let n = 20_000;
    let (mut at_640, mut alarms_calibrating, mut alarms_after) = (0, 0u64, 0u64);
    let mut finals = Vec::new();
    for seed in 0..seeds {
        let mut program = PhaseProgram::new(31 + seed, 10, (1000.0, 3000.0), (200.0, 600.0));
        let config = DetectorConfig {
            initial_interval: Duration::from_millis(10),
            ..config(QRule::Observed)
        };
        let mut detector = Detector::new(config, seed);
        let mut now = 0.0;
        for _ in 0..n {
            now += detector.next_gap().as_secs_f64() * 1e3;
            let calibrating = detector.stats().calibration == Calibration::Calibrating;
            if let Status::Alarm(_) = detector.observe(program.s_out_at(now)).unwrap().status {
                if calibrating {
                    alarms_calibrating += 1;
                } else {
                    alarms_after += 1;
                }
                detector.dismissed();
            }
        }
        let s = detector.stats();
        assert_eq!(s.calibration, Calibration::Calibrated, "seed {seed}");
        // 10 ms doubled at least 5 times.
        assert!(s.interval_ms >= 320.0, "seed {seed}: {}", s.interval_ms);
        at_640 += usize::from(s.interval_ms >= 640.0);
        finals.push(s.interval_ms);
    }
    println!(
        "P* (start 10 ms), {seeds} seeds x {n} samples: calibrated I {finals:?} ms; alarms \
         while calibrating {alarms_calibrating}, after {alarms_after}"
    );
    // The runs test has limited power on 30 samples: it accepts the still-correlated 320 ms
    // now and then (2 seeds in 40 when measured). Most runs must reach 640 ms.
    assert!(at_640 >= 16, "only {at_640} of {seeds} reached 640 ms");
    assert!(alarms_after as f64 <= ALPHA * (seeds * n) as f64);
}

/// Delays over `trials` seeded runs: healthy samples from `healthy` for `inject_at`
/// samples, then `hung` for up to 1,000. The delay counts hung samples up to and including
/// the alarm (1 = alarmed on the first hung sample); `None` = never alarmed.
fn delays(
    trials: u64,
    inject_at: u64,
    mut healthy: impl FnMut(&mut fastrand::Rng, u64) -> f64,
    mut hung: impl FnMut(&mut fastrand::Rng, u64) -> f64,
) -> Vec<Option<u64>> {
    (0..trials)
        .map(|seed| {
            let mut rng = fastrand::Rng::with_seed(1000 + seed);
            let mut d = Detector::new(config(QRule::Observed), seed);
            for i in 0..inject_at {
                if let Status::Alarm(_) = d.observe(healthy(&mut rng, i)).unwrap().status {
                    d.dismissed();
                }
            }
            (1..=1000).find(|&j| {
                let x = hung(&mut rng, inject_at + j - 1);
                matches!(d.observe(x).unwrap().status, Status::Alarm(_))
            })
        })
        .collect()
}

/// Median, 95th percentile and maximum of the delays (all must be `Some`).
fn summarise(name: &str, delays: &[Option<u64>]) -> (u64, u64, u64) {
    let mut ds: Vec<u64> = delays
        .iter()
        .map(|d| d.expect("a hang was never alarmed"))
        .collect();
    ds.sort_unstable();
    let (median, p95, max) = (ds[ds.len() / 2], ds[ds.len() * 95 / 100], ds[ds.len() - 1]);
    println!(
        "{name}: alarmed after median {median}, p95 {p95}, max {max} hung samples ({} trials; \
         at 400 ms about {:.1} s / {:.1} s / {:.1} s)",
        ds.len(),
        median as f64 * 0.4,
        p95 as f64 * 0.4,
        max as f64 * 0.4
    );
    (median, p95, max)
}

#[test]
fn a_hang_to_zero_is_alarmed_within_six_samples() {
    let d = delays(300, 200, |rng, _| binomial(rng, 10, 0.3), |_, _| 0.0);
    let (_, _, max) = summarise("binomial(10, 0.3) -> S_out 0", &d);
    // n about 200: t = 0.1, F(t) about 0.15 (sd 0.025), q = F(t) + 0.05 about 0.2, and
    // q^5 <= 0.001 for q <= 0.251: five samples, six if F(t) drew 2 sd high.
    assert!(max <= 6, "{max}");
}

#[test]
fn one_stuck_rank_of_ten_is_mostly_alarmed_within_six_samples() {
    // Rank stuck computing, the other nine waiting for it: S_out = 0.1 for ever.
    let d = delays(300, 200, |rng, _| binomial(rng, 10, 0.3), |_, _| 0.1);
    let (median, p95, _) = summarise("binomial(10, 0.3) -> S_out 0.1 (one stuck rank)", &d);
    // Usually t = 0.1 and this is the previous test. But 0.1 is only suspicious while
    // F(0) < p̂ = 0.06; when the 200 healthy samples drew 12 or more zeros (expected 5.6), t
    // is 0 and the stuck rank's 0.1s are taken as normal and join the model until they dilute
    // F(0) below 6%: tens of samples more. So the tail, not the bulk, is long.
    assert!(median <= 5 && p95 <= 6, "median {median}, p95 {p95}");
}

#[test]
fn a_stuck_rank_in_a_larger_job_is_alarmed_whichever_set_is_monitored() {
    // 64 ranks, 10 monitored, the sets swapped every 30 samples; at sample 200 rank 17
    // stops in user code and everyone else waits: S_out is 0.1 while rank 17 is monitored,
    // 0 otherwise, both suspicious.
    let ranks: Vec<u32> = (0..64).collect();
    let mut all = Vec::new();
    for trial in 0..300u64 {
        let mut monitor = MonitorSet::new(&ranks, 10, trial);
        let mut rng = fastrand::Rng::with_seed(5000 + trial);
        let mut d = Detector::new(config(QRule::Observed), trial);
        let mut sample = |hung: bool| {
            let outside = monitor
                .ranks()
                .iter()
                .filter(|&&r| if hung { r == 17 } else { rng.f64() < 0.3 })
                .count();
            monitor.sampled();
            outside as f64 / 10.0
        };
        for _ in 0..200 {
            if let Status::Alarm(_) = d.observe(sample(false)).unwrap().status {
                d.dismissed();
            }
        }
        all.push(
            (1..=1000u64)
                .find(|_| matches!(d.observe(sample(true)).unwrap().status, Status::Alarm(_))),
        );
    }
    let (_, _, max) = summarise("64 ranks, 10 monitored + swap, rank 17 stuck", &all);
    assert!(max <= 6, "{max}");
}

#[test]
fn an_iterative_program_hang_is_alarmed_within_seconds() {
    // The iterative program above, sampled on the detector's own schedule; at sample 200
    // every rank ends up waiting in MPI.
    let trials = 200;
    let mut delays_samples = Vec::new();
    let mut delays_secs = Vec::new();
    for seed in 0..trials {
        let mut program = PhaseProgram::new(100 + seed, 10, (100.0, 300.0), (20.0, 60.0));
        let mut d = Detector::new(config(QRule::Observed), seed);
        let mut now = 0.0;
        for _ in 0..200 {
            now += d.next_gap().as_secs_f64() * 1e3;
            if let Status::Alarm(_) = d.observe(program.s_out_at(now)).unwrap().status {
                d.dismissed();
            }
        }
        let hang_start = now;
        let found = (1..=1000u64).find(|_| {
            now += d.next_gap().as_secs_f64() * 1e3;
            matches!(d.observe(0.0).unwrap().status, Status::Alarm(_))
        });
        delays_samples.push(found);
        delays_secs.push((now - hang_start) / 1e3);
    }
    let (_, _, max) = summarise("iterative program -> S_out 0", &delays_samples);
    delays_secs.sort_by(f64::total_cmp);
    println!(
        "iterative program -> S_out 0: median {:.1} s, max {:.1} s after the last healthy sample",
        delays_secs[delays_secs.len() / 2],
        delays_secs[delays_secs.len() - 1]
    );
    // F(0) is about 0.2 here (the communication phase and the tail of the imbalance), so
    // q is about 0.25 and k = 5; 7 leaves room for F(0) drawn high.
    assert!(max <= 7, "{max}");
}

#[test]
fn communication_heavy_program_hang_is_alarmed_but_a_stuck_rank_is_not() {
    // Each rank outside MPI with probability 0.1: S_out = 0 in 35% of healthy samples.
    let d = delays(300, 200, |rng, _| binomial(rng, 10, 0.1), |_, _| 0.0);
    let (_, _, max) = summarise("binomial(10, 0.1) -> S_out 0", &d);
    // t = 0, q = F(0) + 0.05 about 0.4, k = 8 (0.4^8 = 6.6e-4); 9 if F(0) drew high.
    assert!(max <= 10, "{max}");
    // A known limit of the model, pinned here: one stuck rank of ten gives S_out = 0.1,
    // which is above t = 0 (S_out = 0.1 is this program's most common value), so S_out
    // never looks suspicious and the hang goes unnoticed by the detector.
    let d = delays(20, 200, |rng, _| binomial(rng, 10, 0.1), |_, _| 0.1);
    assert!(d.iter().all(Option::is_none), "{d:?}");
}

#[test]
fn a_hang_soon_after_learning_is_alarmed_later() {
    // Hang after 25 samples (10 s of watching, before the first runs-test window completes).
    // With n about 25, p̂ = 0.27 and d = 0.2: t = F^-1(0.27) is usually 0.2 with F(t) about
    // 0.38, so q is about 0.58 and k = 13. But a streak that started while n was still in
    // [11, 19) is judged at that level (p̂ 0.47, d 0.3, t 0.3 or 0.4 with F(t) 0.6-0.7: q
    // 0.88-0.99, k from 56 to 550 in the slow trials), because the streak's samples are held
    // out of F and n cannot grow until it ends; so is a model of 25 that drew F(t) near 0.7. Holding them is still right: letting a hang's zeros into F
    // would push q to 1 and the alarm would never come. So the tail is long; this pins it.
    let d = delays(300, 25, |rng, _| binomial(rng, 10, 0.3), |_, _| 0.0);
    let (median, p95, max) = summarise("binomial(10, 0.3) -> S_out 0 after 25 samples", &d);
    assert!(
        median <= 15 && p95 <= 60,
        "median {median}, p95 {p95}, max {max}"
    );
}
