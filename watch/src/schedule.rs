//! When to take the next sample.
//!
//! ParaStack's gap is `rand(I) + I/2`: uniform in `[I/2, 3I/2]`, mean `I`. A fixed gap can
//! fall into step with a program's iteration period and then see the same phase every time
//! (S_out looks constant, or alternates); a random gap makes the sample times a renewal
//! process that cannot stay in phase with anything periodic. `I` starts at 400 ms (the
//! slides' default, a negligible overhead for 10 ranks) and doubles while the runs test says
//! the samples are not random.

use std::time::Duration;

/// The slides' initial interval.
pub const DEFAULT_INITIAL_INTERVAL: Duration = Duration::from_millis(400);

/// The interval never doubles past this. Without a cap a program whose S_out is never
/// judged random (a slow drift, a phase longer than any window) would push `I` to hours and
/// the watch would effectively stop watching; a minute keeps detection within minutes, which
/// is still far below the hours a hung batch job wastes. 400 ms reaches it after 8 doublings
/// (51.2 s, then 60 s).
pub const DEFAULT_MAX_INTERVAL: Duration = Duration::from_secs(60);

/// The shortest interval accepted: a zero interval would double to zero forever.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// The sampling interval `I` and its random gaps; deterministic given the seed.
#[derive(Clone, Debug)]
pub struct Schedule {
    interval: Duration,
    max: Duration,
    rng: fastrand::Rng,
}

impl Schedule {
    /// `initial` is clamped to `[1 ms, DEFAULT_MAX_INTERVAL]`.
    pub fn new(initial: Duration, seed: u64) -> Schedule {
        Schedule {
            interval: initial.clamp(MIN_INTERVAL, DEFAULT_MAX_INTERVAL),
            max: DEFAULT_MAX_INTERVAL,
            rng: fastrand::Rng::with_seed(seed),
        }
    }

    /// A different cap (at least 1 ms); the interval is lowered to it if above.
    pub fn with_max(mut self, max: Duration) -> Schedule {
        self.max = max.max(MIN_INTERVAL);
        self.interval = self.interval.min(self.max);
        self
    }

    /// The current interval `I`.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn max(&self) -> Duration {
        self.max
    }

    /// The next gap, uniform in `[I/2, 3I/2]` at nanosecond resolution.
    pub fn next_gap(&mut self) -> Duration {
        let i = self.interval.as_nanos() as u64; // <= the cap, far below u64::MAX ns
        let lo = i / 2;
        Duration::from_nanos(self.rng.u64(lo..=lo + i))
    }

    /// Doubles `I`, up to the cap. Returns false, changing nothing, when already at the cap.
    pub fn double(&mut self) -> bool {
        if self.interval >= self.max {
            return false;
        }
        self.interval = (self.interval * 2).min(self.max);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_uniform_in_half_to_three_halves() {
        let mut s = Schedule::new(DEFAULT_INITIAL_INTERVAL, 1);
        let n = 100_000;
        let (mut sum, mut below_mid) = (0.0, 0);
        for _ in 0..n {
            let g = s.next_gap();
            assert!(
                g >= Duration::from_millis(200) && g <= Duration::from_millis(600),
                "{g:?}"
            );
            sum += g.as_secs_f64();
            below_mid += usize::from(g < Duration::from_millis(300));
        }
        // Mean I = 0.4 s; a quarter of [200, 600] ms lies below 300 ms.
        let mean = sum / n as f64;
        assert!((mean - 0.4).abs() < 0.002, "mean gap {mean}");
        let share = below_mid as f64 / n as f64;
        assert!((share - 0.25).abs() < 0.01, "{share}");
    }

    #[test]
    fn doubling_stops_at_the_cap() {
        let mut s = Schedule::new(DEFAULT_INITIAL_INTERVAL, 1);
        let mut seen = vec![s.interval().as_millis()];
        while s.double() {
            seen.push(s.interval().as_millis());
        }
        assert_eq!(
            seen,
            [400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000]
        );
        assert!(!s.double());
        assert_eq!(s.interval(), DEFAULT_MAX_INTERVAL);
        let g = s.next_gap();
        assert!(g >= Duration::from_secs(30) && g <= Duration::from_secs(90));
    }

    #[test]
    fn configurable_start_and_cap_and_deterministic() {
        let mut s = Schedule::new(Duration::from_millis(10), 9).with_max(Duration::from_millis(35));
        assert_eq!(s.interval(), Duration::from_millis(10));
        assert!(s.double() && s.double());
        assert_eq!(s.interval(), Duration::from_millis(35));
        assert!(!s.double());
        assert_eq!(
            Schedule::new(Duration::ZERO, 0).interval(),
            Duration::from_millis(1)
        );
        let gaps = |seed| {
            let mut s = Schedule::new(DEFAULT_INITIAL_INTERVAL, seed);
            (0..5).map(|_| s.next_gap()).collect::<Vec<_>>()
        };
        assert_eq!(gaps(3), gaps(3));
        assert_ne!(gaps(3), gaps(4));
    }
}
