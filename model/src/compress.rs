//! AutomaDeD's graph compression ("Large scale debugging of parallel tasks with AutomaDeD",
//! 2011): a chain of states that every rank passes through the same way (one transition in,
//! one out, both made by every rank) becomes one compressed transition, its times in calls
//! and between them summed apart. Ranks are then compared on fewer dimensions, so that a
//! difference in one region is not drowned by the noise of many short transitions; the
//! transitions only some ranks make are never compressed, and the transitions that make a
//! rank abnormal are then named on its uncompressed model (the paper's drill-down).
//!
//! The paper keeps a loop's head and tail; here a state stays when any rank enters or leaves
//! it more than one way, and one state of each loop made only of chain states (the first by
//! name) stays so that the loop remains.

use crate::normal::Normal;
use crate::smm::{Edge, EdgeKey, RankModel, Times};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Two independent normal times added.
fn sum(a: Option<Normal>, b: Option<Normal>) -> Option<Normal> {
    match (a, b) {
        (Some(a), Some(b)) => Some(Normal {
            mean: a.mean + b.mean,
            sd: (a.sd * a.sd + b.sd * b.sd).sqrt(),
        }),
        (a, None) => a,
        (None, b) => b,
    }
}

/// The states every rank passes through one way: entered by one transition and left by
/// one, the same in every rank, and not a transition to itself.
fn chain_states(models: &[RankModel]) -> BTreeSet<String> {
    let mut support: HashMap<&EdgeKey, usize> = HashMap::new();
    for m in models {
        for k in m.edges.keys() {
            *support.entry(k).or_default() += 1;
        }
    }
    let common = |k: &EdgeKey| support.get(k).copied() == Some(models.len());
    // Per state, the transitions in and out over all ranks, and whether each rank has
    // exactly one of each.
    let mut candidates: Option<BTreeSet<String>> = None;
    for m in models {
        let mut ins: HashMap<&str, Vec<&EdgeKey>> = HashMap::new();
        let mut outs: HashMap<&str, Vec<&EdgeKey>> = HashMap::new();
        for k in m.edges.keys() {
            ins.entry(k.to.as_str()).or_default().push(k);
            if let Some(f) = &k.from {
                outs.entry(f.as_str()).or_default().push(k);
            }
        }
        let here: BTreeSet<String> = ins
            .iter()
            .filter(|(state, i)| {
                let o = outs.get(*state).map_or(&[][..], |o| &o[..]);
                i.len() == 1
                    && o.len() == 1
                    && common(i[0])
                    && common(o[0])
                    && i[0].from.as_deref() != Some(**state)
            })
            .map(|(state, _)| state.to_string())
            .collect();
        candidates = Some(match candidates {
            None => here,
            Some(c) => c.intersection(&here).cloned().collect(),
        });
    }
    let mut chain = candidates.unwrap_or_default();
    // A loop of chain states only: keep its first state by name.
    let Some(first) = models.first() else {
        return chain;
    };
    let next: HashMap<&str, &str> = first
        .edges
        .keys()
        .filter_map(|k| Some((k.from.as_deref()?, k.to.as_str())))
        .filter(|(f, _)| chain.contains(*f))
        .collect();
    let mut kept: Vec<String> = Vec::new();
    for start in &chain {
        let mut at = start.as_str();
        let mut smallest = start.as_str();
        let mut closed = false;
        for _ in 0..=chain.len() {
            match next.get(at) {
                Some(&n) if chain.contains(n) => {
                    smallest = smallest.min(n);
                    if n == start {
                        closed = true;
                        break;
                    }
                    at = n;
                }
                _ => break,
            }
        }
        if closed && smallest == start {
            kept.push(start.clone());
        }
    }
    for k in kept {
        chain.remove(&k);
    }
    chain
}

/// Each model with its common chains compressed (`chain_states`), in the same order.
pub fn compress(models: &[RankModel]) -> Vec<RankModel> {
    let chain = chain_states(models);
    if chain.is_empty() {
        return models.to_vec();
    }
    models
        .iter()
        .map(|m| {
            let out_of: HashMap<&str, (&EdgeKey, &Edge)> = m
                .edges
                .iter()
                .filter_map(|(k, e)| Some((k.from.as_deref()?, (k, e))))
                .filter(|(f, _)| chain.contains(*f))
                .collect();
            let mut edges = BTreeMap::new();
            for (key, edge) in &m.edges {
                if key.from.as_deref().is_some_and(|f| chain.contains(f)) {
                    continue; // inside a chain: part of the transition into its first state
                }
                if !chain.contains(&key.to) {
                    edges.insert(key.clone(), edge.clone());
                    continue;
                }
                let mut times = edge.times;
                let mut at = key.to.as_str();
                for _ in 0..chain.len() {
                    let Some((k, e)) = out_of.get(at) else { break };
                    times = Times {
                        within: sum(times.within, e.times.within),
                        between: sum(times.between, e.times.between),
                    };
                    at = k.to.as_str();
                    if !chain.contains(at) {
                        break;
                    }
                }
                edges.insert(
                    EdgeKey {
                        from: key.from.clone(),
                        to: format!("{} ... {at}", key.to),
                    },
                    Edge {
                        count: edge.count,
                        probability: edge.probability,
                        times,
                    },
                );
            }
            RankModel {
                rank: m.rank,
                edges,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(from: Option<&str>, to: &str) -> EdgeKey {
        EdgeKey {
            from: from.map(str::to_string),
            to: to.into(),
        }
    }

    fn edge(within: f64, between: f64) -> Edge {
        let n = |mean: f64| {
            Some(Normal {
                mean,
                sd: mean / 10.0,
            })
        };
        Edge {
            count: 10,
            probability: 1.0,
            times: Times {
                within: n(within),
                between: n(between),
            },
        }
    }

    /// Init, then a loop Irecv -> Isend -> Waitall -> Irecv.
    fn halo(rank: u32, compute: f64) -> RankModel {
        let mut edges = BTreeMap::new();
        edges.insert(key(None, "Init"), edge(0.0, 0.0));
        edges.insert(key(Some("Init"), "Irecv"), edge(0.1, 0.01));
        edges.insert(key(Some("Irecv"), "Isend"), edge(1e-5, 1e-6));
        edges.insert(key(Some("Isend"), "Waitall"), edge(1e-5, 1e-6));
        edges.insert(key(Some("Waitall"), "Irecv"), edge(1e-3, compute));
        RankModel { rank, edges }
    }

    #[test]
    fn a_loop_every_rank_makes_alike_becomes_one_transition() {
        let models = vec![halo(0, 0.002), halo(1, 0.004)];
        let c = compress(&models);
        // Init and the loop's Isend and Waitall are chain states; Irecv, entered from Init
        // and from Waitall, stays.
        let keys: Vec<EdgeKey> = c[1].edges.keys().cloned().collect();
        assert_eq!(
            keys,
            vec![
                key(None, "Init ... Irecv"),
                key(Some("Irecv"), "Isend ... Irecv"),
            ],
            "{c:#?}"
        );
        let loop_edge = &c[1].edges[&key(Some("Irecv"), "Isend ... Irecv")];
        let between = loop_edge.times.between.unwrap();
        assert!((between.mean - (0.004 + 2e-6)).abs() < 1e-12);
        let within = loop_edge.times.within.unwrap();
        assert!((within.mean - (1e-3 + 2e-5)).abs() < 1e-12);
        assert_eq!(loop_edge.count, 10);
    }

    #[test]
    fn a_loop_of_chain_states_keeps_its_first_state() {
        let models: Vec<RankModel> = (0..3)
            .map(|r| {
                let mut m = halo(r, 0.002);
                m.edges.remove(&key(None, "Init"));
                m.edges.remove(&key(Some("Init"), "Irecv"));
                m
            })
            .collect();
        let c = compress(&models);
        let keys: Vec<EdgeKey> = c[0].edges.keys().cloned().collect();
        assert_eq!(keys, vec![key(Some("Irecv"), "Isend ... Irecv")]);
    }

    #[test]
    fn a_transition_only_one_rank_makes_is_never_compressed() {
        let mut odd = halo(2, 0.002);
        odd.edges
            .insert(key(Some("Isend"), "Barrier"), edge(1e-3, 1e-3));
        odd.edges
            .insert(key(Some("Barrier"), "Waitall"), edge(1e-3, 1e-3));
        odd.edges
            .get_mut(&key(Some("Isend"), "Waitall"))
            .unwrap()
            .probability = 0.5;
        let models = vec![halo(0, 0.002), halo(1, 0.002), odd];
        let c = compress(&models);
        // Isend (two ways out in rank 2) and Waitall (two ways in) stay; the odd
        // transitions stay whole in rank 2.
        assert!(c[2].edges.contains_key(&key(Some("Isend"), "Barrier")));
        assert!(c[2].edges.contains_key(&key(Some("Barrier"), "Waitall")));
        assert!(c[0].edges.contains_key(&key(Some("Isend"), "Waitall")));
        assert!(c[0].edges.contains_key(&key(Some("Waitall"), "Irecv")));
        // Init still compresses into the first Irecv.
        assert!(c[0].edges.contains_key(&key(None, "Init ... Irecv")));
        assert!(c[0].edges.len() < models[0].edges.len());
    }
}
