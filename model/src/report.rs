//! The runtime model's answer on a result: the ranks' models from their MPI histories
//! (`ranks[].pmpi.history`), the abnormal ranks with the transitions that make them so, and
//! the progress dependence with the least progressed ranks. The verdict shows it under its
//! own answer and falls back on its least progressed ranks; `result.json` carries it as
//! `runtime_model` (`docs/FORMATS.md`).

use crate::cluster::{self, Clustering};
use crate::compress;
use crate::dependence::Dependence;
use crate::outliers::{self, Difference, Outliers};
use crate::smm::{Edge, EdgeKey, RankModel, STILL_COMPUTING, STILL_IN_CALL};
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use strata_filters::taskset::{format_set, format_set_shortened};
use strata_filters::{RankSet, TaskSet};
use strata_result::StrataResult;
use strata_result::pmpi::PmpiHistory;

/// Abnormal ranks named, at most (AutomaDeD's "top 5").
pub const TOP: usize = 5;

/// A rank stands out when its distance to its nearest neighbour is at least this many times
/// the median rank's, and at least [`MIN_DISTANCE`]: timing noise alone keeps every rank a
/// little apart from every other.
pub const STANDS_OUT: f64 = 3.0;
/// A quarter of the ranks' time spent differently (times weigh by their share of it): on a
/// loaded 2-core node ranks alike stayed within 0.12 of each other, and a rank computing
/// ten times as long was 0.48 to 1.3 from its nearest neighbour.
pub const MIN_DISTANCE: f64 = 0.25;

/// One transition of an abnormal rank that differs from its neighbour's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DifferentTransition {
    /// `None`: the rank's start.
    pub from: Option<String>,
    pub to: String,
    /// Its share of the distance.
    pub difference: f64,
    /// How it differs: `computation between: 20.1 ms vs 2.0 ms`.
    pub what: String,
}

/// A rank far from its nearest neighbour.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AbnormalRank {
    pub rank: u32,
    pub distance: f64,
    pub nearest: u32,
    /// Whether it stands out from the median rank ([`STANDS_OUT`]).
    pub stands_out: bool,
    pub transitions: Vec<DifferentTransition>,
}

/// A rank far from its cluster's medoid.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutlierRank {
    pub rank: u32,
    pub medoid: u32,
    pub distance: f64,
    /// In spreads of its cluster.
    pub score: f64,
    pub transitions: Vec<DifferentTransition>,
}

/// The ranks' behaviours by clustering ([`mod@crate::cluster`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviours {
    pub clustering: Clustering,
    pub outliers: Vec<OutlierRank>,
}

/// The runtime model of one result.
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeModel {
    /// Ranks with an MPI history.
    pub ranks: RankSet,
    /// Sampled ranks without one (no library, not read, no call yet).
    pub without: RankSet,
    /// By nearest neighbours.
    pub abnormal: Vec<AbnormalRank>,
    pub median_distance: f64,
    /// By clustering; `None` for fewer than three ranks.
    pub behaviours: Option<Behaviours>,
    /// Transitions per rank before and after compression ([`crate::compress`]), means.
    pub transitions: (f64, f64),
    /// The progress dependence, or why there is none.
    pub dependence: Result<Dependence, String>,
}

fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

/// How a rank's transition differs from its neighbour's (`by` part, as the distance counts
/// it), by its largest parts.
fn what(
    key: &EdgeKey,
    mine: Option<&Edge>,
    theirs: Option<&Edge>,
    nearest: u32,
    by: &Difference,
) -> String {
    let call = key
        .from
        .as_deref()
        .and_then(|f| f.split(' ').next())
        .unwrap_or("the first call");
    let open = |e: &Edge| {
        let time = e.times.within.or(e.times.between).map_or(0.0, |t| t.mean);
        if key.to == STILL_IN_CALL {
            format!("still in {call} for {} when read", seconds(time))
        } else {
            format!("computing after {call} for {} when read", seconds(time))
        }
    };
    let opened = key.to == STILL_IN_CALL || key.to == STILL_COMPUTING;
    match (mine, theirs) {
        (Some(e), None) if opened => {
            return format!(
                "{}, longer than any transition it made; rank {nearest} was not",
                open(e)
            );
        }
        (None, Some(e)) if opened => {
            return format!("rank {nearest} was {}; this rank was not", open(e));
        }
        _ => {}
    }
    let (a, b) = match (mine, theirs) {
        (None, Some(e)) => return format!("never made; rank {nearest} made it {} times", e.count),
        (Some(e), None) => return format!("made {} times; rank {nearest} never", e.count),
        (Some(a), Some(b)) => (a, b),
        (None, None) => return "the same".to_string(),
    };
    // Every large part: a slow rank computes longer *and* waits less.
    let mut parts: Vec<(f64, String)> = Vec::new();
    if let (Some(x), Some(y)) = (a.times.between, b.times.between) {
        let text = format!(
            "computation between: {} vs {}",
            seconds(x.mean),
            seconds(y.mean)
        );
        parts.push((by.between, text));
    }
    if let (Some(x), Some(y)) = (a.times.within, b.times.within) {
        let text = format!("time in {call}: {} vs {}", seconds(x.mean), seconds(y.mean));
        parts.push((by.within, text));
    }
    parts.push((
        by.probability,
        format!(
            "taken {:.0}% vs {:.0}% of the times out of {call}",
            a.probability * 100.0,
            b.probability * 100.0
        ),
    ));
    // The largest and those near it, in that order: computation, call, choice.
    let largest = parts.iter().map(|p| p.0).fold(0.0, f64::max);
    parts
        .into_iter()
        .filter(|(d, _)| *d == largest || *d >= largest * NEAR)
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("; ")
}

/// A part of a transition's difference named beside the largest when at least this share
/// of it.
const NEAR: f64 = 0.5;

/// How `mine`'s transitions `edges` differ from `theirs` (rank `like`), as the report
/// names them.
fn different(
    mine: &RankModel,
    theirs: &RankModel,
    edges: &[(EdgeKey, f64)],
) -> Vec<DifferentTransition> {
    let totals = (outliers::total_time(mine), outliers::total_time(theirs));
    edges
        .iter()
        .map(|(key, difference)| DifferentTransition {
            from: key.from.clone(),
            to: key.to.clone(),
            difference: *difference,
            what: {
                let (m, t) = (mine.edges.get(key), theirs.edges.get(key));
                let by = outliers::difference(m.map(|e| (e, totals.0)), t.map(|e| (e, totals.1)));
                what(key, m, t, theirs.rank, &by)
            },
        })
        .collect()
}

fn first_transition(transitions: &[DifferentTransition]) -> String {
    transitions
        .first()
        .map(|t| {
            format!(
                ": {} -> {}: {}",
                t.from.as_deref().unwrap_or("the start"),
                t.to,
                t.what
            )
        })
        .unwrap_or_default()
}

impl RuntimeModel {
    /// The model of `result`'s ranks that have an MPI history; `None` when fewer than two
    /// have one (nothing to compare).
    pub fn of(result: &StrataResult) -> Option<RuntimeModel> {
        let mut with: Vec<(u32, &PmpiHistory)> = Vec::new();
        let mut without = RankSet::new();
        for r in &result.meta.ranks {
            match r.pmpi.as_ref().and_then(|p| p.history.as_ref()) {
                Some(h) => with.push((r.rank, h)),
                None if r.error.is_none() => {
                    without.insert(r.rank);
                }
                None => {}
            }
        }
        RuntimeModel::of_histories(&with, without)
    }

    /// The model of `ranks` (rank, history); `without` lists the sampled ranks that had
    /// none.
    pub fn of_histories(ranks: &[(u32, &PmpiHistory)], without: RankSet) -> Option<RuntimeModel> {
        if ranks.len() < 2 {
            return None;
        }
        let models: Vec<RankModel> = ranks
            .iter()
            .map(|&(rank, h)| RankModel::from_history(rank, h))
            .collect();
        let compressed = compress::compress(&models);
        let count = |ms: &[RankModel]| {
            ms.iter().map(|m| m.edges.len()).sum::<usize>() as f64 / ms.len() as f64
        };
        let transitions = (count(&models), count(&compressed));
        let by_rank: HashMap<u32, &RankModel> = models.iter().map(|m| (m.rank, m)).collect();
        let Outliers {
            abnormal,
            median_distance,
        } = outliers::outliers_of(&compressed, &models, TOP);
        let abnormal = abnormal
            .into_iter()
            .map(|a| AbnormalRank {
                rank: a.rank,
                distance: a.distance,
                nearest: a.nearest,
                stands_out: a.distance >= MIN_DISTANCE
                    && a.distance >= STANDS_OUT * median_distance,
                transitions: different(by_rank[&a.rank], by_rank[&a.nearest], &a.edges),
            })
            .collect();
        let behaviours = cluster::cluster(&compressed, &models, TOP).map(|clustering| {
            let outliers = clustering
                .outliers
                .iter()
                .map(|o| OutlierRank {
                    rank: o.rank,
                    medoid: o.medoid,
                    distance: o.distance,
                    score: o.score,
                    transitions: different(by_rank[&o.rank], by_rank[&o.medoid], &o.edges),
                })
                .collect();
            Behaviours {
                clustering,
                outliers,
            }
        });
        Some(RuntimeModel {
            ranks: ranks.iter().map(|&(r, _)| r).collect(),
            without,
            abnormal,
            median_distance,
            behaviours,
            transitions,
            dependence: Dependence::of(ranks),
        })
    }

    /// The least progressed ranks when one class of them is behind every other class.
    pub fn behind_all(&self) -> Option<(RankSet, String)> {
        let d = self.dependence.as_ref().ok()?;
        let lp = d.behind_all()?;
        let class = &d.classes[lp];
        let ahead = d
            .waits_for
            .iter()
            .find(|&&(_, b)| b == lp)
            .map(|&(a, _)| a)?;
        Some((
            class.ranks.clone(),
            format!("{}, {}", class.position.describe(), d.why_behind(lp, ahead)),
        ))
    }

    /// The lines shown under the verdict, rank lists shortened to `max_list` characters.
    pub fn text(&self, max_list: usize) -> String {
        let short = |s: &RankSet| format_set_shortened(s, max_list);
        let mut out = format!(
            "  MPI histories (runtime model of {} ranks):\n",
            self.ranks.count()
        );
        match &self.dependence {
            Err(why) => out.push_str(&format!("    progress: not decided, because {why}\n")),
            Ok(d) if d.classes.len() == 1 => out.push_str(&format!(
                "    progress: every rank at one place ({})\n",
                d.classes[0].position.describe()
            )),
            Ok(d) if d.least_progressed.is_empty() => out.push_str(
                "    progress: not decided, because the ranks' places do not compare (they are \
                 on branches of the code neither reaches)\n",
            ),
            Ok(d) => {
                for &lp in d.least_progressed.iter().take(4) {
                    let (_, evidence) = least_progressed(d, lp, max_list);
                    out.push_str(&format!("    least progressed: {evidence}\n"));
                }
            }
        }
        if let Ok(d) = &self.dependence {
            for (rank, why) in d.unplaced.iter().take(4) {
                out.push_str(&format!("    not placed: rank {rank}: {why}\n"));
            }
        }
        match self
            .abnormal
            .iter()
            .filter(|a| a.stands_out)
            .collect::<Vec<_>>()
        {
            standing if standing.is_empty() => out.push_str(&match self.abnormal.first() {
                Some(a) => format!(
                    "    abnormal: no rank stands out (largest distance {:.2}, rank {}; median \
                     {:.2})\n",
                    a.distance, a.rank, self.median_distance
                ),
                None => "    abnormal: none (every rank's model has an identical twin)\n".into(),
            }),
            standing => {
                for a in standing {
                    out.push_str(&format!("    abnormal: {}\n", self.abnormal_evidence(a)));
                }
            }
        }
        if let Some(b) = &self.behaviours {
            out.push_str(&b.text(max_list));
        }
        if !self.without.is_empty() {
            out.push_str(&format!(
                "    without a history: [{}]\n",
                short(&self.without)
            ));
        }
        out
    }

    /// The `runtime_model` object of `result.json`.
    pub fn to_json(&self) -> serde_json::Value {
        let progress = match &self.dependence {
            Err(why) => json!({ "not_decided": why }),
            Ok(d) => json!({
                "loops": d.loops.iter().map(|l| json!({
                    "header": l.header,
                    "back_edges": l.back_edges.iter().map(|(f, t)| json!({"from": f, "to": t}))
                        .collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "classes": d.classes.iter().map(|c| json!({
                    "ranks": format_set(&c.ranks),
                    "position": c.position.describe(),
                    "in_call": c.position.in_call,
                    "iterations": c.iterations.iter().map(|&(l, n)| json!({
                        "loop": l, "completed": n,
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "waits_for": d.waits_for.iter().map(|&(a, b)| json!({"class": a, "on": b}))
                    .collect::<Vec<_>>(),
                "least_progressed": d.least_progressed.iter().map(|&i| format_set(&d.classes[i].ranks))
                    .collect::<Vec<_>>(),
                "unplaced": d.unplaced.iter().map(|(r, why)| json!({"rank": r, "why": why}))
                    .collect::<Vec<_>>(),
            }),
        };
        json!({
            "ranks": format_set(&self.ranks),
            "without_history": format_set(&self.without),
            "transitions_per_rank": self.transitions.0,
            "compressed_transitions_per_rank": self.transitions.1,
            "abnormal": self.abnormal,
            "median_distance": self.median_distance,
            "behaviours": self.behaviours.as_ref().map(Behaviours::to_json),
            "progress": progress,
        })
    }
}

/// One thing the runtime model found about some ranks, with its evidence, in the order the
/// terminal UI steps through them: who is behind, then who behaves unlike the rest.
#[derive(Clone, Debug, PartialEq)]
pub struct Finding {
    pub ranks: RankSet,
    /// `least progressed`, `abnormal`, `apart` or `outlier`.
    pub kind: &'static str,
    /// The line the text report gives it, after its kind.
    pub evidence: String,
}

impl RuntimeModel {
    /// The least progressed classes, the abnormal ranks that stand out, the clusters apart
    /// and the outliers, each set of ranks once (under its first finding), rank lists
    /// shortened to `max_list` characters.
    pub fn findings(&self, max_list: usize) -> Vec<Finding> {
        let mut out: Vec<Finding> = Vec::new();
        let mut add = |ranks: RankSet, kind: &'static str, evidence: String| {
            if !out.iter().any(|f| f.ranks == ranks) {
                out.push(Finding {
                    ranks,
                    kind,
                    evidence,
                });
            }
        };
        if let Ok(d) = &self.dependence
            && d.classes.len() > 1
        {
            for &lp in &d.least_progressed {
                let (ranks, evidence) = least_progressed(d, lp, max_list);
                add(ranks, "least progressed", evidence);
            }
        }
        for a in self.abnormal.iter().filter(|a| a.stands_out) {
            add(one(a.rank), "abnormal", self.abnormal_evidence(a));
        }
        if let Some(b) = &self.behaviours {
            for &a in &b.clustering.apart {
                add(b.ranks(a), "apart", b.apart_evidence(a, max_list));
            }
            for o in &b.outliers {
                add(one(o.rank), "outlier", outlier_evidence(o));
            }
        }
        out
    }

    /// `rank 7 (distance 0.55 from rank 60, median 0.03): A -> B: ...`.
    fn abnormal_evidence(&self, a: &AbnormalRank) -> String {
        format!(
            "rank {} (distance {:.2} from rank {}, median {:.2}){}",
            a.rank,
            a.distance,
            a.nearest,
            self.median_distance,
            first_transition(&a.transitions)
        )
    }
}

fn one(rank: u32) -> RankSet {
    let mut set = RankSet::new();
    set.insert(rank);
    set
}

/// Class `lp`, least progressed: its ranks, and `[11] after MPI_Reduce ...: iteration 100
/// of ... vs 101, for [0-10,12-1023]`.
fn least_progressed(d: &Dependence, lp: usize, max_list: usize) -> (RankSet, String) {
    let short = |s: &RankSet| format_set_shortened(s, max_list);
    let class = &d.classes[lp];
    let aheads: Vec<usize> = d
        .waits_for
        .iter()
        .filter(|&&(_, b)| b == lp)
        .map(|&(a, _)| a)
        .collect();
    let mut ahead = RankSet::new();
    for &a in &aheads {
        ahead.union_with(&d.classes[a].ranks);
    }
    let why = aheads
        .first()
        .map(|&a| format!(": {}", d.why_behind(lp, a)))
        .unwrap_or_default();
    (
        class.ranks.clone(),
        format!(
            "[{}] {}{why}, for [{}]",
            short(&class.ranks),
            class.position.describe(),
            short(&ahead)
        ),
    )
}

/// `rank 3 (4.2 spreads from rank 0): A -> B: ...`.
fn outlier_evidence(o: &OutlierRank) -> String {
    format!(
        "rank {} ({:.1} spreads from rank {}){}",
        o.rank,
        o.score,
        o.medoid,
        first_transition(&o.transitions)
    )
}

/// Clusters shown in the text, at most.
const CLUSTERS_SHOWN: usize = 6;

impl Behaviours {
    fn ranks(&self, cluster: usize) -> RankSet {
        self.clustering.clusters[cluster]
            .ranks
            .iter()
            .copied()
            .collect()
    }

    /// The lines under the nearest neighbours': the clusters, those apart, the outliers.
    pub fn text(&self, max_list: usize) -> String {
        let c = &self.clustering;
        let mut out = String::new();
        let tried = c.bic.last().map_or(1, |b| b.0);
        let shown: Vec<String> = (0..c.clusters.len().min(CLUSTERS_SHOWN))
            .map(|i| {
                format!(
                    "[{}] like rank {}",
                    format_set_shortened(&self.ranks(i), max_list),
                    c.clusters[i].medoid
                )
            })
            .collect();
        out.push_str(&format!(
            "    behaviours: {} by clustering (k-medoids, k of 1-{tried} by BIC): {}{}\n",
            c.clusters.len(),
            shown.join("; "),
            if c.clusters.len() > CLUSTERS_SHOWN {
                "; ..."
            } else {
                ""
            }
        ));
        for &a in &c.apart {
            out.push_str(&format!(
                "    apart: {}\n",
                self.apart_evidence(a, max_list)
            ));
        }
        for o in &self.outliers {
            out.push_str(&format!("    outlier: {}\n", outlier_evidence(o)));
        }
        out
    }

    /// Cluster `a`, apart from the others: `[12] (1 of 16 ranks, 0.93 from ...)`.
    fn apart_evidence(&self, a: usize, max_list: usize) -> String {
        let c = &self.clustering;
        format!(
            "[{}] ({} of {} ranks, {:.2} from the nearest other behaviour)",
            format_set_shortened(&self.ranks(a), max_list),
            c.clusters[a].ranks.len(),
            c.clusters.iter().map(|x| x.ranks.len()).sum::<usize>(),
            c.clusters[a].separation
        )
    }

    /// The `behaviours` object of `runtime_model`.
    pub fn to_json(&self) -> serde_json::Value {
        let c = &self.clustering;
        let finite = |x: f64| if x.is_finite() { json!(x) } else { json!(null) };
        json!({
            "bic": c.bic.iter().map(|&(k, bic)| json!({"k": k, "bic": bic})).collect::<Vec<_>>(),
            "clusters": c.clusters.iter().enumerate().map(|(i, x)| json!({
                "ranks": format_set(&self.ranks(i)),
                "medoid": x.medoid,
                "spread": x.spread,
                "separation": finite(x.separation),
            })).collect::<Vec<_>>(),
            "apart": c.apart.iter().map(|&a| format_set(&self.ranks(a))).collect::<Vec<_>>(),
            "outliers": self.outliers,
            "abnormal_ranks": c.abnormal_ranks(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::edge;
    use crate::normal::Normal;

    /// `what` for two ranks that each make this one transition.
    fn said(key: &EdgeKey, a: Option<&Edge>, b: Option<&Edge>) -> String {
        fn with_total<'e>(key: &EdgeKey, e: &'e Edge) -> (&'e Edge, f64) {
            let one = RankModel {
                rank: 0,
                edges: [(key.clone(), e.clone())].into(),
            };
            (e, outliers::total_time(&one))
        }
        let by = outliers::difference(a.map(|e| with_total(key, e)), b.map(|e| with_total(key, e)));
        what(key, a, b, 3, &by)
    }

    #[test]
    fn a_difference_reads_by_its_largest_part() {
        let key = EdgeKey {
            from: Some("MPI_Waitall in main (halo.c:41)".into()),
            to: "MPI_Irecv in main (halo.c:30)".into(),
        };
        let (slow, mut fast) = (edge(1.0, 0.020), edge(1.0, 0.002));
        assert_eq!(
            said(&key, Some(&slow), Some(&fast)),
            "computation between: 20.0 ms vs 2.0 ms"
        );
        // The others wait for the slow one: both parts are named.
        fast.times.within = Some(Normal {
            mean: 0.018,
            sd: 1e-3,
        });
        assert_eq!(
            said(&key, Some(&slow), Some(&fast)),
            "computation between: 20.0 ms vs 2.0 ms; time in MPI_Waitall: 100.0 us vs 18.0 ms"
        );
        assert_eq!(
            said(&key, None, Some(&fast)),
            "never made; rank 3 made it 100 times"
        );
        let mut rare = edge(1.0, 0.002);
        rare.probability = 0.25;
        assert_eq!(
            said(&key, Some(&rare), Some(&edge(1.0, 0.002))),
            "taken 25% vs 100% of the times out of MPI_Waitall"
        );
        assert_eq!(seconds(2.5), "2.50 s");
        assert_eq!(seconds(2.5e-6), "2.5 us");
    }
}
