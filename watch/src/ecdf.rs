//! The empirical distribution `F` of S_out.
//!
//! Stored as a count per distinct value, in value order, not as a sorted vector: S_out of `m`
//! monitored ranks takes at most `m + 1` distinct values (11 by default), so inserting a
//! sample, reading `F(x)` and a quantile all cost O(distinct values) whatever the number of
//! samples (a watch of a day at 400 ms gathers 200,000 of them).

use std::collections::BTreeMap;

/// An empirical cumulative distribution function over finite `f64` samples.
#[derive(Clone, Debug, Default)]
pub struct Ecdf {
    counts: BTreeMap<Key, u64>,
    n: usize,
}

/// A finite `f64` mapped to a `u64` whose integer order is the float order (sign bit
/// flipped for positives, all bits flipped for negatives). `-0.0` is normalised to `0.0`
/// before mapping so that both zeros are one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key(u64);

impl Key {
    fn of(x: f64) -> Key {
        let bits = (x + 0.0).to_bits();
        Key(if bits >> 63 == 1 {
            !bits
        } else {
            bits | 1 << 63
        })
    }

    fn value(self) -> f64 {
        let b = self.0;
        f64::from_bits(if b >> 63 == 1 { b & !(1 << 63) } else { !b })
    }
}

impl Ecdf {
    pub fn new() -> Ecdf {
        Ecdf::default()
    }

    /// Adds one sample.
    ///
    /// # Panics
    /// On a non-finite value: it has no place in an order and would make every quantile
    /// meaningless. The detector validates S_out before it gets here.
    pub fn insert(&mut self, x: f64) {
        assert!(x.is_finite(), "Ecdf::insert: non-finite sample {x}");
        *self.counts.entry(Key::of(x)).or_insert(0) += 1;
        self.n += 1;
    }

    /// The number of samples.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn clear(&mut self) {
        self.counts.clear();
        self.n = 0;
    }

    /// `F(x)`: the share of the samples that are `<= x` (0 when empty).
    pub fn cdf(&self, x: f64) -> f64 {
        if self.n == 0 || x.is_nan() {
            return 0.0;
        }
        let at_or_below: u64 = if x == f64::INFINITY {
            self.n as u64
        } else if x == f64::NEG_INFINITY {
            0
        } else {
            self.counts.range(..=Key::of(x)).map(|(_, c)| c).sum()
        };
        at_or_below as f64 / self.n as f64
    }

    /// `F^-1(p) = min{x : F(x) >= p}`, the generalised inverse: the smallest sample with at
    /// least a share `p` of the samples at or below it. With the samples sorted as
    /// `x(1) <= ... <= x(n)` this is `x(r)` with `r = max(1, ceil(n * p))`, so it is always one
    /// of the samples and `F(F^-1(p)) >= p` (equal for continuous data and `n * p` whole; above
    /// it when values repeat, which is why the detector reads `F(t)` back rather than assuming
    /// `p`). `p` is clamped to `[0, 1]`; `n * p` is rounded up after subtracting 1e-9, so that a
    /// product like `50 * 0.12` that floating point makes `6.000000000000001` still gives 6.
    /// `None` when there are no samples.
    pub fn quantile(&self, p: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
        let rank = ((self.n as f64 * p - 1e-9).ceil() as u64).clamp(1, self.n as u64);
        let mut seen = 0u64;
        for (key, count) in &self.counts {
            seen += count;
            if seen >= rank {
                return Some(key.value());
            }
        }
        unreachable!("rank <= n and the counts sum to n")
    }

    /// The distinct values and how many samples have each, smallest first.
    pub fn values(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.counts.iter().map(|(k, c)| (k.value(), *c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ecdf(xs: &[f64]) -> Ecdf {
        let mut e = Ecdf::new();
        for &x in xs {
            e.insert(x);
        }
        e
    }

    #[test]
    fn quantile_by_hand() {
        // Sorted: 0.0 0.1 0.1 0.2 0.3 0.3 0.3 0.5 0.8 0.9 (n = 10).
        let e = ecdf(&[0.3, 0.1, 0.9, 0.0, 0.3, 0.2, 0.8, 0.1, 0.5, 0.3]);
        assert_eq!(e.len(), 10);
        // r = ceil(10p): p = 0.06 -> r 1 -> 0.0; 0.1 -> r 1; 0.12 -> r 2 -> 0.1;
        // 0.27 -> r 3 -> 0.1; 0.47 -> r 5 -> 0.3; 0.5 -> r 5; 0.51 -> r 6 -> 0.3; 1 -> 0.9.
        for (p, want) in [
            (0.0, 0.0),
            (0.06, 0.0),
            (0.1, 0.0),
            (0.12, 0.1),
            (0.27, 0.1),
            (0.3, 0.1),
            (0.31, 0.2),
            (0.47, 0.3),
            (0.5, 0.3),
            (0.71, 0.5),
            (1.0, 0.9),
            (7.0, 0.9),
        ] {
            assert_eq!(e.quantile(p), Some(want), "p = {p}");
        }
        assert_eq!(e.cdf(0.1), 0.3);
        assert_eq!(e.cdf(0.3), 0.7);
        assert_eq!(e.cdf(-1.0), 0.0);
        assert_eq!(e.cdf(0.95), 1.0);
        // F(F^-1(p)) >= p, above it under ties: F^-1(0.47) = 0.3 and F(0.3) = 0.7.
        assert_eq!(e.cdf(e.quantile(0.47).unwrap()), 0.7);
    }

    #[test]
    fn quantile_rounding_does_not_skip_a_rank() {
        // 50 * 0.12 is 6.000000000000001 in f64; the 6th smallest is wanted, not the 7th.
        let xs: Vec<f64> = (0..50).map(f64::from).collect();
        assert_eq!(ecdf(&xs).quantile(0.12), Some(5.0));
        // 86 * 0.06 = 5.16 -> the 6th smallest.
        let xs: Vec<f64> = (0..86).map(f64::from).collect();
        assert_eq!(ecdf(&xs).quantile(0.06), Some(5.0));
    }

    #[test]
    fn empty_and_signed_zero() {
        let mut e = Ecdf::new();
        assert_eq!(e.quantile(0.5), None);
        assert_eq!(e.cdf(0.0), 0.0);
        e.insert(-0.0);
        e.insert(0.0);
        e.insert(-2.5);
        assert_eq!(e.values().collect::<Vec<_>>(), vec![(-2.5, 1), (0.0, 2)]);
        assert_eq!(e.quantile(0.5), Some(0.0));
        e.clear();
        assert!(e.is_empty());
    }

    proptest! {
        #[test]
        fn quantile_is_monotone_in_p(
            xs in proptest::collection::vec(-1e6f64..1e6, 1..200),
            a in 0.0f64..=1.0,
            b in 0.0f64..=1.0,
        ) {
            let e = ecdf(&xs);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (qlo, qhi) = (e.quantile(lo).unwrap(), e.quantile(hi).unwrap());
            prop_assert!(qlo <= qhi, "F^-1({lo}) = {qlo} > F^-1({hi}) = {qhi}");
            // The inverse is a sample, and F at it reaches p.
            prop_assert!(xs.contains(&qlo));
            prop_assert!(e.cdf(qlo) >= lo - 1e-12);
        }

        #[test]
        fn quantile_matches_the_sorted_definition(
            xs in proptest::collection::vec(0u32..12, 1..120),
            p in 0.0f64..=1.0,
        ) {
            let xs: Vec<f64> = xs.into_iter().map(|k| f64::from(k) / 10.0).collect();
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            // min{x : F(x) >= p}, straight from the definition.
            let want = sorted
                .iter()
                .copied()
                .find(|&x| sorted.iter().filter(|&&y| y <= x).count() as f64
                    >= p * sorted.len() as f64 - 1e-9)
                .unwrap();
            prop_assert_eq!(ecdf(&xs).quantile(p), Some(want));
        }
    }
}
