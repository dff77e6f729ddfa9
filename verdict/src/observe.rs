//! What every rank was doing, and whether it moved: the evidence the verdict stands on.
//!
//! **Where a rank is** comes from its last sample (the 2D tree): the MPI call it is in and
//! where the program called it ([`crate::mpi_call::locate`]), or, outside MPI, the
//! innermost frame of the program itself (not libc's `nanosleep` but the program's line
//! that called it). A signal handler is where the thread runs: a rank interrupted inside
//! `MPI_Recv` whose handler never returns is outside MPI, in the handler.
//!
//! **Whether it moved** comes from all samples (the 3D tree), compared as ParaStack does
//! ("ParaStack: Efficient Hang Detection for MPI Programs at Large Scale", SC 2017): at
//! function level, and cut below the MPI call, because a rank blocked in `MPI_Recv` runs
//! the library's progress engine, whose frames differ from sample to sample although the
//! rank waits. The 3D tree keeps every sample at the finest granularity (one node per
//! instruction address), so two samples of one rank in different functions end at
//! different nodes even when one path is a prefix of the other at function level; each
//! ending is mapped to its function-level path, and a rank whose endings map to more than
//! one path moved. Two samples at exactly one instruction address and call path leave one
//! ending, as they should: the rank did not move between them. Below a Python frame, the
//! interpreter's own frames are left out of the comparison for the same reason as the
//! progress engine's: a pure-Python loop differs between samples only in the evaluator's C
//! frames under its unchanged Python line.
//!
//! When threads were sampled, each thread is looked at on its own, and a rank is represented
//! by the thread the verdict is about: its main thread when that is inside MPI, else the
//! first thread inside MPI, else the main thread.

use crate::mpi_call::{self, MpiCall, Place};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use strata_filters::taskset::format_set;
use strata_filters::{CodeKind, Frame, NodeId, PrefixTree, RankSet, Special, TaskSet};
use strata_result::StrataResult;

/// What a rank was doing at its last sample.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Activity {
    /// Inside an MPI call, called from `call_site`.
    InMpi {
        call: MpiCall,
        call_site: Option<Place>,
    },
    /// Outside MPI: computing, sleeping, waiting for a lock or for I/O. `at` is the innermost
    /// frame of the program itself, `innermost` the innermost frame of all (`nanosleep`).
    Outside {
        at: Option<Place>,
        innermost: String,
    },
    /// The process had exited.
    Exited,
    /// In uninterruptible sleep in the kernel: no stack could be read.
    Uninterruptible,
    /// Not sampled, for the reason the special frame gives (`[not stopped in time]`, ...).
    NotSampled { why: String },
}

impl Activity {
    pub fn as_str(&self) -> &'static str {
        match self {
            Activity::InMpi { .. } => "in_mpi",
            Activity::Outside { .. } => "outside_mpi",
            Activity::Exited => "exited",
            Activity::Uninterruptible => "uninterruptible",
            Activity::NotSampled { .. } => "not_sampled",
        }
    }

    pub fn call(&self) -> Option<&MpiCall> {
        match self {
            Activity::InMpi { call, .. } => Some(call),
            _ => None,
        }
    }
}

/// Whether a rank's function-level path, cut below MPI, changed between its samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Motion {
    /// The same path in every sample.
    Unchanged,
    /// Different paths in different samples: the rank moved.
    Changed,
    /// Only one sample was taken: motion was not seen.
    OneSample,
    /// One path where it was seen, but some samples could not read it (not stopped in
    /// time, not attached): not enough to call it unchanged.
    PartlySeen,
    /// The same path in every sample, but strata's PMPI library counted calls that made
    /// progress between the first sample and the last: the rank moved between samples (a
    /// rank that computes for most of each iteration looks the same in every sample).
    MadeCalls,
}

impl Motion {
    pub fn as_str(self) -> &'static str {
        match self {
            Motion::Unchanged => "unchanged",
            Motion::Changed => "changed",
            Motion::OneSample => "one_sample",
            Motion::PartlySeen => "partly_seen",
            Motion::MadeCalls => "made_calls",
        }
    }
}

/// One rank's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RankState {
    pub activity: Activity,
    /// The thread runs a signal handler (which did not return).
    pub in_signal_handler: bool,
    pub motion: Motion,
    /// The state is another thread's than the main thread's (threads were sampled).
    pub other_thread: bool,
}

/// Ranks in one state.
#[derive(Clone, Debug, PartialEq)]
pub struct StateGroup {
    pub ranks: RankSet,
    pub state: RankState,
}

/// The state of every sampled rank.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    /// Indexed by rank; `None` for a rank absent from the trees.
    pub ranks: Vec<Option<RankState>>,
    /// Samples taken (of every rank).
    pub samples: u32,
}

impl Observations {
    /// The ranks grouped by state, groups in the order of their lowest rank.
    pub fn groups(&self) -> Vec<StateGroup> {
        let mut by_state: BTreeMap<&RankState, RankSet> = BTreeMap::new();
        for (rank, state) in self.ranks.iter().enumerate() {
            if let Some(state) = state {
                by_state
                    .entry(state)
                    .or_default()
                    .insert(u32::try_from(rank).expect("ranks fit u32"));
            }
        }
        let mut groups: Vec<StateGroup> = by_state
            .into_iter()
            .map(|(state, ranks)| StateGroup {
                ranks,
                state: state.clone(),
            })
            .collect();
        groups.sort_by_key(|g| g.ranks.min());
        groups
    }
}

/// Looks at every rank of `result`: see the module's doc.
pub fn observe(result: &StrataResult) -> Observations {
    let samples = result.meta.sampling.samples;
    let job_size = result.meta.job_size as usize;
    let threads = result.tree_3d.has_threads() && !result.meta.threads.is_empty();
    // Each rank's row of the rank table, and its program (ranks of one executable share
    // one, and the cached states with it).
    let mut rank_info = vec![None; job_size];
    for info in &result.meta.ranks {
        if let Some(slot) = rank_info.get_mut(info.rank as usize) {
            *slot = Some(info);
        }
    }
    let mut programs = vec![Program::UNKNOWN];
    let program_of: Vec<usize> = rank_info
        .iter()
        .map(|info| {
            let program = info.map_or(Program::UNKNOWN, |r| Program {
                path: r.executable.clone(),
                build_id: r.build_id.clone(),
            });
            programs
                .iter()
                .position(|p| *p == program)
                .unwrap_or_else(|| {
                    programs.push(program);
                    programs.len() - 1
                })
        })
        .collect();

    // A unit is a rank, or a thread when threads were sampled.
    let unit_count = if threads {
        result.tree_3d.thread_space() as usize
    } else {
        job_size
    };
    let motions = motions(&result.tree_3d, threads, unit_count);
    let last = last_states(&result.tree_2d, threads, unit_count);
    let mut last_states = StateCache::new(&result.tree_2d, &programs);
    let mut earlier_states = StateCache::new(&result.tree_3d, &programs);
    let mut unit_state = |unit: usize, rank: usize| -> Option<RankState> {
        let program = program_of.get(rank).copied().unwrap_or(0);
        let last_seen = last[unit].map(|node| last_states.get(node, program));
        // The last sample not read (or absent): where an earlier sample saw it.
        let (activity, in_signal_handler) = match (last_seen, motions[unit].seen_at) {
            (Some((Activity::NotSampled { .. }, _)), Some(node)) | (None, Some(node)) => {
                earlier_states.get(node, program)
            }
            (Some(seen), _) => seen,
            (None, None) => return None,
        };
        Some(RankState {
            activity,
            in_signal_handler,
            motion: motions[unit].motion(samples),
            other_thread: false,
        })
    };

    let mut ranks: Vec<Option<RankState>> = vec![None; job_size];
    if threads {
        let mut per_rank: Vec<Vec<(bool, RankState)>> = vec![Vec::new(); job_size];
        for info in &result.meta.threads {
            let (unit, rank) = (info.id as usize, info.rank as usize);
            if unit >= unit_count || rank >= job_size {
                continue;
            }
            let main = rank_info[rank]
                .and_then(|r| r.pid)
                .is_some_and(|pid| pid == info.tid);
            if let Some(state) = unit_state(unit, rank) {
                per_rank[rank].push((main, state));
            }
        }
        for (rank, candidates) in per_rank.into_iter().enumerate() {
            ranks[rank] = representative(candidates);
        }
    } else {
        for (rank, slot) in ranks.iter_mut().enumerate() {
            *slot = unit_state(rank, rank);
        }
    }
    for (rank, state) in ranks.iter_mut().enumerate() {
        let progressed = rank_info[rank]
            .and_then(|r| r.pmpi.as_ref())
            .and_then(|p| p.progress_while_sampled)
            .is_some_and(|calls| calls > 0);
        if let Some(state) = state
            && progressed
            && state.motion != Motion::Changed
        {
            state.motion = Motion::MadeCalls;
        }
    }
    Observations { ranks, samples }
}

/// The thread a rank's verdict is about: see the module's doc.
fn representative(mut threads: Vec<(bool, RankState)>) -> Option<RankState> {
    let in_mpi = |s: &RankState| matches!(s.activity, Activity::InMpi { .. });
    let pick = threads
        .iter()
        .position(|(main, s)| *main && in_mpi(s))
        .or_else(|| threads.iter().position(|(_, s)| in_mpi(s)))
        .or_else(|| threads.iter().position(|(main, _)| *main))
        .or(if threads.is_empty() { None } else { Some(0) })?;
    let (main, mut state) = threads.swap_remove(pick);
    state.other_thread = !main;
    Some(state)
}

/// How one unit's samples compare.
#[derive(Clone, Copy, Debug, Default)]
struct UnitMotion {
    /// The function-level path of the first seen ending.
    path: Option<u32>,
    /// An ending with another path.
    changed: bool,
    /// An ending that is no observation (`[not stopped in time]`, ...).
    unseen: bool,
    /// A node where a sample of it ended and was seen.
    seen_at: Option<NodeId>,
}

impl UnitMotion {
    fn motion(&self, samples: u32) -> Motion {
        if self.changed {
            Motion::Changed
        } else if samples < 2 {
            Motion::OneSample
        } else if self.unseen || self.path.is_none() {
            Motion::PartlySeen
        } else {
            Motion::Unchanged
        }
    }
}

/// Each unit's motion over the 3D tree.
fn motions(tree: &PrefixTree<RankSet>, threads: bool, units: usize) -> Vec<UnitMotion> {
    let keys = PathKeys::of(tree);
    let mut out = vec![UnitMotion::default(); units];
    for node in tree.node_ids().skip(1) {
        let ending = if threads {
            tree.threads_ending_at(node)
        } else {
            tree.tasks_ending_at(node)
        };
        if ending.is_empty() {
            continue;
        }
        let key = keys.seen[node.index()].then_some(keys.key[node.index()]);
        for unit in ending.indices() {
            let Some(m) = out.get_mut(unit as usize) else {
                continue;
            };
            match (key, m.path) {
                (None, _) => m.unseen = true,
                (Some(k), None) => {
                    m.path = Some(k);
                    m.seen_at = Some(node);
                }
                (Some(k), Some(p)) => m.changed |= k != p,
            }
        }
    }
    out
}

/// Each node's function-level path cut below MPI, as a small number (equal numbers, equal
/// paths), and whether a sample ending there was an observation.
struct PathKeys {
    key: Vec<u32>,
    seen: Vec<bool>,
}

impl PathKeys {
    fn of(tree: &PrefixTree<RankSet>) -> PathKeys {
        let n = tree.len();
        let mut key = vec![0u32; n];
        let mut seen = vec![true; n];
        // Below an MPI entry (and not in a signal handler below it).
        let mut cut = vec![false; n];
        // Below a Python frame.
        let mut in_python = vec![false; n];
        let mut interned: FxHashMap<(u32, String), u32> = FxHashMap::default();
        let mut intern = |parent: u32, step: String| -> u32 {
            let next = u32::try_from(interned.len() + 1).expect("fewer than 2^32 paths");
            *interned.entry((parent, step)).or_insert(next)
        };
        // Nodes are stored parents first.
        for id in tree.node_ids().skip(1) {
            let i = id.index();
            let parent = tree
                .node(id)
                .parent
                .expect("only the root has no parent")
                .index();
            let frame = tree.node_frame(id).expect("non-root nodes have frames");
            match frame {
                Frame::Special(s) => {
                    seen[i] = !matches!(
                        s,
                        Special::NotStopped
                            | Special::NotAttached
                            | Special::DaemonUnreachable
                            | Special::RanksUnknown
                    );
                    key[i] = intern(key[parent], s.label().to_string());
                }
                Frame::Code(_) if is_signal_trampoline(frame) => {
                    // The handler runs on whatever the thread was doing, MPI included.
                    key[i] = intern(key[parent], "<signal handler>".to_string());
                }
                Frame::Code(_) if cut[parent] => {
                    key[i] = key[parent];
                    cut[i] = true;
                }
                // The evaluator running a Python line is the machine, not the program: a
                // pure-Python loop differs from sample to sample only in the interpreter's
                // frames below its line, as an MPI wait only in the progress engine's.
                Frame::Code(c) if in_python[parent] && c.kind == CodeKind::Interpreter => {
                    key[i] = key[parent];
                    in_python[i] = true;
                }
                Frame::Code(c) => {
                    in_python[i] = in_python[parent] || c.kind == CodeKind::Python;
                    match c.function.as_deref().and_then(mpi_call::call_named) {
                        Some(call) => {
                            key[i] = intern(key[parent], call.name);
                            cut[i] = true;
                        }
                        None => key[i] = intern(key[parent], frame.name()),
                    }
                }
            }
        }
        PathKeys { key, seen }
    }
}

/// The 2D tree's node where each unit's last sample ended.
fn last_states(tree: &PrefixTree<RankSet>, threads: bool, units: usize) -> Vec<Option<NodeId>> {
    let mut out = vec![None; units];
    for node in tree.node_ids().skip(1) {
        let ending = if threads {
            tree.threads_ending_at(node)
        } else {
            tree.tasks_ending_at(node)
        };
        for unit in ending.indices() {
            if let Some(slot) = out.get_mut(unit as usize) {
                *slot = Some(node);
            }
        }
    }
    out
}

/// Whether `frame` is the trampoline a signal handler returns through: a handler's frames
/// lie below it, the interrupted code above.
fn is_signal_trampoline(frame: &Frame) -> bool {
    frame
        .code()
        .and_then(|c| c.function.as_deref())
        .is_some_and(|f| {
            matches!(
                f,
                "__restore_rt" | "__kernel_rt_sigreturn" | "__vdso_rt_sigreturn" | "restore_rt"
            )
        })
}

/// How to tell a rank's program from the libraries it calls.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Program {
    path: Option<String>,
    build_id: Option<String>,
}

impl Program {
    const UNKNOWN: Program = Program {
        path: None,
        build_id: None,
    };

    fn owns(&self, frame: &Frame) -> bool {
        let Some(module) = frame.code().and_then(|c| c.module.as_ref()) else {
            return false;
        };
        self.path.as_deref() == Some(module.path.as_str())
            || (self.build_id.is_some() && self.build_id == module.build_id)
    }
}

/// The states of one tree's nodes asked for so far, per program.
struct StateCache<'a> {
    tree: &'a PrefixTree<RankSet>,
    programs: &'a [Program],
    known: FxHashMap<(NodeId, usize), (Activity, bool)>,
}

impl<'a> StateCache<'a> {
    fn new(tree: &'a PrefixTree<RankSet>, programs: &'a [Program]) -> Self {
        StateCache {
            tree,
            programs,
            known: FxHashMap::default(),
        }
    }

    /// The state of the path ending at `node`, for ranks of `programs[program]`.
    fn get(&mut self, node: NodeId, program: usize) -> (Activity, bool) {
        let (tree, programs) = (self.tree, self.programs);
        self.known
            .entry((node, program))
            .or_insert_with(|| state_of_path(&tree.path_frames(node), &programs[program]))
            .clone()
    }
}

/// The activity a path (outermost frame first) shows, and whether it runs a signal handler.
fn state_of_path(path: &[Frame], program: &Program) -> (Activity, bool) {
    match path.last() {
        None => {
            return (
                Activity::NotSampled {
                    why: "no frames".to_string(),
                },
                false,
            );
        }
        Some(Frame::Special(Special::TaskExited)) => return (Activity::Exited, false),
        Some(Frame::Special(Special::Uninterruptible)) => {
            return (Activity::Uninterruptible, false);
        }
        Some(Frame::Special(s)) if *s != Special::UnwindError && *s != Special::Truncated => {
            return (
                Activity::NotSampled {
                    why: s.label().trim_matches(['[', ']']).to_string(),
                },
                false,
            );
        }
        Some(_) => {}
    }
    let handler_start = path
        .iter()
        .rposition(is_signal_trampoline)
        .map(|trampoline| trampoline + 1);
    let running = &path[handler_start.unwrap_or(0)..];
    let refs: Vec<&Frame> = running.iter().collect();
    let activity = match mpi_call::locate(&refs) {
        Some(at) => Activity::InMpi {
            call: at.call,
            call_site: at.call_site,
        },
        None => Activity::Outside {
            at: program_frame(running, program).and_then(Place::of),
            innermost: innermost_shown(running)
                .map(Frame::name)
                .unwrap_or_default(),
        },
    };
    (activity, handler_start.is_some())
}

/// The innermost frame but the interpreter's own below a Python frame (the evaluator's
/// C function of the moment says nothing about the program, and differs between samples).
fn innermost_shown(path: &[Frame]) -> Option<&Frame> {
    let kind = |f: &Frame| f.code().map(|c| c.kind);
    match path.iter().rposition(|f| kind(f) == Some(CodeKind::Python)) {
        Some(python)
            if path[python + 1..]
                .iter()
                .all(|f| kind(f) == Some(CodeKind::Interpreter)) =>
        {
            Some(&path[python])
        }
        _ => path.last(),
    }
}

/// The innermost frame of the program itself: its innermost Python frame when it runs
/// Python (the interpreter's executable is not the program then), else of its executable
/// when the rank table names it, else the innermost with a source line, else the innermost
/// code frame.
fn program_frame<'a>(path: &'a [Frame], program: &Program) -> Option<&'a Frame> {
    let code = || path.iter().rev().filter(|f| f.code().is_some());
    code()
        .find(|f| f.code().is_some_and(|c| c.kind == CodeKind::Python))
        .or_else(|| code().find(|f| program.owns(f)))
        .or_else(|| code().find(|f| f.code().is_some_and(|c| c.line.is_some())))
        .or_else(|| code().next())
}

/// [`StateGroup`] as `result.json` writes it (`docs/FORMATS.md`).
#[derive(Serialize)]
pub(crate) struct StateFile {
    ranks: String,
    count: u64,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    call: Option<CallFile>,
    #[serde(skip_serializing_if = "Option::is_none")]
    call_site: Option<Place>,
    #[serde(skip_serializing_if = "Option::is_none")]
    at: Option<Place>,
    #[serde(skip_serializing_if = "Option::is_none")]
    innermost: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    signal_handler: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    other_thread: bool,
    motion: &'static str,
}

#[derive(Serialize)]
struct CallFile {
    name: String,
    kind: &'static str,
    blocking: bool,
}

impl StateFile {
    pub(crate) fn of(group: &StateGroup) -> StateFile {
        let s = &group.state;
        let mut file = StateFile {
            ranks: format_set(&group.ranks),
            count: group.ranks.count(),
            state: s.activity.as_str(),
            call: None,
            call_site: None,
            at: None,
            innermost: None,
            why: None,
            signal_handler: s.in_signal_handler,
            other_thread: s.other_thread,
            motion: s.motion.as_str(),
        };
        match &s.activity {
            Activity::InMpi { call, call_site } => {
                file.call = Some(CallFile {
                    name: call.name.clone(),
                    kind: call.kind.as_str(),
                    blocking: call.blocking,
                });
                file.call_site = call_site.clone();
            }
            Activity::Outside { at, innermost } => {
                file.at = at.clone();
                file.innermost = Some(innermost.clone());
            }
            Activity::NotSampled { why } => file.why = Some(why.clone()),
            Activity::Exited | Activity::Uninterruptible => {}
        }
        file
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mpi_call::CallKind;
    use crate::testing::{app, libc, mpi, result, special, stack, threaded_result};

    fn state(o: &Observations, rank: usize) -> &RankState {
        o.ranks[rank].as_ref().expect("rank sampled")
    }

    fn call_site_line(s: &RankState) -> Option<u32> {
        match &s.activity {
            Activity::InMpi { call_site, .. } => call_site.as_ref().and_then(|p| p.line),
            other => panic!("not in MPI: {other:?}"),
        }
    }

    #[test]
    fn the_example_ring_in_three_states_none_moving() {
        let o = observe(&strata_result::example::ring_result());
        let groups = o.groups();
        assert_eq!(groups.len(), 3, "{groups:#?}");
        let barrier = state(&o, 0);
        assert_eq!(
            barrier.activity.call().map(|c| c.name.as_str()),
            Some("MPI_Barrier")
        );
        assert_eq!(call_site_line(barrier), Some(47));
        assert_eq!(
            barrier.motion,
            Motion::Unchanged,
            "the progress engine is no motion"
        );
        let waitall = state(&o, 2);
        assert_eq!(
            waitall.activity.call().map(|c| c.kind),
            Some(CallKind::Completion)
        );
        assert_eq!(call_site_line(waitall), Some(45));
        assert_eq!(waitall.motion, Motion::Unchanged);
        match &state(&o, 1).activity {
            Activity::Outside { at, innermost } => {
                let at = at.as_ref().expect("a program frame");
                assert_eq!((at.function.as_deref(), at.line), (Some("main"), Some(38)));
                assert_eq!(innermost, "__GI___clock_nanosleep");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            groups
                .iter()
                .map(|g| format_set(&g.ranks))
                .collect::<Vec<_>>(),
            ["0,3-7", "1", "2"]
        );
    }

    #[test]
    fn a_python_rank_is_where_its_python_is() {
        use crate::testing::{interpreter, python};
        // Rank 0 spins in one Python line: only the evaluator's C frames below it differ.
        // Rank 1 sleeps in Python; rank 2 waits in MPI, called through the binding.
        let evaluator = || interpreter("_PyEval_EvalFrameDefault", 0x500);
        let r = result(3, 3, |rank, s| {
            let mut t = vec![interpreter("Py_RunMain", 0x100), evaluator()];
            t.push(python("<module>", 88));
            match rank {
                0 => {
                    t.push(python("spin", 12));
                    let machinery = ["PyNumber_Add", "long_add", "PyLong_FromLong"];
                    t.push(interpreter(machinery[s as usize % 3], 0x600 + u64::from(s)));
                }
                1 => {
                    t.extend([python("nap", 20), interpreter("time_sleep", 0x700)]);
                    t.push(libc("__GI___clock_nanosleep", 0x800));
                }
                _ => t.extend([
                    python("step", 41),
                    libc("Comm.Barrier", 0x900),
                    mpi("PMPI_Barrier", 0xa00),
                ]),
            }
            t
        });
        let o = observe(&r);
        assert_eq!(state(&o, 0).motion, Motion::Unchanged);
        match &state(&o, 0).activity {
            Activity::Outside { at, innermost } => {
                let at = at.as_ref().expect("a program frame");
                assert_eq!((at.function.as_deref(), at.line), (Some("spin"), Some(12)));
                assert_eq!(innermost, "spin", "the evaluator's function of the moment");
            }
            other => panic!("{other:?}"),
        }
        match &state(&o, 1).activity {
            Activity::Outside { at, innermost } => {
                assert_eq!(at.as_ref().and_then(|p| p.line), Some(20));
                assert_eq!(innermost, "__GI___clock_nanosleep");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(call_site_line(state(&o, 2)), Some(41));
    }

    #[test]
    fn a_python_rank_moving_between_functions_moves() {
        use crate::testing::{interpreter, python};
        let r = result(1, 2, |_, s| {
            let mut t = vec![interpreter("Py_RunMain", 0x100), python("<module>", 88)];
            t.push(python(if s == 0 { "load" } else { "train" }, 30));
            t.push(interpreter("PyNumber_Add", 0x600));
            t
        });
        assert_eq!(state(&observe(&r), 0).motion, Motion::Changed);
    }

    #[test]
    fn a_rank_between_computing_and_mpi_moves() {
        let r = result(2, 4, |rank, s| match (rank, s % 2) {
            (0, 0) => stack(10, vec![app("compute", 20)]),
            (0, _) => stack(
                11,
                vec![mpi("PMPI_Send", 0x100), mpi("opal_progress", 0x200)],
            ),
            _ => stack(12, vec![mpi("PMPI_Recv", 0x300)]),
        });
        let o = observe(&r);
        assert_eq!(state(&o, 0).motion, Motion::Changed);
        assert_eq!(state(&o, 1).motion, Motion::Unchanged);
        // The last sample says where rank 0 is now.
        assert_eq!(
            state(&o, 0).activity.call().map(|c| c.name.as_str()),
            Some("MPI_Send")
        );
    }

    #[test]
    fn a_path_that_is_a_prefix_of_another_is_still_motion() {
        // At function level `main > compute` is a prefix of `main > compute > helper`: the
        // 3D tree keeps only the longer, but the instruction addresses tell them apart.
        let r = result(1, 2, |_, s| match s {
            0 => stack(10, vec![app("compute", 20)]),
            _ => stack(10, vec![app("compute", 21), app("helper", 30)]),
        });
        assert_eq!(state(&observe(&r), 0).motion, Motion::Changed);
        // A loop between two lines of one function stays in one place at function level.
        let r = result(1, 4, |_, s| stack(10, vec![app("spin", 20 + s % 2)]));
        let o = observe(&r);
        assert_eq!(state(&o, 0).motion, Motion::Unchanged);
        assert!(matches!(state(&o, 0).activity, Activity::Outside { .. }));
    }

    #[test]
    fn a_handler_that_never_returns_is_where_the_rank_is() {
        let r = result(1, 3, |_, _| {
            stack(
                14,
                vec![
                    mpi("PMPI_Recv", 0x300),
                    mpi("opal_progress", 0x200),
                    libc("__restore_rt", 0x3c050),
                    app("on_signal", 7),
                    libc("pause", 0xe4a3),
                ],
            )
        });
        let s = state(&observe(&r), 0).clone();
        assert!(s.in_signal_handler);
        assert_eq!(s.motion, Motion::Unchanged);
        match s.activity {
            Activity::Outside { at, innermost } => {
                assert_eq!(at.and_then(|p| p.line), Some(7));
                assert_eq!(innermost, "pause");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn motion_is_not_claimed_from_what_was_not_seen() {
        let r = result(2, 3, |rank, s| match (rank, s) {
            (0, 1) => vec![special(Special::NotStopped)],
            _ => stack(10, vec![mpi("PMPI_Barrier", 0x10)]),
        });
        let o = observe(&r);
        assert_eq!(state(&o, 0).motion, Motion::PartlySeen);
        assert_eq!(state(&o, 1).motion, Motion::Unchanged);
        let once = result(1, 1, |_, _| stack(10, vec![mpi("PMPI_Barrier", 0x10)]));
        assert_eq!(state(&observe(&once), 0).motion, Motion::OneSample);
        // The last sample unread: where the rank is comes from the samples that were.
        let r = result(1, 3, |_, s| match s {
            2 => vec![special(Special::NotStopped)],
            _ => stack(10, vec![mpi("PMPI_Barrier", 0x10)]),
        });
        let s = state(&observe(&r), 0).clone();
        assert_eq!(
            s.activity.call().map(|c| c.name.as_str()),
            Some("MPI_Barrier")
        );
        assert_eq!(s.motion, Motion::PartlySeen);
        let exited = result(1, 2, |_, s| match s {
            0 => stack(10, vec![mpi("ompi_mpi_finalize", 0x10)]),
            _ => vec![special(Special::TaskExited)],
        });
        let s = state(&observe(&exited), 0).clone();
        assert_eq!((s.activity, s.motion), (Activity::Exited, Motion::Changed));
    }

    #[test]
    fn with_threads_a_rank_is_its_thread_in_mpi() {
        // Rank 0's main thread computes while a helper waits in MPI_Recv; rank 1's main
        // thread is in MPI_Barrier; every helper of rank 1 sleeps.
        let r = threaded_result(2, 2, 3, |rank, thread, _| match (rank, thread) {
            (0, 0) => stack(10, vec![app("compute", 20)]),
            (0, _) => vec![
                libc("start_thread", 0x10),
                app("listener", 40),
                mpi("PMPI_Recv", 0x300),
            ],
            (_, 0) => stack(11, vec![mpi("PMPI_Barrier", 0x10)]),
            _ => vec![
                libc("start_thread", 0x10),
                app("idle", 50),
                libc("nanosleep", 0x20),
            ],
        });
        let o = observe(&r);
        let s0 = state(&o, 0);
        assert_eq!(
            s0.activity.call().map(|c| c.name.as_str()),
            Some("MPI_Recv")
        );
        assert!(s0.other_thread);
        let s1 = state(&o, 1);
        assert_eq!(
            s1.activity.call().map(|c| c.name.as_str()),
            Some("MPI_Barrier")
        );
        assert!(!s1.other_thread);
    }
}
