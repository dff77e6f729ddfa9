//! What the wait-for graph proves, as an answer: a cycle of point-to-point waits (a
//! deadlock), a cycle through a collective (a mismatch or a missing participant), or ranks
//! stuck waiting for finished ones (a message never sent).

use crate::answer::{Confidence, Culprit, Decision, Kind};
use crate::arguments::Origin;
use crate::describe::doing_with_peers;
use crate::graph::{Wait, WaitFor};
use crate::prose::rank_list;
use crate::role::{Role, role};
use strata_filters::{RankSet, TaskSet};

/// What the wait-for graph proves, if anything: a cycle of point-to-point waits (a
/// deadlock), a cycle through a collective (a mismatch or a missing participant), or ranks
/// stuck waiting for finished ones (a message never sent).
pub(crate) fn from_graph(g: &WaitFor, partly: bool, evidence: &[String]) -> Option<Decision> {
    let roles: Vec<Role> = g.nodes.iter().map(|n| role(n.state)).collect();
    let sure = |nodes: &[usize]| match (partly, g.origin(nodes)) {
        (true, _) => Confidence::Guess,
        (false, Origin::MpiLibrary) => Confidence::Proved,
        (false, Origin::SourceAndVariables) => Confidence::Likely,
    };
    let mut evidence = evidence.to_vec();
    evidence.extend(stuck_edges(g));
    let p2p_cycles: Vec<&Vec<usize>> = g
        .cycles
        .iter()
        .filter(|c| c.iter().all(|&i| roles[i] == Role::WaitingPointToPoint))
        .collect();
    if !p2p_cycles.is_empty() {
        let named: Vec<usize> = p2p_cycles.iter().flat_map(|c| c.iter().copied()).collect();
        let cycles: Vec<String> = p2p_cycles.iter().map(|c| phrases(g, c)).collect();
        let summary = format!(
            "{} wait for each other in a cycle: {}",
            nodes_phrase(g, &named),
            cycles.join("; and ")
        );
        return Some(node_decision(
            g,
            Kind::DeadlockCycle,
            sure(&named),
            &named,
            summary,
            evidence,
        ));
    }
    if let Some(cycle) = g.cycles.first() {
        // A cycle through a collective: its members wait for ranks that are elsewhere. The
        // largest collective group is where the job is; the rest of the cycle left it.
        let largest = cycle
            .iter()
            .filter(|&&i| roles[i] == Role::WaitingCollective)
            .map(|&i| g.nodes[i].ranks.count())
            .max()
            .unwrap_or(0);
        let mut named: Vec<usize> = cycle
            .iter()
            .copied()
            .filter(|&i| roles[i] != Role::WaitingCollective || g.nodes[i].ranks.count() < largest)
            .collect();
        if named.is_empty() {
            named = cycle.clone();
        }
        let held: Vec<usize> = cycle
            .iter()
            .copied()
            .filter(|i| !named.contains(i))
            .collect();
        let summary = if held.is_empty() {
            format!(
                "ranks wait in different collectives on one communicator: {}",
                phrases(g, cycle)
            )
        } else {
            format!(
                "{} wait for {}, which {} elsewhere: {}",
                phrases(g, &held),
                nodes_phrase(g, &named),
                if named.len() == 1 && g.nodes[named[0]].ranks.count() == 1 {
                    "is"
                } else {
                    "are"
                },
                phrases(g, &named)
            )
        };
        return Some(node_decision(
            g,
            Kind::CollectiveMismatch,
            sure(cycle),
            &named,
            summary,
            evidence,
        ));
    }
    let waiting = g.waiting_for_finished();
    if !waiting.is_empty() {
        let summary = format!(
            "{}: {} finished, and will neither send nor receive",
            phrases(g, &waiting),
            if waiting.len() == 1 && g.nodes[waiting[0]].ranks.count() == 1 {
                "that rank has"
            } else {
                "they wait for ranks that have"
            }
        );
        return Some(node_decision(
            g,
            Kind::MessageNeverSent,
            sure(&waiting),
            &waiting,
            summary,
            evidence,
        ));
    }
    None
}

/// The stuck edges, a line each (a few: the graph is in the `verdict` object and in
/// `wait_for.dot`).
fn stuck_edges(g: &WaitFor) -> Vec<String> {
    const SHOWN: usize = 8;
    let mut lines: Vec<String> = g
        .nodes
        .iter()
        .enumerate()
        .filter(|&(i, _)| !g.released[i])
        .filter_map(|(_, n)| {
            let (targets, how) = match &n.wait {
                Wait::All(t) => (t, "all of"),
                Wait::Any(t) => (t, "any of"),
                _ => return None,
            };
            Some(format!(
                "wait-for: [{}] waits for {how} [{}]",
                rank_list(&n.ranks),
                rank_list(targets)
            ))
        })
        .collect();
    if lines.len() > SHOWN {
        let more = lines.len() - SHOWN;
        lines.truncate(SHOWN);
        lines.push(format!(
            "wait-for: {more} more stuck group(s), see wait_for.dot"
        ));
    }
    lines
}

/// Nodes named in a summary, at most [`PHRASED`] of them: a ring of 4,096 ranks is one
/// sentence, not 4,096 (the culprits and the graph keep them all).
fn phrases(g: &WaitFor, nodes: &[usize]) -> String {
    let mut out: Vec<String> = nodes
        .iter()
        .take(PHRASED)
        .map(|&i| node_phrase(g, i))
        .collect();
    if nodes.len() > PHRASED {
        out.push(format!("and {} more", nodes.len() - PHRASED));
    }
    out.join(", ")
}

const PHRASED: usize = 4;

/// `rank 0 in MPI_Recv from rank 1 at a.c:20`: one node, with its peers.
fn node_phrase(g: &WaitFor, i: usize) -> String {
    let n = &g.nodes[i];
    let (what, at) = doing_with_peers(n.state, n.arguments);
    let at = at.map(|p| format!(" at {}", p.short())).unwrap_or_default();
    let set = &n.ranks;
    let ranks = if set.count() == 1 {
        format!("rank {}", rank_list(set))
    } else {
        format!("ranks [{}]", rank_list(set))
    };
    format!("{ranks} {what}{at}")
}

fn nodes_phrase(g: &WaitFor, nodes: &[usize]) -> String {
    let mut all = RankSet::new();
    for &i in nodes {
        all.union_with(&g.nodes[i].ranks);
    }
    if all.count() == 1 {
        format!("rank {}", rank_list(&all))
    } else {
        format!("ranks [{}]", rank_list(&all))
    }
}

fn node_decision(
    g: &WaitFor,
    kind: Kind,
    confidence: Confidence,
    named: &[usize],
    summary: String,
    evidence: Vec<String>,
) -> Decision {
    let culprits = named
        .iter()
        .map(|&i| {
            let n = &g.nodes[i];
            Culprit::new(&n.ranks, doing_with_peers(n.state, n.arguments))
        })
        .collect();
    Decision::new(kind, confidence, culprits, summary, evidence, None)
}
