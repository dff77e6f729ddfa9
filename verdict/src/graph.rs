//! The wait-for graph over ranks, with AND/OR semantics as in MUST ("MPI Runtime Error
//! Detection with MUST: Advances in Deadlock Detection", Hilbrich et al., 2012), and the
//! ranks it proves stuck.
//!
//! A node is a group of ranks in one state with the same call arguments (their waits are
//! alike, so they are released together). What a node waits for:
//! * a receive or probe: its source (`All`), or with `MPI_ANY_SOURCE` any member of its
//!   communicator (`Any`);
//! * a blocking send: its destination (`All`);
//! * `MPI_Sendrecv`: its source or its destination (`Any`: which half is pending is not
//!   seen, and the weaker wait never proves a false deadlock);
//! * a collective: every member of its communicator that is not in the same collective on
//!   it (`All`); `MPI_Init` waits for the world;
//! * ranks outside MPI or moving wait for no one and may still send anything (`Free`);
//!   finished ranks will never send (`Finished`);
//! * a wait or test on requests whose starts strata's PMPI library recorded: their peers
//!   (`All` for one request, `Any` for several: a waitall's record may be stale);
//! * anything whose peers are not known (requests without the library, a derived
//!   communicator, an argument not read) is `Unknown`, and taken to be released: the graph
//!   only proves what its known edges force.
//!
//! Release is the fixed point: free and unknown nodes are released, an `All` node when
//! every node it waits for is, an `Any` node when one is. What is never released is stuck
//! whatever the unknown nodes do. Among the stuck nodes, the cycles (strongly connected
//! components) are the deadlock's core; a stuck node that waits for a finished rank waits
//! for a message that will never come.

use crate::arguments::{Arguments, CallArguments, Communicator, Origin, Peer, Requests};
use crate::observe::{Observations, RankState};
use crate::prose::rank_list;
use crate::role::{Role, role};
use crate::signature::signature;
use serde::Serialize;
use std::collections::BTreeMap;
use strata_filters::taskset::format_set;
use strata_filters::{RankSet, TaskSet};

/// What a node waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wait {
    /// Outside MPI or moving: waits for no one, and may still send.
    Free,
    /// Exited or in `MPI_Finalize`: will never send.
    Finished,
    /// For every one of these ranks.
    All(RankSet),
    /// For any one of these ranks.
    Any(RankSet),
    /// Not known, and why.
    Unknown(String),
}

/// Ranks alike: one state, one set of arguments.
#[derive(Clone, Debug)]
pub struct Node<'o> {
    pub ranks: RankSet,
    pub state: &'o RankState,
    pub arguments: Option<&'o CallArguments>,
    pub wait: Wait,
}

/// The graph, with what its fixed point proved.
#[derive(Clone, Debug)]
pub struct WaitFor<'o> {
    pub nodes: Vec<Node<'o>>,
    /// Per node: released (may complete whatever the unknown nodes do) or stuck.
    pub released: Vec<bool>,
    /// The stuck nodes' cycles: strongly connected components of stuck nodes (with their
    /// edges between stuck nodes) that hold a loop, each sorted by lowest rank.
    pub cycles: Vec<Vec<usize>>,
    job_size: u32,
}

impl<'o> WaitFor<'o> {
    /// The graph of `observations` with `arguments`, and its fixed point.
    pub fn build(observations: &'o Observations, arguments: &'o Arguments) -> WaitFor<'o> {
        let job_size = u32::try_from(observations.ranks.len()).unwrap_or(u32::MAX);
        // Group the ranks by (state, arguments).
        let mut groups: BTreeMap<(&RankState, Option<&CallArguments>), RankSet> = BTreeMap::new();
        for (rank, state) in observations.ranks.iter().enumerate() {
            let Some(state) = state else { continue };
            let rank = u32::try_from(rank).expect("ranks fit u32");
            groups
                .entry((state, arguments.of(rank)))
                .or_default()
                .insert(rank);
        }
        // Who is in which collective, on which communicator.
        let mut in_collective: BTreeMap<(&str, &Communicator), RankSet> = BTreeMap::new();
        for ((state, args), ranks) in &groups {
            if role(state) == Role::WaitingCollective
                && let (Some(call), Some(comm)) =
                    (state.activity.call(), communicator(state, *args))
            {
                in_collective
                    .entry((call.name.as_str(), comm))
                    .or_default()
                    .union_with(ranks);
            }
        }
        let mut nodes: Vec<Node> = groups
            .into_iter()
            .map(|((state, args), ranks)| {
                let wait = wait(state, args, &ranks, job_size, &in_collective);
                Node {
                    ranks,
                    state,
                    arguments: args,
                    wait,
                }
            })
            .collect();
        nodes.sort_by_key(|n| n.ranks.min());
        let released = release(&nodes, job_size);
        let cycles = stuck_cycles(&nodes, &released, job_size);
        WaitFor {
            nodes,
            released,
            cycles,
            job_size,
        }
    }

    /// Stuck nodes that wait for a finished rank.
    pub fn waiting_for_finished(&self) -> Vec<usize> {
        let finished: RankSet = self.nodes.iter().filter(|n| n.wait == Wait::Finished).fold(
            RankSet::new(),
            |mut all, n| {
                all.union_with(&n.ranks);
                all
            },
        );
        (0..self.nodes.len())
            .filter(|&i| !self.released[i])
            .filter(|&i| match &self.nodes[i].wait {
                Wait::All(t) => !t.is_disjoint(&finished),
                Wait::Any(t) => !t.is_empty() && t.is_subset(&finished),
                _ => false,
            })
            .collect()
    }

    /// Why the first group in MPI whose wait is not known is not (`[0] peer unknown: ...`).
    pub fn first_unknown(&self) -> Option<String> {
        self.nodes.iter().find_map(|n| match &n.wait {
            Wait::Unknown(why) if n.state.activity.call().is_some() => {
                Some(format!("[{}] {why}", rank_list(&n.ranks)))
            }
            _ => None,
        })
    }

    /// Why the members of the communicator some of `ranks` wait on in a collective are
    /// not known (a derived communicator), if so.
    pub fn unknown_communicator(&self, ranks: &RankSet) -> Option<String> {
        self.nodes.iter().find_map(|n| {
            if n.ranks.is_disjoint(ranks) || role(n.state) != Role::WaitingCollective {
                return None;
            }
            let comm = n.arguments?.communicator.as_ref()?;
            matches!(comm, Communicator::Other(_)).then(|| {
                let call = n.state.activity.call().map_or("?", |c| c.name.as_str());
                format!(
                    "[{}] wait in {call} on {}, whose members are not known",
                    rank_list(&n.ranks),
                    comm.describe()
                )
            })
        })
    }

    /// How sure the graph's conclusions are: `proved` when every argument came from the MPI
    /// library, `likely` when some were read from the source and variables.
    pub fn origin(&self, nodes: &[usize]) -> Origin {
        let from_library = nodes.iter().all(|&i| {
            self.nodes[i]
                .arguments
                .and_then(|a| a.origin)
                .is_none_or(|o| o == Origin::MpiLibrary)
        });
        if from_library {
            Origin::MpiLibrary
        } else {
            Origin::SourceAndVariables
        }
    }

    /// The edges and cycles, for `result.json`.
    pub fn to_file(&self) -> GraphFile {
        let mut edges = Vec::new();
        let mut unknown = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let call = n.state.activity.call().map(|c| c.name.clone());
            let ranks = format_set(&n.ranks);
            match &n.wait {
                Wait::All(t) | Wait::Any(t) => edges.push(EdgeFile {
                    from: ranks,
                    to: format_set(t),
                    semantics: if matches!(n.wait, Wait::All(_)) {
                        "all"
                    } else {
                        "any"
                    },
                    call,
                    communicator: n
                        .arguments
                        .and_then(|a| a.communicator.as_ref())
                        .map(Communicator::describe),
                    origin: n.arguments.and_then(|a| a.origin),
                    stuck: !self.released[i],
                }),
                Wait::Unknown(why) => unknown.push(UnknownFile {
                    ranks,
                    call,
                    why: why.clone(),
                }),
                Wait::Free | Wait::Finished => {}
            }
        }
        GraphFile {
            edges,
            unknown,
            cycles: self
                .cycles
                .iter()
                .map(|c| {
                    c.iter()
                        .map(|&i| format_set(&self.nodes[i].ranks))
                        .collect()
                })
                .collect(),
        }
    }

    /// The graph in Graphviz DOT: a node per group, an edge per wait (dashed for `any`),
    /// stuck nodes and the cycles' edges in red.
    pub fn to_dot(&self) -> String {
        let mut out = String::from(
            "// strata wait-for graph: an edge points from ranks that wait to the ranks they \
             wait for\n// (solid: for all of them; dashed: for any one). Red: stuck.\n\
             digraph wait_for {\n  node [shape=box, fontname=\"monospace\"];\n",
        );
        // Per node, the cycle it is in.
        let mut cycle_of: Vec<Option<usize>> = vec![None; self.nodes.len()];
        for (c, cycle) in self.cycles.iter().enumerate() {
            for &i in cycle {
                cycle_of[i] = Some(c);
            }
        }
        for (i, n) in self.nodes.iter().enumerate() {
            let (what, at) = crate::describe::doing_with_peers(n.state, n.arguments);
            let at = at.map(|p| format!("\\n{}", p.short())).unwrap_or_default();
            let colour = if !self.released[i] && n.wait != Wait::Finished {
                ", color=red"
            } else {
                ""
            };
            out.push_str(&format!(
                "  n{i} [label=\"[{}] {}{at}\"{colour}];\n",
                format_set(&n.ranks),
                escape(&what)
            ));
        }
        let node_of = node_index(&self.nodes, self.job_size);
        for (i, n) in self.nodes.iter().enumerate() {
            let (targets, style) = match &n.wait {
                Wait::All(t) => (t, ""),
                Wait::Any(t) => (t, ", style=dashed"),
                _ => continue,
            };
            let (targets, _) = target_nodes(targets, &node_of, usize::MAX, false);
            for j in targets {
                let colour = if cycle_of[i].is_some() && cycle_of[i] == cycle_of[j] {
                    ", color=red"
                } else {
                    ""
                };
                out.push_str(&format!(
                    "  n{i} -> n{j} [arrowhead=normal{style}{colour}];\n"
                ));
            }
        }
        out.push_str("}\n");
        out
    }
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The wait-for graph in `result.json`'s `verdict` object.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GraphFile {
    pub edges: Vec<EdgeFile>,
    /// Ranks in MPI whose waits are not known, and why.
    pub unknown: Vec<UnknownFile>,
    /// Each cycle as the rank lists of its groups.
    pub cycles: Vec<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EdgeFile {
    pub from: String,
    pub to: String,
    /// `all`: waits for every rank of `to`; `any`: for one of them.
    pub semantics: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The call's communicator, as read (`MPI_COMM_WORLD`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub communicator: Option<String>,
    /// Where the call's arguments were read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The waiting ranks are stuck (never released in the graph).
    pub stuck: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnknownFile {
    pub ranks: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    pub why: String,
}

/// The communicator of a rank's collective: its argument, or the world for `MPI_Init`.
fn communicator<'a>(
    state: &RankState,
    args: Option<&'a CallArguments>,
) -> Option<&'a Communicator> {
    static WORLD: Communicator = Communicator::World;
    let call = state.activity.call()?;
    if call.name == "MPI_Init" || call.name == "MPI_Init_thread" {
        return Some(&WORLD);
    }
    args?.communicator.as_ref()
}

fn wait(
    state: &RankState,
    args: Option<&CallArguments>,
    ranks: &RankSet,
    job_size: u32,
    in_collective: &BTreeMap<(&str, &Communicator), RankSet>,
) -> Wait {
    let any_rank = ranks.min().unwrap_or(0);
    match role(state) {
        Role::Moving | Role::StillOutside => return Wait::Free,
        Role::Finished => return Wait::Finished,
        Role::Unseen => return Wait::Unknown("not sampled".to_string()),
        Role::WaitingPointToPoint | Role::WaitingCollective => {}
    }
    let Some(call) = state.activity.call() else {
        return Wait::Unknown("not in an MPI call".to_string());
    };
    if role(state) == Role::WaitingCollective {
        let Some(comm) = communicator(state, args) else {
            return Wait::Unknown(if call.name == "MPI_Win_fence" {
                "the window's group is known to the MPI library only".to_string()
            } else {
                "its communicator was not read".to_string()
            });
        };
        let Some(members) = comm.members(any_rank, job_size) else {
            return Wait::Unknown(comm.unknown_because().unwrap_or_default());
        };
        let present = in_collective
            .get(&(call.name.as_str(), comm))
            .cloned()
            .unwrap_or_default();
        return Wait::All(&members - &present);
    }
    if let Some(requests) = args.and_then(|a| a.requests.as_ref()) {
        return request_wait(&call.name, requests, any_rank, job_size);
    }
    let Some(args) = args.filter(|_| signature(&call.name).is_some()) else {
        return Wait::Unknown(format!(
            "the peers of {} are known to the MPI library only",
            call.name
        ));
    };
    let comm = match &args.communicator {
        Some(c) => c,
        None => return Wait::Unknown("its communicator was not read".to_string()),
    };
    // A peer as a set of job ranks: `Ok(None)` for MPI_PROC_NULL (waits for no one).
    let peer = |p: &Peer| -> Result<Option<(RankSet, bool)>, String> {
        match p {
            Peer::Rank(n) => match comm.job_rank(*n, job_size) {
                Some(j) => Ok(Some((std::iter::once(j).collect(), false))),
                None => Err(comm
                    .unknown_because()
                    .unwrap_or_else(|| format!("rank {n} is not in {}", comm.describe()))),
            },
            Peer::Any => comm
                .members(any_rank, job_size)
                .map(|m| Some((m, true)))
                .ok_or_else(|| comm.unknown_because().unwrap_or_default()),
            Peer::ProcNull => Ok(None),
            Peer::Unknown(why) => Err(format!("peer unknown: {why}")),
        }
    };
    let parts: Vec<&Peer> = [&args.source, &args.destination]
        .into_iter()
        .flatten()
        .collect();
    let mut resolved = Vec::new();
    for p in &parts {
        match peer(p) {
            Ok(Some(r)) => resolved.push(r),
            Ok(None) => {}
            Err(why) => return Wait::Unknown(why),
        }
    }
    match resolved.as_slice() {
        [] => Wait::Unknown(format!(
            "{} with MPI_PROC_NULL returns at once: something else holds it",
            call.name
        )),
        [(set, false)] => Wait::All(set.clone()),
        _ => Wait::Any(
            resolved
                .into_iter()
                .fold(RankSet::new(), |mut all, (s, _)| {
                    all.union_with(&s);
                    all
                }),
        ),
    }
}

/// What a completion call on `requests` waits for: the sources of its receives and the
/// destinations of its sends. One request: for its peer (`All`). More than one: for any
/// of them (`Any`), even in a `MPI_Waitall`, which needs them all: a waitall's record is
/// of the requests pending when the library last looked, and one of those may have
/// completed since, so only "all of its peers are stuck" proves it stuck.
fn request_wait(call: &str, requests: &Requests, rank: u32, job_size: u32) -> Wait {
    if requests.unrecorded > 0 {
        return Wait::Unknown(format!(
            "{} of the requests of {call} were not recorded (past the PMPI library's cap)",
            requests.unrecorded
        ));
    }
    let mut targets = RankSet::new();
    let mut any = requests.recorded.len() > 1;
    for r in &requests.recorded {
        if r.started_by.is_none() {
            return Wait::Unknown(format!(
                "{call} waits on a request the PMPI library did not see started (by a call \
                 it does not wrap, such as MPI_Ialltoall)"
            ));
        }
        // Who a nonblocking collective waits for depends on which members have started it,
        // which no rank's record says.
        if r.collective() {
            return Wait::Unknown(format!(
                "{call} waits on {}, and strata does not yet tell which members have started \
                 a nonblocking collective",
                r.describe()
            ));
        }
        match &r.peer {
            Peer::Rank(n) => match r.communicator.job_rank(*n, job_size) {
                Some(j) => {
                    targets.insert(j);
                }
                None => {
                    return Wait::Unknown(r.communicator.unknown_because().unwrap_or_else(|| {
                        format!("rank {n} is not in {}", r.communicator.describe())
                    }));
                }
            },
            Peer::Any => match r.communicator.members(rank, job_size) {
                Some(m) => {
                    targets.union_with(&m);
                    any = true;
                }
                None => return Wait::Unknown(r.communicator.unknown_because().unwrap_or_default()),
            },
            // Complete at once: a wait for all does not wait for it, a wait for any
            // returns.
            Peer::ProcNull if call == "MPI_Waitall" || call == "MPI_Testall" => {}
            Peer::ProcNull => {
                return Wait::Unknown(format!(
                    "{call} has a request on MPI_PROC_NULL, complete at once: something else \
                     holds it"
                ));
            }
            Peer::Unknown(why) => return Wait::Unknown(format!("peer unknown: {why}")),
        }
    }
    if targets.is_empty() {
        return Wait::Unknown(format!(
            "{call} has no pending request and returns at once: something else holds it"
        ));
    }
    if any {
        Wait::Any(targets)
    } else {
        Wait::All(targets)
    }
}

/// The fixed point (see the module's doc): per node, released or stuck.
fn release(nodes: &[Node], job_size: u32) -> Vec<bool> {
    let node_of = node_index(nodes, job_size);
    let n = nodes.len();
    let mut released = vec![false; n];
    // Per node: how many nodes an `All` node still waits for; who waits for it.
    let mut pending = vec![0usize; n];
    let mut waiters: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut queue = Vec::new();
    for (i, node) in nodes.iter().enumerate() {
        let targets = match &node.wait {
            Wait::Free | Wait::Unknown(_) => {
                released[i] = true;
                queue.push(i);
                continue;
            }
            Wait::Finished => continue,
            Wait::All(t) | Wait::Any(t) => t,
        };
        let any = matches!(node.wait, Wait::Any(_));
        let (targets, absent) = target_nodes(targets, &node_of, i, any);
        if any {
            // A rank absent from the graph may send: not provably stuck. (With no target
            // left, the node waits for its own ranks, which are all blocked here.)
            if absent {
                released[i] = true;
                queue.push(i);
            }
        } else if targets.contains(&i) {
            // Waits for itself: never released.
            pending[i] = usize::MAX;
        } else if targets.is_empty() {
            released[i] = true;
            queue.push(i);
        } else {
            pending[i] = targets.len();
        }
        for t in targets {
            if t != i {
                waiters[t].push(i);
            }
        }
    }
    while let Some(j) = queue.pop() {
        for &i in &waiters[j] {
            if released[i] {
                continue;
            }
            let go = match nodes[i].wait {
                Wait::Any(_) => true,
                _ => {
                    if pending[i] != usize::MAX {
                        pending[i] -= 1;
                    }
                    pending[i] == 0
                }
            };
            if go {
                released[i] = true;
                queue.push(i);
            }
        }
    }
    released
}

fn node_index(nodes: &[Node], job_size: u32) -> Vec<Option<usize>> {
    let mut node_of = vec![None; job_size as usize];
    for (i, node) in nodes.iter().enumerate() {
        for r in node.ranks.iter() {
            if let Some(slot) = node_of.get_mut(r as usize) {
                *slot = Some(i);
            }
        }
    }
    node_of
}

/// The nodes holding `targets` (an `Any` wait leaves its own node out: its ranks are
/// released together or not at all), and whether some target is in no node.
fn target_nodes(
    targets: &RankSet,
    node_of: &[Option<usize>],
    own: usize,
    any: bool,
) -> (Vec<usize>, bool) {
    let mut out = Vec::new();
    let mut absent = false;
    for r in targets.iter() {
        match node_of.get(r as usize).copied().flatten() {
            Some(j) if any && j == own => {}
            Some(j) => {
                if !out.contains(&j) {
                    out.push(j);
                }
            }
            None => absent = true,
        }
    }
    (out, absent)
}

/// Strongly connected components of the stuck nodes that hold a loop (Tarjan, iterative:
/// a chain of thousands of ranks must not overflow the stack).
fn stuck_cycles(nodes: &[Node], released: &[bool], job_size: u32) -> Vec<Vec<usize>> {
    let node_of = node_index(nodes, job_size);
    let n = nodes.len();
    let edges: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            if released[i] {
                return Vec::new();
            }
            match &nodes[i].wait {
                Wait::All(t) | Wait::Any(t) => {
                    let (targets, _) = target_nodes(t, &node_of, usize::MAX, false);
                    targets
                        .into_iter()
                        .filter(|&j| !released[j] && nodes[j].wait != Wait::Finished)
                        .collect()
                }
                _ => Vec::new(),
            }
        })
        .collect();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut components = Vec::new();
    for start in 0..n {
        if index[start] != usize::MAX || released[start] {
            continue;
        }
        // (node, next edge to look at)
        let mut work = vec![(start, 0usize)];
        index[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (v, ref mut e)) = work.last_mut() {
            if let Some(&w) = edges[v].get(*e) {
                *e += 1;
                if index[w] == usize::MAX {
                    index[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                let looped = component.len() > 1 || edges[v].contains(&v);
                if looped {
                    component.sort_by_key(|&i| nodes[i].ranks.min());
                    components.push(component);
                }
            }
        }
    }
    components.sort_by_key(|c| nodes[c[0]].ranks.min());
    components
}

#[cfg(test)]
mod tests;
