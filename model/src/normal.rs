//! The distance of two normal distributions: the share of their areas that does not
//! overlap, in [0, 1] (the L1 distance of their densities, halved). AutomaDeD reads it
//! from a precomputed table; two densities meet at most twice, so it is computed here
//! exactly from the normal distribution function at those points.

/// The smallest standard deviation of a time, as a share of its mean ([`Normal::widened`]).
pub const WIDTH: f64 = 0.5;
/// The smallest standard deviation of a time, in seconds: 20 microseconds.
pub const FLOOR: f64 = 20e-6;

/// A normal distribution of times, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normal {
    pub mean: f64,
    pub sd: f64,
}

impl Normal {
    /// A standard deviation of at least half the mean and [`FLOOR`]: a transition
    /// seen once, or always as long, is a distribution, not a point; ranks that do the
    /// same work differ by tens of percent in time (scheduling, caches, where they sit in
    /// the communication; a 1 ms sleep took 1.8 to 2.7 ms on a loaded 2-core node), and by
    /// microseconds in any call, so only a larger difference is a sign.
    pub fn widened(self) -> Normal {
        Normal {
            mean: self.mean,
            sd: self.sd.max(self.mean.abs() * WIDTH).max(FLOOR),
        }
    }

    /// The distribution ranks are compared by: the mean's, at the width [`Normal::widened`]
    /// gives it, whatever the recorded deviation. One preemption in two hundred iterations
    /// (a 50 ms stall on a loaded node) triples a deviation and moves the mean by a fifth:
    /// compared by their recorded deviations, two ranks alike differed as much as a rank
    /// that computes ten times as long.
    pub fn by_mean(self) -> Normal {
        Normal {
            mean: self.mean,
            sd: (self.mean.abs() * WIDTH).max(FLOOR),
        }
    }

    fn cdf(&self, x: f64) -> f64 {
        0.5 * erfc(-(x - self.mean) / (self.sd * std::f64::consts::SQRT_2))
    }
}

/// The share of the two distributions' areas that does not overlap: 0 for the same
/// distribution, near 1 for far apart ones.
pub fn distance(a: Normal, b: Normal) -> f64 {
    let (a, b) = (a.widened(), b.widened());
    // `narrow` has the smaller standard deviation: it is the smaller density outside the
    // points where the two meet, and the larger between them.
    let (narrow, wide) = if a.sd <= b.sd { (a, b) } else { (b, a) };
    let overlap = if (wide.sd - narrow.sd) <= 1e-12 * wide.sd {
        // Equal widths: they meet once, half-way; left of it the higher one is smaller.
        let (low, high) = if a.mean <= b.mean { (a, b) } else { (b, a) };
        let cut = (low.mean + high.mean) / 2.0;
        high.cdf(cut) + (1.0 - low.cdf(cut))
    } else {
        let (x1, x2) = meeting_points(narrow, wide);
        narrow.cdf(x1) + (1.0 - narrow.cdf(x2)) + (wide.cdf(x2) - wide.cdf(x1))
    };
    (1.0 - overlap).clamp(0.0, 1.0)
}

/// Where two densities of different widths are equal: the roots of a quadratic, in order.
fn meeting_points(narrow: Normal, wide: Normal) -> (f64, f64) {
    let (m1, s1, m2, s2) = (narrow.mean, narrow.sd, wide.mean, wide.sd);
    let a = 1.0 / (s1 * s1) - 1.0 / (s2 * s2);
    let b = -2.0 * (m1 / (s1 * s1) - m2 / (s2 * s2));
    let c = m1 * m1 / (s1 * s1) - m2 * m2 / (s2 * s2) - 2.0 * (s2 / s1).ln();
    let root = (b * b - 4.0 * a * c).max(0.0).sqrt();
    let (x1, x2) = ((-b - root) / (2.0 * a), (-b + root) / (2.0 * a));
    (x1.min(x2), x1.max(x2))
}

/// The complementary error function, by the Chebyshev fit of Numerical Recipes (`erfcc`),
/// fractional error below 1.2e-7 everywhere: it saves a statistics dependency for one
/// function (the watch's runs test uses it too).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(mean: f64, sd: f64) -> Normal {
        Normal { mean, sd }
    }

    #[test]
    fn the_same_distribution_is_no_distance_and_far_ones_almost_one() {
        assert!(distance(n(1.0, 0.1), n(1.0, 0.1)) < 1e-6);
        // Widened to half their means: three times as long is mostly apart, ten times far.
        assert!(distance(n(1.0, 0.1), n(3.0, 0.1)) > 0.7);
        assert!(distance(n(1.0, 0.1), n(10.0, 0.1)) > 0.95);
        assert!(distance(n(0.020, 0.001), n(5.0, 0.001)) > 0.99);
        // Ranks alike on a loaded node, 1.8 ms and 2.7 ms for one computation, stay close.
        assert!(distance(n(0.0027, 0.0), n(0.0018, 0.0)) < 0.4);
    }

    #[test]
    fn known_overlaps() {
        // Equal widths one standard deviation apart: overlap 2 Phi(-1/2) = 0.617.
        let d = distance(n(0.0, 1.0), n(1.0, 1.0));
        assert!((d - (1.0 - 0.617_075)).abs() < 1e-4, "{d}");
        // Same mean, widths 1 and 2: they meet at +-sqrt(8 ln 2 / 3) = 1.3596.
        let x = (8.0 * 2f64.ln() / 3.0).sqrt();
        let phi = |v: f64| 0.5 * erfc(-v / std::f64::consts::SQRT_2);
        let overlap = 2.0 * phi(-x) + (phi(x / 2.0) - phi(-x / 2.0));
        let d = distance(n(0.0, 1.0), n(0.0, 2.0));
        assert!((d - (1.0 - overlap)).abs() < 1e-6, "{d} {overlap}");
        // Symmetric.
        assert!((distance(n(0.0, 2.0), n(0.0, 1.0)) - d).abs() < 1e-12);
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!((erfc(0.0) - 1.0).abs() < 1e-7);
        assert!((erfc(1.0) - 0.157_299_2).abs() < 1e-6);
        assert!((erfc(-1.0) - 1.842_700_8).abs() < 1e-6);
    }
}
