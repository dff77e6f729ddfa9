//! ptrace capture: a consistent snapshot of every thread of a task, taken while stopping it
//! for as little time as possible, without ever harming it.
//!
//! How a capture goes (per task):
//! 1. Before stopping anything: read each thread's `comm`, state and `wchan` (what the user
//!    wants to know is what the thread was doing, not that strata stopped it) and the task's
//!    maps (to know where each stack ends).
//! 2. `PTRACE_SEIZE` every thread, then `PTRACE_INTERRUPT` every thread, then wait for each
//!    (`__WALL`, polled against a deadline: a thread in uninterruptible sleep does not stop).
//!    Never SIGSTOP: a seized tracee is detached by the kernel if strata dies, and an
//!    interrupt leaves no signal behind. Threads that appeared meanwhile are seized in a
//!    further round; threads that exit are reaped.
//! 3. Copy the registers and the stack (from the red zone below SP up to the end of the
//!    stack mapping, capped), then `PTRACE_DETACH`, re-injecting a signal that arrived
//!    during the stop (a signal-delivery-stop swallowed the signal otherwise).
//! 4. Unwinding happens later, from the copy, while the task runs again.
//!
//! A tracee belongs to the OS thread that seized it: every ptrace call for it must come
//! from that thread. So captures run on a small pool of dedicated OS threads ([`Capturer`]),
//! each owning the tasks it seized until it detaches them (never tokio's blocking pool,
//! whose threads come and go). Tasks are spread over the pool, so several are captured in
//! parallel.
//!
//! Hold mode keeps a task stopped after its capture so that later reads (variables, more
//! memory) see the same moment as the stack; a deadline detaches it automatically, and so
//! does dropping the [`Held`] handle or the [`Capturer`].
//!
//! Safety of the target, whatever happens:
//! - strata killed (even `kill -9`): the kernel detaches every tracee of an exiting tracer
//!   and resumes it. A capture thread that ends detaches its tracees the same way.
//! - A tracee that exits while traced reports its exit to the tracer and stays a zombie
//!   until the tracer reaps it, which would keep its parent (mpirun, slurmstepd) from
//!   reaping it. Every worker therefore reaps (`waitpid(WNOHANG|__WALL)`) the exited
//!   threads it still traces, including held ones, on every tick.
//! - A thread that did not stop in time cannot be detached (ptrace detaches only stopped
//!   tracees). It "lingers": the worker polls it and detaches it the moment it stops.

use std::collections::HashMap;
use std::fmt;
use std::io::IoSliceMut;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::sys::uio::{RemoteIoVec, process_vm_readv};
use nix::unistd::Pid as NixPid;

mod attach;

pub use attach::{CaptureError, ptrace_scope};
use attach::{diagnose_attach, seize_within};

use crate::maps_cache::MapsCache;
use crate::memory::{MemoryCopy, ProcessMemory, Registers};
use crate::procfs::{self, Mapping, Pid};

/// How a capture behaves.
#[derive(Clone, Debug)]
pub struct CaptureOptions {
    /// How long to wait for the threads of a task to stop once interrupted. A thread that
    /// has not stopped by then (uninterruptible sleep, D state) is reported without a stack.
    /// A thread still runnable then (it had no core) is waited for up to
    /// [`RUNNABLE_GRACE`] times as long the first time it is interrupted, until the task's
    /// captures have spent [`STARVED_BUDGET`] timeouts on such waits.
    pub stop_timeout: Duration,
    /// At most this many bytes of each thread's stack are copied (from SP up).
    pub max_stack_bytes: usize,
    /// Rounds of "seize the threads that appeared since the last listing".
    pub max_thread_rounds: usize,
    /// Stop only the main thread; the others keep running and are not listed. What a
    /// watch probe needs ("in MPI or not, and where"): on a rank with many threads (an
    /// OpenMP team, a progress thread) it stops one thread instead of all of them. When
    /// the main thread has exited (a zombie leader) the other threads are captured.
    pub main_thread_only: bool,
}

impl Default for CaptureOptions {
    fn default() -> Self {
        CaptureOptions {
            stop_timeout: Duration::from_millis(200),
            max_stack_bytes: 512 * 1024,
            max_thread_rounds: 4,
            main_thread_only: false,
        }
    }
}

/// How many stop timeouts in all a runnable thread gets the first time it is interrupted.
/// It stops as soon as it gets a core; on a node busier than its cores (several daemons of
/// a test cluster on one machine, two sessions at once, strata's own raised threads
/// reading debug information) that can take a few hundred milliseconds, and one capture
/// that waits that long beats a rank shown as "not stopped in time" for a whole session.
pub const RUNNABLE_GRACE: u32 = 5;

/// How many stop timeouts in all one task's captures may spend waiting for threads that had
/// no core, over the life of a capturer (a session). Once spent, that task's captures wait
/// only [`STARVED_WAIT_DIVISOR`]-th of a timeout and give no grace: on a node whose cores a
/// hung job's other ranks take, every capture of a starved rank would otherwise wait the
/// whole grace period, and one attach of 65 samples took 157 s. A starved thread that stops
/// between two captures is still captured; one no capture stopped is shown as such.
pub const STARVED_BUDGET: u32 = 2 * RUNNABLE_GRACE;

/// See [`STARVED_BUDGET`]: a thread that can run stops within microseconds, so a twentieth
/// of the timeout (10 ms by default) is plenty for every thread that gets a core.
pub const STARVED_WAIT_DIVISOR: u32 = 20;

/// What could be learned about a thread without stopping it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadInfo {
    pub tid: Pid,
    /// The thread's name (`comm`).
    pub comm: String,
    /// Scheduler state before the capture: R, S, D, T, t, Z, ...
    pub state: char,
    /// The kernel function a sleeping thread waits in (`do_epoll_wait`, `futex_wait_queue`...).
    pub wchan: Option<String>,
    /// The system call a blocked thread is in (x86-64 number; `procfs::syscall_name`).
    /// Also known when the kernel does not give a wchan: since Linux 6.12 a thread that
    /// has just gone to sleep can stay queued ("delayed dequeue") for a while on a busy
    /// machine, and the kernel then answers wchan "0" however long it has slept.
    pub syscall: Option<u64>,
}

/// Why a thread has no registers in a capture.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    #[error("thread exited during the capture")]
    Exited,
    /// The state is the one `/proc` gave when the deadline passed: `D` is an uninterruptible
    /// kernel wait, anything else a thread that did not get to stop in time (a loaded
    /// machine).
    #[error("thread did not stop within {0:?} (state {1} when the deadline passed)")]
    DidNotStop(Duration, char),
    #[error("cannot read registers: {0}")]
    Registers(Errno),
    #[error("cannot attach to thread: {0}")]
    Attach(Errno),
}

/// One thread of a captured task.
#[derive(Clone, Debug)]
pub struct ThreadCapture {
    pub info: ThreadInfo,
    /// Registers and stack, or why there are none.
    pub snapshot: Result<ThreadSnapshot, ThreadError>,
}

/// The recorded state of a stopped thread: what unwinding reads.
#[derive(Clone, Debug)]
pub struct ThreadSnapshot {
    pub regs: Registers,
    /// The stack from the red zone below SP up (possibly empty if unreadable).
    pub stack: MemoryCopy,
    /// A signal that arrived while the thread was stopped (re-injected at detach).
    pub pending_signal: Option<i32>,
    /// The thread was already in a group-stop (SIGSTOP, Ctrl-Z) before strata came: it is
    /// left stopped, as the user had it.
    pub group_stopped: bool,
}

/// A captured task (process).
#[derive(Clone, Debug)]
pub struct TaskCapture {
    pub pid: Pid,
    /// Main thread first, then the others by tid.
    pub threads: Vec<ThreadCapture>,
    /// The task's mappings, read just before the stop (or earlier, when its size has not
    /// changed since: see [`crate::maps_cache`]).
    pub maps: Arc<[Mapping]>,
    /// From the first interrupt to the last detach (or to the end of the capture when
    /// held): how long strata kept the task from running.
    pub stopped_for: Duration,
}

impl TaskCapture {
    pub fn main_thread(&self) -> Option<&ThreadCapture> {
        self.threads.iter().find(|t| t.info.tid == self.pid)
    }
}

/// Raw ptrace and waitpid calls that nix cannot express: nix's `waitpid` refuses stop
/// statuses of real-time signals (it converts them to `Signal`, which has no RT variants)
/// and its `detach` cannot re-inject them, which would silently drop an MPI library's
/// real-time signals.
#[allow(unsafe_code)]
mod sys {
    use nix::errno::Errno;

    use crate::procfs::Pid;

    /// `waitpid(tid, __WALL | (WNOHANG))`: `Ok(None)` when nothing is reported yet.
    pub fn wait_raw(tid: Pid, nohang: bool) -> Result<Option<i32>, Errno> {
        let mut status = 0;
        let flags = libc::__WALL | if nohang { libc::WNOHANG } else { 0 };
        // SAFETY: status is a valid, writable int.
        let r = unsafe { libc::waitpid(tid, &mut status, flags) };
        match r {
            -1 => Err(Errno::last()),
            0 => Ok(None),
            _ => Ok(Some(status)),
        }
    }

    /// `PTRACE_DETACH`, delivering `signal` (0 for none) as the tracee resumes.
    pub fn detach(tid: Pid, signal: i32) -> Result<(), Errno> {
        // SAFETY: PTRACE_DETACH takes no pointers; data is the signal number.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_DETACH,
                tid,
                std::ptr::null_mut::<libc::c_void>(),
                signal as usize as *mut libc::c_void,
            )
        };
        if r == -1 { Err(Errno::last()) } else { Ok(()) }
    }
}

/// What `waitpid` said about a tracee.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Report {
    /// Stopped by our interrupt (or in a group-stop, `group` true).
    EventStop { group: bool },
    /// Stopped on its way to receiving `signal` (which must be re-injected).
    SignalStop(i32),
    /// Gone (exited or killed); reaped by this wait.
    Exited,
}

fn decode(status: i32) -> Report {
    if libc::WIFSTOPPED(status) {
        let sig = libc::WSTOPSIG(status);
        let event = (status >> 16) & 0xff;
        if event == libc::PTRACE_EVENT_STOP {
            let group = matches!(
                sig,
                libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
            );
            Report::EventStop { group }
        } else if event == 0 {
            Report::SignalStop(sig)
        } else {
            // No PTRACE_O_* option is set, so no other event can come; treat it as a
            // plain stop without a signal to deliver.
            Report::EventStop { group: false }
        }
    } else {
        Report::Exited
    }
}

/// A thread this worker has seized.
#[derive(Debug)]
struct Traced {
    tid: Pid,
    /// Signal to deliver at detach.
    signal: i32,
}

/// A held task.
#[derive(Debug)]
struct HeldTask {
    deadline: Instant,
    threads: Vec<Traced>,
}

enum Command {
    Capture {
        pid: Pid,
        options: CaptureOptions,
        hold_until: Option<Instant>,
        reply: mpsc::Sender<(Pid, Result<TaskCapture, CaptureError>)>,
    },
    Release {
        pid: Pid,
        reply: mpsc::Sender<bool>,
    },
    Keep {
        pid: Pid,
        until: Instant,
        reply: mpsc::Sender<bool>,
    },
}

/// The pool of capture threads. Dropping it releases every held task and ends the threads
/// (which detaches anything they still trace).
pub struct Capturer {
    workers: Vec<Worker>,
}

struct Worker {
    tx: Option<mpsc::Sender<Command>>,
    handle: Option<thread::JoinHandle<()>>,
}

impl fmt::Debug for Capturer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capturer")
            .field("threads", &self.workers.len())
            .finish()
    }
}

impl Capturer {
    /// A pool of `threads` capture threads (at least one).
    pub fn new(threads: usize) -> Capturer {
        let workers = (0..threads.max(1))
            .map(|i| {
                let (tx, rx) = mpsc::channel();
                let handle = thread::Builder::new()
                    .name(format!("strata-capture-{i}"))
                    .spawn(move || {
                        // Short polling sleeps should be short: the default 50 us timer
                        // slack would add itself to every stop.
                        let _ = nix::sys::prctl::set_timerslack(1000);
                        // Between an interrupt and its stop report, a capture thread starved
                        // by spinning ranks would keep them stopped past the deadline.
                        strata_launcher::priority::raise_current_thread();
                        WorkerState::default().run(rx)
                    })
                    .expect("spawning a capture thread");
                Worker {
                    tx: Some(tx),
                    handle: Some(handle),
                }
            })
            .collect();
        Capturer { workers }
    }

    /// One capture thread per core, at most 8: capture is short syscalls, so more threads
    /// than cores only adds contention with the (often spinning) targets.
    pub fn with_default_threads() -> Capturer {
        let n = thread::available_parallelism().map_or(1, |n| n.get());
        Capturer::new(n.min(8))
    }

    fn worker_for(&self, pid: Pid) -> usize {
        pid.unsigned_abs() as usize % self.workers.len()
    }

    fn send(&self, pid: Pid, cmd: Command) -> Result<(), CaptureError> {
        self.workers[self.worker_for(pid)]
            .tx
            .as_ref()
            .ok_or(CaptureError::WorkerGone)?
            .send(cmd)
            .map_err(|_| CaptureError::WorkerGone)
    }

    /// Captures these tasks (in parallel across the pool) and detaches them again. Results
    /// come in the order of `pids`.
    pub fn capture(
        &self,
        pids: &[Pid],
        options: &CaptureOptions,
    ) -> Vec<Result<TaskCapture, CaptureError>> {
        self.capture_many(pids, options, None)
    }

    fn capture_many(
        &self,
        pids: &[Pid],
        options: &CaptureOptions,
        hold_until: Option<Instant>,
    ) -> Vec<Result<TaskCapture, CaptureError>> {
        let (reply, results) = mpsc::channel();
        let mut out: Vec<Option<Result<TaskCapture, CaptureError>>> = vec![None; pids.len()];
        let mut index: HashMap<Pid, Vec<usize>> = HashMap::new();
        let mut sent = 0;
        for (i, &pid) in pids.iter().enumerate() {
            let list = index.entry(pid).or_default();
            list.push(i);
            if list.len() > 1 {
                continue; // a duplicate pid is captured once
            }
            let cmd = Command::Capture {
                pid,
                options: options.clone(),
                hold_until,
                reply: reply.clone(),
            };
            match self.send(pid, cmd) {
                Ok(()) => sent += 1,
                Err(e) => out[i] = Some(Err(e)),
            }
        }
        drop(reply);
        for _ in 0..sent {
            let Ok((pid, result)) = results.recv() else {
                break;
            };
            for &i in &index[&pid] {
                out[i] = Some(result.clone());
            }
        }
        out.into_iter()
            .map(|r| r.unwrap_or(Err(CaptureError::WorkerGone)))
            .collect()
    }

    /// Captures a task and keeps it stopped until the returned handle is released or
    /// dropped, or until `hold_for` has passed, whichever comes first.
    pub fn capture_and_hold(
        &self,
        pid: Pid,
        options: &CaptureOptions,
        hold_for: Duration,
    ) -> Result<Held<'_>, CaptureError> {
        self.capture_and_hold_many(&[pid], options, hold_for)
            .pop()
            .unwrap_or(Err(CaptureError::WorkerGone))
    }

    /// [`Capturer::capture_and_hold`] for several tasks at once (in parallel), results in
    /// the order of `pids`. A pid listed twice is held once (the second is `AlreadyHeld`).
    pub fn capture_and_hold_many(
        &self,
        pids: &[Pid],
        options: &CaptureOptions,
        hold_for: Duration,
    ) -> Vec<Result<Held<'_>, CaptureError>> {
        let until = Instant::now() + hold_for;
        let mut seen = std::collections::HashSet::new();
        self.capture_many(pids, options, Some(until))
            .into_iter()
            .zip(pids)
            .map(|(r, &pid)| {
                if !seen.insert(pid) {
                    return Err(CaptureError::AlreadyHeld(pid));
                }
                r.map(|capture| Held {
                    capturer: self,
                    capture,
                    released: false,
                })
            })
            .collect()
    }

    fn release(&self, pid: Pid) -> bool {
        let (reply, rx) = mpsc::channel();
        if self.send(pid, Command::Release { pid, reply }).is_err() {
            return false;
        }
        rx.recv().unwrap_or(false)
    }

    fn keep(&self, pid: Pid, until: Instant) -> bool {
        let (reply, rx) = mpsc::channel();
        if self.send(pid, Command::Keep { pid, until, reply }).is_err() {
            return false;
        }
        rx.recv().unwrap_or(false)
    }
}

impl Drop for Capturer {
    fn drop(&mut self) {
        for w in &mut self.workers {
            w.tx = None; // the worker sees the channel close, releases all and ends
        }
        for w in &mut self.workers {
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
    }
}

/// A task kept stopped after its capture. Its memory can be read consistently with the
/// captured stacks until [`Held::release`] (or drop, or the hold deadline).
#[derive(Debug)]
pub struct Held<'a> {
    capturer: &'a Capturer,
    capture: TaskCapture,
    released: bool,
}

impl Held<'_> {
    pub fn capture(&self) -> &TaskCapture {
        &self.capture
    }

    /// The held task's memory. Reads after the hold deadline see a running task.
    pub fn memory(&self) -> ProcessMemory {
        ProcessMemory::new(self.capture.pid)
    }

    /// Whether the task is still held (its deadline has not passed); if so, it stays held
    /// for at least `at_least` more, so that a reader that checks first can then read
    /// memory consistent with the capture.
    pub fn keep(&self, at_least: Duration) -> bool {
        self.capturer
            .keep(self.capture.pid, Instant::now() + at_least)
    }

    /// Lets the task run again. `Err(NotHeld)` when the deadline had already released it.
    pub fn release(mut self) -> Result<TaskCapture, CaptureError> {
        self.released = true;
        let was_held = self.capturer.release(self.capture.pid);
        let capture = std::mem::replace(
            &mut self.capture,
            TaskCapture {
                pid: 0,
                threads: vec![],
                maps: Arc::from(Vec::new()),
                stopped_for: Duration::ZERO,
            },
        );
        if was_held {
            Ok(capture)
        } else {
            Err(CaptureError::NotHeld(capture.pid))
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.capturer.release(self.capture.pid);
        }
    }
}

/// How often a worker with lingering or held tracees looks at them.
const TICK: Duration = Duration::from_millis(10);

#[derive(Default)]
struct WorkerState {
    held: HashMap<Pid, HeldTask>,
    /// Seized threads that did not stop in time: detached as soon as they stop.
    lingering: Vec<Traced>,
    /// Per task, the time its captures spent waiting for threads that did not stop in
    /// time ([`STARVED_BUDGET`]).
    starved: HashMap<Pid, Duration>,
    maps: MapsCache,
}

impl WorkerState {
    fn run(mut self, rx: mpsc::Receiver<Command>) {
        loop {
            let cmd = if self.held.is_empty() && self.lingering.is_empty() {
                match rx.recv() {
                    Ok(c) => Some(c),
                    Err(_) => break,
                }
            } else {
                let next_deadline = self.held.values().map(|h| h.deadline).min();
                let wait = next_deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(TICK)
                    .min(TICK);
                match rx.recv_timeout(wait) {
                    Ok(c) => Some(c),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            };
            match cmd {
                Some(Command::Capture {
                    pid,
                    options,
                    hold_until,
                    reply,
                }) => {
                    let result = self.capture(pid, &options, hold_until);
                    let _ = reply.send((pid, result));
                }
                Some(Command::Release { pid, reply }) => {
                    let was = self.release(pid);
                    let _ = reply.send(was);
                }
                Some(Command::Keep { pid, until, reply }) => {
                    let held = match self.held.get_mut(&pid) {
                        Some(h) => {
                            h.deadline = h.deadline.max(until);
                            true
                        }
                        None => false,
                    };
                    let _ = reply.send(held);
                }
                None => {}
            }
            self.housekeeping();
        }
        // Shutting down: let everything go.
        let pids: Vec<Pid> = self.held.keys().copied().collect();
        for pid in pids {
            self.release(pid);
        }
        let end = Instant::now() + Duration::from_millis(100);
        while !self.lingering.is_empty() && Instant::now() < end {
            self.poll_lingering();
            thread::sleep(Duration::from_millis(1));
        }
        // Whatever still lingers is detached by the kernel when this thread ends.
    }

    /// Deadlines of held tasks, exits of held threads, lingering threads that stopped.
    fn housekeeping(&mut self) {
        let now = Instant::now();
        let expired: Vec<Pid> = self
            .held
            .iter()
            .filter(|(_, h)| h.deadline <= now)
            .map(|(&p, _)| p)
            .collect();
        for pid in expired {
            self.release(pid);
        }
        // A held task killed meanwhile (SIGKILL ends even a stopped tracee) must be
        // reaped here, or its parent could not reap it.
        for h in self.held.values_mut() {
            h.threads.retain(|t| match sys::wait_raw(t.tid, true) {
                Ok(None) => true, // still stopped, as held
                Ok(Some(s)) => decode(s) != Report::Exited,
                Err(_) => false, // ECHILD: reaped or no longer ours
            });
        }
        self.poll_lingering();
    }

    fn poll_lingering(&mut self) {
        self.lingering.retain(|t| match sys::wait_raw(t.tid, true) {
            Ok(None) => true, // still running in the kernel: keep waiting
            Ok(Some(s)) => match decode(s) {
                Report::Exited => false,
                Report::EventStop { .. } => {
                    let _ = sys::detach(t.tid, t.signal);
                    false
                }
                Report::SignalStop(sig) => {
                    let _ = sys::detach(t.tid, sig);
                    false
                }
            },
            Err(_) => false, // ECHILD: no longer ours
        });
    }

    fn release(&mut self, pid: Pid) -> bool {
        let Some(h) = self.held.remove(&pid) else {
            return false;
        };
        detach_all(h.threads, &mut self.lingering);
        true
    }

    fn capture(
        &mut self,
        pid: Pid,
        options: &CaptureOptions,
        hold_until: Option<Instant>,
    ) -> Result<TaskCapture, CaptureError> {
        if self.held.contains_key(&pid) {
            return Err(CaptureError::AlreadyHeld(pid));
        }
        let stat = procfs::stat(pid).map_err(|_| CaptureError::NoSuchProcess(pid))?;
        // A zombie leader with live threads (the main thread called pthread_exit) is
        // still a running task: capture its other threads.
        let leader_exited = stat.state == 'Z' || stat.state == 'X';
        if leader_exited && procfs::threads(pid).map_or(0, |t| t.len()) <= 1 {
            return Err(CaptureError::Zombie(pid));
        }
        let maps = self.maps.get(pid, &stat);

        let mut infos: HashMap<Pid, ThreadInfo> = HashMap::new();
        let mut traced: Vec<(Traced, Result<bool, ThreadError>)> = Vec::new(); // Ok(group_stopped)
        let mut failed: Vec<(Pid, ThreadError)> = Vec::new();
        let mut first_interrupt: Option<Instant> = None;
        // A thread of this task that an earlier capture seized and interrupted but that did
        // not stop in time is still this worker's tracee: the kernel refuses to seize it
        // again (EPERM, which would blame strata's own daemon as "another debugger"). Its
        // interrupt still stands, so it is waited for again instead.
        self.poll_lingering();
        // A task whose captures have spent their budget waiting for threads without a core
        // gets a short wait and no grace from now on.
        let starved = self.starved.get(&pid).copied().unwrap_or_default();
        let budget_left = starved < options.stop_timeout * STARVED_BUDGET;
        let stop_timeout = if budget_left {
            options.stop_timeout
        } else {
            options.stop_timeout / STARVED_WAIT_DIVISOR
        };
        let grace = if budget_left { RUNNABLE_GRACE } else { 1 };
        // Whether a thread of this capture missed the deadline (its wait is then counted).
        let mut missed = false;
        // One deadline for the whole task, over every round: a capture never waits on a
        // thread longer than this.
        let deadline = Instant::now() + stop_timeout;

        let only_main = options.main_thread_only && !leader_exited;
        for round in 0..options.max_thread_rounds.max(1) {
            let listed = if only_main {
                Ok(vec![pid])
            } else {
                procfs::threads(pid)
            };
            let tids = match listed {
                Ok(t) => t,
                Err(_) if round == 0 => return Err(CaptureError::NoSuchProcess(pid)),
                Err(_) => break,
            };
            let new: Vec<Pid> = tids
                .into_iter()
                .filter(|t| !infos.contains_key(t))
                .collect();
            if new.is_empty() {
                break;
            }
            for &tid in &new {
                infos.insert(tid, thread_info(pid, tid));
            }
            // Seize all, then interrupt all, then wait: the threads stop together.
            let mut seized = Vec::with_capacity(new.len());
            let mut waiting = Vec::with_capacity(new.len());
            // A thread still lingering from an earlier capture keeps its interrupt. One in
            // uninterruptible sleep (D) will not stop before its wait ends: it is waited
            // for only as long as fresh threads are, so that it costs one deadline, not
            // one per sample. Any other lingering thread is runnable but had no core (a
            // node busier than its cores): it stops as soon as it gets one, so it gets the
            // whole deadline again.
            let mut still_lingering = Vec::new();
            let mut was_lingering = Vec::new();
            for &tid in &new {
                if let Some(at) = self.lingering.iter().position(|t| t.tid == tid) {
                    self.lingering.swap_remove(at);
                    waiting.push(tid);
                    was_lingering.push(tid);
                    if infos[&tid].state == 'D' {
                        still_lingering.push(tid);
                    }
                    continue;
                }
                match seize_within(tid, deadline) {
                    Ok(()) => seized.push(tid),
                    Err(Errno::ESRCH) => failed.push((tid, ThreadError::Exited)),
                    Err(e) if round == 0 && tid == pid && !leader_exited => {
                        // Nothing is seized yet: explain and give up on this task.
                        return Err(diagnose_attach(pid, e));
                    }
                    Err(e) => failed.push((tid, ThreadError::Attach(e))),
                }
            }
            if round == 0 && seized.is_empty() && waiting.is_empty() {
                return Err(diagnose_attach(pid, Errno::ESRCH));
            }
            first_interrupt.get_or_insert_with(Instant::now);
            for tid in seized {
                match ptrace::interrupt(NixPid::from_raw(tid)) {
                    // ESRCH: exiting; its exit report is collected below.
                    Ok(()) | Err(Errno::ESRCH) => waiting.push(tid),
                    Err(e) => {
                        // Seized but not interrupted: it runs, and will be detached when
                        // (if ever) it stops.
                        self.lingering.push(Traced { tid, signal: 0 });
                        failed.push((tid, ThreadError::Attach(e)));
                    }
                }
            }
            // Threads found in a later round still get a moment to stop.
            let deadline = if round > 0 {
                deadline.max(Instant::now() + Duration::from_millis(1))
            } else {
                deadline
            };
            // Freshly interrupted threads that are still runnable at the deadline had no
            // core yet: they get the grace period (once; a lingering one does not).
            let grace_until = deadline + stop_timeout * (grace - 1);
            // Whether the threads were judged at the deadline: in the grace period, /proc
            // is read again only when it ends, not on every poll.
            let mut judged = false;
            // Poll with short sleeps, not sched_yield: with spinning targets on every
            // core, a yield hands the core to a spinner for a whole time slice (measured:
            // milliseconds of stop time), while a thread waking from a short sleep is
            // scheduled ahead of them. A blocking waitpid cannot be used: a thread in
            // uninterruptible sleep (a hung file system) might never stop.
            // Sleeping threads stop within microseconds: poll without sleeping first.
            let busy_until = Instant::now() + Duration::from_micros(30);
            let mut pause = Duration::from_micros(5);
            while !waiting.is_empty() {
                waiting.retain(|&tid| match sys::wait_raw(tid, true) {
                    Ok(None) => true,
                    Ok(Some(s)) => {
                        match decode(s) {
                            Report::Exited => failed.push((tid, ThreadError::Exited)),
                            Report::EventStop { group } => {
                                traced.push((Traced { tid, signal: 0 }, Ok(group)))
                            }
                            Report::SignalStop(sig) => {
                                traced.push((Traced { tid, signal: sig }, Ok(false)))
                            }
                        }
                        false
                    }
                    Err(_) => {
                        failed.push((tid, ThreadError::Exited));
                        false
                    }
                });
                if waiting.is_empty() {
                    break;
                }
                let now = Instant::now();
                let only_lingering = waiting.iter().all(|t| still_lingering.contains(t));
                if only_lingering || (now >= deadline && !judged) || now >= grace_until {
                    judged = true;
                    missed = true;
                    let mut given_up = Vec::new();
                    waiting.retain(|&tid| {
                        // What the kernel says now, not before the stop: only a thread
                        // it shows in D is in an uninterruptible wait.
                        let state = procfs::thread_stat(pid, tid).map_or('?', |s| s.state);
                        let in_grace = state == 'R'
                            && now < grace_until
                            && !only_lingering
                            && !was_lingering.contains(&tid);
                        if !in_grace {
                            given_up.push((tid, state));
                        }
                        in_grace
                    });
                    for (tid, state) in given_up {
                        let info = infos.get_mut(&tid).expect("listed thread");
                        let state = if state == '?' { info.state } else { state };
                        if info.wchan.is_none() {
                            info.wchan = sleeping_wchan(pid, tid, state);
                        }
                        let waited = first_interrupt.map_or(stop_timeout, |t| {
                            Duration::from_millis(now.duration_since(t).as_millis() as u64)
                        });
                        failed.push((tid, ThreadError::DidNotStop(waited, state)));
                        self.lingering.push(Traced { tid, signal: 0 });
                    }
                    if waiting.is_empty() {
                        break;
                    }
                }
                if now >= busy_until {
                    thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_micros(200));
                }
            }
        }

        if missed && let Some(t) = first_interrupt {
            *self.starved.entry(pid).or_default() += t.elapsed();
        }

        // Registers and stacks of the stopped threads.
        let mut threads: Vec<ThreadCapture> = Vec::with_capacity(infos.len());
        let mut stopped: Vec<Traced> = Vec::with_capacity(traced.len());
        for (t, group) in traced {
            let snapshot = match ptrace::getregs(NixPid::from_raw(t.tid)) {
                Ok(regs) => {
                    let regs = Registers::from_user_regs(&regs);
                    let stack = copy_stack(pid, regs.sp(), &maps, options.max_stack_bytes);
                    Ok(ThreadSnapshot {
                        regs,
                        stack,
                        pending_signal: (t.signal != 0).then_some(t.signal),
                        group_stopped: group.unwrap_or(false),
                    })
                }
                Err(e) => Err(ThreadError::Registers(e)),
            };
            threads.push(ThreadCapture {
                info: infos[&t.tid].clone(),
                snapshot,
            });
            stopped.push(t);
        }
        for (tid, err) in failed {
            threads.push(ThreadCapture {
                info: infos[&tid].clone(),
                snapshot: Err(err),
            });
        }

        let stopped_for;
        if let Some(until) = hold_until {
            stopped_for = first_interrupt.map_or(Duration::ZERO, |t| t.elapsed());
            self.held.insert(
                pid,
                HeldTask {
                    deadline: until,
                    threads: stopped,
                },
            );
        } else {
            detach_all(stopped, &mut self.lingering);
            stopped_for = first_interrupt.map_or(Duration::ZERO, |t| t.elapsed());
        }

        threads.sort_by_key(|t| (t.info.tid != pid, t.info.tid));
        let main_gone = threads
            .iter()
            .all(|t| matches!(t.snapshot, Err(ThreadError::Exited)));
        if main_gone {
            if let Some(h) = self.held.remove(&pid) {
                detach_all(h.threads, &mut self.lingering);
            }
            return Err(CaptureError::ExitedDuringCapture { pid });
        }
        Ok(TaskCapture {
            pid,
            threads,
            maps,
            stopped_for,
        })
    }
}

/// Detaches stopped tracees, re-injecting their signals. One that cannot be detached was
/// killed meanwhile (or is otherwise not stopped): it is kept for reaping.
fn detach_all(threads: Vec<Traced>, lingering: &mut Vec<Traced>) {
    for t in threads {
        if sys::detach(t.tid, t.signal).is_err() {
            lingering.push(t);
        }
    }
}

fn thread_info(pid: Pid, tid: Pid) -> ThreadInfo {
    let stat = procfs::thread_stat(pid, tid).ok();
    let state = stat.as_ref().map_or('?', |s| s.state);
    ThreadInfo {
        tid,
        comm: stat.as_ref().map(|s| s.comm.clone()).unwrap_or_default(),
        state,
        wchan: sleeping_wchan(pid, tid, state),
        syscall: if matches!(state, 'S' | 'D' | 'I') {
            procfs::blocked_syscall(pid, tid)
        } else {
            None
        },
    }
}

/// The wchan of a sleeping thread. The kernel answers "0" for a sleeper it still counts as
/// queued (delayed dequeue, see `ThreadInfo::syscall`; seen about once in a few hundred
/// reads in the test suite, for threads blocked for seconds): look again shortly after.
fn sleeping_wchan(pid: Pid, tid: Pid, state: char) -> Option<String> {
    let pauses: &[u64] = if matches!(state, 'S' | 'D' | 'I') {
        &[0, 50, 500]
    } else {
        &[0]
    };
    pauses.iter().find_map(|&us| {
        if us > 0 {
            thread::sleep(Duration::from_micros(us));
        }
        procfs::wchan(pid, tid)
    })
}

/// x86-64 leaf functions may keep data in the 128 bytes below SP.
const RED_ZONE: u64 = 128;
const PAGE: u64 = 4096;

/// Copies `[sp - red zone, end of sp's mapping)`, at most `max` bytes, in one
/// `process_vm_readv` with page-sized remote pieces so that an unreadable page cuts the
/// copy short instead of failing it.
fn copy_stack(pid: Pid, sp: u64, maps: &[Mapping], max: usize) -> MemoryCopy {
    // /proc/PID/maps lists mappings by ascending address: a binary search, which matters
    // for processes with thousands of threads (a stack and a guard mapping each).
    let mapping = maps[..maps.partition_point(|m| m.start <= sp)]
        .last()
        .filter(|m| sp < m.end);
    // Not below the stack's mapping: the page there is a guard page or another mapping,
    // and an unreadable first page would cut the whole copy short (to nothing).
    let start = sp
        .saturating_sub(RED_ZONE)
        .max(mapping.map_or(0, |m| m.start));
    let end = mapping
        .map(|m| m.end)
        // A stack not in the maps read before the stop (a thread created since): copy a
        // window and let unreadable pages cut it.
        .unwrap_or(start.saturating_add(64 * 1024));
    let end = end.min(start.saturating_add(max as u64));
    if end <= start {
        return MemoryCopy {
            base: start,
            bytes: vec![],
        };
    }
    let mut pieces = Vec::new();
    let mut at = start;
    while at < end {
        let next = ((at / PAGE) + 1) * PAGE;
        let piece_end = next.min(end);
        pieces.push(RemoteIoVec {
            base: at as usize,
            len: (piece_end - at) as usize,
        });
        at = piece_end;
    }
    let mut bytes = vec![0u8; (end - start) as usize];
    let mut copied = 0;
    // IOV_MAX is 1024: copy in batches of pieces.
    for batch in pieces.chunks(1024) {
        let want: usize = batch.iter().map(|p| p.len).sum();
        let n = process_vm_readv(
            NixPid::from_raw(pid),
            &mut [IoSliceMut::new(&mut bytes[copied..copied + want])],
            batch,
        )
        .unwrap_or(0);
        copied += n;
        if n < want {
            break;
        }
    }
    bytes.truncate(copied);
    MemoryCopy { base: start, bytes }
}
