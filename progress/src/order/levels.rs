//! The order of one branching point's groups: every pair compared, a level for each group
//! (1 + the longest chain of groups before it, by Kahn's algorithm), tie letters for groups
//! that share a level, and the groups sorted by the resulting tag.

use super::evidence::{Evidence, evidence};
use super::groups::Group;
use super::points::Points;
use crate::loops::Loops;
use crate::point::Relation;
use rustc_hash::FxHashMap;
use strata_filters::{Frame, NodeId};
use strata_result::annotation::{Label, Tag};

/// A node of the analysed tree where tasks part ways, and how its groups were ordered.
#[derive(Clone, Debug)]
pub struct BranchPoint {
    pub node: NodeId,
    /// The branching node's frame (`None` at the root: the tasks' outermost frames differ).
    pub frame: Option<Frame>,
    /// The label every task below this point starts with.
    pub label: Label,
    /// Sorted by tag, least progressed first.
    pub groups: Vec<Group>,
    /// `relations[i][j]`: group `i` compared with group `j` (same indices as `groups`);
    /// empty when there were too many groups to compare pairwise ([`MAX_GROUPS`]).
    pub relations: Vec<Vec<Evidence>>,
}

impl BranchPoint {
    /// The full label of one of this point's groups.
    pub fn label_of(&self, g: &Group) -> Label {
        self.label.child(g.tag)
    }

    /// How group `i` compares with group `j`; `None` when the groups were not compared.
    pub fn relation(&self, i: usize, j: usize) -> Option<&Evidence> {
        self.relations.get(i)?.get(j)
    }
}

/// Most groups one branching point is ordered for. Pairwise comparison is quadratic; a
/// node with thousands of children (noise at a huge scale) is reported unordered instead.
pub const MAX_GROUPS: usize = 1024;

/// Orders the groups that part ways at `id` (below its frame `here`).
pub(super) fn order_groups(
    id: NodeId,
    here: Option<Frame>,
    label: Label,
    mut groups: Vec<Group>,
    points: &mut Points<'_>,
    loops: &Loops,
) -> BranchPoint {
    groups.sort_by_key(|g| g.tasks.min());
    let n = groups.len();
    if n > MAX_GROUPS {
        points.notes.push(format!(
            "{n} groups part ways below {}: more than {MAX_GROUPS}, not compared pairwise (left unordered)",
            here.as_ref().map_or("the root".to_string(), strata_result::render::frame_text)
        ));
        for (i, g) in groups.iter_mut().enumerate() {
            g.tag = Tag {
                level: 1,
                tie: i as u32 + 1,
            };
        }
        return BranchPoint {
            node: id,
            frame: here,
            label,
            groups,
            relations: Vec::new(),
        };
    }
    let mut relations = vec![vec![Evidence::Unordered(String::new()); n]; n];
    for i in 0..n {
        relations[i][i] = Evidence::Source(Relation::Same);
        for j in i + 1..n {
            let e = evidence(&groups[i], &groups[j], here.as_ref(), loops);
            relations[j][i] = e.reversed();
            relations[i][j] = e;
        }
    }
    // Level: 1 + the longest chain of groups strictly before it ("before" is a strict
    // partial order: lexicographic on points and iteration values). Kahn's algorithm over
    // the "before" edges visits every group after all its predecessors.
    let mut preds = vec![0usize; n];
    for j in 0..n {
        preds[j] = (0..n).filter(|&i| relations[i][j].is_before()).count();
    }
    let mut ready: Vec<usize> = (0..n).filter(|&j| preds[j] == 0).collect();
    let mut level = vec![1u32; n];
    while let Some(i) = ready.pop() {
        for j in 0..n {
            if relations[i][j].is_before() {
                level[j] = level[j].max(level[i] + 1);
                preds[j] -= 1;
                if preds[j] == 0 {
                    ready.push(j);
                }
            }
        }
    }
    for (i, g) in groups.iter_mut().enumerate() {
        g.tag.level = level[i];
    }
    // Groups sharing a level get letters, in order of their lowest rank.
    let mut per_level: FxHashMap<u32, u32> = FxHashMap::default();
    for &l in &level {
        *per_level.entry(l).or_default() += 1;
    }
    let mut next_tie: FxHashMap<u32, u32> = FxHashMap::default();
    for g in groups.iter_mut() {
        if per_level[&g.tag.level] > 1 {
            let t = next_tie.entry(g.tag.level).or_default();
            *t += 1;
            g.tag.tie = *t;
        }
    }
    // Sort by tag, carrying the relation matrix along.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| groups[i].tag);
    let groups_sorted: Vec<Group> = order.iter().map(|&i| groups[i].clone()).collect();
    let relations_sorted: Vec<Vec<Evidence>> = order
        .iter()
        .map(|&i| order.iter().map(|&j| relations[i][j].clone()).collect())
        .collect();
    BranchPoint {
        node: id,
        frame: here,
        label,
        groups: groups_sorted,
        relations: relations_sorted,
    }
}
