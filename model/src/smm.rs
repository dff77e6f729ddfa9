//! A rank's semi-Markov model, as AutomaDeD builds one, from the PMPI library's history:
//! states are MPI call sites, an edge is a transition from one site to the next in a
//! thread, with its probability among the transitions out of its source and the time
//! distributions of the first call and of the computation between the two.

use crate::normal::Normal;
use std::collections::{BTreeMap, HashMap};
use strata_result::pmpi::{PmpiHistory, PmpiSite, PmpiTimes};

/// A call site by what it is in the source, the same in every rank whatever its load
/// address: `MPI_Barrier in main (solver.c:41)`. Without symbols, by its call and address
/// (the same only in ranks loaded at the same address).
pub(crate) fn state_name(site: &PmpiSite) -> String {
    match (&site.function, &site.file, site.line) {
        (Some(f), Some(file), Some(line)) => {
            let base = file.rsplit('/').next().unwrap_or(file);
            format!("{} in {f} ({base}:{line})", site.call)
        }
        (Some(f), _, _) => format!("{} in {f}", site.call),
        _ => format!("{} at {:#x}", site.call, site.address),
    }
}

/// A transition: from a site (`None`: the thread's start) to a site.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EdgeKey {
    pub from: Option<String>,
    pub to: String,
}

impl EdgeKey {
    /// `MPI_Send in main (a.c:10) -> MPI_Recv in main (a.c:12)`.
    pub fn describe(&self) -> String {
        format!(
            "{} -> {}",
            self.from.as_deref().unwrap_or("the start"),
            self.to
        )
    }
}

/// An edge's two time distributions (absent while the library's clock could not say, and
/// for a thread's first call).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Times {
    /// In the first call.
    pub within: Option<Normal>,
    /// The computation between the two calls.
    pub between: Option<Normal>,
}

/// One edge of a rank's model.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    pub count: u64,
    /// Its share of the transitions out of its source.
    pub probability: f64,
    pub times: Times,
}

/// A rank's model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RankModel {
    pub rank: u32,
    pub edges: BTreeMap<EdgeKey, Edge>,
}

fn normal(t: &PmpiTimes) -> Normal {
    Normal {
        mean: t.mean_ns as f64 / 1e9,
        sd: t.sd_ns as f64 / 1e9,
    }
}

impl RankModel {
    /// The model of `rank` from its history. Transitions whose sites the history does not
    /// name are left out.
    pub fn from_history(rank: u32, history: &PmpiHistory) -> RankModel {
        let names: HashMap<u32, String> = history
            .sites
            .iter()
            .map(|s| (s.index, state_name(s)))
            .collect();
        let mut out_of: HashMap<Option<u32>, u64> = HashMap::new();
        for t in &history.transitions {
            *out_of.entry(t.from).or_default() += t.count;
        }
        let mut edges = BTreeMap::new();
        for t in &history.transitions {
            let Some(to) = names.get(&t.to) else { continue };
            let from = match t.from {
                None => None,
                Some(f) => match names.get(&f) {
                    Some(name) => Some(name.clone()),
                    None => continue,
                },
            };
            let total = out_of[&t.from].max(1);
            edges.insert(
                EdgeKey {
                    from,
                    to: to.clone(),
                },
                Edge {
                    count: t.count,
                    probability: t.count as f64 / total as f64,
                    times: Times {
                        within: t.within.as_ref().map(normal),
                        between: t.between.as_ref().map(normal),
                    },
                },
            );
        }
        RankModel { rank, edges }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_result::pmpi::PmpiTransition;

    pub(crate) fn site(index: u32, call: &str, line: u32) -> PmpiSite {
        PmpiSite {
            index,
            call: call.into(),
            address: 0x1000 + u64::from(index),
            function: Some("main".into()),
            file: Some("/src/halo.c".into()),
            line: Some(line),
            ..PmpiSite::default()
        }
    }

    #[test]
    fn edges_by_source_lines_with_their_probabilities() {
        let times = |mean_ns| PmpiTimes {
            mean_ns,
            sd_ns: 10,
            max_ns: mean_ns,
        };
        let history = PmpiHistory {
            sites: vec![site(7, "MPI_Send", 10), site(9, "MPI_Recv", 12)],
            transitions: vec![
                PmpiTransition {
                    from: None,
                    to: 7,
                    count: 1,
                    ..PmpiTransition::default()
                },
                PmpiTransition {
                    from: Some(7),
                    to: 9,
                    count: 3,
                    between: Some(times(2_000_000)),
                    within: Some(times(1_000)),
                },
                PmpiTransition {
                    from: Some(7),
                    to: 7,
                    count: 1,
                    ..PmpiTransition::default()
                },
            ],
            ..PmpiHistory::default()
        };
        let m = RankModel::from_history(3, &history);
        assert_eq!(m.edges.len(), 3);
        let key = EdgeKey {
            from: Some("MPI_Send in main (halo.c:10)".into()),
            to: "MPI_Recv in main (halo.c:12)".into(),
        };
        let e = &m.edges[&key];
        assert_eq!((e.count, e.probability), (3, 0.75));
        assert_eq!(e.times.between.unwrap().mean, 0.002);
        assert_eq!(
            key.describe(),
            "MPI_Send in main (halo.c:10) -> MPI_Recv in main (halo.c:12)"
        );
    }
}
