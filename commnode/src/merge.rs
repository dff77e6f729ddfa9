//! Merging the children's replies into one reply for the parent, with the `filters` code.
//!
//! Task indices are subtree-scoped: children are concatenated in index order, so child `i`'s
//! task `t` becomes `t + (tasks of children before i)` (trees, thread lists, notes and
//! missing ranges alike). A child that answered the rank map but not a later command keeps
//! its place: its tasks go under a `[daemon unreachable]` frame and into `missing`, so the
//! root can still name its ranks. A child that never answered the rank map has no tasks
//! in the session; the root reports the ranks nobody mapped under `[ranks unknown]`.

use prost::Message;
use strata_filters::dense::DenseBits;
use strata_filters::places::{self, Places};
use strata_filters::wire::{self, Limits};
use strata_filters::{ConcatMerge, Frame, PrefixTree, Special, TaskRuns};
use strata_proto::overlay::{
    Done, HoldReply, IndexWant, MAX_WANTS, Missing, ProbeReply, ReadMemoryReply, SampleReply,
    SetupReply, StacksReply, TaskNote, VariablesReply,
};

use crate::children::Answer;

/// A child's reply, decoded, or why there is none. The reasons here and in [`check`] stay
/// `String`s: they never leave this module but as the text of a `Missing` entry or a task
/// note, which the wire carries as text.
fn decode<M: Message + Default>(answer: &Answer) -> Result<M, String> {
    match answer {
        Ok(bytes) => M::decode(bytes.as_slice()).map_err(|e| format!("sent garbage: {e}")),
        Err(e) => Err(e.to_string()),
    }
}

/// The rank maps of the children, concatenated in index order. Also returns each child's
/// task count (`None`: it gave no rank map and takes no further part).
pub fn merge_setup(
    answers: &[(u32, Answer)],
    describe: &dyn Fn(u32) -> String,
) -> (SetupReply, Vec<(u32, Option<u32>)>) {
    let mut out = SetupReply::default();
    let mut counts = Vec::with_capacity(answers.len());
    // Key -> position in out.wants.
    let mut wanted = std::collections::HashMap::new();
    for (i, a) in answers {
        match decode::<SetupReply>(a) {
            Ok(r) => {
                let n: usize = r.daemons.iter().map(|d| d.tasks.len()).sum();
                counts.push((*i, u32::try_from(n).ok()));
                out.daemons.extend(r.daemons);
                out.missing.extend(r.missing);
                // Each index once per subtree, as a frame goes up once, with the addresses
                // every daemon wants from it.
                for want in r.wants {
                    match wanted.get(&want.key) {
                        Some(&at) => IndexWant::absorb(&mut out.wants[at], &want),
                        None if out.wants.len() < MAX_WANTS => {
                            wanted.insert(want.key.clone(), out.wants.len());
                            out.wants.push(want);
                        }
                        None => {}
                    }
                }
            }
            Err(reason) => {
                counts.push((*i, None));
                out.missing.push(Missing {
                    first: 0,
                    end: 0,
                    who: describe(*i),
                    reason,
                });
            }
        }
    }
    (out, counts)
}

/// The children taking part in a sample round (those with a task count from the rank map),
/// each with its answer: what [`merge_sample`] takes.
pub fn taking_part<'a>(
    counts: &[(u32, Option<u32>)],
    answers: &'a [(u32, Answer)],
) -> Vec<(u32, u32, &'a Answer)> {
    let by_index: std::collections::HashMap<u32, &Answer> =
        answers.iter().map(|(i, a)| (*i, a)).collect();
    counts
        .iter()
        .filter_map(|&(i, n)| Some((i, n?, *by_index.get(&i)?)))
        .collect()
}

/// The trees of a sampling round, in the task-set encoding the round asked for.
#[derive(Debug)]
pub enum Trees {
    /// Subtree-scoped runs, concatenated in child order (strata's encoding).
    Runs(PrefixTree<TaskRuns>, PrefixTree<TaskRuns>),
    /// Job-wide bit vectors of global ranks, or-ed together (`strata bench --dense`).
    Dense(PrefixTree<DenseBits>, PrefixTree<DenseBits>),
}

/// A child's sampling result checked against its rank map.
struct Checked {
    trees: Trees,
    reply: SampleReply,
}

fn check(
    mut reply: SampleReply,
    tasks: u32,
    dense: bool,
    limits: &Limits,
) -> Result<Checked, String> {
    let tree = |t: &mut Option<strata_proto::Tree>| -> Result<strata_proto::Tree, String> {
        t.take().ok_or_else(|| "sent no tree".to_string())
    };
    let (t2, t3) = (tree(&mut reply.tree_2d)?, tree(&mut reply.tree_3d)?);
    let bad = |e: wire::WireError| format!("sent a bad tree: {e}");
    let (trees, thread_space) = if dense {
        let (t2, t3) = (
            wire::decode_dense(t2, limits).map_err(bad)?,
            wire::decode_dense(t3, limits).map_err(bad)?,
        );
        if t2.task_space() != t3.task_space() {
            return Err("sent 2D and 3D bit vectors of different lengths".into());
        }
        (Trees::Dense(t2, t3), 0)
    } else {
        let (t2, t3) = (
            wire::decode(t2, limits).map_err(bad)?,
            wire::decode(t3, limits).map_err(bad)?,
        );
        for t in [&t2, &t3] {
            if t.task_space() != tasks {
                return Err(format!(
                    "sent a tree of {} tasks, its rank map has {tasks}",
                    t.task_space()
                ));
            }
        }
        if t2.thread_space() != t3.thread_space() {
            return Err("its thread list does not match its trees".into());
        }
        let threads = t3.thread_space();
        (Trees::Runs(t2, t3), threads)
    };
    if reply.notes.len() != tasks as usize {
        return Err(format!(
            "sent {} task notes for {tasks} tasks",
            reply.notes.len()
        ));
    }
    if thread_space as usize != reply.threads.len() {
        return Err("its thread list does not match its trees".into());
    }
    if reply.threads.iter().any(|t| t.task >= tasks) {
        return Err("sent a thread of a task it does not have".into());
    }
    if reply
        .missing
        .iter()
        .any(|m| m.first > m.end || m.end > tasks)
    {
        return Err("sent a missing range outside its tasks".into());
    }
    places::check(&reply)?;
    Ok(Checked { trees, reply })
}

/// This process's peak resident memory (VmHWM), KiB; 0 when unknown.
pub fn peak_rss_kib() -> u64 {
    peak_rss_kib_at("/proc/self/status")
}

/// Another process's peak resident memory, KiB; 0 when unknown.
pub fn peak_rss_kib_of(pid: u32) -> u64 {
    peak_rss_kib_at(&format!("/proc/{pid}/status"))
}

fn peak_rss_kib_at(status: &str) -> u64 {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A subtree of `tasks` tasks that could not be sampled, all under one special frame.
pub fn filler_tree(tasks: u32, special: Special) -> PrefixTree<TaskRuns> {
    let mut t = PrefixTree::new(tasks, 0);
    let path = [Frame::Special(special)];
    for task in 0..tasks {
        t.add_trace(&path, task, None);
    }
    t
}

/// The merge of one encoding's trees.
enum Merger {
    Runs(ConcatMerge, ConcatMerge),
    Dense(Option<(PrefixTree<DenseBits>, PrefixTree<DenseBits>)>),
}

impl Merger {
    fn push(&mut self, trees: Trees) {
        match (self, trees) {
            (Merger::Runs(m2, m3), Trees::Runs(t2, t3)) => {
                m2.push(&t2);
                m3.push(&t3);
            }
            (Merger::Dense(acc @ None), Trees::Dense(t2, t3)) => *acc = Some((t2, t3)),
            (Merger::Dense(Some((m2, m3))), Trees::Dense(t2, t3)) => {
                m2.absorb(&t2);
                m3.absorb(&t3);
            }
            _ => unreachable!("check() decodes in the round's encoding"),
        }
    }

    fn push_lost(&mut self, tasks: u32) {
        match self {
            Merger::Runs(m2, m3) => {
                let filler = filler_tree(tasks, Special::DaemonUnreachable);
                m2.push(&filler);
                m3.push(&filler);
            }
            // A commnode does not know a lost child's global ranks; the root still names
            // them through `missing` and the rank map.
            Merger::Dense(_) => {}
        }
    }

    fn finish(self) -> Trees {
        match self {
            Merger::Runs(m2, m3) => Trees::Runs(m2.finish(), m3.finish()),
            Merger::Dense(Some((m2, m3))) => Trees::Dense(m2, m3),
            Merger::Dense(None) => Trees::Dense(PrefixTree::new(0, 0), PrefixTree::new(0, 0)),
        }
    }
}

/// A sampling round's merge before it is encoded: the trees as built, and the rest of the
/// reply. The root uses it as is (encoding its own merge only to decode it again cost about
/// 60 ms at 1M tasks); a commnode encodes it for its parent with [`Merged::encode`].
#[derive(Debug)]
pub struct Merged {
    pub trees: Trees,
    /// Threads, notes, missing ranges, samples, times and stats; its trees are unset
    /// (they are [`Merged::trees`]).
    pub reply: SampleReply,
}

impl Merged {
    /// The reply a commnode sends to its parent.
    pub fn encode(self) -> SampleReply {
        let (t2, t3) = match &self.trees {
            Trees::Runs(t2, t3) => (wire::encode(t2), wire::encode(t3)),
            Trees::Dense(t2, t3) => (wire::encode_dense(t2), wire::encode_dense(t3)),
        };
        SampleReply {
            tree_2d: Some(t2),
            tree_3d: Some(t3),
            ..self.reply
        }
    }
}

/// The children's sampling results merged in index order, encoded for the parent: see
/// [`merge_sample_trees`].
pub fn merge_sample(
    children: &[(u32, u32, &Answer)],
    describe: &dyn Fn(u32) -> String,
    dense: bool,
    limits: &Limits,
) -> SampleReply {
    merge_sample_trees(children, describe, dense, limits).encode()
}

/// The children's sampling results merged in index order, the trees left decoded.
/// `children` holds, per child taking part (a known task count), its answer. `dense` is
/// the round's encoding ([`strata_proto::overlay::Sample::dense`]).
pub fn merge_sample_trees(
    children: &[(u32, u32, &Answer)],
    describe: &dyn Fn(u32) -> String,
    dense: bool,
    limits: &Limits,
) -> Merged {
    let mut merger = if dense {
        Merger::Dense(None)
    } else {
        Merger::Runs(ConcatMerge::new(), ConcatMerge::new())
    };
    let mut out = SampleReply::default();
    let mut places = Places::default();
    let mut offset = 0u32;
    let mut samples: Option<u32> = None;
    for &(i, tasks, answer) in children {
        match decode::<SampleReply>(answer).and_then(|r| check(r, tasks, dense, limits)) {
            Ok(c) => {
                merger.push(c.trees);
                let mut r = c.reply;
                places.absorb(&mut r.notes, &r.pmpi_places);
                out.threads.extend(r.threads.into_iter().map(|mut t| {
                    t.task += offset;
                    t
                }));
                out.notes.extend(r.notes);
                out.missing.extend(r.missing.into_iter().map(|mut m| {
                    m.first += offset;
                    m.end += offset;
                    m
                }));
                samples = Some(samples.map_or(r.samples, |s| s.min(r.samples)));
                out.stats.extend(r.stats);
                if r.started_us != 0 {
                    out.started_us = match out.started_us {
                        0 => r.started_us,
                        s => s.min(r.started_us),
                    };
                }
                out.finished_us = out.finished_us.max(r.finished_us);
            }
            Err(reason) => {
                merger.push_lost(tasks);
                out.notes.extend((0..tasks).map(|_| TaskNote {
                    error: Some(format!("{}: {reason}", describe(i))),
                    ..TaskNote::default()
                }));
                if tasks > 0 {
                    out.missing.push(Missing {
                        first: offset,
                        end: offset + tasks,
                        who: describe(i),
                        reason,
                    });
                }
            }
        }
        offset += tasks;
    }
    out.samples = samples.unwrap_or(0);
    out.pmpi_places = places.into_table();
    Merged {
        trees: merger.finish(),
        reply: out,
    }
}

/// Per-rank answers (stacks, hold, memory) concatenated in child order; a child that did not
/// answer adds nothing (the caller asked for ranks and sees which are absent).
fn concat_ranks<M: Message + Default, T>(
    answers: &[(u32, Answer)],
    ranks: impl Fn(M) -> Vec<T>,
) -> Vec<T> {
    answers
        .iter()
        .filter_map(|(_, a)| decode::<M>(a).ok())
        .flat_map(ranks)
        .collect()
}

pub fn merge_stacks(answers: &[(u32, Answer)]) -> StacksReply {
    StacksReply {
        ranks: concat_ranks(answers, |r: StacksReply| r.ranks),
    }
}

pub fn merge_probe(answers: &[(u32, Answer)]) -> ProbeReply {
    ProbeReply {
        ranks: concat_ranks(answers, |r: ProbeReply| r.ranks),
    }
}

pub fn merge_variables(answers: &[(u32, Answer)]) -> VariablesReply {
    VariablesReply {
        ranks: concat_ranks(answers, |r: VariablesReply| r.ranks),
    }
}

pub fn merge_hold(answers: &[(u32, Answer)]) -> HoldReply {
    HoldReply {
        ranks: concat_ranks(answers, |r: HoldReply| r.ranks),
    }
}

pub fn merge_read(answers: &[(u32, Answer)]) -> ReadMemoryReply {
    ReadMemoryReply {
        ranks: concat_ranks(answers, |r: ReadMemoryReply| r.ranks),
    }
}

pub fn merge_done(answers: &[(u32, Answer)], describe: &dyn Fn(u32) -> String) -> Done {
    let mut out = Done::default();
    for (i, a) in answers {
        match decode::<Done>(a) {
            Ok(d) => {
                out.daemons += d.daemons;
                out.missing.extend(d.missing);
            }
            Err(reason) => out.missing.push(Missing {
                first: 0,
                end: 0,
                who: describe(*i),
                reason,
            }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::children::NoAnswer;
    use strata_proto::overlay::ThreadEntry;

    fn reply(tree: &PrefixTree<TaskRuns>, threads: Vec<ThreadEntry>) -> Answer {
        Ok(SampleReply {
            tree_2d: Some(wire::encode(tree)),
            tree_3d: Some(wire::encode(tree)),
            threads,
            notes: vec![TaskNote::default(); tree.task_space() as usize],
            missing: vec![],
            samples: 3,
            started_us: 10,
            finished_us: 20,
            stats: vec![],
            pmpi_places: vec![],
        }
        .encode_to_vec())
    }

    /// A daemon's reply for two tasks that called MPI at `calls` (one site each), interned.
    fn with_sites(calls: &[&str]) -> SampleReply {
        use strata_proto::overlay::{PmpiHistoryNote, PmpiNote, PmpiSiteNote};
        let note = TaskNote {
            pmpi: Some(PmpiNote {
                history: Some(PmpiHistoryNote {
                    sites: calls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| PmpiSiteNote {
                            index: i as u32,
                            call: c.to_string(),
                            file: Some("/home/user/src/halo.c".into()),
                            line: Some(30 + i as u32),
                            ..PmpiSiteNote::default()
                        })
                        .collect(),
                    ..PmpiHistoryNote::default()
                }),
                ..PmpiNote::default()
            }),
            ..TaskNote::default()
        };
        let tree = two_tasks("MPI_Barrier");
        let mut r = SampleReply {
            tree_2d: Some(wire::encode(&tree)),
            tree_3d: Some(wire::encode(&tree)),
            notes: vec![note; 2],
            samples: 1,
            ..SampleReply::default()
        };
        places::intern(&mut r);
        r
    }

    #[test]
    fn call_site_places_go_up_once_per_subtree_and_bad_ones_are_refused() {
        let a: Answer = Ok(with_sites(&["MPI_Irecv", "MPI_Waitall"]).encode_to_vec());
        let b: Answer = Ok(with_sites(&["MPI_Irecv", "MPI_Barrier"]).encode_to_vec());
        let mut bad = with_sites(&["MPI_Recv"]);
        bad.pmpi_places.clear();
        let bad: Answer = Ok(bad.encode_to_vec());
        let kids = [(0, 2, &a), (1, 2, &b), (2, 2, &bad)];
        let mut out = merge_sample(&kids, &|i| format!("daemon {i}"), false, &Limits::default());
        // The four tasks of the good children share three places; the bad child is lost.
        assert_eq!(out.pmpi_places.len(), 3, "{:?}", out.pmpi_places);
        assert_eq!(out.missing.len(), 1);
        assert!(out.missing[0].reason.contains("place"), "{:?}", out.missing);
        places::inline(&mut out);
        let calls: Vec<Vec<String>> = out.notes[..4]
            .iter()
            .map(|n| {
                let h = n.pmpi.as_ref().unwrap().history.as_ref().unwrap();
                h.sites.iter().map(|s| s.call.clone()).collect()
            })
            .collect();
        assert_eq!(calls[1], ["MPI_Irecv", "MPI_Waitall"]);
        assert_eq!(calls[2], ["MPI_Irecv", "MPI_Barrier"]);
    }

    fn two_tasks(f: &str) -> PrefixTree<TaskRuns> {
        let mut t = PrefixTree::new(2, 0);
        t.add_trace(&[Frame::function("main"), Frame::function(f)], 0, None);
        t.add_trace(
            &[Frame::function("main"), Frame::function("other")],
            1,
            None,
        );
        t
    }

    #[test]
    fn a_lost_child_keeps_its_place_under_daemon_unreachable() {
        let a = reply(&two_tasks("MPI_Barrier"), vec![]);
        let lost: Answer = Err(NoAnswer::ConnectionClosed);
        let c = reply(&two_tasks("MPI_Recv"), vec![]);
        let kids = [(0, 2, &a), (1, 3, &lost), (2, 2, &c)];
        let out = merge_sample(&kids, &|i| format!("daemon {i}"), false, &Limits::default());
        assert_eq!(out.missing.len(), 1);
        let m = &out.missing[0];
        assert_eq!((m.first, m.end, m.who.as_str()), (2, 5, "daemon 1"));
        assert_eq!(out.notes.len(), 7);
        let tree = wire::decode(out.tree_3d.unwrap(), &Limits::default()).unwrap();
        assert_eq!(tree.task_space(), 7);
        let unreachable = tree
            .nodes()
            .iter()
            .find(|n| {
                n.frame
                    .is_some_and(|f| *tree.frame(f) == Frame::Special(Special::DaemonUnreachable))
            })
            .expect("a [daemon unreachable] node");
        assert_eq!(unreachable.tasks.as_runs(), &[(2, 5)]);
    }

    #[test]
    fn a_dense_round_ors_job_wide_vectors_and_refuses_runs() {
        use strata_filters::IndexMap;
        use strata_filters::dense::densify;
        // Two daemons of a 4-rank job, cyclic: daemon 0 has ranks 0 and 2, daemon 1 has 1, 3.
        let dense = |f: &str, ranks: Vec<u32>| -> Answer {
            let t = densify(&two_tasks(f), &IndexMap::new(ranks, 4, "rank").unwrap());
            Ok(SampleReply {
                tree_2d: Some(wire::encode_dense(&t)),
                tree_3d: Some(wire::encode_dense(&t)),
                notes: vec![TaskNote::default(); 2],
                samples: 1,
                ..SampleReply::default()
            }
            .encode_to_vec())
        };
        let (a, b) = (
            dense("MPI_Barrier", vec![0, 2]),
            dense("MPI_Recv", vec![1, 3]),
        );
        let runs = reply(&two_tasks("MPI_Wait"), vec![]);
        let kids = [(0, 2, &a), (1, 2, &b), (2, 2, &runs)];
        let out = merge_sample(&kids, &|i| format!("daemon {i}"), true, &Limits::default());
        let tree = wire::decode_dense(out.tree_3d.unwrap(), &Limits::default()).unwrap();
        assert_eq!(tree.task_space(), 4);
        let ranks_at = |name: &str| {
            let id = tree
                .node_ids()
                .find(|&n| tree.node_frame(n) == Some(&Frame::function(name)))
                .expect(name);
            tree.node(id).tasks.indices().collect::<Vec<_>>()
        };
        use strata_filters::TaskSet as _;
        assert_eq!(ranks_at("MPI_Barrier"), vec![0]);
        assert_eq!(ranks_at("MPI_Recv"), vec![1]);
        // "other": rank 2 (daemon 0's second task) and rank 3 (daemon 1's).
        assert_eq!(ranks_at("other"), vec![2, 3]);
        // The child that sent runs in a dense round is refused, by name.
        assert_eq!(out.missing.len(), 1);
        assert!(
            out.missing[0].reason.contains("bit vectors"),
            "{:?}",
            out.missing
        );
    }

    #[test]
    fn a_reply_that_does_not_match_the_rank_map_is_refused() {
        let a = reply(&two_tasks("MPI_Barrier"), vec![]);
        // Rank map said 3 tasks; the tree has 2.
        let out = merge_sample(
            &[(0, 3, &a)],
            &|i| format!("daemon {i}"),
            false,
            &Limits::default(),
        );
        assert_eq!(out.missing.len(), 1);
        assert!(
            out.missing[0].reason.contains("rank map"),
            "{:?}",
            out.missing
        );
        let bad_thread = reply(
            &two_tasks("x"),
            vec![ThreadEntry {
                task: 9,
                tid: 1,
                name: "t".into(),
            }],
        );
        let out = merge_sample(
            &[(0, 2, &bad_thread)],
            &|i| format!("d{i}"),
            false,
            &Limits::default(),
        );
        assert_eq!(out.missing.len(), 1);
        let garbage: Answer = Ok(vec![0xff, 0xff, 0xff]);
        let out = merge_sample(
            &[(0, 2, &garbage)],
            &|i| format!("d{i}"),
            false,
            &Limits::default(),
        );
        assert!(out.missing[0].reason.contains("garbage"));
    }

    /// The same tree, node for node: the frames, parents and sets of every node in order,
    /// and the index spaces (what the root's remap and view see).
    fn same_tree<S: strata_filters::TaskSet + PartialEq>(a: &PrefixTree<S>, b: &PrefixTree<S>) {
        assert_eq!(a.task_space(), b.task_space());
        assert_eq!(a.thread_space(), b.thread_space());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.nodes().iter().zip(b.nodes()) {
            assert_eq!(x.frame.map(|f| a.frame(f)), y.frame.map(|f| b.frame(f)));
            assert_eq!((x.parent, &x.children), (y.parent, &y.children));
            assert!(x.tasks == y.tasks && x.threads == y.threads);
        }
    }

    // The root uses `merge_sample_trees` as is and a commnode sends `merge_sample`: the
    // root must see the trees its parent link would have carried, in both encodings.
    #[test]
    fn the_decoded_merge_is_what_its_encoding_carries() {
        use strata_filters::IndexMap;
        use strata_filters::dense::densify;
        let mut t = PrefixTree::new(2, 2);
        t.add_trace(&[Frame::function("main")], 0, Some(0));
        t.add_trace(&[Frame::function("main"), Frame::function("w")], 1, Some(1));
        let th = |task| ThreadEntry {
            task,
            tid: 7,
            name: "w".into(),
        };
        let a = reply(&t, vec![th(0), th(1)]);
        let lost: Answer = Err(NoAnswer::ConnectionClosed);
        let b = reply(&t, vec![th(0), th(1)]);
        let kids = [(0, 2, &a), (1, 4, &lost), (2, 2, &b)];
        let describe = |i| format!("d{i}");
        let limits = Limits::default();
        let merged = merge_sample_trees(&kids, &describe, false, &limits);
        let sent = merge_sample(&kids, &describe, false, &limits);
        let Trees::Runs(m2, m3) = &merged.trees else {
            panic!("runs merged as {:?}", merged.trees)
        };
        same_tree(
            m2,
            &wire::decode(sent.tree_2d.clone().unwrap(), &limits).unwrap(),
        );
        same_tree(
            m3,
            &wire::decode(sent.tree_3d.clone().unwrap(), &limits).unwrap(),
        );
        let rest = SampleReply {
            tree_2d: None,
            tree_3d: None,
            ..sent
        };
        assert_eq!(merged.reply, rest);
        assert_eq!(merged.reply.missing.len(), 1);

        let dense = |f: &str, ranks: Vec<u32>| -> Answer {
            let t = densify(&two_tasks(f), &IndexMap::new(ranks, 4, "rank").unwrap());
            Ok(SampleReply {
                tree_2d: Some(wire::encode_dense(&t)),
                tree_3d: Some(wire::encode_dense(&t)),
                notes: vec![TaskNote::default(); 2],
                ..SampleReply::default()
            }
            .encode_to_vec())
        };
        let (a, b) = (dense("x", vec![0, 2]), dense("y", vec![1, 3]));
        for kids in [&[(0, 2, &a), (1, 2, &b)][..], &[]] {
            let merged = merge_sample_trees(kids, &describe, true, &limits);
            let sent = merge_sample(kids, &describe, true, &limits);
            let Trees::Dense(m2, m3) = &merged.trees else {
                panic!("dense merged as {:?}", merged.trees)
            };
            let back = |t: &Option<strata_proto::Tree>| {
                wire::decode_dense(t.clone().unwrap(), &limits).unwrap()
            };
            same_tree(m2, &back(&sent.tree_2d));
            same_tree(m3, &back(&sent.tree_3d));
        }
    }

    #[test]
    fn threads_and_missing_ranges_are_shifted_by_the_tasks_before() {
        let mut t = PrefixTree::new(2, 1);
        t.add_trace(&[Frame::function("main")], 0, Some(0));
        t.add_trace(&[Frame::function("main")], 1, None);
        let th = vec![ThreadEntry {
            task: 1,
            tid: 77,
            name: "w".into(),
        }];
        let a = reply(&two_tasks("x"), vec![]);
        let b = reply(&t, th);
        let out = merge_sample(
            &[(0, 2, &a), (1, 2, &b)],
            &|i| format!("d{i}"),
            false,
            &Limits::default(),
        );
        assert!(out.missing.is_empty(), "{:?}", out.missing);
        assert_eq!(out.threads[0].task, 3);
        assert_eq!(out.samples, 3);
    }
}
