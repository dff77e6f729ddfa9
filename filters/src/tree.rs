//! The call-graph prefix tree.
//!
//! Every path from the root is a call path (outermost frame first); every node stands for
//! the edge that leads to it and holds the set of tasks (and, when threads are sampled, the
//! threads) that took that edge. One type serves the 2D trace/space tree (one sample per
//! task) and the 3D trace/space/time tree (all samples merged: an edge holds every task that
//! took it in any sample); which samples went in is the builder's business.
//!
//! Nodes live in one vector and are created parent-first, so `parent.0 < child.0` always
//! holds: a forward pass visits parents before children and a backward pass children
//! before parents, which the merge, remap and class code rely on.

use crate::frame::{Frame, FrameId, FrameTable};
use crate::taskset::TaskSet;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt;

/// Index of a node in a [`PrefixTree`]; the root is [`NodeId::ROOT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl NodeId {
    pub const ROOT: NodeId = NodeId(0);

    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// One node: the edge from its parent, labelled with the frame it enters.
#[derive(Clone, Debug)]
pub struct Node<S> {
    /// `None` only for the root.
    pub frame: Option<FrameId>,
    pub parent: Option<NodeId>,
    pub children: Vec<NodeId>,
    /// Tasks that took this edge (STAT's `bv`/`count`).
    pub tasks: S,
    /// Threads that took this edge (STAT's `tbv`/`tcount`); empty when threads were not sampled.
    pub threads: S,
}

/// A call-graph prefix tree whose edges carry task sets of type `S`
/// ([`crate::TaskRuns`] before the remap, [`crate::RankSet`] after it).
#[derive(Clone)]
pub struct PrefixTree<S> {
    frames: FrameTable,
    nodes: Vec<Node<S>>,
    child_index: FxHashMap<(NodeId, FrameId), NodeId>,
    task_space: u32,
    thread_space: u32,
}

impl<S: TaskSet> fmt::Debug for PrefixTree<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PrefixTree")
            .field("task_space", &self.task_space)
            .field("thread_space", &self.thread_space)
            .field("paths", &self.canonical())
            .finish()
    }
}

/// Per path (outermost frame first): the task and thread runs that ended exactly there
/// plus those that passed through. Two trees are the same tree when their canonical forms
/// are equal, whatever the order their children were created in.
pub type Canonical = BTreeMap<Vec<Frame>, (Vec<(u32, u32)>, Vec<(u32, u32)>)>;

impl<S: TaskSet> PrefixTree<S> {
    /// An empty tree over `task_space` task indices and `thread_space` thread indices
    /// (0 when threads are not sampled).
    pub fn new(task_space: u32, thread_space: u32) -> Self {
        let root = Node {
            frame: None,
            parent: None,
            children: Vec::new(),
            tasks: S::default(),
            threads: S::default(),
        };
        PrefixTree {
            frames: FrameTable::new(),
            nodes: vec![root],
            child_index: FxHashMap::default(),
            task_space,
            thread_space,
        }
    }

    /// Size of the task index space: tasks are numbered `0..task_space`.
    pub fn task_space(&self) -> u32 {
        self.task_space
    }

    /// Size of the thread index space; 0 when threads were not sampled.
    pub fn thread_space(&self) -> u32 {
        self.thread_space
    }

    pub(crate) fn set_spaces(&mut self, task_space: u32, thread_space: u32) {
        self.task_space = task_space;
        self.thread_space = thread_space;
    }

    /// True when thread sets are recorded.
    pub fn has_threads(&self) -> bool {
        self.thread_space > 0
    }

    pub fn frames(&self) -> &FrameTable {
        &self.frames
    }

    pub fn frame(&self, id: FrameId) -> &Frame {
        self.frames.get(id)
    }

    /// The frame a node enters; `None` for the root.
    pub fn node_frame(&self, node: NodeId) -> Option<&Frame> {
        self.nodes[node.index()].frame.map(|f| self.frames.get(f))
    }

    pub fn node(&self, id: NodeId) -> &Node<S> {
        &self.nodes[id.index()]
    }

    pub(crate) fn node_mut(&mut self, id: NodeId) -> &mut Node<S> {
        &mut self.nodes[id.index()]
    }

    /// Mutable access to a node's task and thread sets, for loaders that rebuild a saved
    /// tree node by node (the structure itself only grows through `child_or_insert`).
    pub fn node_sets_mut(&mut self, id: NodeId) -> (&mut S, &mut S) {
        let n = &mut self.nodes[id.index()];
        (&mut n.tasks, &mut n.threads)
    }

    /// All nodes, parents before children; index `i` is `NodeId(i)`.
    pub fn nodes(&self) -> &[Node<S>] {
        &self.nodes
    }

    pub fn node_ids(&self) -> impl DoubleEndedIterator<Item = NodeId> + use<S> {
        (0..self.nodes.len() as u32).map(NodeId)
    }

    /// Number of nodes, the root included.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when no path was added.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1
    }

    /// The child of `parent` entering `frame`, if any.
    pub fn child(&self, parent: NodeId, frame: FrameId) -> Option<NodeId> {
        self.child_index.get(&(parent, frame)).copied()
    }

    /// The child of `parent` entering `frame`, created (with empty sets) if missing.
    pub fn child_or_insert(&mut self, parent: NodeId, frame: FrameId) -> NodeId {
        if let Some(id) = self.child(parent, frame) {
            return id;
        }
        let id = NodeId(u32::try_from(self.nodes.len()).expect("fewer than 2^32 nodes"));
        self.nodes.push(Node {
            frame: Some(frame),
            parent: Some(parent),
            children: Vec::new(),
            tasks: S::default(),
            threads: S::default(),
        });
        self.nodes[parent.index()].children.push(id);
        self.child_index.insert((parent, frame), id);
        id
    }

    /// Adds one sampled call path (outermost frame first) taken by `task` and, when threads
    /// are sampled, by `thread`.
    pub fn add_trace(&mut self, path: &[Frame], task: u32, thread: Option<u32>) {
        let ids: Vec<FrameId> = path.iter().map(|f| self.frames.intern(f)).collect();
        self.add_trace_ids(&ids, task, thread);
    }

    /// Like [`PrefixTree::add_trace`] with frames already interned in this tree.
    pub fn add_trace_ids(&mut self, path: &[FrameId], task: u32, thread: Option<u32>) {
        assert!(
            task < self.task_space,
            "task {task} outside space {}",
            self.task_space
        );
        let mut node = NodeId::ROOT;
        self.mark(node, task, thread);
        for &frame in path {
            node = self.child_or_insert(node, frame);
            self.mark(node, task, thread);
        }
    }

    fn mark(&mut self, node: NodeId, task: u32, thread: Option<u32>) {
        let n = &mut self.nodes[node.index()];
        n.tasks.insert(task);
        if let Some(t) = thread {
            n.threads.insert(t);
        }
    }

    /// An empty-set copy of this tree's shape (same node ids, frames shared), over other
    /// index spaces: the starting point of a remap.
    pub fn same_shape<T: TaskSet>(&self, task_space: u32, thread_space: u32) -> PrefixTree<T> {
        PrefixTree {
            frames: self.frames.clone(),
            nodes: self
                .nodes
                .iter()
                .map(|n| Node {
                    frame: n.frame,
                    parent: n.parent,
                    children: n.children.clone(),
                    tasks: T::default(),
                    threads: T::default(),
                })
                .collect(),
            child_index: self.child_index.clone(),
            task_space,
            thread_space,
        }
    }

    /// Interns a frame in this tree's table.
    pub fn intern(&mut self, frame: &Frame) -> FrameId {
        self.frames.intern(frame)
    }

    /// Interns a frame shared with another tree's table (no string copies).
    pub fn intern_shared(&mut self, frame: &std::sync::Arc<Frame>) -> FrameId {
        self.frames.intern_shared(frame)
    }

    /// Merges `other`, which numbers the same tasks and threads, into `self`
    /// (the union merge: samples of the same tasks, or siblings folded by a view).
    pub fn absorb(&mut self, other: &PrefixTree<S>) {
        self.absorb_subtree(other, NodeId::ROOT, NodeId::ROOT);
        self.task_space = self.task_space.max(other.task_space);
        self.thread_space = self.thread_space.max(other.thread_space);
    }

    /// Merges the subtree of `other` rooted at `from` into the subtree of `self` at `into`
    /// (sets included).
    pub(crate) fn absorb_subtree(&mut self, other: &PrefixTree<S>, from: NodeId, into: NodeId) {
        let mut stack = vec![(from, into)];
        let mut frame_map: FxHashMap<FrameId, FrameId> = FxHashMap::default();
        while let Some((src, dst)) = stack.pop() {
            let s = other.node(src);
            let d = &mut self.nodes[dst.index()];
            d.tasks.union_with(&s.tasks);
            d.threads.union_with(&s.threads);
            for &c in &s.children {
                let of = other.node(c).frame.expect("non-root has a frame");
                let f = *frame_map
                    .entry(of)
                    .or_insert_with(|| self.frames.intern(other.frame(of)));
                let dc = self.child_or_insert(dst, f);
                stack.push((c, dc));
            }
        }
    }

    /// The frames from the root (exclusive) down to `node` (inclusive).
    pub fn path(&self, node: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let mut cur = node;
        while let Some(p) = self.nodes[cur.index()].parent {
            out.push(cur);
            cur = p;
        }
        out.reverse();
        out
    }

    /// The frames of [`PrefixTree::path`].
    pub fn path_frames(&self, node: NodeId) -> Vec<Frame> {
        self.path(node)
            .into_iter()
            .map(|n| self.node_frame(n).expect("non-root").clone())
            .collect()
    }

    /// Depth of a node (root is 0).
    pub fn depth(&self, node: NodeId) -> usize {
        let mut d = 0;
        let mut cur = node;
        while let Some(p) = self.nodes[cur.index()].parent {
            d += 1;
            cur = p;
        }
        d
    }

    /// Tasks whose path ends exactly at `node` (present here, in no child).
    pub fn tasks_ending_at(&self, node: NodeId) -> S {
        let n = &self.nodes[node.index()];
        subtract_children(
            &n.tasks,
            n.children.iter().map(|c| &self.nodes[c.index()].tasks),
        )
    }

    /// Threads whose path ends exactly at `node`.
    pub fn threads_ending_at(&self, node: NodeId) -> S {
        let n = &self.nodes[node.index()];
        subtract_children(
            &n.threads,
            n.children.iter().map(|c| &self.nodes[c.index()].threads),
        )
    }

    /// The order-independent form of the tree (see [`Canonical`]); for tests and comparisons.
    pub fn canonical(&self) -> Canonical {
        let mut out = Canonical::new();
        for id in self.node_ids() {
            let n = self.node(id);
            out.insert(self.path_frames(id), (n.tasks.runs(), n.threads.runs()));
        }
        out
    }
}

fn subtract_children<'a, S: TaskSet + 'a>(set: &S, children: impl Iterator<Item = &'a S>) -> S {
    let children: Vec<&S> = children.collect();
    match children.as_slice() {
        [] => set.clone(),
        [only] => set.difference(only),
        many => set.difference(&S::union_all(many.iter().copied())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset::TaskRuns;

    fn p(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::function(n)).collect()
    }

    #[test]
    fn traces_share_prefixes() {
        let mut t: PrefixTree<TaskRuns> = PrefixTree::new(4, 0);
        t.add_trace(&p(&["main", "a", "x"]), 0, None);
        t.add_trace(&p(&["main", "a", "y"]), 1, None);
        t.add_trace(&p(&["main", "b"]), 2, None);
        t.add_trace(&p(&["main"]), 3, None);
        assert_eq!(t.len(), 6);
        let main = t
            .child(
                NodeId::ROOT,
                t.frames()
                    .iter()
                    .position(|f| f.name() == "main")
                    .map(|i| FrameId(i as u32))
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(t.node(main).tasks, TaskRuns::range(0, 4));
        assert_eq!(t.tasks_ending_at(main), TaskRuns::range(3, 4));
        assert_eq!(t.depth(main), 1);
    }

    #[test]
    fn absorb_is_union() {
        let mut a: PrefixTree<TaskRuns> = PrefixTree::new(2, 0);
        a.add_trace(&p(&["main", "a"]), 0, None);
        let mut b: PrefixTree<TaskRuns> = PrefixTree::new(2, 0);
        b.add_trace(&p(&["main", "b"]), 0, None);
        b.add_trace(&p(&["main", "a"]), 1, None);
        a.absorb(&b);
        let mut direct: PrefixTree<TaskRuns> = PrefixTree::new(2, 0);
        direct.add_trace(&p(&["main", "b"]), 0, None);
        direct.add_trace(&p(&["main", "a"]), 1, None);
        direct.add_trace(&p(&["main", "a"]), 0, None);
        assert_eq!(a.canonical(), direct.canonical());
    }
}
