//! Equivalence classes: the handful of groups a user debugs one representative of.
//!
//! A task "ends" at a node when the node holds it and none of the node's children does.
//! In a 2D tree every task ends at exactly one node, and a class is the tasks that share
//! it. In a 3D tree a task ends wherever its samples ended, so a class is the tasks that
//! ended at the same *set* of nodes over the samples (a task stuck in one place has a set
//! of one; a task that moved between two places forms a class with the others that did).
//! A sample that ended at a proper prefix of another sample's path is not visible in a 3D
//! tree (the task is in the child too), so only maximal paths count, as in STAT.

use crate::taskset::TaskSet;
use crate::tree::{NodeId, PrefixTree};
use rustc_hash::FxHashMap;

/// One equivalence class.
#[derive(Clone, Debug, PartialEq)]
pub struct EqClass<S> {
    /// The tasks in the class.
    pub tasks: S,
    /// The nodes these tasks' paths end at, in increasing node order.
    pub leaves: Vec<NodeId>,
}

/// The classes of `tree`, smallest first (outliers are usually the suspects), ties by
/// lowest task.
pub fn equivalence_classes<S: TaskSet>(tree: &PrefixTree<S>) -> Vec<EqClass<S>> {
    // Partition refinement over an array indexed by task: class 0 is "ends nowhere"; each
    // node with ending tasks splits the classes it touches. O(tasks + sum of ending sets).
    let space = tree.task_space() as usize;
    let mut class_of: Vec<u32> = vec![0; space];
    let mut leaves: Vec<Vec<NodeId>> = vec![Vec::new()];
    for id in tree.node_ids() {
        let ending = tree.tasks_ending_at(id);
        if ending.is_empty() || id == NodeId::ROOT {
            continue;
        }
        let mut next: FxHashMap<u32, u32> = FxHashMap::default();
        for t in ending.indices() {
            let old = class_of[t as usize];
            let new = *next.entry(old).or_insert_with(|| {
                let mut l = leaves[old as usize].clone();
                l.push(id);
                leaves.push(l);
                (leaves.len() - 1) as u32
            });
            class_of[t as usize] = new;
        }
    }
    let mut members: Vec<S> = vec![S::default(); leaves.len()];
    for (t, &c) in class_of.iter().enumerate() {
        if c != 0 {
            members[c as usize].insert(t as u32);
        }
    }
    let mut out: Vec<EqClass<S>> = members
        .into_iter()
        .zip(leaves)
        .filter(|(m, _)| !m.is_empty())
        .map(|(tasks, leaves)| EqClass { tasks, leaves })
        .collect();
    out.sort_by_key(|c| (c.tasks.count(), c.tasks.first()));
    out
}
/// Which class a node belongs to, for its colour (the terminal UI and the HTML report colour a node by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeClass {
    /// Every task ending at or below the node is in this class (index into `classes`).
    One(usize),
    /// Tasks of several classes end below it.
    Mixed,
}

/// Per node, the single class whose tasks end at or below it, or `Mixed`. Each class marks
/// the ancestors of its leaves, stopping where an ancestor is already marked by it or
/// mixed (everything above is then too): O(nodes + leaves).
pub fn node_classes<S: TaskSet>(tree: &PrefixTree<S>, classes: &[EqClass<S>]) -> Vec<NodeClass> {
    let mut marks: Vec<Option<NodeClass>> = vec![None; tree.len()];
    for (ci, class) in classes.iter().enumerate() {
        for &leaf in &class.leaves {
            let mut cur = Some(leaf);
            while let Some(n) = cur {
                let m = &mut marks[n.index()];
                match *m {
                    Some(NodeClass::One(c)) if c == ci => break,
                    Some(NodeClass::Mixed) => break,
                    Some(NodeClass::One(_)) => *m = Some(NodeClass::Mixed),
                    None => *m = Some(NodeClass::One(ci)),
                }
                cur = tree.node(n).parent;
            }
        }
    }
    marks
        .into_iter()
        .map(|m| m.unwrap_or(NodeClass::Mixed))
        .collect()
}
