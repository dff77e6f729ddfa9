//! Views: coarser trees derived from a sampled tree without sampling again.
//!
//! A view maps every frame to a coarser frame (the granularity), optionally drops what
//! lies below the first MPI entry of each path (spin-polling ranks show different library
//! frames in every sample, which would split one "waiting in MPI_Barrier" class into many),
//! and optionally hides the start-up frames at the top of each path ([`crate::start_up`]).
//! Siblings whose coarse frames coincide are merged. Because a view acts on each path
//! independently, it commutes with merging: `view(merge(a, b)) == merge(view(a), view(b))`.

use crate::frame::{CodeFrame, Frame, FrameId};
use crate::start_up;
use crate::taskset::TaskSet;
use crate::tree::{NodeId, PrefixTree};
use rustc_hash::FxHashMap;
use std::fmt;
use std::str::FromStr;

/// What identifies a frame in a view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Granularity {
    /// Function name and module (STAT's default).
    #[default]
    Function,
    /// Function plus source file and line.
    Line,
    /// Module and offset: the exact code address, symbolized or not.
    Module,
}

impl Granularity {
    pub const ALL: [Granularity; 3] = [
        Granularity::Function,
        Granularity::Line,
        Granularity::Module,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Granularity::Function => "function",
            Granularity::Line => "line",
            Granularity::Module => "module",
        }
    }

    /// The coarse frame that stands for `frame` in this granularity.
    pub fn project(self, frame: &Frame) -> Frame {
        let c = match frame {
            Frame::Special(_) => return frame.clone(),
            Frame::Code(c) => c,
        };
        match self {
            // Without a symbol the address is all we know: keep it, or every unknown
            // frame of a module would fold into one.
            Granularity::Function if c.function.is_none() => Frame::Code(CodeFrame {
                file: None,
                line: None,
                ..c.clone()
            }),
            Granularity::Function => Frame::Code(CodeFrame {
                function: c.function.clone(),
                module: c.module.clone(),
                inlined: c.inlined,
                recovered: c.recovered,
                kind: c.kind,
                ..CodeFrame::default()
            }),
            Granularity::Line if c.line.is_none() => Granularity::Function.project(frame),
            Granularity::Line => Frame::Code(CodeFrame {
                offset: None,
                ..c.clone()
            }),
            Granularity::Module => Frame::Code(CodeFrame {
                function: None,
                file: None,
                line: None,
                ..c.clone()
            }),
        }
    }
}

impl fmt::Display for Granularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Granularity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Granularity::ALL
            .into_iter()
            .find(|g| g.as_str() == s)
            .ok_or_else(|| format!("unknown granularity '{s}' (expected function, line or module)"))
    }
}

/// How to look at a tree. The default is what `strata attach` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ViewOptions {
    pub granularity: Granularity,
    /// Drop the frames below the first MPI entry of each path.
    pub cut_below_mpi: bool,
    /// Hide the start-up frames at the top of each path (`_start`, `start_thread`, Rust's
    /// `lang_start`), never a path's last frame.
    pub hide_start_up: bool,
    /// Hide the Python interpreter's own frames ([`crate::CodeKind::Interpreter`]: its
    /// evaluation loop and call machinery between the Python frames), never a path's last
    /// frame, as py-spy does: a Python rank reads `main > <module> > step > Comm.Barrier >
    /// MPI_Barrier`.
    pub hide_interpreter: bool,
    /// Show each MPI call by its C name ([`mpi_call_frame`]): `MPI_Recv` whether the
    /// library's frame says `PMPI_Recv`, `mpi_recv_` or `ompi_recv_f`, or the call was
    /// recovered from the caller, without the library's own line or offset, so that ranks
    /// in one call from one call site are one class whatever the library does inside. Not
    /// in [`Granularity::Module`], which shows code addresses as sampled.
    pub mpi_call_names: bool,
    /// Leave out the MPI runtime's own threads ([`runtime_threads`]: Open MPI's and PMIx's
    /// progress engines, UCX's and libfabric's event threads), where start-up frames are
    /// hidden too. Only when threads were sampled: otherwise every path is a rank's main
    /// thread.
    pub hide_runtime_threads: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            granularity: Granularity::Function,
            cut_below_mpi: true,
            hide_start_up: true,
            hide_interpreter: true,
            mpi_call_names: true,
            hide_runtime_threads: true,
        }
    }
}

impl ViewOptions {
    /// Every frame and thread as sampled, in this granularity: nothing cut, nothing hidden,
    /// nothing renamed (what `--full-stacks` shows).
    pub fn full(granularity: Granularity) -> ViewOptions {
        ViewOptions {
            granularity,
            cut_below_mpi: false,
            hide_start_up: false,
            hide_interpreter: false,
            mpi_call_names: false,
            hide_runtime_threads: false,
        }
    }

    /// The frame that stands for `frame` in this view: its projection to the granularity,
    /// or the MPI call it is an entry of ([`ViewOptions::mpi_call_names`]).
    /// Whether this view leaves out the runtime threads of `tree` (see
    /// [`ViewOptions::hide_runtime_threads`]).
    pub fn hides_runtime_threads<S: TaskSet>(&self, tree: &PrefixTree<S>) -> bool {
        self.hide_runtime_threads && self.hide_start_up && tree.has_threads()
    }

    pub fn project(&self, frame: &Frame) -> Frame {
        if self.mpi_call_names
            && self.granularity != Granularity::Module
            && let Some(call) = mpi_call_frame(frame)
        {
            return call;
        }
        self.granularity.project(frame)
    }
}

/// The frame an MPI entry frame stands for in a view: the call's C name in the entry's
/// library (`MPI_Recv` in `libmpi.so.40` for `PMPI_Recv`, `mpi_recv_` or a recovered
/// `MPI_Recv [called]`), with no line, offset or inline marker: what the library does
/// inside is not the program's. `None` when `frame` is no MPI entry.
pub fn mpi_call_frame(frame: &Frame) -> Option<Frame> {
    let c = frame.code()?;
    let call = c.mpi_call()?;
    Some(Frame::Code(CodeFrame {
        function: Some(call.name),
        module: c.module.clone(),
        ..CodeFrame::default()
    }))
}

/// Derives the view `opts` of `tree` (see the module docs).
pub fn view<S: TaskSet>(tree: &PrefixTree<S>, opts: ViewOptions) -> PrefixTree<S> {
    view_with_cut(tree, opts, |_| false)
}

/// Like [`view`], also cutting below every frame for which `cut_below` holds (a user's
/// pattern, such as the pthread layer): the frame stays, what lies under it goes, as for
/// an MPI entry. `cut_below` sees the sampled frame, not its projection, so a pattern on
/// function names works in every granularity.
pub fn view_with_cut<S: TaskSet>(
    tree: &PrefixTree<S>,
    opts: ViewOptions,
    cut_below: impl Fn(&Frame) -> bool,
) -> PrefixTree<S> {
    let mut out: PrefixTree<S> = PrefixTree::new(tree.task_space(), tree.thread_space());
    let mut frame_map: FxHashMap<FrameId, FrameId> = FxHashMap::default();
    let mut project = |out: &mut PrefixTree<S>, f: FrameId| {
        *frame_map
            .entry(f)
            .or_insert_with(|| out.intern(&opts.project(tree.frame(f))))
    };
    // Per source node: its image in `out` (None when it lies below a cut), whether its
    // children are cut away, and how its path so far is hidden.
    let hide_runtime = opts.hides_runtime_threads(tree);
    let mut dropped = S::default();
    let mut image: Vec<Option<NodeId>> = Vec::with_capacity(tree.len());
    let mut cuts_below: Vec<bool> = Vec::with_capacity(tree.len());
    let mut hiding: Vec<Hiding> = Vec::with_capacity(tree.len());
    for id in tree.node_ids() {
        let n = tree.node(id);
        let (dst, cut, hidden) = match (n.parent, n.frame) {
            (None, _) | (_, None) => (Some(NodeId::ROOT), false, Hiding::All),
            (Some(p), Some(f)) => {
                if cuts_below[p.index()] || image[p.index()].is_none() {
                    (None, true, Hiding::No)
                } else {
                    let frame = tree.frame(f);
                    // Where this path stands above this node: under a shown parent, or
                    // with every frame so far hidden. A `main` that only calls the Rust
                    // runtime is hidden on the paths that go on into it, shown on others.
                    let (above, all_hidden) = match hiding[p.index()] {
                        Hiding::No | Hiding::Elided => (image[p.index()].expect("checked"), false),
                        Hiding::All => (image[p.index()].expect("checked"), true),
                        Hiding::IfRuntimeFollows => {
                            let main = tree.node(p).frame.expect("not the root");
                            if start_up::is_runtime_main(tree.frame(main), frame) {
                                (image[p.index()].expect("checked"), true)
                            } else {
                                let pm = project(&mut out, main);
                                let shown =
                                    out.child_or_insert(image[p.index()].expect("checked"), pm);
                                let node = out.node_mut(shown);
                                node.tasks.union_with(&n.tasks);
                                node.threads.union_with(&n.threads);
                                (shown, false)
                            }
                        }
                    };
                    let hide = if hide_runtime && all_hidden && frame.is_in_mpi_runtime() {
                        // The thread's own first function is the MPI runtime's: leave the
                        // thread out (its sets are the root's only, fixed below).
                        dropped.union_with(&n.threads);
                        image.push(None);
                        cuts_below.push(true);
                        hiding.push(Hiding::No);
                        continue;
                    } else if opts.hide_interpreter && frame.is_interpreter() {
                        if all_hidden && opts.hide_start_up {
                            Hiding::All
                        } else {
                            Hiding::Elided
                        }
                    } else if !opts.hide_start_up || !all_hidden {
                        Hiding::No
                    } else if start_up::is_start_up(frame) {
                        Hiding::All
                    } else if start_up::is_c_main(frame) {
                        Hiding::IfRuntimeFollows
                    } else {
                        Hiding::No
                    };
                    if hide == Hiding::No {
                        let nf = project(&mut out, f);
                        let dst = out.child_or_insert(above, nf);
                        (
                            Some(dst),
                            (opts.cut_below_mpi && frame.is_mpi_entry()) || cut_below(frame),
                            Hiding::No,
                        )
                    } else {
                        // Hidden for the paths that go on; the paths that end here keep it
                        // (a path's last frame is never hidden).
                        let (tasks, threads) =
                            (tree.tasks_ending_at(id), tree.threads_ending_at(id));
                        if !tasks.is_empty() || !threads.is_empty() {
                            let nf = project(&mut out, f);
                            let kept = out.child_or_insert(above, nf);
                            let node = out.node_mut(kept);
                            node.tasks.union_with(&tasks);
                            node.threads.union_with(&threads);
                        }
                        (Some(above), false, hide)
                    }
                }
            }
        };
        // A hidden node's sets are its parent's already (the root's, all of them).
        if let Some(d) = dst
            && (hidden == Hiding::No || id == NodeId::ROOT)
        {
            let node = out.node_mut(d);
            node.tasks.union_with(&n.tasks);
            node.threads.union_with(&n.threads);
        }
        image.push(dst);
        cuts_below.push(cut);
        hiding.push(hidden);
    }
    if !dropped.is_empty() {
        let root = out.node_mut(NodeId::ROOT);
        root.threads = root.threads.difference(&dropped);
    }
    out
}

/// The threads of the MPI runtime in `tree`: those whose own first function, below the
/// start-up frames ([`start_up`]), is in an MPI runtime library
/// ([`Frame::is_in_mpi_runtime`]). Open MPI starts two in every rank (its progress engine
/// in `libopen-pal` and PMIx's in `libpmix`), UCX and libfabric their event threads; a
/// program's own threads start in the program. An MPI linked statically into the program
/// hides its threads among the program's. Empty when threads were not sampled: then every
/// path is a rank's main thread.
pub fn runtime_threads<S: TaskSet>(tree: &PrefixTree<S>) -> S {
    let mut found = S::default();
    if !tree.has_threads() {
        return found;
    }
    // Per node: whether it and every frame above it are start-up frames.
    let mut start_up_only: Vec<bool> = Vec::with_capacity(tree.len());
    for id in tree.node_ids() {
        let n = tree.node(id);
        let only = match (n.parent, n.frame) {
            (Some(p), Some(f)) if start_up_only[p.index()] => {
                let frame = tree.frame(f);
                if start_up::is_start_up(frame) {
                    true
                } else {
                    if frame.is_in_mpi_runtime() {
                        found.union_with(&n.threads);
                    }
                    false
                }
            }
            (Some(_), _) => false,
            (None, _) => true,
        };
        start_up_only.push(only);
    }
    found
}

/// How a source node's path is hidden by [`ViewOptions::hide_start_up`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hiding {
    /// Shown (or below a shown frame).
    No,
    /// It and every frame above it are hidden start-up frames (the root too).
    All,
    /// A `main` under hidden start-up frames: hidden on the paths where the Rust runtime
    /// follows it, shown on the others.
    IfRuntimeFollows,
    /// An interpreter frame below shown frames ([`ViewOptions::hide_interpreter`]): hidden,
    /// its children shown under its parent.
    Elided,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::taskset::TaskRuns;

    fn p(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::function(n)).collect()
    }

    fn in_module(name: &str, module: &str) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(name.to_string()),
            module: Some(crate::Module {
                path: module.to_string(),
                build_id: None,
            }),
            ..CodeFrame::default()
        })
    }

    /// An inlined call keeps its offset only at the finest granularity; projected, it must
    /// not read as a call recovered from a call instruction (`[called]`), which a recovered
    /// call still does at every granularity.
    #[test]
    fn an_inlined_call_stays_inlined_in_every_view() {
        let module = Some(crate::Module {
            path: "/usr/lib/libc.so.6".to_string(),
            build_id: None,
        });
        let inlined = Frame::Code(CodeFrame {
            function: Some("read".to_string()),
            module: module.clone(),
            offset: Some(0x1234),
            file: Some("read.c".to_string()),
            line: Some(26),
            inlined: true,
            recovered: false,
            kind: crate::frame::CodeKind::Native,
        });
        let recovered = Frame::Code(
            CodeFrame::from_fields(
                Some("MPI_Waitall".to_string()),
                Some("/usr/lib/libmpi.so.12".to_string()),
                None,
                None,
                None,
                None,
                true,
            )
            .unwrap(),
        );
        for g in [
            Granularity::Function,
            Granularity::Line,
            Granularity::Module,
        ] {
            let i = g.project(&inlined);
            let c = i.code().unwrap();
            assert!(c.inlined && !c.is_recovered_call(), "{g}: {c:?}");
            assert!(
                g.project(&recovered).code().unwrap().is_recovered_call(),
                "{g}"
            );
        }
        assert!(!inlined.code().unwrap().is_recovered_call());
    }

    #[test]
    fn the_mpi_runtimes_threads_are_left_out_where_start_up_is_hidden() {
        let libc = "/usr/lib/libc.so.6";
        let thread = |start: Frame, then: &str| {
            vec![
                in_module("clone3", libc),
                in_module("start_thread", libc),
                start,
                in_module(then, libc),
            ]
        };
        // Two ranks, three threads each: main, a worker of the program's, PMIx's.
        let mut t: PrefixTree<TaskRuns> = PrefixTree::new(2, 6);
        for rank in 0..2 {
            let main = p(&["_start", "main", "PMPI_Recv"]);
            t.add_trace(&main, rank, Some(rank * 3));
            let worker = thread(in_module("worker", "/home/u/app"), "nanosleep");
            t.add_trace(&worker, rank, Some(rank * 3 + 1));
            let pmix = thread(
                in_module("progress_engine", "/usr/lib/libpmix.so.2"),
                "epoll_wait",
            );
            t.add_trace(&pmix, rank, Some(rank * 3 + 2));
        }
        let runtime = runtime_threads(&t);
        assert_eq!(runtime.indices().collect::<Vec<_>>(), [2, 5]);
        let names = |v: &PrefixTree<TaskRuns>| -> Vec<String> {
            v.node_ids()
                .filter_map(|n| v.node_frame(n).map(Frame::name))
                .collect()
        };
        let shown = view(&t, ViewOptions::default());
        assert!(!names(&shown).contains(&"progress_engine".to_string()));
        assert!(names(&shown).contains(&"worker".to_string()));
        assert_eq!(
            shown.node(NodeId::ROOT).threads.count(),
            4,
            "their threads too"
        );
        assert_eq!(shown.node(NodeId::ROOT).tasks.count(), 2);
        // Asked for, or with every frame, they are there.
        for opts in [
            ViewOptions {
                hide_runtime_threads: false,
                ..ViewOptions::default()
            },
            ViewOptions::full(Granularity::Function),
        ] {
            assert!(names(&view(&t, opts)).contains(&"progress_engine".to_string()));
        }
        // Without threads, a path is a rank's main thread, whatever it starts with.
        let mut one: PrefixTree<TaskRuns> = PrefixTree::new(1, 0);
        one.add_trace(
            &[in_module("progress_engine", "/usr/lib/libpmix.so.2")],
            0,
            None,
        );
        assert!(runtime_threads(&one).is_empty());
        assert_eq!(view(&one, ViewOptions::default()).len(), 2);
    }

    #[test]
    fn a_user_cut_keeps_the_frame_and_drops_what_is_below() {
        let mut t: PrefixTree<TaskRuns> = PrefixTree::new(3, 0);
        t.add_trace(&p(&["main", "pthread_join", "__futex_wait"]), 0, None);
        t.add_trace(&p(&["main", "pthread_join", "__lll_lock"]), 1, None);
        t.add_trace(&p(&["main", "work"]), 2, None);
        let opts = ViewOptions::default();
        let cut = view_with_cut(&t, opts, |f| f.name().starts_with("pthread_"));
        let paths: Vec<Vec<String>> = cut
            .canonical()
            .keys()
            .map(|k| k.iter().map(Frame::name).collect())
            .collect();
        assert_eq!(
            paths,
            vec![
                vec![],
                vec!["main".to_string()],
                vec!["main".to_string(), "pthread_join".to_string()],
                vec!["main".to_string(), "work".to_string()],
            ]
        );
        // The ranks below the cut end at the cut frame.
        let join = cut.node_ids().find(|&n| {
            cut.depth(n) == 2 && { cut.node_frame(n).unwrap().name() == "pthread_join" }
        });
        assert_eq!(cut.tasks_ending_at(join.unwrap()), TaskRuns::range(0, 2));
        // Without a matching frame it is the plain view.
        assert_eq!(
            view_with_cut(&t, opts, |_| false).canonical(),
            view(&t, opts).canonical()
        );
    }
}
