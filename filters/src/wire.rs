//! The tree's wire encoding (`strata_proto::Tree`) and its validating decoder.
//!
//! A daemon's encoded tree holds its own frames, nodes and subtree-local runs: its size
//! depends on what its tasks are doing, never on how large the job is.

use crate::dense::{BitsError, DenseBits};
use crate::frame::{CodeFrame, CodeKind, Frame, FrameError, FrameId, Special};
use crate::taskset::{RunsError, TaskRuns, TaskSet};
use crate::tree::{Node, NodeId, PrefixTree};
use strata_proto as pb;
use strata_proto::Message;
use thiserror::Error;

/// A received tree that cannot be trusted.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum WireError {
    #[error("tree message is not valid protobuf: {0}")]
    Decode(String),
    #[error("tree message has {0}, over the limit of {1}")]
    TooLarge(String, usize),
    #[error("node {node}: {problem}")]
    BadNode { node: usize, problem: NodeProblem },
    #[error("frame {frame}: {problem}")]
    BadFrame { frame: usize, problem: FrameProblem },
    #[error("tree carries {0} where {1} were expected")]
    Encoding(&'static str, &'static str),
}

/// What is wrong with one node of a received tree ([`WireError::BadNode`]).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum NodeProblem {
    #[error("odd number of run fields")]
    OddRunFields,
    #[error("run start overflows")]
    StartOverflows,
    #[error("run end overflows")]
    EndOverflows,
    #[error("runs touch; they must be coalesced")]
    RunsTouch,
    #[error(transparent)]
    Runs(#[from] RunsError),
    #[error(transparent)]
    Bits(#[from] BitsError),
    #[error("carries a bit vector in a tree of task runs")]
    BitsInRunsTree,
    #[error("carries task runs in a tree of bit vectors")]
    RunsInBitsTree,
    #[error("parent {0} does not precede it")]
    ParentNotBefore(u32),
    #[error("frame {0} does not exist")]
    NoSuchFrame(u32),
    #[error("a sibling has the same frame")]
    SiblingFrame,
    #[error("holds tasks its parent does not")]
    OutsideParent,
}

/// What is wrong with one frame of a received tree ([`WireError::BadFrame`]).
#[derive(Debug, Error, PartialEq, Eq)]
pub enum FrameProblem {
    #[error("a string of {len} bytes exceeds {max}")]
    StringTooLong { len: usize, max: usize },
    #[error("unknown special frame kind {0}")]
    UnknownSpecial(i32),
    #[error("unknown code kind {0}")]
    UnknownKind(i32),
    #[error(transparent)]
    Fields(#[from] FrameError),
    #[error("duplicate frame")]
    Duplicate,
}

/// Bounds on what a peer may send.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_nodes: usize,
    pub max_frames: usize,
    pub max_string: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_nodes: 50_000_000,
            max_frames: 10_000_000,
            max_string: 64 * 1024,
        }
    }
}

fn encode_runs(set: &TaskRuns) -> Vec<u32> {
    let mut out = Vec::with_capacity(set.run_count() * 2);
    let mut prev = 0;
    for &(s, e) in set.as_runs() {
        out.push(s - prev);
        out.push(e - s);
        prev = e;
    }
    out
}

fn decode_runs(v: &[u32], limit: u32) -> Result<TaskRuns, NodeProblem> {
    if !v.len().is_multiple_of(2) {
        return Err(NodeProblem::OddRunFields);
    }
    let mut runs = Vec::with_capacity(v.len() / 2);
    let mut prev: u32 = 0;
    for (i, pair) in v.chunks_exact(2).enumerate() {
        let s = prev
            .checked_add(pair[0])
            .ok_or(NodeProblem::StartOverflows)?;
        let e = s.checked_add(pair[1]).ok_or(NodeProblem::EndOverflows)?;
        if i > 0 && pair[0] == 0 {
            return Err(NodeProblem::RunsTouch);
        }
        runs.push((s, e));
        prev = e;
    }
    Ok(TaskRuns::from_checked_runs(runs, limit)?)
}

fn encode_frame(f: &Frame) -> pb::Frame {
    match f {
        Frame::Special(s) => pb::Frame {
            special: special_to_pb(*s) as i32,
            ..Default::default()
        },
        Frame::Code(c) => pb::Frame {
            function: c.function.clone(),
            module_path: c.module.as_ref().map(|m| m.path.clone()),
            build_id: c.module.as_ref().and_then(|m| m.build_id.clone()),
            offset: c.offset,
            file: c.file.clone(),
            line: c.line,
            inlined: c.inlined,
            special: 0,
            kind: match c.kind {
                CodeKind::Native => pb::CodeKind::Native,
                CodeKind::Python => pb::CodeKind::Python,
                CodeKind::Interpreter => pb::CodeKind::Interpreter,
            } as i32,
        },
    }
}

fn special_to_pb(s: Special) -> pb::SpecialFrame {
    match s {
        Special::TaskExited => pb::SpecialFrame::TaskExited,
        Special::UnwindError => pb::SpecialFrame::UnwindError,
        Special::DaemonUnreachable => pb::SpecialFrame::DaemonUnreachable,
        Special::RanksUnknown => pb::SpecialFrame::RanksUnknown,
        Special::NotAttached => pb::SpecialFrame::NotAttached,
        Special::Truncated => pb::SpecialFrame::Truncated,
        Special::Uninterruptible => pb::SpecialFrame::Uninterruptible,
        Special::NotStopped => pb::SpecialFrame::NotStopped,
    }
}

fn decode_frame(f: pb::Frame, limits: &Limits) -> Result<Frame, FrameProblem> {
    for s in [&f.function, &f.module_path, &f.build_id, &f.file]
        .into_iter()
        .flatten()
    {
        if s.len() > limits.max_string {
            return Err(FrameProblem::StringTooLong {
                len: s.len(),
                max: limits.max_string,
            });
        }
    }
    let special = match pb::SpecialFrame::try_from(f.special) {
        Ok(pb::SpecialFrame::NotSpecial) => None,
        Ok(pb::SpecialFrame::TaskExited) => Some(Special::TaskExited),
        Ok(pb::SpecialFrame::UnwindError) => Some(Special::UnwindError),
        Ok(pb::SpecialFrame::DaemonUnreachable) => Some(Special::DaemonUnreachable),
        Ok(pb::SpecialFrame::RanksUnknown) => Some(Special::RanksUnknown),
        Ok(pb::SpecialFrame::NotAttached) => Some(Special::NotAttached),
        Ok(pb::SpecialFrame::Truncated) => Some(Special::Truncated),
        Ok(pb::SpecialFrame::Uninterruptible) => Some(Special::Uninterruptible),
        Ok(pb::SpecialFrame::NotStopped) => Some(Special::NotStopped),
        Err(_) => return Err(FrameProblem::UnknownSpecial(f.special)),
    };
    if let Some(s) = special {
        return Ok(Frame::Special(s));
    }
    let kind = match pb::CodeKind::try_from(f.kind) {
        Ok(pb::CodeKind::Native) => CodeKind::Native,
        Ok(pb::CodeKind::Python) => CodeKind::Python,
        Ok(pb::CodeKind::Interpreter) => CodeKind::Interpreter,
        Err(_) => return Err(FrameProblem::UnknownKind(f.kind)),
    };
    CodeFrame::from_fields(
        f.function,
        f.module_path,
        f.build_id,
        f.offset,
        f.file,
        f.line,
        f.inlined,
    )
    .map(|c| Frame::Code(CodeFrame { kind, ..c }))
    .map_err(FrameProblem::from)
}

/// Encodes a subtree-scoped tree.
pub fn encode(tree: &PrefixTree<TaskRuns>) -> pb::Tree {
    encode_with(tree, |n, out| {
        out.tasks = encode_runs(&n.tasks);
        out.threads = encode_runs(&n.threads);
    })
}

/// Encodes a tree of job-wide bit vectors (`strata bench --dense`): every node carries
/// `task_space / 8` bytes.
pub fn encode_dense(tree: &PrefixTree<DenseBits>) -> pb::Tree {
    let space = tree.task_space();
    let mut msg = encode_with(tree, |n, out| out.task_bits = n.tasks.to_bytes(space));
    msg.dense = true;
    msg
}

fn encode_with<S: TaskSet>(
    tree: &PrefixTree<S>,
    sets: impl Fn(&Node<S>, &mut pb::Node),
) -> pb::Tree {
    let mut root = pb::Node::default();
    sets(tree.node(NodeId::ROOT), &mut root);
    pb::Tree {
        task_space: tree.task_space(),
        thread_space: tree.thread_space(),
        frames: tree.frames().iter().map(encode_frame).collect(),
        nodes: tree
            .nodes()
            .iter()
            .skip(1)
            .map(|n| {
                let mut out = pb::Node {
                    parent: n.parent.expect("non-root").0,
                    frame: n.frame.expect("non-root").0,
                    ..pb::Node::default()
                };
                sets(n, &mut out);
                out
            })
            .collect(),
        root_tasks: root.tasks,
        root_threads: root.threads,
        dense: false,
        root_task_bits: root.task_bits,
    }
}

/// Encodes to bytes.
pub fn encode_to_vec(tree: &PrefixTree<TaskRuns>) -> Vec<u8> {
    encode(tree).encode_to_vec()
}

/// Decodes and validates bytes from a peer.
pub fn decode_bytes(bytes: &[u8], limits: &Limits) -> Result<PrefixTree<TaskRuns>, WireError> {
    let msg = pb::Tree::decode(bytes).map_err(|e| WireError::Decode(e.to_string()))?;
    decode(msg, limits)
}

/// Validates a decoded message and builds the tree: parents precede children, frame
/// indices exist, sibling frames are distinct, sets are coalesced and inside the spaces,
/// and each node's sets lie inside its parent's.
pub fn decode(msg: pb::Tree, limits: &Limits) -> Result<PrefixTree<TaskRuns>, WireError> {
    if msg.dense {
        return Err(WireError::Encoding("job-wide bit vectors", "task runs"));
    }
    let (tasks, threads) = (msg.task_space, msg.thread_space);
    decode_with(msg, limits, |n| {
        if !n.task_bits.is_empty() {
            return Err(NodeProblem::BitsInRunsTree);
        }
        Ok((
            decode_runs(&n.tasks, tasks)?,
            decode_runs(&n.threads, threads)?,
        ))
    })
}

/// Validates and builds a tree of job-wide bit vectors (see [`encode_dense`]); such trees
/// carry no thread sets.
pub fn decode_dense(msg: pb::Tree, limits: &Limits) -> Result<PrefixTree<DenseBits>, WireError> {
    if !msg.dense {
        return Err(WireError::Encoding("task runs", "job-wide bit vectors"));
    }
    if msg.thread_space != 0 {
        return Err(WireError::Encoding("thread sets", "job-wide bit vectors"));
    }
    let space = msg.task_space;
    decode_with(msg, limits, |n| {
        if !n.tasks.is_empty() || !n.threads.is_empty() {
            return Err(NodeProblem::RunsInBitsTree);
        }
        Ok((
            DenseBits::from_bytes(&n.task_bits, space)?,
            DenseBits::default(),
        ))
    })
}

type NodeSets<S> = Result<(S, S), NodeProblem>;

fn decode_with<S: TaskSet>(
    mut msg: pb::Tree,
    limits: &Limits,
    sets: impl Fn(&pb::Node) -> NodeSets<S>,
) -> Result<PrefixTree<S>, WireError> {
    if msg.nodes.len() > limits.max_nodes {
        return Err(WireError::TooLarge(
            format!("{} nodes", msg.nodes.len()),
            limits.max_nodes,
        ));
    }
    if msg.frames.len() > limits.max_frames {
        return Err(WireError::TooLarge(
            format!("{} frames", msg.frames.len()),
            limits.max_frames,
        ));
    }
    let mut tree: PrefixTree<S> = PrefixTree::new(msg.task_space, msg.thread_space);
    let nframes = msg.frames.len();
    for (i, f) in std::mem::take(&mut msg.frames).into_iter().enumerate() {
        let frame =
            decode_frame(f, limits).map_err(|problem| WireError::BadFrame { frame: i, problem })?;
        if tree.intern(&frame) != FrameId(i as u32) {
            return Err(WireError::BadFrame {
                frame: i,
                problem: FrameProblem::Duplicate,
            });
        }
    }
    let bad = |node: usize, problem: NodeProblem| WireError::BadNode { node, problem };
    {
        let root = pb::Node {
            tasks: std::mem::take(&mut msg.root_tasks),
            threads: std::mem::take(&mut msg.root_threads),
            task_bits: std::mem::take(&mut msg.root_task_bits),
            ..pb::Node::default()
        };
        let (tasks, threads) = sets(&root).map_err(|p| bad(0, p))?;
        let root = tree.node_mut(NodeId::ROOT);
        root.tasks = tasks;
        root.threads = threads;
    }
    for (i, n) in msg.nodes.into_iter().enumerate() {
        let id = i + 1;
        if n.parent as usize >= id {
            return Err(bad(id, NodeProblem::ParentNotBefore(n.parent)));
        }
        if n.frame as usize >= nframes {
            return Err(bad(id, NodeProblem::NoSuchFrame(n.frame)));
        }
        let (parent, frame) = (NodeId(n.parent), FrameId(n.frame));
        if tree.child(parent, frame).is_some() {
            return Err(bad(id, NodeProblem::SiblingFrame));
        }
        let (tasks, threads) = sets(&n).map_err(|p| bad(id, p))?;
        let p = tree.node(parent);
        if !tasks.difference(&p.tasks).is_empty() || !threads.difference(&p.threads).is_empty() {
            return Err(bad(id, NodeProblem::OutsideParent));
        }
        let made = tree.child_or_insert(parent, frame);
        let node = tree.node_mut(made);
        node.tasks = tasks;
        node.threads = threads;
    }
    Ok(tree)
}
