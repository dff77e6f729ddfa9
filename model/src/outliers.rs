//! Abnormal ranks by their nearest neighbours, as AutomaDeD's scalable outlier detection
//! finds them: the dissimilarity of two models is the sum of the differences of their
//! transitions; each rank is compared with a bounded sample of ranks ([`SAMPLE`]), and a
//! rank far from the nearest of them is abnormal. For each abnormal rank, the transitions
//! that differ most from its nearest neighbour's are the code regions to look at
//! (AutomaDeD's edge isolation).
//!
//! One departure from the paper: a transition's time difference is weighed by its share of
//! the two ranks' time. Unweighed, the few-microsecond transitions of a loaded node (a
//! rank preempted once inside a 5 us transition) outweighed a rank computing ten times as
//! long in the one transition that holds the job's time.
//!
//! Nearest neighbours miss a fault that makes several ranks abnormal alike (they are each
//! other's neighbours when both are sampled); AutomaDeD's clustering does not
//! ([`mod@crate::cluster`]).

use crate::normal::{self, Normal};
use crate::smm::{Edge, EdgeKey, RankModel, STILL_COMPUTING, STILL_IN_CALL};

/// A transition one model has and the other lacks: more than two present transitions can
/// differ (probability 1, and each distribution 1), since a different control flow is the
/// strongest sign.
pub const MISSING: f64 = 3.0;

/// Ranks each rank is compared with, at most: evenly spread over the job.
pub const SAMPLE: usize = 64;

/// Transitions named for each abnormal rank, at most.
const EDGES_NAMED: usize = 5;

/// How far apart two ranks' times of one part of a transition are, by their means
/// ([`Normal::by_mean`]).
pub(crate) fn times(a: Option<Normal>, b: Option<Normal>) -> f64 {
    match (a, b) {
        (Some(a), Some(b)) => normal::distance(a.by_mean(), b.by_mean()),
        _ => 0.0,
    }
}

/// A rank's time in all the transitions it made (in calls and between them), in seconds:
/// not the state it is in when read ([`STILL_IN_CALL`], [`STILL_COMPUTING`]), which would
/// hold all the time of a rank read seconds into a hang and leave none to weigh how its
/// transitions differ.
pub(crate) fn total_time(m: &RankModel) -> f64 {
    m.edges
        .iter()
        .filter(|(k, _)| k.to != STILL_IN_CALL && k.to != STILL_COMPUTING)
        .map(|(_, e)| {
            let mean = |n: Option<Normal>| n.map_or(0.0, |n| n.mean.max(0.0));
            e.count as f64 * (mean(e.times.within) + mean(e.times.between))
        })
        .sum()
}

/// A part of an edge's share of its rank's time (at most all of it: the current state is
/// not counted in the total).
fn share(e: &Edge, part: Option<Normal>, total: f64) -> f64 {
    match part {
        Some(n) if total > 0.0 => (e.count as f64 * n.mean.max(0.0) / total).min(1.0),
        _ => 0.0,
    }
}

/// How one transition differs between two ranks, by part.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Difference {
    /// Of its probabilities.
    pub probability: f64,
    /// Of the time in its first call, and of the computation between its calls, each
    /// weighed by its share of the two ranks' time.
    pub within: f64,
    pub between: f64,
    /// Only one of the ranks makes it.
    pub missing: bool,
}

impl Difference {
    pub fn total(&self) -> f64 {
        if self.missing {
            MISSING
        } else {
            self.probability + self.within + self.between
        }
    }
}

/// How one transition differs between two ranks (each with its [`total_time`]): its
/// probability's difference, and each of its time distributions' distance weighed by the
/// share of the two ranks' time it holds. The weight is what keeps a fault visible: a
/// preempted microsecond transition on a loaded node differs as much, by distribution, as a
/// rank that computes ten times as long, but holds none of the time.
pub(crate) fn difference(a: Option<(&Edge, f64)>, b: Option<(&Edge, f64)>) -> Difference {
    match (a, b) {
        (Some((a, ta)), Some((b, tb))) => {
            let within = (share(a, a.times.within, ta) + share(b, b.times.within, tb)) / 2.0;
            let between = (share(a, a.times.between, ta) + share(b, b.times.between, tb)) / 2.0;
            Difference {
                probability: (a.probability - b.probability).abs(),
                within: within * times(a.times.within, b.times.within),
                between: between * times(a.times.between, b.times.between),
                missing: false,
            }
        }
        (None, None) => Difference::default(),
        _ => Difference {
            missing: true,
            ..Difference::default()
        },
    }
}

fn edge_difference(a: Option<(&Edge, f64)>, b: Option<(&Edge, f64)>) -> f64 {
    difference(a, b).total()
}

/// Each transition of either model with how much it differs between them, the largest
/// first (ties in the models' order).
pub fn contributions(a: &RankModel, b: &RankModel) -> Vec<(EdgeKey, f64)> {
    let (ta, tb) = (total_time(a), total_time(b));
    let mut all: Vec<(EdgeKey, f64)> = a
        .edges
        .keys()
        .chain(b.edges.keys().filter(|k| !a.edges.contains_key(*k)))
        .map(|k| {
            let difference = edge_difference(
                a.edges.get(k).map(|e| (e, ta)),
                b.edges.get(k).map(|e| (e, tb)),
            );
            (k.clone(), difference)
        })
        .collect();
    all.sort_by(|x, y| y.1.total_cmp(&x.1));
    all
}

/// The transitions of `abnormal` that differ most from `like`'s, at most [`EDGES_NAMED`]:
/// AutomaDeD's edge isolation.
pub(crate) fn isolate(abnormal: &RankModel, like: &RankModel) -> Vec<(EdgeKey, f64)> {
    contributions(abnormal, like)
        .into_iter()
        .filter(|(_, c)| *c > 1e-9)
        .take(EDGES_NAMED)
        .collect()
}

/// How far apart two ranks' models are: the sum of their transitions' differences, each
/// time weighed by its share of the ranks' time (so the times add up to at most 1), each
/// transition only one of them makes [`MISSING`].
pub fn dissimilarity(a: &RankModel, b: &RankModel) -> f64 {
    dissimilarity_of(a, total_time(a), b, total_time(b))
}

pub(crate) fn dissimilarity_of(a: &RankModel, ta: f64, b: &RankModel, tb: f64) -> f64 {
    a.edges
        .iter()
        .map(|(k, e)| edge_difference(Some((e, ta)), b.edges.get(k).map(|e| (e, tb))))
        .sum::<f64>()
        + b.edges.keys().filter(|k| !a.edges.contains_key(*k)).count() as f64 * MISSING
}

/// An abnormal rank: far from its nearest neighbour among the sampled ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Abnormal {
    pub rank: u32,
    /// Its dissimilarity to its nearest neighbour.
    pub distance: f64,
    pub nearest: u32,
    /// The transitions that differ most from the neighbour's, with how much.
    pub edges: Vec<(EdgeKey, f64)>,
}

/// The sampled models: all up to [`SAMPLE`], else evenly spread.
pub(crate) fn sample(n: usize) -> Vec<usize> {
    if n <= SAMPLE {
        return (0..n).collect();
    }
    let mut picked: Vec<usize> = (0..SAMPLE).map(|i| i * n / SAMPLE).collect();
    picked.dedup();
    picked
}

/// The `top` most abnormal ranks of `models`, the farthest from its nearest neighbour
/// first; a rank whose model another sampled rank shares exactly is never abnormal. Empty
/// for fewer than two models.
pub fn abnormal_ranks(models: &[RankModel], top: usize) -> Vec<Abnormal> {
    outliers(models, top).abnormal
}

/// The abnormal ranks and, to judge them by, how far a typical rank is from its nearest
/// neighbour.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outliers {
    /// The most abnormal ranks, farthest first ([`abnormal_ranks`]).
    pub abnormal: Vec<Abnormal>,
    /// The median of every rank's distance to its nearest sampled neighbour.
    pub median_distance: f64,
}

/// [`abnormal_ranks`], with the median distance.
pub fn outliers(models: &[RankModel], top: usize) -> Outliers {
    outliers_of(models, models, top)
}

/// [`outliers`] found on `models` (compressed, [`crate::compress`]), their transitions
/// named on `originals` (the same ranks, in the same order, uncompressed).
pub fn outliers_of(models: &[RankModel], originals: &[RankModel], top: usize) -> Outliers {
    if models.len() < 2 {
        return Outliers::default();
    }
    let sampled = sample(models.len());
    let totals: Vec<f64> = models.iter().map(total_time).collect();
    let mut found: Vec<(usize, usize, f64)> = Vec::with_capacity(models.len());
    for (i, m) in models.iter().enumerate() {
        let nearest = sampled
            .iter()
            .filter(|&&s| s != i)
            .map(|&s| (s, dissimilarity_of(m, totals[i], &models[s], totals[s])))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((s, d)) = nearest {
            found.push((i, s, d));
        }
    }
    found.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let median_distance = found[found.len() / 2].2;
    let abnormal = found
        .into_iter()
        .filter(|&(_, _, d)| d > 1e-9)
        .take(top)
        .map(|(i, s, d)| Abnormal {
            rank: models[i].rank,
            distance: d,
            nearest: models[s].rank,
            edges: isolate(&originals[i], &originals[s]),
        })
        .collect();
    Outliers {
        abnormal,
        median_distance,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{edge, halo, key};

    #[test]
    fn a_slow_rank_is_the_most_abnormal_at_its_computation() {
        let mut models: Vec<RankModel> = (0..8).map(|r| halo(r, 0.002)).collect();
        models[5] = halo(5, 0.020);
        let found = abnormal_ranks(&models, 5);
        assert_eq!(found[0].rank, 5, "{found:#?}");
        assert_eq!(found[0].edges[0].0, key("Waitall", "Irecv"), "{found:#?}");
        // Everyone else has an identical neighbour.
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(outliers(&models, 5).median_distance, 0.0);
    }

    #[test]
    fn a_different_control_flow_outweighs_a_time() {
        let mut models: Vec<RankModel> = (0..6).map(|r| halo(r, 0.002)).collect();
        models[1] = halo(1, 0.004);
        // Rank 4 received a message it did not expect: a transition nobody else makes.
        models[4]
            .edges
            .insert(key("Waitall", "Recv"), edge(0.5, 0.001));
        models[4]
            .edges
            .get_mut(&key("Waitall", "Irecv"))
            .unwrap()
            .probability = 0.5;
        let found = abnormal_ranks(&models, 5);
        assert_eq!(found[0].rank, 4, "{found:#?}");
        assert_eq!(found[0].edges[0].0, key("Waitall", "Recv"), "{found:#?}");
        assert_eq!(found[1].rank, 1, "{found:#?}");
    }

    #[test]
    fn identical_ranks_have_no_abnormal_one() {
        let models: Vec<RankModel> = (0..200).map(|r| halo(r, 0.002)).collect();
        assert!(abnormal_ranks(&models, 5).is_empty());
        assert!(abnormal_ranks(&models[..1], 5).is_empty());
        assert_eq!(sample(200).len(), SAMPLE);
    }

    #[test]
    fn dissimilarity_is_symmetric() {
        let (a, mut b) = (halo(0, 0.002), halo(1, 0.003));
        b.edges.insert(key("Isend", "Barrier"), edge(0.1, 0.001));
        let (ab, ba) = (dissimilarity(&a, &b), dissimilarity(&b, &a));
        assert!((ab - ba).abs() < 1e-12, "{ab} {ba}");
        assert!(ab > MISSING);
        let sum: f64 = contributions(&a, &b).iter().map(|c| c.1).sum();
        assert!((sum - ab).abs() < 1e-12);
    }
}
