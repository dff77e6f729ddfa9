//! Prodometer's loop-aware progress dependence ("Accurate application progress analysis for
//! large-scale parallel debugging", 2014): which ranks have made the least progress through
//! the code, from the MPI histories alone.
//!
//! The states are the MPI call sites of every rank's history (the same name in every rank:
//! call, function, file and line), the edges their transitions. Loops are found in each
//! rank's own transition graph: a depth-first walk from its start, each edge back to a site
//! on the walk's stack closing one, headed by that site; its body is what reaches the back
//! edge's source without passing the header. Across ranks, loops are one by their header.
//! Walking each rank's graph, not their union, is what keeps ranks that enter a cycle at
//! different sites apart: a pipeline's first stage sends before it ever receives, and in
//! the union graph the stages' cycle had two entries and no one header. A rank's iteration
//! count of a loop is its count of the loop's back edges (Prodometer's characteristic
//! edges).
//!
//! Two ranks compare by the loops that hold both their positions and that both have taken,
//! outermost first: more iterations is more progress. In the same iteration of all of them, the one whose
//! position the other's reaches without a back edge is further on; at one site, a rank
//! that returned from its call is past one still in it. Ranks on branches neither reaches
//! do not compare: the graph then says nothing about them, and nothing is claimed.
//!
//! Ranks at one position with the same iteration counts form a class; a class is the least
//! progressed when no class is behind it and some class is ahead of it.

use crate::smm::{current_site, named_transitions, state_name};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use strata_filters::RankSet;
use strata_result::pmpi::PmpiHistory;

/// Distinct call sites over all ranks, at most; past it the graph is not built.
pub const MAX_SITES: usize = 4096;
/// Classes compared, at most (each pair is compared).
pub const MAX_CLASSES: usize = 512;

/// Where a rank is: in a call at a site, or computing after it returned.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Position {
    pub site: String,
    pub in_call: bool,
}

impl Position {
    /// `in MPI_Recv in main (a.c:12)`, `after MPI_Recv in main (a.c:12)`.
    pub fn describe(&self) -> String {
        let word = if self.in_call { "in" } else { "after" };
        format!("{word} {}", self.site)
    }
}

/// Where a rank is by its history, or why that is not known.
pub fn position(history: &PmpiHistory) -> Result<Position, String> {
    let (site, in_call) = current_site(history)?;
    Ok(Position {
        site: state_name(site),
        in_call,
    })
}

/// A loop of the ranks' graphs, one across ranks by its header site: its back edges and the
/// sites of its body.
#[derive(Clone, Debug, PartialEq)]
pub struct Loop {
    pub header: String,
    /// (from, to = header) names.
    pub back_edges: Vec<(String, String)>,
    body: BTreeSet<usize>,
}

/// Ranks at one position with the same iteration counts.
#[derive(Clone, Debug, PartialEq)]
pub struct ProgressClass {
    pub ranks: RankSet,
    pub position: Position,
    /// Iterations of each loop that holds the position and that the ranks have taken,
    /// outermost first: (loop index, count).
    pub iterations: Vec<(usize, u64)>,
    /// Per loop: the iterations, `None` for a loop the ranks never took.
    counts: Vec<Option<u64>>,
    node: usize,
}

/// The progress dependence of a job's ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct Dependence {
    pub loops: Vec<Loop>,
    pub classes: Vec<ProgressClass>,
    /// (ahead, behind): class `ahead` waits for class `behind`, transitively reduced.
    pub waits_for: Vec<(usize, usize)>,
    /// The classes no class is behind, with some class ahead of them.
    pub least_progressed: Vec<usize>,
    /// Ranks without a position, and why.
    pub unplaced: Vec<(u32, String)>,
    behind: Vec<Vec<bool>>,
}

struct Graph {
    names: Vec<String>,
    index: HashMap<String, usize>,
    successors: Vec<BTreeSet<usize>>,
}

const START: usize = 0;

impl Graph {
    fn node(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        self.names.push(name.to_string());
        self.successors.push(BTreeSet::new());
        self.index.insert(name.to_string(), self.names.len() - 1);
        self.names.len() - 1
    }
}

/// A rank's transitions by site names (`None`: its start).
type Counts = HashMap<(Option<String>, String), u64>;

fn counts(history: &PmpiHistory) -> Counts {
    let mut out = Counts::new();
    for (from, to, t) in named_transitions(history) {
        *out.entry((from, to)).or_default() += t.count;
    }
    out
}

/// Back edges of a depth-first walk from the start over `successors` (then from any site it
/// missed), in a fixed order so that the same graph gives the same loops.
fn back_edges(successors: &[BTreeSet<usize>]) -> BTreeSet<(usize, usize)> {
    let n = successors.len();
    let mut colour = vec![0u8; n];
    let mut back = BTreeSet::new();
    for root in 0..n {
        if colour[root] != 0 || (root != START && successors[root].is_empty()) {
            continue;
        }
        let mut stack: Vec<(usize, Vec<usize>)> =
            vec![(root, successors[root].iter().rev().copied().collect())];
        colour[root] = 1;
        while let Some((node, pending)) = stack.last_mut() {
            let node = *node;
            match pending.pop() {
                Some(next) => match colour[next] {
                    0 => {
                        colour[next] = 1;
                        let succ = successors[next].iter().rev().copied().collect();
                        stack.push((next, succ));
                    }
                    1 => {
                        back.insert((node, next));
                    }
                    _ => {}
                },
                None => {
                    colour[node] = 2;
                    stack.pop();
                }
            }
        }
    }
    back
}

/// One rank's loops in its own graph: its back edges, and each header's body.
#[derive(Clone, Debug, Default)]
struct RankLoops {
    back: BTreeSet<(usize, usize)>,
    bodies: BTreeMap<usize, BTreeSet<usize>>,
}

/// The loops of the graph of `edges` (one rank's transitions), over `n` sites.
fn rank_loops(n: usize, edges: &BTreeSet<(usize, usize)>) -> RankLoops {
    let mut successors = vec![BTreeSet::new(); n];
    let mut predecessors = vec![Vec::new(); n];
    for &(from, to) in edges {
        successors[from].insert(to);
        predecessors[to].push(from);
    }
    let back = back_edges(&successors);
    let mut bodies: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for &(from, header) in &back {
        let body = bodies.entry(header).or_default();
        body.insert(header);
        let mut work = vec![from];
        while let Some(node) = work.pop() {
            if body.insert(node) {
                work.extend(predecessors[node].iter().copied());
            }
        }
    }
    RankLoops { back, bodies }
}

/// For each site, the sites it reaches in `g` without `back` edges, as bit sets. A walk
/// from each site: what is left of the union graph may still hold a cycle (ranks whose
/// loops are headed differently), and a site then reaches one that reaches it.
fn reach(g: &Graph, back: &BTreeSet<(usize, usize)>) -> Vec<Vec<u64>> {
    let n = g.names.len();
    let words = n.div_ceil(64);
    let mut reach = vec![vec![0u64; words]; n];
    for (root, bits) in reach.iter_mut().enumerate() {
        let mut work = vec![root];
        while let Some(node) = work.pop() {
            for &s in &g.successors[node] {
                if back.contains(&(node, s)) || bits[s / 64] & (1 << (s % 64)) != 0 {
                    continue;
                }
                bits[s / 64] |= 1 << (s % 64);
                work.push(s);
            }
        }
    }
    reach
}

fn reaches(reach: &[Vec<u64>], from: usize, to: usize) -> bool {
    reach[from][to / 64] & (1 << (to % 64)) != 0
}

impl Dependence {
    /// The progress dependence of `ranks` (rank, its history). `Err` says why there is
    /// none: too many sites or classes to compare.
    pub fn of(ranks: &[(u32, &PmpiHistory)]) -> Result<Dependence, String> {
        let mut g = Graph {
            names: Vec::new(),
            index: HashMap::new(),
            successors: Vec::new(),
        };
        g.node("the start");
        let mut placed: Vec<(u32, Position, Counts)> = Vec::new();
        let mut unplaced = Vec::new();
        for &(rank, history) in ranks {
            let c = counts(history);
            for (from, to) in c.keys() {
                let f = from.as_deref().map_or(START, |f| g.node(f));
                let t = g.node(to);
                g.successors[f].insert(t);
            }
            if g.names.len() > MAX_SITES {
                return Err(format!(
                    "the ranks' histories name more than {MAX_SITES} call sites"
                ));
            }
            match position(history) {
                Ok(p) => {
                    g.node(&p.site);
                    placed.push((rank, p, c));
                }
                Err(why) => unplaced.push((rank, why)),
            }
        }
        // Each rank's loops in its own graph, once per distinct graph (ranks of one role
        // share theirs).
        let n_sites = g.names.len();
        let mut by_graph: HashMap<BTreeSet<(usize, usize)>, usize> = HashMap::new();
        let mut graphs: Vec<RankLoops> = Vec::new();
        let mut graph_of: Vec<usize> = Vec::with_capacity(placed.len());
        for (_, _, c) in &placed {
            let edges: BTreeSet<(usize, usize)> = c
                .keys()
                .map(|(f, t)| (f.as_deref().map_or(START, |f| g.index[f]), g.index[t]))
                .collect();
            let i = match by_graph.get(&edges) {
                Some(&i) => i,
                None => {
                    graphs.push(rank_loops(n_sites, &edges));
                    by_graph.insert(edges, graphs.len() - 1);
                    graphs.len() - 1
                }
            };
            graph_of.push(i);
        }
        // Loops across ranks by their header: every rank's back edges into it and bodies.
        type BackEdgesAndBody = (BTreeSet<(usize, usize)>, BTreeSet<usize>);
        let mut by_header: BTreeMap<usize, BackEdgesAndBody> = BTreeMap::new();
        let mut back = BTreeSet::new();
        for rl in &graphs {
            for &(from, header) in &rl.back {
                by_header
                    .entry(header)
                    .or_default()
                    .0
                    .insert((from, header));
                back.insert((from, header));
            }
            for (header, body) in &rl.bodies {
                by_header.entry(*header).or_default().1.extend(body);
            }
        }
        let headers: Vec<usize> = by_header.keys().copied().collect();
        let loops: Vec<Loop> = by_header
            .into_iter()
            .map(|(header, (edges, body))| Loop {
                header: g.names[header].clone(),
                back_edges: edges
                    .into_iter()
                    .map(|(f, t)| (g.names[f].clone(), g.names[t].clone()))
                    .collect(),
                body,
            })
            .collect();
        let reach = reach(&g, &back);
        // A rank's iterations of a loop: its back edges into the header, if it has any.
        let iterations = |c: &Counts, rl: &RankLoops, l: usize| -> Option<u64> {
            let header = headers[l];
            rl.bodies.contains_key(&header).then(|| {
                rl.back
                    .iter()
                    .filter(|&&(_, h)| h == header)
                    .map(|&(f, h)| {
                        let from = (f != START).then(|| g.names[f].clone());
                        c.get(&(from, g.names[h].clone())).copied().unwrap_or(0)
                    })
                    .sum()
            })
        };
        let mut classes: BTreeMap<(Position, Vec<Option<u64>>), RankSet> = BTreeMap::new();
        for ((rank, p, c), &gi) in placed.iter().zip(&graph_of) {
            let all: Vec<Option<u64>> = (0..loops.len())
                .map(|l| iterations(c, &graphs[gi], l))
                .collect();
            classes.entry((p.clone(), all)).or_default().insert(*rank);
        }
        if classes.len() > MAX_CLASSES {
            return Err(format!(
                "{} classes of ranks by position and iterations, more than the {MAX_CLASSES} \
                 compared",
                classes.len()
            ));
        }
        let classes: Vec<ProgressClass> = classes
            .into_iter()
            .map(|((position, counts), ranks)| {
                let node = g.index[&position.site];
                let mut holding: Vec<usize> = (0..loops.len())
                    .filter(|&l| loops[l].body.contains(&node) && counts[l].is_some())
                    .collect();
                holding.sort_by_key(|&l| std::cmp::Reverse(loops[l].body.len()));
                ProgressClass {
                    ranks,
                    iterations: holding
                        .iter()
                        .map(|&l| (l, counts[l].unwrap_or(0)))
                        .collect(),
                    position,
                    counts,
                    node,
                }
            })
            .collect();
        let compare = |a: &ProgressClass, b: &ProgressClass| -> Option<Ordering> {
            // The loops holding both positions that both have taken, outermost first.
            let mut common: Vec<usize> = (0..loops.len())
                .filter(|&l| {
                    loops[l].body.contains(&a.node)
                        && loops[l].body.contains(&b.node)
                        && a.counts[l].is_some()
                        && b.counts[l].is_some()
                })
                .collect();
            common.sort_by_key(|&l| std::cmp::Reverse(loops[l].body.len()));
            for l in common {
                match a.counts[l].cmp(&b.counts[l]) {
                    Ordering::Equal => continue,
                    o => return Some(o),
                }
            }
            if a.node == b.node {
                // Returned from the call is past being in it.
                return Some((!a.position.in_call).cmp(&!b.position.in_call));
            }
            match (
                reaches(&reach, a.node, b.node),
                reaches(&reach, b.node, a.node),
            ) {
                (true, false) => Some(Ordering::Less),
                (false, true) => Some(Ordering::Greater),
                // Neither, or each the other (a cycle the loops did not break): no claim.
                _ => None,
            }
        };
        let n = classes.len();
        // behind[i][j]: class i is behind class j.
        let mut behind = vec![vec![false; n]; n];
        for i in 0..n {
            for j in 0..n {
                if i != j {
                    behind[i][j] = compare(&classes[i], &classes[j]) == Some(Ordering::Less);
                }
            }
        }
        let mut waits_for = Vec::new();
        for ahead in 0..n {
            for b in 0..n {
                // Kept unless some class lies between them.
                if behind[b][ahead] && !(0..n).any(|m| behind[b][m] && behind[m][ahead]) {
                    waits_for.push((ahead, b));
                }
            }
        }
        let least_progressed = (0..n)
            .filter(|&i| !(0..n).any(|k| behind[k][i]) && (0..n).any(|j| behind[i][j]))
            .collect();
        Ok(Dependence {
            loops,
            classes,
            waits_for,
            least_progressed,
            unplaced,
            behind,
        })
    }

    /// Whether class `i` is behind class `j`.
    pub fn is_behind(&self, i: usize, j: usize) -> bool {
        self.behind[i][j]
    }

    /// The one least progressed class, when it is behind every other class.
    pub fn behind_all(&self) -> Option<usize> {
        match self.least_progressed.as_slice() {
            &[i] => (0..self.classes.len())
                .all(|j| j == i || self.behind[i][j])
                .then_some(i),
            _ => None,
        }
    }

    /// Why class `behind` is behind class `ahead`: the first loop they differ in, or their
    /// order in one iteration.
    pub fn why_behind(&self, behind: usize, ahead: usize) -> String {
        let (b, a) = (&self.classes[behind], &self.classes[ahead]);
        for &(l, count) in &b.iterations {
            if let Some(&(_, other)) = a.iterations.iter().find(|(m, _)| *m == l)
                && other != count
            {
                return format!(
                    "iteration {} of the loop at {} vs {}",
                    count + 1,
                    self.loops[l].header,
                    other + 1
                );
            }
        }
        format!(
            "in the same iteration, {} vs {}",
            b.position.describe(),
            a.position.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_result::pmpi::{PmpiEvent, PmpiSite, PmpiTransition};

    fn site(index: u32, call: &str, line: u32, entered: u64, completed: u64) -> PmpiSite {
        PmpiSite {
            index,
            call: call.into(),
            address: 0x1000 + u64::from(index),
            function: Some("main".into()),
            file: Some("halo.c".into()),
            line: Some(line),
            entered,
            completed,
            ..PmpiSite::default()
        }
    }

    fn t(from: Option<u32>, to: u32, count: u64) -> PmpiTransition {
        PmpiTransition {
            from,
            to,
            count,
            ..PmpiTransition::default()
        }
    }

    /// A halo loop (Irecv 0, Isend 1, Waitall 2) run `iterations` times, then: `in_wait`,
    /// in the next iteration's Waitall; else computing after the last Waitall.
    fn halo(iterations: u64, in_wait: bool) -> PmpiHistory {
        let n = iterations + u64::from(in_wait);
        let waits = if in_wait { n - 1 } else { n };
        PmpiHistory {
            sites: vec![
                site(0, "MPI_Irecv", 30, n, n),
                site(1, "MPI_Isend", 31, n, n),
                site(2, "MPI_Waitall", 32, n, waits),
            ],
            transitions: vec![
                t(None, 0, 1),
                t(Some(0), 1, n),
                t(Some(1), 2, n),
                t(Some(2), 0, n - 1),
            ],
            events: vec![PmpiEvent {
                call: if in_wait { "MPI_Isend" } else { "MPI_Waitall" }.into(),
                site: Some(if in_wait { 1 } else { 2 }),
                ..PmpiEvent::default()
            }],
            in_call_ns: in_wait.then_some(5_000_000_000),
            since_return_ns: (!in_wait).then_some(5_000_000_000),
            ..PmpiHistory::default()
        }
    }

    /// A rank that made the calls `sequence` (indices into `sites`: call and line), the last
    /// one still going when `in_call`.
    fn made(sites: &[(&str, u32)], sequence: &[u32], in_call: bool) -> PmpiHistory {
        let mut entered = vec![0u64; sites.len()];
        for &c in sequence {
            entered[c as usize] += 1;
        }
        let mut completed = entered.clone();
        if in_call {
            completed[*sequence.last().unwrap() as usize] -= 1;
        }
        let mut pairs: BTreeMap<(Option<u32>, u32), u64> = BTreeMap::new();
        let mut from = None;
        for &c in sequence {
            *pairs.entry((from, c)).or_default() += 1;
            from = Some(c);
        }
        let last_done = sequence[sequence.len() - 1 - usize::from(in_call)];
        PmpiHistory {
            sites: sites
                .iter()
                .enumerate()
                .map(|(i, &(call, line))| site(i as u32, call, line, entered[i], completed[i]))
                .collect(),
            transitions: pairs.into_iter().map(|((f, to), n)| t(f, to, n)).collect(),
            events: vec![PmpiEvent {
                call: sites[last_done as usize].0.into(),
                site: Some(last_done),
                ..PmpiEvent::default()
            }],
            in_call_ns: in_call.then_some(5_000_000_000),
            since_return_ns: (!in_call).then_some(5_000_000_000),
            ..PmpiHistory::default()
        }
    }

    #[test]
    fn pipeline_stages_that_enter_the_cycle_at_different_sites_compare_by_their_own_loops() {
        // Stage 0 only sends, stages 1-3 receive then send, stage 4 only receives. Stage 2
        // hangs computing after its 51st receive; 3 and 4 wait for item 51, 0 and 1 are
        // blocked sending it on.
        let sites = [("MPI_Recv", 10), ("MPI_Ssend", 12)];
        let (recv, send) = (0u32, 1u32);
        let rounds = |n: usize| -> Vec<u32> { [recv, send].repeat(n) };
        let with = |mut v: Vec<u32>, more: &[u32]| {
            v.extend_from_slice(more);
            v
        };
        let histories = [
            made(&sites, &vec![send; 53], true),
            made(&sites, &with(rounds(52), &[recv, send]), true),
            made(&sites, &with(rounds(50), &[recv]), false),
            made(&sites, &with(rounds(50), &[recv]), true),
            made(&sites, &vec![recv; 51], true),
        ];
        let ranks: Vec<(u32, &PmpiHistory)> = histories
            .iter()
            .enumerate()
            .map(|(r, h)| (r as u32, h))
            .collect();
        let d = Dependence::of(&ranks).unwrap();
        let lp: Vec<Vec<u32>> = d
            .least_progressed
            .iter()
            .map(|&i| d.classes[i].ranks.iter().collect())
            .collect();
        // The last stage is no loop behind the middle ones: it took its own loop as often,
        // and waits where stage 3 waits. Both are behind the hung stage, which received
        // item 51: the dependence says who is behind, not who started it (the verdict names
        // stage 2 from its stacks).
        assert_eq!(lp, [vec![3, 4]], "{d:#?}");
        let class = |r: u32| d.classes.iter().position(|c| c.ranks.contains(r)).unwrap();
        assert_eq!(d.behind_all(), Some(class(3)));
        assert!(d.is_behind(class(3), class(2)) && !d.is_behind(class(2), class(3)));
        // Stage 1, blocked sending item 53, is two iterations ahead of them.
        assert_eq!(
            d.why_behind(class(3), class(1)),
            "iteration 51 of the loop at MPI_Recv in main (halo.c:10) vs 53"
        );
    }

    #[test]
    fn a_rank_stuck_computing_is_an_iteration_behind_its_waiting_neighbours() {
        // Rank 2 stopped after its 41st Waitall; the others wait in their 42nd.
        let histories: Vec<PmpiHistory> = (0..6).map(|r| halo(41, r != 2)).collect();
        let ranks: Vec<(u32, &PmpiHistory)> = histories
            .iter()
            .enumerate()
            .map(|(r, h)| (r as u32, h))
            .collect();
        let d = Dependence::of(&ranks).unwrap();
        assert_eq!(d.loops.len(), 1, "{d:#?}");
        assert_eq!(d.loops[0].header, "MPI_Irecv in main (halo.c:30)");
        assert_eq!(d.classes.len(), 2);
        let lp = d.behind_all().expect("one class behind");
        assert_eq!(d.classes[lp].ranks.iter().collect::<Vec<_>>(), [2]);
        assert_eq!(
            d.classes[lp].position.describe(),
            "after MPI_Waitall in main (halo.c:32)"
        );
        let ahead = 1 - lp;
        assert_eq!(d.waits_for, [(ahead, lp)]);
        assert_eq!(
            d.why_behind(lp, ahead),
            "iteration 41 of the loop at MPI_Irecv in main (halo.c:30) vs 42"
        );
    }

    #[test]
    fn in_the_same_iteration_a_returned_call_is_past_one_still_waiting() {
        // Rank 0 waits in its 42nd Waitall; rank 1 returned from it and computes.
        let (waiting, done) = (halo(41, true), halo(42, false));
        let ranks = [(0, &waiting), (1, &done)];
        let d = Dependence::of(&ranks).unwrap();
        let lp = d.behind_all().unwrap();
        assert_eq!(d.classes[lp].ranks.iter().collect::<Vec<_>>(), [0]);
        assert_eq!(
            d.why_behind(lp, 1 - lp),
            "in the same iteration, in MPI_Waitall in main (halo.c:32) vs after MPI_Waitall in \
             main (halo.c:32)"
        );
    }

    #[test]
    fn ranks_on_branches_neither_reaches_are_not_compared() {
        // Master: Recv at line 10 in a loop; workers: Send at line 20 in a loop.
        let master = PmpiHistory {
            sites: vec![site(0, "MPI_Recv", 10, 9, 8)],
            transitions: vec![t(None, 0, 1), t(Some(0), 0, 8)],
            in_call_ns: Some(1),
            ..PmpiHistory::default()
        };
        let worker = PmpiHistory {
            sites: vec![site(0, "MPI_Send", 20, 3, 2)],
            transitions: vec![t(None, 0, 1), t(Some(0), 0, 2)],
            in_call_ns: Some(1),
            ..PmpiHistory::default()
        };
        let ranks = [(0, &master), (1, &worker), (2, &worker)];
        let d = Dependence::of(&ranks).unwrap();
        assert_eq!(d.classes.len(), 2);
        assert!(d.least_progressed.is_empty(), "{d:#?}");
        assert!(d.waits_for.is_empty());
    }

    #[test]
    fn nested_loops_compare_outermost_first() {
        // Outer loop: Barrier (0) -> inner Send (1) self-loop -> back to Barrier.
        let history = |outer: u64, inner_total: u64| PmpiHistory {
            sites: vec![
                site(0, "MPI_Barrier", 5, outer, outer),
                site(1, "MPI_Send", 6, inner_total, inner_total - 1),
            ],
            transitions: vec![
                t(None, 0, 1),
                t(Some(0), 1, outer),
                t(Some(1), 1, inner_total - outer),
                t(Some(1), 0, outer - 1),
            ],
            in_call_ns: Some(1),
            ..PmpiHistory::default()
        };
        // Rank 0: outer iteration 6 with 50 sends in all; rank 1: outer 5 with 60.
        let (a, b) = (history(6, 50), history(5, 60));
        let d = Dependence::of(&[(0, &a), (1, &b)]).unwrap();
        assert_eq!(d.loops.len(), 2, "{d:#?}");
        let lp = d.behind_all().unwrap();
        assert_eq!(d.classes[lp].ranks.iter().collect::<Vec<_>>(), [1]);
        assert!(
            d.why_behind(lp, 1 - lp).contains("loop at MPI_Barrier"),
            "{}",
            d.why_behind(lp, 1 - lp)
        );
    }

    #[test]
    fn positions_say_why_they_are_not_known() {
        let empty = PmpiHistory::default();
        assert_eq!(position(&empty).unwrap_err(), "no MPI call completed yet");
        let mut two = halo(3, true);
        two.sites[0].entered += 1;
        assert!(position(&two).unwrap_err().contains("several"));
    }
}
