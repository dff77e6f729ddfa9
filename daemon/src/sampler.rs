//! Sampling as STAT users know it: `samples` captures of every task, `interval` apart (with
//! jitter, so that periodic behaviour in the job does not alias with the sampling), each
//! stack unwound, symbolized and added to this daemon's local prefix trees (the 2D tree of
//! the last sample and the 3D tree of all samples), whose task indices are the positions of
//! the tasks in rank order: subtree-scoped, as the merge expects.
//!
//! Cost: captures are parallel across tasks; unwinding happens after the targets run again;
//! each distinct (binary, address) is symbolized once per daemon and turned into shared
//! trace frames once, so ten samples of many ranks running one binary cost little more
//! than one, and the line granularity costs nothing extra (every frame carries function,
//! file and line; granularities are views).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use strata_filters::mpi::{is_mpi_entry_name, is_mpi_library};
use strata_filters::{CodeFrame, Frame, FrameId, Module, PrefixTree, Special, TaskRuns};

use crate::capture::{CaptureError, CaptureOptions, Capturer, TaskCapture, ThreadError};
use crate::discovery::Task;
use crate::images::{AddressSpace, ImageCache};
use crate::memory::ProcessMemory;
use crate::procfs::{Mapping, Pid};
use crate::python::frames::PythonFrames;
use crate::python::{PyThread, cython, interleave};
use crate::stacks::{self, TaskStacks, ThreadStack};
use crate::symbols::{DebugSource, Symbolizer};
use crate::unwind::{FrameKind, UnwoundStack, WalkEnd};
use strata_filters::CodeKind;
use strata_filters::start_up::is_start_up_name;
use strata_proto::sampling::Sampling;

/// How to sample.
#[derive(Clone, Debug)]
pub struct SampleOptions {
    pub samples: u32,
    pub interval: Duration,
    /// Each gap is drawn uniformly from `interval * [1 - jitter, 1 + jitter]`.
    pub jitter: f64,
    /// Every thread (else the main thread of each task).
    pub threads: bool,
    /// Captures again (within the same sample) a task whose main stack could not be walked
    /// to its end, at most this many times.
    pub retries: u32,
    pub max_frames: usize,
    pub capture: CaptureOptions,
    /// Walk and symbolize every thread in the last sample, for `--rank` and the Stacks
    /// command. A watch probe needs only the main thread and turns this off.
    pub last_stacks: bool,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions {
            samples: Sampling::DEFAULT_SAMPLES,
            interval: Sampling::DEFAULT_INTERVAL,
            jitter: Sampling::DEFAULT_JITTER,
            threads: false,
            retries: 2,
            max_frames: stacks::DEFAULT_MAX_FRAMES,
            capture: CaptureOptions::default(),
            last_stacks: true,
        }
    }
}

/// What sampling learned about one task besides its stacks.
#[derive(Clone, Debug, Default)]
pub struct TaskReport {
    pub pid: Pid,
    pub rank: u32,
    /// The executable (`/proc/PID/exe`) and its build-id.
    pub executable: String,
    pub build_id: Option<String>,
    /// The main thread's scheduler state at the last sample that saw it.
    pub state: Option<char>,
    /// The main thread's kernel wait (`wchan`) or system call at that sample.
    pub kernel_wait: Option<String>,
    /// Samples in which the main thread's stack was captured.
    pub samples_ok: u32,
    /// The last reason a sample of this task failed (capture refused, exited, ...).
    pub error: Option<String>,
    /// The task exited during sampling.
    pub exited: bool,
    /// The main thread was waiting for the task's own threads (join, condition wait) in
    /// the last sample: its other threads hold the answer (`--threads`).
    pub waits_on_threads: bool,
    /// The executable has no debug information: frames carry no file and line.
    pub no_debug_info: bool,
    /// The state strata's PMPI library published in the task, read right after its last
    /// sample; `None` when the task has not loaded the library.
    pub pmpi: Option<Result<crate::pmpi::PmpiRead, String>>,
    /// The task's CPython at its last sample: its version (`3.11.7`), or why its Python
    /// frames could not be read; `None` when it runs no Python.
    pub python: Option<Result<String, String>>,
}

/// A sampled thread: thread indices in the trees index [`Sampled::threads`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SampledThread {
    /// Index of its task in the task list.
    pub task: u32,
    pub tid: Pid,
    pub name: String,
}

/// The stacks of a task's last sample, every thread, symbolized: what `--rank` prints.
#[derive(Clone, Debug)]
pub struct LastStacks {
    pub capture: TaskCapture,
    /// Per thread (same order as `capture.threads`).
    pub threads: Vec<Result<ThreadFrames, ThreadError>>,
    /// [`TaskStacks::python_summary`].
    pub python: Option<String>,
}

/// One thread's symbolized stack, innermost first.
#[derive(Clone, Debug)]
pub struct ThreadFrames {
    pub frames: Vec<PhysicalFrame>,
    /// Why the walk ended.
    pub end: WalkEnd,
    /// The thread holds its Python interpreter's GIL (the others wait for it, or run no
    /// Python code now).
    pub holds_gil: bool,
    /// Its Python `threading` name, when it has one.
    pub python_name: Option<String>,
}

/// One frame of the machine stack and the source frames it stands for.
#[derive(Clone, Debug)]
pub struct PhysicalFrame {
    pub pc: u64,
    pub kind: FrameKind,
    /// Inlined calls innermost first, then the function itself.
    pub frames: Arc<[Arc<Frame>]>,
}

/// Everything a daemon sends up after sampling.
#[derive(Debug)]
pub struct Sampled {
    /// Task index = position in the task list given to [`Sampler::sample`].
    pub tree_2d: PrefixTree<TaskRuns>,
    pub tree_3d: PrefixTree<TaskRuns>,
    /// Empty unless threads were sampled.
    pub threads: Vec<SampledThread>,
    pub tasks: Vec<TaskReport>,
    /// Per task, when its last capture succeeded.
    pub last: Vec<Option<LastStacks>>,
    pub started: SystemTime,
    pub finished: SystemTime,
    /// Samples actually taken (fewer than asked when stopped early).
    pub samples: u32,
}

/// A sampled path (outermost frame first) and the thread index that took it, if threads
/// are sampled.
type ThreadPath = (Option<u32>, Vec<Arc<Frame>>);

/// The trace frames of one address: inlined calls first, then the function.
type SharedFrames = Arc<[Arc<Frame>]>;

/// The per-daemon caches: parsed binaries, symbols, trace frames. (The capture threads are
/// passed in: a caller that holds tasks keeps borrowing them while it symbolizes.)
#[derive(Debug)]
pub struct Sampler {
    images: ImageCache,
    symbols: Symbolizer,
    /// (module path, lookup address in the module) -> the trace frames it stands for,
    /// inlined calls first: built once, shared by every tree and sample.
    frames: HashMap<(Arc<str>, u64), SharedFrames>,
    /// (caller's module path, return address in it) -> the MPI call it made, when the MPI
    /// library's frames below do not name it (see [`Sampler::recovered_call`]).
    calls: HashMap<(Arc<str>, u64), Option<Arc<Frame>>>,
    /// Each task's address space and the mappings it was loaded from: reused while the
    /// mappings stay the same, because loading one opens and stats every mapped file
    /// (measured: 83 opens a task a sample, most of the sampler's system time).
    spaces: HashMap<Pid, (Arc<[Mapping]>, Arc<AddressSpace>)>,
    /// Each task's Python interpreter, its code objects and the Python trace frames.
    python: PythonFrames,
}

impl Sampler {
    pub fn new(symbols: Symbolizer) -> Sampler {
        Sampler {
            images: ImageCache::new(),
            symbols,
            frames: HashMap::new(),
            calls: HashMap::new(),
            spaces: HashMap::new(),
            python: PythonFrames::default(),
        }
    }

    /// The symbolizer (variable reads use its DWARF).
    pub fn symbolizer(&self) -> &Symbolizer {
        &self.symbols
    }

    /// Samples `tasks` (in rank order). `stop` is polled between samples (Ctrl-C); the
    /// trees then hold the samples taken so far. `progress` is told each finished sample.
    pub fn sample(
        &mut self,
        capturer: &Capturer,
        tasks: &[Task],
        options: &SampleOptions,
        stop: &dyn Fn() -> bool,
        progress: &mut dyn FnMut(u32),
    ) -> Sampled {
        let n = tasks.len() as u32;
        let pids: Vec<Pid> = tasks.iter().map(|t| t.pid).collect();
        let mut reports: Vec<TaskReport> = tasks
            .iter()
            .map(|t| TaskReport {
                pid: t.pid,
                rank: t.rank,
                executable: t.exe.to_string_lossy().into_owned(),
                ..TaskReport::default()
            })
            .collect();
        let mut threads = ThreadIndex::default();
        let mut tree_3d: PrefixTree<TaskRuns> = PrefixTree::new(n, 0);
        // Per task, the paths of its latest sample (one per thread sampled): the 2D tree.
        let mut latest: Vec<Vec<ThreadPath>> = vec![Vec::new(); tasks.len()];
        // Threads that did not stop in time in some sample are shown by their samples that
        // did; only a thread never seen stopped is shown as such (see `NotStoppedSamples`).
        let mut not_stopped = NotStoppedSamples::default();
        let mut last: Vec<Option<LastStacks>> = vec![None; tasks.len()];
        let started = SystemTime::now();
        let mut rng = Jitter::seeded();
        let mut taken = 0;
        let mut next = Instant::now();
        // Each task's MPI progress at the first sample (PMPI library): a rank whose stack
        // looks the same in every sample may still have made calls between them.
        let mut first_progress: Vec<Option<u64>> = Vec::new();

        for sample in 0..options.samples.max(1) {
            if sample > 0 {
                if stop() {
                    break;
                }
                let gap = options.interval.mul_f64(rng.factor(options.jitter));
                next += gap;
                sleep_until(next, stop);
                if stop() {
                    break;
                }
            }
            let captures = capturer.capture(&pids, &options.capture);
            // Every thread is walked when threads are sampled, and in the last sample
            // (whose whole stacks `--rank` prints); otherwise the main threads suffice.
            let all_threads =
                options.threads || (options.last_stacks && sample + 1 == options.samples.max(1));
            for (i, result) in captures.into_iter().enumerate() {
                let task = i as u32;
                let result = self.retry_incomplete(capturer, pids[i], result, options, all_threads);
                let paths = match result {
                    Ok((capture, stacks)) => {
                        let traced = self.record(
                            task,
                            &capture,
                            &stacks,
                            options,
                            &mut reports[i],
                            &mut threads,
                        );
                        if all_threads {
                            last[i] = Some(LastStacks {
                                threads: self.symbolized(&stacks),
                                python: stacks.python_summary(),
                                capture: without_stack_copies(capture),
                            });
                        }
                        traced
                    }
                    Err(e) => {
                        let special = match e {
                            CaptureError::NoSuchProcess(_)
                            | CaptureError::Zombie(_)
                            | CaptureError::ExitedDuringCapture { .. } => {
                                reports[i].exited = true;
                                Special::TaskExited
                            }
                            _ => Special::NotAttached,
                        };
                        reports[i].error = Some(e.to_string());
                        vec![(None, vec![Arc::new(Frame::Special(special))])]
                    }
                };
                let paths = not_stopped.filter(task, paths, &latest[i]);
                for (thread, path) in &paths {
                    if !is_not_stopped(path) {
                        add_path(&mut tree_3d, path, task, *thread);
                    }
                }
                latest[i] = paths;
            }
            if sample == 0 {
                first_progress = pids
                    .iter()
                    .map(|pid| {
                        let (_, space) = self.spaces.get(pid)?;
                        crate::pmpi::progress(space, &ProcessMemory::new(*pid))
                    })
                    .collect();
            }
            taken += 1;
            progress(taken);
        }

        // The PMPI library's record of each task's call, read without stopping it, as near
        // the last sample as can be.
        for (i, (report, &pid)) in reports.iter_mut().zip(&pids).enumerate() {
            if let Some((_, space)) = self.spaces.get(&pid) {
                report.pmpi = crate::pmpi::read(space, &ProcessMemory::new(pid));
                if let Some(Ok(read)) = &mut report.pmpi
                    && taken > 1
                    && let Some(Some(first)) = first_progress.get(i)
                {
                    read.progress_while_sampled =
                        Some(read.state.progress().saturating_sub(*first));
                }
                if let Some(Ok(read)) = &mut report.pmpi
                    && let Some(Ok(history)) = &mut read.history
                {
                    history.places = history
                        .sites
                        .iter()
                        .map(|site| place(&self.symbols, space, site.address))
                        .collect();
                }
            }
        }
        for (task, thread, path) in not_stopped.never_stopped() {
            add_path(&mut tree_3d, &path, task, thread);
        }
        let thread_space = threads.list.len() as u32;
        let mut tree_2d: PrefixTree<TaskRuns> =
            PrefixTree::new(n, if options.threads { thread_space } else { 0 });
        if options.threads {
            // Thread indices were handed out while sampling: rebuild the 3D tree's
            // thread space now that it is known.
            tree_3d = with_thread_space(&tree_3d, thread_space);
        }
        for (task, paths) in latest.iter().enumerate() {
            for (thread, path) in paths {
                add_path(&mut tree_2d, path, task as u32, *thread);
            }
        }
        Sampled {
            tree_2d,
            tree_3d,
            threads: threads.list,
            tasks: reports,
            last,
            started,
            finished: SystemTime::now(),
            samples: taken,
        }
    }

    /// Unwinds a capture; when the main thread's walk failed, captures again (the stop may
    /// have caught it somewhere the unwinder cannot get through, like a JIT stub).
    fn retry_incomplete(
        &mut self,
        capturer: &Capturer,
        pid: Pid,
        first: Result<TaskCapture, CaptureError>,
        options: &SampleOptions,
        all_threads: bool,
    ) -> Result<(TaskCapture, TaskStacks), CaptureError> {
        let mut capture = first?;
        let mut attempt = 0;
        loop {
            let live = ProcessMemory::new(pid);
            let space = self.space_for(&capture, &live);
            let mut stacks =
                stacks::unwind_threads(&capture, space, &live, options.max_frames, &|t| {
                    all_threads || t.tid == pid
                });
            let complete = stacks
                .threads
                .first()
                .is_none_or(|t| !matches!(&t.stack, Ok(s) if matches!(s.end, WalkEnd::Error(_))));
            if complete || attempt >= options.retries {
                stacks.python = self.python.read(pid, &stacks.space, &live);
                return Ok((capture, stacks));
            }
            attempt += 1;
            match capturer
                .capture(&[pid], &options.capture)
                .pop()
                .unwrap_or(Err(CaptureError::WorkerGone))
            {
                Ok(c) => capture = c,
                // Gone since: keep the sample we have.
                Err(_) => {
                    stacks.python = self.python.read(pid, &stacks.space, &live);
                    return Ok((capture, stacks));
                }
            }
        }
    }

    /// The paths (outermost first) this capture adds, per thread index, and what the
    /// report learns from it.
    fn record(
        &mut self,
        task: u32,
        capture: &TaskCapture,
        stacks: &TaskStacks,
        options: &SampleOptions,
        report: &mut TaskReport,
        threads: &mut ThreadIndex,
    ) -> Vec<ThreadPath> {
        let mut out = Vec::new();
        for thread in &stacks.threads {
            let is_main = thread.info.tid == capture.pid;
            if !options.threads && !is_main {
                continue;
            }
            // A thread (not the task) that ended during the capture no longer exists: it
            // has no place in the tree ("[task exited]" would say the rank is gone).
            if !is_main && matches!(thread.stack, Err(ThreadError::Exited)) {
                continue;
            }
            let python = python_thread(stacks, thread);
            let inner_first = self.thread_frames(&stacks.space, thread, python);
            if is_main {
                report.python = stacks.python.as_ref().map(|p| match p {
                    Ok(p) => match &p.threads {
                        Ok(_) => Ok(p.interpreter.version_text()),
                        Err(e) => Err(format!("Python {}: {e}", p.interpreter.version_text())),
                    },
                    Err(why) => Err(why.clone()),
                });
                report.state = Some(thread.info.state);
                report.kernel_wait = thread
                    .info
                    .wchan
                    .clone()
                    .or_else(|| thread.info.syscall.map(crate::procfs::syscall_label));
                if thread.stack.is_ok() {
                    report.samples_ok += 1;
                }
                // Named waits (join, condition, barrier), or a futex wait of any kind:
                // unnamed runtime internals (OpenMP's barrier in libgomp) and locks held by
                // another thread end there too, and the answer is in the other threads.
                report.waits_on_threads = capture.threads.len() > 1
                    && (waits_on_own_threads(&inner_first)
                        || thread.info.syscall.is_some_and(is_futex_wait));
                if report.build_id.is_none() {
                    self.describe_executable(&stacks.space, report);
                }
            }
            let index = options.threads.then(|| threads.index(task, &thread.info));
            let mut path = inner_first;
            path.reverse();
            out.push((index, path));
        }
        out
    }

    fn describe_executable(&self, space: &AddressSpace, report: &mut TaskReport) {
        let exe = report.executable.trim_end_matches(" (deleted)");
        if let Some(m) = space
            .mappings
            .iter()
            .find(|m| m.path.trim_end_matches(" (deleted)") == exe && m.image().is_some())
        {
            report.build_id = m.image().and_then(|i| i.build_id.clone());
            // The Python interpreter itself is not the program a Python rank runs: its
            // frames are hidden, and its lines would not help (its Python frames have them).
            report.no_debug_info = !self.python.is_interpreter_image(&m.path)
                && matches!(
                    self.symbols.debug_source(m),
                    DebugSource::SymbolsOnly | DebugSource::Nothing
                );
        }
    }

    /// A thread's frames, innermost first (inlined calls before their physical frame),
    /// ending with a special frame when the walk did not reach the outermost frame.
    fn thread_frames(
        &mut self,
        space: &AddressSpace,
        thread: &ThreadStack,
        python: Option<&PyThread>,
    ) -> Vec<Arc<Frame>> {
        match &thread.stack {
            Ok(stack) => self.stack_frames(space, stack, python),
            // The state /proc gave when the deadline passed: only a D is a kernel wait.
            Err(ThreadError::DidNotStop(_, 'D')) => {
                vec![Arc::new(Frame::Special(Special::Uninterruptible))]
            }
            Err(ThreadError::DidNotStop(..)) => {
                vec![Arc::new(Frame::Special(Special::NotStopped))]
            }
            Err(ThreadError::Exited) => vec![Arc::new(Frame::Special(Special::TaskExited))],
            Err(_) => vec![Arc::new(Frame::Special(Special::UnwindError))],
        }
    }

    fn stack_frames(
        &mut self,
        space: &AddressSpace,
        stack: &UnwoundStack,
        python: Option<&PyThread>,
    ) -> Vec<Arc<Frame>> {
        let (physical, unplaced) = self.physical_frames(space, stack, python);
        let mut out: Vec<Arc<Frame>> = physical
            .iter()
            .flat_map(|p| p.frames.iter().cloned())
            .chain(unplaced)
            .collect();
        match stack.end {
            WalkEnd::Outermost => {}
            WalkEnd::Truncated => out.push(Arc::new(Frame::Special(Special::Truncated))),
            WalkEnd::Error(_) if out.last().is_some_and(|f| is_entry_point(f)) => {}
            WalkEnd::Error(_) => out.push(Arc::new(Frame::Special(Special::UnwindError))),
        }
        out
    }

    /// The Python frames of `python` to put just inside which of a thread's native frames
    /// (`physical`, innermost first; the index `physical.len()` is the outer end), as
    /// trace frames, innermost first ([`interleave`]).
    fn python_inserts(
        &mut self,
        physical: &[SharedFrames],
        python: Option<&PyThread>,
    ) -> HashMap<usize, Vec<Arc<Frame>>> {
        let Some(thread) = python.filter(|t| !t.frames.is_empty()) else {
            return HashMap::new();
        };
        fn function(frames: &SharedFrames) -> Option<&str> {
            frames
                .last()
                .and_then(|f| f.code())
                .filter(|c| c.kind == CodeKind::Interpreter)
                .map(|c| c.function.as_deref().unwrap_or(""))
        }
        let interpreter: Vec<usize> = (0..physical.len())
            .filter(|&i| function(&physical[i]).is_some())
            .collect();
        let evaluators: Vec<usize> = interpreter
            .iter()
            .copied()
            .filter(|&i| function(&physical[i]).is_some_and(interleave::is_evaluator))
            .collect();
        let mut out = HashMap::new();
        for (at, range) in
            interleave::place(&thread.frames, &evaluators, &interpreter, physical.len())
        {
            let frames: Vec<Arc<Frame>> = thread.frames[range]
                .iter()
                .map(|f| self.python.frame(f))
                .collect();
            out.entry(at).or_insert_with(Vec::new).extend(frames);
        }
        out
    }

    /// Every thread of `stacks`, symbolized (for printing whole stacks).
    pub fn symbolized(&mut self, stacks: &TaskStacks) -> Vec<Result<ThreadFrames, ThreadError>> {
        stacks
            .threads
            .iter()
            .map(|t| match &t.stack {
                Ok(s) => Ok(ThreadFrames {
                    // A stack with no native frame has nowhere to show Python frames.
                    frames: self
                        .physical_frames(&stacks.space, s, python_thread(stacks, t))
                        .0,
                    end: s.end.clone(),
                    holds_gil: python_thread(stacks, t).is_some_and(|p| p.holds_gil),
                    python_name: python_thread(stacks, t).and_then(|p| p.name.clone()),
                }),
                Err(e) => Err(e.clone()),
            })
            .collect()
    }

    /// A thread's machine frames, each with the source frames it stands for: inlined calls,
    /// the function, a call recovered from its caller's call instruction after it, and the
    /// Python frames its evaluator runs before them; Python frames outside every native
    /// frame go with the outermost one. The second list holds them when there is no
    /// native frame at all. Trees ([`Self::stack_frames`]) and whole stacks
    /// ([`Self::symbolized`]) are both made from this.
    fn physical_frames(
        &mut self,
        space: &AddressSpace,
        stack: &UnwoundStack,
        python: Option<&PyThread>,
    ) -> (Vec<PhysicalFrame>, Vec<Arc<Frame>>) {
        let physical: Vec<SharedFrames> = stack
            .frames
            .iter()
            .map(|f| self.frames_at(space, f.lookup_pc))
            .collect();
        let mut inserts = self.python_inserts(&physical, python);
        let mut outer = inserts.remove(&physical.len()).unwrap_or_default();
        let mut out: Vec<PhysicalFrame> = stack
            .frames
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut frames = physical[i].clone();
                if let Some(py) = inserts.remove(&i) {
                    // Inside the evaluator's own frame (the last), outside the calls inlined
                    // into it at this address: those run the innermost Python line
                    // (`compute > Py_INCREF`), they do not call the Python frames.
                    let (inlined, function) = frames.split_at(frames.len().saturating_sub(1));
                    frames = inlined
                        .iter()
                        .cloned()
                        .chain(py)
                        .chain(function.iter().cloned())
                        .collect();
                }
                if let Some(call) = stack
                    .frames
                    .get(i + 1)
                    .and_then(|caller| self.recovered_call(space, &physical[i], caller))
                {
                    frames = frames.iter().cloned().chain([call]).collect();
                }
                PhysicalFrame {
                    pc: f.pc,
                    kind: f.kind,
                    frames,
                }
            })
            .collect();
        if let Some(last) = out.last_mut()
            && !outer.is_empty()
        {
            last.frames = last.frames.iter().cloned().chain(outer.drain(..)).collect();
        }
        (out, outer)
    }

    /// Unwinds every thread of a capture with this sampler's caches, and reads its Python
    /// threads if it runs Python.
    pub fn unwind(&mut self, capture: &TaskCapture, max_frames: usize) -> TaskStacks {
        let live = ProcessMemory::new(capture.pid);
        let space = self.space_for(capture, &live);
        let mut stacks = stacks::unwind_threads(capture, space, &live, max_frames, &|_| true);
        stacks.python = self.python.read(capture.pid, &stacks.space, &live);
        stacks
    }

    /// The Python threads of `pid` now (`None`: not a Python process), read through `mem`:
    /// a variable read asks while the rank is stopped.
    pub fn read_python(
        &mut self,
        pid: Pid,
        space: &Arc<AddressSpace>,
        mem: &dyn crate::memory::MemoryReader,
    ) -> Option<crate::python::frames::PythonRead> {
        self.python.read(pid, space, mem)
    }

    /// The task's address space, loaded again only when its mappings changed.
    fn space_for(&mut self, capture: &TaskCapture, live: &ProcessMemory) -> Arc<AddressSpace> {
        self.address_space(capture.pid, &capture.maps, live)
    }

    /// `pid`'s address space with these mappings (read from `/proc/PID/maps`, or a
    /// capture's), reusing the one loaded last time when the mappings did not change;
    /// `live` reads the vdso.
    pub fn address_space(
        &mut self,
        pid: Pid,
        maps: &Arc<[Mapping]>,
        live: &dyn crate::memory::MemoryReader,
    ) -> Arc<AddressSpace> {
        // The same maps (kept by the capture's cache) or equal ones read again.
        if let Some((known, space)) = self.spaces.get(&pid)
            && (Arc::ptr_eq(known, maps) || **known == **maps)
        {
            return space.clone();
        }
        let space = Arc::new(AddressSpace::load(pid, maps, live, &self.images));
        self.spaces.insert(pid, (maps.clone(), space.clone()));
        space
    }

    /// The MPI call a program made, as a frame of its own, when the MPI library's frames
    /// below the call (`callee`, innermost first) do not name it: a stripped library's
    /// entry that jumped into unnamed internals. Named by the symbol the caller's call instruction is bound to
    /// ([`crate::calls`]); marked inlined: a call without a frame of its own. `None` when
    /// the frames name the call already, or the caller is not the program's.
    fn recovered_call(
        &mut self,
        space: &AddressSpace,
        callee: &SharedFrames,
        caller: &crate::unwind::UnwoundFrame,
    ) -> Option<Arc<Frame>> {
        // Checked at every frame of every sample: borrow, clone only to build the frame.
        if caller.kind != FrameKind::Call {
            return None;
        }
        let module = callee.last()?.code()?.module.as_ref()?;
        if !is_mpi_library(&module.path) || callee.iter().any(|f| f.is_mpi_entry()) {
            return None;
        }
        let m = space.find(caller.lookup_pc)?;
        if is_mpi_library(&m.path) {
            return None;
        }
        let return_svma = caller.pc.wrapping_sub(m.bias);
        let key: (Arc<str>, u64) = (Arc::from(m.path.as_str()), return_svma);
        if let Some(known) = self.calls.get(&key) {
            return known.clone();
        }
        let call = m
            .image()
            .and_then(|image| crate::calls::called_symbol(image, return_svma))
            .filter(|name| is_mpi_entry_name(name))
            .map(|name| {
                Arc::new(Frame::Code(CodeFrame {
                    function: Some(name.to_string()),
                    module: Some(module.clone()),
                    inlined: true,
                    recovered: true,
                    ..CodeFrame::default()
                }))
            });
        self.calls.insert(key, call.clone());
        call
    }

    /// The trace frames for one lookup address: symbolized once per daemon.
    fn frames_at(&mut self, space: &AddressSpace, lookup_pc: u64) -> SharedFrames {
        let Some(m) = space.find(lookup_pc) else {
            // Code outside any file (JIT, anonymous memory): the address is all there is.
            return Arc::from(vec![Arc::new(Frame::Code(CodeFrame {
                offset: Some(lookup_pc),
                ..CodeFrame::default()
            }))]);
        };
        let svma = lookup_pc.wrapping_sub(m.bias);
        let key: (Arc<str>, u64) = (Arc::from(m.path.as_str()), svma);
        if let Some(f) = self.frames.get(&key) {
            return f.clone();
        }
        let module = Module {
            path: m.path.trim_end_matches(" (deleted)").to_string(),
            build_id: m.image().and_then(|i| i.build_id.clone()),
        };
        let in_interpreter = self.python.is_interpreter_image(&module.path);
        let frames: SharedFrames = self
            .symbols
            .symbolize(m, svma)
            .iter()
            .map(|s| {
                // Cython's functions (mpi4py's methods) by their Python names.
                let function = s.function.as_deref().map(|f| {
                    if f.starts_with("__pyx_") {
                        cython::python_name(f, &module.path).unwrap_or_else(|| f.to_string())
                    } else {
                        f.to_string()
                    }
                });
                // The interpreter's code but its `main` and start-up frames, which views
                // treat as a C program's.
                let kind = if in_interpreter
                    && !function
                        .as_deref()
                        .is_some_and(|f| f == "main" || is_start_up_name(f))
                {
                    CodeKind::Interpreter
                } else {
                    CodeKind::Native
                };
                Arc::new(Frame::Code(CodeFrame {
                    function,
                    module: Some(module.clone()),
                    offset: Some(svma),
                    file: s.file.clone(),
                    line: s.line,
                    inlined: s.inlined,
                    recovered: false,
                    kind,
                }))
            })
            .collect();
        self.frames.insert(key, frames.clone());
        frames
    }
}

/// The Python thread state of a captured thread, if its process runs Python.
fn python_thread<'a>(stacks: &'a TaskStacks, thread: &ThreadStack) -> Option<&'a PyThread> {
    let python = stacks.python.as_ref()?.as_ref().ok()?;
    python.thread(thread.info.tid, thread.fs_base)
}

/// A capture kept only to print its threads: its stack copies (up to 512 KiB a thread,
/// already unwound) would make a daemon of many ranks hold hundreds of megabytes.
fn without_stack_copies(mut capture: TaskCapture) -> TaskCapture {
    for t in &mut capture.threads {
        if let Ok(s) = &mut t.snapshot {
            s.stack.bytes = Vec::new();
        }
    }
    capture
}

/// A path that says the thread did not stop within the sample's deadline.
fn is_not_stopped(path: &[Arc<Frame>]) -> bool {
    matches!(path, [f] if **f == Frame::Special(Special::NotStopped))
}

/// Samples in which a thread did not stop in time. On a loaded machine a thread may miss
/// the deadline in a few samples of many (it waited for a core); adding those samples as
/// `[not stopped in time]` paths would split its rank into a class of its own in every
/// attach differently. A sample that saw nothing adds nothing: the thread is shown by its
/// samples that saw its stack (the 2D tree by the latest of them), and as
/// `[not stopped in time]` only when no sample ever stopped it.
#[derive(Default)]
struct NotStoppedSamples {
    /// (task, thread) seen stopped at least once.
    seen: std::collections::HashSet<(u32, Option<u32>)>,
    /// (task, thread) never seen stopped so far, with its `[not stopped in time]` path.
    never: std::collections::BTreeMap<(u32, Option<u32>), Vec<Arc<Frame>>>,
}

impl NotStoppedSamples {
    /// This sample's paths of `task`, with a not-stopped thread's path replaced by its
    /// path in `previous` (the task's latest paths) when it has one there.
    fn filter(
        &mut self,
        task: u32,
        paths: Vec<ThreadPath>,
        previous: &[ThreadPath],
    ) -> Vec<ThreadPath> {
        paths
            .into_iter()
            .map(|(thread, path)| {
                let key = (task, thread);
                if !is_not_stopped(&path) {
                    self.seen.insert(key);
                    self.never.remove(&key);
                    return (thread, path);
                }
                if !self.seen.contains(&key) {
                    self.never.insert(key, path.clone());
                }
                previous
                    .iter()
                    .find(|(t, p)| *t == thread && !is_not_stopped(p))
                    .cloned()
                    .unwrap_or((thread, path))
            })
            .collect()
    }

    /// The threads no sample stopped: (task, thread, path).
    fn never_stopped(self) -> impl Iterator<Item = (u32, Option<u32>, Vec<Arc<Frame>>)> {
        self.never
            .into_iter()
            .map(|((task, t), path)| (task, t, path))
    }
}

/// Thread indices, handed out in order of first appearance.
#[derive(Default)]
struct ThreadIndex {
    by_tid: HashMap<(u32, Pid), u32>,
    list: Vec<SampledThread>,
}

impl ThreadIndex {
    fn index(&mut self, task: u32, info: &crate::capture::ThreadInfo) -> u32 {
        let next = self.list.len() as u32;
        *self.by_tid.entry((task, info.tid)).or_insert_with(|| {
            self.list.push(SampledThread {
                task,
                tid: info.tid,
                name: info.comm.clone(),
            });
            next
        })
    }
}

fn add_path(tree: &mut PrefixTree<TaskRuns>, path: &[Arc<Frame>], task: u32, thread: Option<u32>) {
    let ids: Vec<FrameId> = path.iter().map(|f| tree.intern_shared(f)).collect();
    tree.add_trace_ids(&ids, task, thread);
}

/// The same tree with a larger thread space (sets unchanged).
fn with_thread_space(tree: &PrefixTree<TaskRuns>, thread_space: u32) -> PrefixTree<TaskRuns> {
    let mut out: PrefixTree<TaskRuns> = PrefixTree::new(tree.task_space(), thread_space);
    out.absorb(tree);
    out
}

/// Functions in which a main thread waits for the process's own threads.
const WAITS_ON_THREADS: [&str; 6] = [
    "pthread_join",
    "pthread_clockjoin",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_barrier_wait",
    "sem_wait",
];

/// True when one of the innermost physical frames is a thread-synchronisation wait (plain
/// libc names, or glibc's internal `__pthread_clockjoin_ex` and the like).
fn waits_on_own_threads(inner_first: &[Arc<Frame>]) -> bool {
    inner_first
        .iter()
        .take(8)
        .filter_map(|f| f.code().and_then(|c| c.function.as_deref()))
        .any(|name| WAITS_ON_THREADS.iter().any(|w| name.contains(w)))
}

/// The outermost function of every process or thread. A walk that reaches one and then
/// fails has reached the bottom anyway: a thread caught in its first instructions, before
/// `clone3` marks its return address undefined, has nothing more to show.
fn is_entry_point(frame: &Frame) -> bool {
    frame
        .code()
        .and_then(|c| c.function.as_deref())
        .is_some_and(|f| matches!(f, "clone3" | "clone" | "__clone" | "_start"))
}

/// `futex` (202) and `futex_waitv` (449) on x86-64.
fn is_futex_wait(syscall: u64) -> bool {
    matches!(syscall, 202 | 449)
}

fn sleep_until(when: Instant, stop: &dyn Fn() -> bool) {
    // In slices, so that Ctrl-C is seen within 50 ms even with long intervals.
    loop {
        let now = Instant::now();
        if now >= when || stop() {
            return;
        }
        std::thread::sleep((when - now).min(Duration::from_millis(50)));
    }
}

/// A tiny xorshift generator for the jitter: no dependency, different per run.
struct Jitter(u64);

impl Jitter {
    fn seeded() -> Jitter {
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Jitter(t ^ (u64::from(std::process::id()) << 32) | 1)
    }

    /// Uniform in `[1 - j, 1 + j]`.
    fn factor(&mut self, j: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let unit = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        1.0 + j.clamp(0.0, 1.0) * (2.0 * unit - 1.0)
    }
}

/// Where the call that returns to `address` was made: the innermost source frame of the
/// call instruction (the byte before the return address).
fn place(symbols: &Symbolizer, space: &AddressSpace, address: u64) -> crate::pmpi::Place {
    let Some(mapped) = space.find(address.wrapping_sub(1)) else {
        return crate::pmpi::Place::default();
    };
    let frames = symbols.symbolize(mapped, address.wrapping_sub(1).wrapping_sub(mapped.bias));
    let innermost = &frames[0];
    crate::pmpi::Place {
        function: innermost.function.clone(),
        file: innermost.file.clone(),
        line: innermost.line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_stays_in_its_band_and_varies() {
        let mut j = Jitter(0x1234_5678_9abc_def1);
        let v: Vec<f64> = (0..1000).map(|_| j.factor(0.2)).collect();
        assert!(v.iter().all(|&x| (0.8..=1.2).contains(&x)));
        assert!(v.iter().any(|&x| x < 0.85) && v.iter().any(|&x| x > 1.15));
        assert_eq!(Jitter(7).factor(0.0), 1.0);
    }

    #[test]
    fn a_sample_that_did_not_stop_a_thread_adds_nothing_once_it_was_seen() {
        let f = |n: &str| vec![Arc::new(Frame::function(n))];
        let missed = vec![Arc::new(Frame::Special(Special::NotStopped))];
        let mut s = NotStoppedSamples::default();
        // Task 0 misses its first sample, then is seen, then misses again.
        let first = s.filter(0, vec![(None, missed.clone())], &[]);
        assert_eq!(first, vec![(None, missed.clone())], "nothing better yet");
        let second = s.filter(0, vec![(None, f("main"))], &first);
        let third = s.filter(0, vec![(None, missed.clone())], &second);
        assert_eq!(
            third,
            vec![(None, f("main"))],
            "the latest sample that saw it"
        );
        // Task 1 is never stopped.
        s.filter(1, vec![(None, missed.clone())], &[]);
        let never: Vec<_> = s.never_stopped().collect();
        assert_eq!(never, vec![(1, None, missed)]);
    }

    #[test]
    fn thread_waits_are_recognised() {
        let f = |n: &str| Arc::new(Frame::function(n));
        assert!(waits_on_own_threads(&[
            f("__futex_abstimed_wait_common"),
            f("__pthread_clockjoin_ex"),
            f("main")
        ]));
        assert!(!waits_on_own_threads(&[f("nanosleep"), f("main")]));
    }
}
