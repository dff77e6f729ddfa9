//! Cycles in a module graph: strongly connected components of two or more modules (Tarjan),
//! and for each one a shortest loop through it to show in reports.

use crate::graph::ModuleGraph;
use crate::modtree::ModId;
use std::collections::{BTreeSet, VecDeque};

/// One strongly connected component of 2+ modules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cycle {
    /// Its modules, sorted by id (source order of their declarations).
    pub modules: Vec<ModId>,
    /// A shortest loop from the first module back to it, first module repeated at the end.
    pub example_loop: Vec<ModId>,
}

/// Every cycle in `graph`, ordered by their first module.
pub fn find_cycles(graph: &ModuleGraph) -> Vec<Cycle> {
    let mut tarjan = Tarjan::new(graph);
    for node in 0..graph.names.len() {
        if tarjan.index[node].is_none() {
            tarjan.connect(node);
        }
    }
    let mut cycles: Vec<Cycle> = tarjan
        .components
        .into_iter()
        .filter(|c| c.len() >= 2)
        .map(|mut modules| {
            modules.sort_unstable();
            let example_loop = shortest_loop(graph, &modules);
            Cycle {
                modules,
                example_loop,
            }
        })
        .collect();
    cycles.sort_by_key(|c| c.modules[0]);
    cycles
}

/// Tarjan's algorithm. Recursive: depth is bounded by the number of modules in one crate.
struct Tarjan<'a> {
    graph: &'a ModuleGraph,
    next: usize,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<ModId>,
    components: Vec<Vec<ModId>>,
}

impl<'a> Tarjan<'a> {
    fn new(graph: &'a ModuleGraph) -> Tarjan<'a> {
        let n = graph.names.len();
        Tarjan {
            graph,
            next: 0,
            index: vec![None; n],
            low: vec![0; n],
            on_stack: vec![false; n],
            stack: Vec::new(),
            components: Vec::new(),
        }
    }

    fn connect(&mut self, v: ModId) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        let successors: Vec<ModId> = self.graph.successors(v).collect();
        for w in successors {
            match self.index[w] {
                None => {
                    self.connect(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index_w) if self.on_stack[w] => self.low[v] = self.low[v].min(index_w),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// Breadth-first search from `members[0]` back to itself, inside the component.
fn shortest_loop(graph: &ModuleGraph, members: &[ModId]) -> Vec<ModId> {
    let inside: BTreeSet<ModId> = members.iter().copied().collect();
    let start = members[0];
    let mut came_from = vec![None; graph.names.len()];
    let mut queue = VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for w in graph.successors(v).filter(|w| inside.contains(w)) {
            if w == start {
                let mut path = vec![start, v];
                let mut at = v;
                while let Some(previous) = came_from[at] {
                    path.push(previous);
                    at = previous;
                }
                // `path` is start, v, ..., start reversed; the walk back ends at start.
                path.reverse();
                return path;
            }
            if came_from[w].is_none() {
                came_from[w] = Some(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}
