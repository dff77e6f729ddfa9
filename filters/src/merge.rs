//! The merge filter: combine children's subtree-scoped trees into their parent's.
//!
//! Following the 208K paper (section 5.2), a child's task indices are local to its subtree.
//! A parent merges its children in a fixed child order and concatenates their index spaces:
//! child `i`'s task `t` becomes `t + (tasks of children 0..i)`. Because every set of child
//! `i` lies above every set of children `0..i`, each union is an append, and the work per
//! merge is proportional to the children's tree sizes (nodes and runs), never to the job.
//! The matching rank maps are concatenated in the same order ([`crate::IndexMap::concat`])
//! and applied once at the root ([`crate::remap()`]).

use crate::frame::FrameId;
use crate::taskset::TaskRuns;
use crate::tree::{NodeId, PrefixTree};
use rustc_hash::FxHashMap;

/// Incremental concatenating merge: push children in their fixed order, then finish.
#[derive(Debug)]
pub struct ConcatMerge {
    tree: PrefixTree<TaskRuns>,
    task_offset: u32,
    thread_offset: u32,
    node_map: Vec<NodeId>,
    frame_map: FxHashMap<FrameId, FrameId>,
}

impl Default for ConcatMerge {
    fn default() -> Self {
        Self::new()
    }
}

impl ConcatMerge {
    pub fn new() -> Self {
        ConcatMerge {
            tree: PrefixTree::new(0, 0),
            task_offset: 0,
            thread_offset: 0,
            node_map: Vec::new(),
            frame_map: FxHashMap::default(),
        }
    }

    /// Appends the next child. Its tasks are numbered after all tasks pushed so far.
    pub fn push(&mut self, child: &PrefixTree<TaskRuns>) {
        let (toff, hoff) = (self.task_offset, self.thread_offset);
        self.frame_map.clear();
        self.node_map.clear();
        self.node_map.reserve(child.len());
        for (i, node) in child.nodes().iter().enumerate() {
            let dst = match (node.parent, node.frame) {
                (Some(parent), Some(frame)) => {
                    let f = match self.frame_map.get(&frame) {
                        Some(&f) => f,
                        None => {
                            let f = self.tree.intern_shared(child.frames().get_shared(frame));
                            self.frame_map.insert(frame, f);
                            f
                        }
                    };
                    // Parents come first, so the parent's image is already known.
                    self.tree.child_or_insert(self.node_map[parent.index()], f)
                }
                _ => {
                    debug_assert_eq!(i, 0, "only the root lacks a parent");
                    NodeId::ROOT
                }
            };
            self.node_map.push(dst);
            let d = self.tree.node_mut(dst);
            d.tasks.append_shifted(&node.tasks, toff);
            d.threads.append_shifted(&node.threads, hoff);
        }
        self.task_offset = toff
            .checked_add(child.task_space())
            .expect("merged task space exceeds 2^32 tasks");
        self.thread_offset = hoff
            .checked_add(child.thread_space())
            .expect("merged thread space exceeds 2^32 threads");
    }

    /// The merged tree, over the concatenated index spaces.
    pub fn finish(mut self) -> PrefixTree<TaskRuns> {
        self.tree.set_spaces(self.task_offset, self.thread_offset);
        self.tree
    }
}

/// Merges `children` in the given order (see the module docs).
pub fn merge_concat<'a>(
    children: impl IntoIterator<Item = &'a PrefixTree<TaskRuns>>,
) -> PrefixTree<TaskRuns> {
    let mut m = ConcatMerge::new();
    for c in children {
        m.push(c);
    }
    m.finish()
}
