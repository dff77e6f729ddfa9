//! The ranks' behaviours by clustering, as AutomaDeD does with CAPEK ("Large scale debugging
//! of parallel tasks with AutomaDeD", 2011; "Clustering performance data efficiently at
//! massive scales", 2010): K-medoids on a bounded sample of the ranks' models, the number of
//! clusters chosen by the Bayesian information criterion, every rank assigned to its nearest
//! medoid, and the outliers found by their distance to their medoid divided by their
//! cluster's spread.
//!
//! Clustering finds what nearest neighbours miss: a fault that makes a few ranks abnormal
//! alike (each is the other's nearest neighbour) forms a small cluster of its own, apart
//! from the rest. A role that one rank plays (a master, a pipeline's first stage) is a small
//! cluster too; AutomaDeD tells the two apart by the clusters of earlier phases, which a
//! history that sums the whole run does not keep, so both are shown as what they are: ranks
//! that behave apart.
//!
//! The criterion is Pelleg and Moore's ("X-means", 2000) for one dimension, the distance to
//! the medoid, with a floor under the variance ([`NOISE`]): on a loaded node ranks alike
//! still differ a little, and a variance of zero would split off every such rank.

use crate::outliers::{self, sample};
use crate::smm::{EdgeKey, RankModel};

/// Clusters tried, at most.
pub const MAX_K: usize = 8;

/// The spread below which distances are noise: ranks alike on a loaded 2-core node stayed
/// within 0.12 of each other (see [`crate::report::MIN_DISTANCE`]).
pub const NOISE: f64 = 0.06;

/// A cluster is apart from the rest when it holds at most this share of the ranks (and at
/// most [`APART_MAX`] ranks) and its medoid is at least [`APART_DISTANCE`] from every other.
pub const APART_SHARE: f64 = 0.1;
pub const APART_MAX: usize = 64;
pub const APART_DISTANCE: f64 = 0.25;

/// A rank in a larger cluster is an outlier at this many spreads from its medoid.
pub const OUTLIER_SCORE: f64 = 3.0;

/// One cluster of ranks that behave alike.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// The rank whose model represents it.
    pub medoid: u32,
    /// Every rank nearest to this medoid, in rank order.
    pub ranks: Vec<u32>,
    /// The median distance of its ranks to the medoid. The paper divides by the standard
    /// deviation, which the outliers it is to find inflate: one rank hung for seconds among
    /// a thousand lifted it past a rank computing ten times as long.
    pub spread: f64,
    /// The distance from its medoid to the nearest other medoid (infinite for one cluster).
    pub separation: f64,
}

/// A rank far from its cluster's medoid.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterOutlier {
    pub rank: u32,
    pub medoid: u32,
    pub distance: f64,
    /// The distance in spreads of its cluster (the spread floored at [`NOISE`]).
    pub score: f64,
    /// The transitions that differ most from the medoid's.
    pub edges: Vec<(EdgeKey, f64)>,
}

/// The clustering of a job's ranks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Clustering {
    /// Largest first.
    pub clusters: Vec<Cluster>,
    /// The criterion for each number of clusters tried, `(k, bic)`; the largest chose.
    pub bic: Vec<(usize, f64)>,
    /// Indices into `clusters` of those apart from the rest, the most separated first.
    pub apart: Vec<usize>,
    /// Ranks in the other clusters at least [`OUTLIER_SCORE`] spreads from their medoid,
    /// the farthest first, at most `top`.
    pub outliers: Vec<ClusterOutlier>,
}

impl Clustering {
    /// The ranks clustering finds abnormal, the most abnormal first: the ranks of the
    /// clusters apart (by separation), then the outliers.
    pub fn abnormal_ranks(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for &c in &self.apart {
            out.extend(&self.clusters[c].ranks);
        }
        out.extend(self.outliers.iter().map(|o| o.rank));
        out
    }
}

/// The medoids (indices into `d`'s points) that minimise the total distance, by PAM
/// (Kaufman and Rousseeuw's BUILD then SWAP), and that total.
fn pam(d: &[Vec<f64>], k: usize) -> (Vec<usize>, f64) {
    let n = d.len();
    let cost = |medoids: &[usize]| -> f64 {
        (0..n)
            .map(|i| {
                medoids
                    .iter()
                    .map(|&m| d[i][m])
                    .fold(f64::INFINITY, f64::min)
            })
            .sum()
    };
    // BUILD: the most central point, then each time the one that lowers the cost most.
    let mut medoids: Vec<usize> = Vec::with_capacity(k);
    let mut nearest = vec![f64::INFINITY; n];
    while medoids.len() < k {
        let best = (0..n)
            .filter(|c| !medoids.contains(c))
            .map(|c| {
                let total: f64 = (0..n).map(|i| nearest[i].min(d[i][c])).sum();
                (c, total)
            })
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let Some((c, _)) = best else { break };
        medoids.push(c);
        for i in 0..n {
            nearest[i] = nearest[i].min(d[i][c]);
        }
    }
    // SWAP: the best exchange of a medoid for another point while one lowers the cost.
    let mut current = cost(&medoids);
    for _ in 0..100 {
        let mut best: Option<(usize, usize, f64)> = None;
        for slot in 0..medoids.len() {
            for o in (0..n).filter(|o| !medoids.contains(o)) {
                let mut trial = medoids.clone();
                trial[slot] = o;
                let c = cost(&trial);
                if c < current - 1e-12 && best.is_none_or(|b| c < b.2) {
                    best = Some((slot, o, c));
                }
            }
        }
        match best {
            Some((slot, o, c)) => {
                medoids[slot] = o;
                current = c;
            }
            None => break,
        }
    }
    (medoids, current)
}

/// Pelleg and Moore's criterion for one dimension: the log-likelihood of the points under
/// one normal per cluster around its medoid with a shared variance, less half the
/// parameters (k - 1 shares, k centres, one variance) times the log of the points.
fn bic(distances_to_medoid: &[f64], assigned: &[usize], k: usize) -> Option<f64> {
    let r = distances_to_medoid.len();
    if r <= k {
        return None;
    }
    let squares: f64 = distances_to_medoid.iter().map(|d| d * d).sum();
    let variance = (squares / (r - k) as f64).max(NOISE * NOISE);
    let mut sizes = vec![0usize; k];
    for &a in assigned {
        sizes[a] += 1;
    }
    let rf = r as f64;
    let likelihood: f64 = sizes
        .iter()
        .filter(|&&s| s > 0)
        .map(|&s| {
            let s = s as f64;
            s * s.ln()
                - s * rf.ln()
                - s / 2.0 * (2.0 * std::f64::consts::PI).ln()
                - s / 2.0 * variance.ln()
        })
        .sum::<f64>()
        - squares / (2.0 * variance);
    let parameters = (2 * k) as f64;
    Some(likelihood - parameters / 2.0 * rf.ln())
}

/// A cluster with its medoid's index in `models` and its members with their
/// distance to the medoid.
type Assigned = (Cluster, usize, Vec<(usize, f64)>);

/// Clusters `models` (compressed, [`crate::compress`]) as AutomaDeD does, the outliers'
/// transitions named on `originals` (the same ranks in the same order, uncompressed); `top`
/// outliers at most. `None` for fewer than three models (nothing to cluster).
pub fn cluster(models: &[RankModel], originals: &[RankModel], top: usize) -> Option<Clustering> {
    if models.len() < 3 {
        return None;
    }
    let totals: Vec<f64> = models.iter().map(outliers::total_time).collect();
    let between = |i: usize, j: usize| {
        outliers::dissimilarity_of(&models[i], totals[i], &models[j], totals[j])
    };
    let sampled = sample(models.len());
    let n = sampled.len();
    let mut d = vec![vec![0.0; n]; n];
    for a in 0..n {
        for b in a + 1..n {
            let x = between(sampled[a], sampled[b]);
            (d[a][b], d[b][a]) = (x, x);
        }
    }
    let mut tried: Vec<(usize, f64, Vec<usize>)> = Vec::new();
    for k in 1..=MAX_K.min(n - 1) {
        let (medoids, _) = pam(&d, k);
        let (near, assigned): (Vec<f64>, Vec<usize>) = (0..n)
            .map(|i| {
                let (slot, dist) = medoids
                    .iter()
                    .enumerate()
                    .map(|(s, &m)| (s, d[i][m]))
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .expect("k >= 1");
                (dist, slot)
            })
            .unzip();
        let Some(score) = bic(&near, &assigned, medoids.len()) else {
            break;
        };
        let perfect = near.iter().all(|&x| x <= 1e-12);
        tried.push((k, score, medoids));
        if perfect {
            break; // every sampled rank is a medoid's twin: more clusters only cost
        }
    }
    let (_, _, medoids) = tried
        .iter()
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?
        .clone();
    let medoids: Vec<usize> = medoids.iter().map(|&m| sampled[m]).collect();

    // Every rank to its nearest medoid: (index in `models`, distance).
    let mut members: Vec<Vec<(usize, f64)>> = vec![Vec::new(); medoids.len()];
    for i in 0..models.len() {
        let (slot, dist) = medoids
            .iter()
            .enumerate()
            .map(|(s, &m)| (s, if m == i { 0.0 } else { between(i, m) }))
            .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .expect("k >= 1");
        members[slot].push((i, dist));
    }
    let mut clusters: Vec<Assigned> = members
        .into_iter()
        .enumerate()
        .filter(|(_, m)| !m.is_empty())
        .map(|(slot, m)| {
            let spread = {
                let mut d: Vec<f64> = m.iter().map(|x| x.1).collect();
                d.sort_by(f64::total_cmp);
                d[d.len() / 2]
            };
            let separation = medoids
                .iter()
                .enumerate()
                .filter(|&(s, _)| s != slot)
                .map(|(_, &o)| between(medoids[slot], o))
                .fold(f64::INFINITY, f64::min);
            let mut ranks: Vec<u32> = m.iter().map(|&(i, _)| models[i].rank).collect();
            ranks.sort_unstable();
            let cluster = Cluster {
                medoid: models[medoids[slot]].rank,
                ranks,
                spread,
                separation,
            };
            (cluster, medoids[slot], m)
        })
        .collect();
    clusters.sort_by(|a, b| {
        b.0.ranks
            .len()
            .cmp(&a.0.ranks.len())
            .then(a.0.medoid.cmp(&b.0.medoid))
    });

    let few = ((models.len() as f64 * APART_SHARE).floor() as usize).clamp(1, APART_MAX);
    let mut apart: Vec<usize> = (0..clusters.len())
        .filter(|&c| {
            let c = &clusters[c].0;
            clusters.len() > 1 && c.ranks.len() <= few && c.separation >= APART_DISTANCE
        })
        .collect();
    apart.sort_by(|&a, &b| {
        clusters[b]
            .0
            .separation
            .total_cmp(&clusters[a].0.separation)
            .then(a.cmp(&b))
    });
    let mut found: Vec<ClusterOutlier> = Vec::new();
    for (c, (cluster, medoid, m)) in clusters.iter().enumerate() {
        if apart.contains(&c) {
            continue;
        }
        let spread = cluster.spread.max(NOISE);
        for &(i, dist) in m {
            let score = dist / spread;
            if score >= OUTLIER_SCORE {
                found.push(ClusterOutlier {
                    rank: models[i].rank,
                    medoid: cluster.medoid,
                    distance: dist,
                    score,
                    edges: outliers::isolate(&originals[i], &originals[*medoid]),
                });
            }
        }
    }
    found.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.rank.cmp(&b.rank)));
    found.truncate(top);
    Some(Clustering {
        clusters: clusters.into_iter().map(|c| c.0).collect(),
        bic: tried.iter().map(|t| (t.0, t.1)).collect(),
        apart,
        outliers: found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{edge, halo, key};
    use std::collections::BTreeMap;

    /// A master that sends and receives, for workers that receive, compute and send.
    fn master(rank: u32) -> RankModel {
        let mut edges = BTreeMap::new();
        edges.insert(key("Send", "Recv"), edge(1.0, 1e-5));
        edges.insert(key("Recv", "Send"), edge(1.0, 1e-5));
        RankModel { rank, edges }
    }

    #[test]
    fn a_fault_in_a_few_ranks_alike_is_a_cluster_apart() {
        // Three of 40 ranks compute five times as long: each is the other's nearest
        // neighbour, so nearest neighbours see nothing unusual.
        let mut models: Vec<RankModel> = (0..40)
            .map(|r| halo(r, 0.002 * (1.0 + 0.01 * (r % 3) as f64)))
            .collect();
        for r in [7, 21, 33] {
            models[r] = halo(r as u32, 0.010);
        }
        let nn = outliers::outliers(&models, 5);
        assert!(
            nn.abnormal.iter().all(|a| a.distance < 0.25),
            "nearest neighbours should miss them: {nn:#?}"
        );
        let c = cluster(&models, &models, 5).unwrap();
        assert_eq!(c.clusters.len(), 2, "{c:#?}");
        assert_eq!(c.apart.len(), 1, "{c:#?}");
        assert_eq!(c.clusters[c.apart[0]].ranks, vec![7, 21, 33]);
        assert_eq!(c.abnormal_ranks(), vec![7, 21, 33]);
        assert_eq!(c.clusters[0].ranks.len(), 37);
    }

    #[test]
    fn a_master_and_a_slow_worker_are_each_a_behaviour_of_their_own() {
        let mut models = vec![master(0)];
        models.extend((1..32).map(|r| halo(r, 0.002 * (1.0 + 0.02 * (r % 4) as f64))));
        models[9] = halo(9, 0.0032);
        let c = cluster(&models, &models, 5).unwrap();
        assert_eq!(c.clusters.len(), 3, "{c:#?}");
        let bic_k = c.bic.iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap().0;
        assert_eq!(bic_k, 3);
        // The master is farthest from the rest: first.
        assert_eq!(c.abnormal_ranks(), vec![0, 9], "{c:#?}");
        assert!(c.outliers.is_empty());
    }

    #[test]
    fn a_slow_rank_outside_the_sample_is_an_outlier_of_its_cluster() {
        let mut models: Vec<RankModel> = (0..200)
            .map(|r| halo(r, 0.002 * (1.0 + 0.02 * (r % 4) as f64)))
            .collect();
        assert!(!sample(200).contains(&10));
        models[10] = halo(10, 0.0032);
        let c = cluster(&models, &models, 5).unwrap();
        assert_eq!(c.clusters.len(), 1, "{c:#?}");
        assert_eq!(c.abnormal_ranks(), vec![10], "{c:#?}");
        let o = &c.outliers[0];
        assert!(o.score >= OUTLIER_SCORE, "{o:#?}");
        assert_eq!(o.edges[0].0, key("Waitall", "Irecv"));
    }

    #[test]
    fn ranks_alike_are_one_cluster() {
        let models: Vec<RankModel> = (0..100)
            .map(|r| halo(r, 0.002 * (1.0 + 0.03 * (r % 5) as f64)))
            .collect();
        let c = cluster(&models, &models, 5).unwrap();
        assert_eq!(c.clusters.len(), 1, "{c:#?}");
        assert!(c.apart.is_empty() && c.outliers.is_empty(), "{c:#?}");
        assert!(c.abnormal_ranks().is_empty());
        assert_eq!(c.clusters[0].ranks.len(), 100);
        assert!(cluster(&models[..2], &models[..2], 5).is_none());
    }

    #[test]
    fn pam_finds_the_two_groups() {
        // Points on a line: 0, 1, 2 and 10, 11.
        let xs = [0.0, 1.0, 2.0, 10.0, 11.0];
        let d: Vec<Vec<f64>> = xs
            .iter()
            .map(|a| xs.iter().map(|b| (a - b as &f64).abs()).collect())
            .collect();
        let (mut medoids, cost) = pam(&d, 2);
        medoids.sort_unstable();
        assert_eq!(medoids[0], 1);
        assert!(medoids[1] == 3 || medoids[1] == 4);
        assert_eq!(cost, 3.0);
    }
}
