//! A rank's semi-Markov model, as AutomaDeD builds one, from the PMPI library's history:
//! states are MPI call sites, an edge is a transition from one site to the next in a
//! thread, with its probability among the transitions out of its source and the time
//! distributions of the first call and of the computation between the two.

use crate::normal::Normal;
use std::collections::{BTreeMap, HashMap};
use strata_result::pmpi::{PmpiHistory, PmpiSite, PmpiTimes, PmpiTransition};

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

/// The state a rank is in when read, as the destination of its last transition when it
/// has been there far longer than any transition it ever made ([`OPEN_FACTOR`],
/// [`OPEN_MARGIN_NS`]): still in the call it entered, or computing since its last call
/// returned. A rank hung for seconds is then unlike the ranks that wait for it (whose
/// histories up to then it shares); in a job that moves, every rank's current state is
/// short and none is added.
pub const STILL_IN_CALL: &str = "(still in the call when read)";
pub const STILL_COMPUTING: &str = "(still computing after it when read)";

/// A current state joins the model past this many times the rank's longest transition, and
/// at least [`OPEN_MARGIN_NS`] past it: sampling stops the ranks and a loaded node
/// deschedules them, so a moving rank was read 80 ms into a computation that never took
/// more than 20 ms.
pub const OPEN_FACTOR: u64 = 2;
pub const OPEN_MARGIN_NS: u64 = 500_000_000;

/// The site a rank is at when read, and whether it is still in the call there (else it
/// computes after it returned); or why that is not known.
pub(crate) fn current_site(history: &PmpiHistory) -> Result<(&PmpiSite, bool), String> {
    if history.in_call_ns.is_some() {
        let mut open = history.sites.iter().filter(|s| s.entered > s.completed);
        return match (open.next(), open.next()) {
            (Some(site), None) => Ok((site, true)),
            (None, _) => Err("in a call at no recorded site".into()),
            (Some(_), Some(_)) => Err("in calls at several sites at once (several threads)".into()),
        };
    }
    let last = history
        .events
        .last()
        .ok_or_else(|| "no MPI call completed yet".to_string())?;
    let site = last
        .site
        .and_then(|i| history.sites.iter().find(|s| s.index == i))
        .ok_or_else(|| "its last call's site was not recorded".to_string())?;
    Ok((site, false))
}

/// A history's transitions by their sites' names (`None`: the thread's start), leaving out
/// those whose sites it does not name.
pub(crate) fn named_transitions(
    history: &PmpiHistory,
) -> impl Iterator<Item = (Option<String>, String, &PmpiTransition)> {
    let names: HashMap<u32, String> = history
        .sites
        .iter()
        .map(|s| (s.index, state_name(s)))
        .collect();
    history.transitions.iter().filter_map(move |t| {
        let to = names.get(&t.to)?.clone();
        let from = match t.from {
            None => None,
            Some(f) => Some(names.get(&f)?.clone()),
        };
        Some((from, to, t))
    })
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
        let mut out_of: HashMap<Option<u32>, u64> = HashMap::new();
        for t in &history.transitions {
            *out_of.entry(t.from).or_default() += t.count;
        }
        let mut edges = BTreeMap::new();
        for (from, to, t) in named_transitions(history) {
            let total = out_of[&t.from].max(1);
            edges.insert(
                EdgeKey { from, to },
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
        if let Some((key, edge)) = open_state(history) {
            edges.insert(key, edge);
        }
        RankModel { rank, edges }
    }
}

/// The rank's current state as an edge ([`STILL_IN_CALL`], [`STILL_COMPUTING`]), when it
/// has lasted longer than the longest transition in its history.
fn open_state(history: &PmpiHistory) -> Option<(EdgeKey, Edge)> {
    let longest_ns = history
        .sites
        .iter()
        .filter_map(|s| s.longest_ns)
        .chain(history.transitions.iter().flat_map(|t| {
            let between = t.between.as_ref().map(|b| b.max_ns);
            let within = t.within.as_ref().map(|w| w.max_ns);
            between.into_iter().chain(within)
        }))
        .max()?;
    let (site, in_call) = current_site(history).ok()?;
    let (to, ns) = if in_call {
        (STILL_IN_CALL, history.in_call_ns?)
    } else {
        (STILL_COMPUTING, history.since_return_ns?)
    };
    if ns <= (longest_ns * OPEN_FACTOR).max(longest_ns + OPEN_MARGIN_NS) {
        return None;
    }
    let time = Some(Normal {
        mean: ns as f64 / 1e9,
        sd: 0.0,
    });
    let (within, between) = if to == STILL_IN_CALL {
        (time, None)
    } else {
        (None, time)
    };
    Some((
        EdgeKey {
            from: Some(state_name(site)),
            to: to.to_string(),
        },
        Edge {
            count: 1,
            probability: 1.0,
            times: Times { within, between },
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_state_longer_than_every_transition_is_an_edge_of_its_own() {
        let mut recv = site(9, "MPI_Recv", 12);
        (recv.entered, recv.completed, recv.longest_ns) = (41, 40, Some(3_000_000));
        let history = |in_call_ns: u64| PmpiHistory {
            sites: vec![recv.clone()],
            transitions: vec![PmpiTransition {
                from: Some(9),
                to: 9,
                count: 40,
                between: Some(PmpiTimes {
                    mean_ns: 1_000_000,
                    sd_ns: 0,
                    max_ns: 2_000_000,
                }),
                ..PmpiTransition::default()
            }],
            in_call_ns: Some(in_call_ns),
            ..PmpiHistory::default()
        };
        let open = EdgeKey {
            from: Some("MPI_Recv in main (halo.c:12)".into()),
            to: STILL_IN_CALL.into(),
        };
        // In it for 5 s, when no call or computation ever took more than 3 ms.
        let m = RankModel::from_history(0, &history(5_000_000_000));
        assert_eq!(m.edges[&open].times.within.unwrap().mean, 5.0);
        // A call of a moving rank, read 1 ms in, or 80 ms in after the sampling held it:
        // nothing added.
        for ns in [1_000_000, 80_000_000] {
            let m = RankModel::from_history(0, &history(ns));
            assert!(!m.edges.contains_key(&open));
        }
    }
}
