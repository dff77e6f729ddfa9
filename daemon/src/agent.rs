//! The daemon role (`strata daemon`): a leaf of the tree network. It links to its parent,
//! finds its share of the job's tasks, samples them on command and sends its local prefix
//! trees up (task indices local to this daemon), answers for full stacks, holds tasks and
//! reads their memory and their program variables.
//!
//! The ptrace work runs on blocking threads; the link keeps being read meanwhile, so a
//! detach or shutdown stops sampling between two samples, and a lost parent (closed or
//! silent link) makes the daemon detach from everything and exit. If the daemon itself is
//! killed, the kernel detaches its tracees: a target is never left stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use strata_filters::{Frame, NodeId, PrefixTree, TaskRuns};
use strata_launcher::topology::parent_of;
use strata_proto::auth::SessionKey;
use strata_proto::link::{self, ParentLink, hostname, send_reply};
use strata_proto::overlay::{
    self as pb, Command, Done, ErrorKind, HoldReply, MemoryBytes, NodeStat, ProbeReply, Progress,
    RankProbe, RankText, ReadMemoryReply, Role, SampleReply, SetupReply, StacksReply, Up,
    command::Action, down, setup::Target, up,
};
use tokio::sync::mpsc;

use crate::capture::{CaptureOptions, Capturer, TaskCapture};
use crate::debug_index::IndexCache;
use crate::discovery::{self, Selector, Task};
use crate::memory::MemoryReader;
use crate::procfs::Pid;
use crate::sampler::{LastStacks, SampleOptions, Sampled, Sampler};
use crate::symbols::{SymbolOptions, Symbolizer};
use crate::variables::{self, VariableCache};

mod provided;
mod replies;

use replies::{failed_map, failed_sample, history};
pub use replies::{rank_map, sample_options, sample_reply, stacks_reply};

/// Where a daemon sits in the tree.
#[derive(Clone, Debug)]
pub struct Place {
    /// The addresses of the level above (commnodes, or the front end alone): the parent is
    /// chosen by index, as the topology splits daemons among them.
    pub parents: Vec<String>,
    pub index: u32,
    /// Daemons in the session.
    pub daemons: u32,
}

/// How long a daemon looks again for a Slurm job's tasks that are not visible yet.
const SLURM_RETRY: Duration = Duration::from_secs(3);

/// Longest a hold lasts even if no release comes (the front end died, say).
const MAX_HOLD: Duration = Duration::from_secs(600);

/// A held rank whose variables are read stays held at least this long after the read
/// starts, even if its hold was about to end: the values must be those of its capture.
const HELD_READ: Duration = Duration::from_secs(10);

/// Why a daemon could not run.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The command line placed it nowhere in a tree.
    #[error("daemon {index} of {daemons} with {parents} parent(s): not a place in a tree")]
    NoPlace {
        index: u32,
        daemons: u32,
        parents: usize,
    },
    /// Its parent could not be reached or refused it.
    #[error(transparent)]
    Link(#[from] link::LinkError),
}

/// Runs the daemon until shut down or orphaned.
pub async fn run(place: Place, key: SessionKey) -> Result<(), AgentError> {
    if place.parents.is_empty() || place.index >= place.daemons {
        return Err(AgentError::NoPlace {
            index: place.index,
            daemons: place.daemons,
            parents: place.parents.len(),
        });
    }
    let p = parent_of(place.index, place.daemons, place.parents.len() as u32);
    let parent = &place.parents[p as usize];
    let ParentLink { up, mut down } =
        link::connect(parent, &key, Role::Daemon, place.index).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let (queue_tx, mut queue) = mpsc::unbounded_channel::<Option<Command>>();
    let reader_stop = stop.clone();
    tokio::spawn(async move {
        while let Some(kind) = link::next_down(&mut down).await {
            if let down::Kind::Command(cmd) = kind {
                if cmd.is_urgent() {
                    reader_stop.store(true, Ordering::SeqCst);
                }
                if queue_tx.send(Some(cmd)).is_err() {
                    return;
                }
            }
        }
        reader_stop.store(true, Ordering::SeqCst);
        let _ = queue_tx.send(None);
    });

    let mut state = State::new(place.index, hostname(), Capturer::with_default_threads());
    while let Some(Some(cmd)) = queue.recv().await {
        let id = cmd.id;
        let Some(action) = cmd.action else { continue };
        let sent = match action {
            Action::Setup(s) => {
                failpoint(place.index, "setup");
                let reply = state.setup(s).await;
                send_reply(&up, id, &reply).await
            }
            Action::Sample(s) => {
                // `stop` stays set from a detach's arrival until that detach is handled, so
                // a detach queued right behind this sample still cuts it short.
                let reply = state.sample(s, id, &up, stop.clone()).await;
                send_reply(&up, id, &reply).await
            }
            Action::Stacks(s) => send_reply(&up, id, &state.stacks(&s.ranks)).await,
            Action::Probe(p) => {
                let reply = state.probe(p, stop.clone()).await;
                send_reply(&up, id, &reply).await
            }
            Action::ReadVariables(r) => {
                let reply = state.read_variables(r).await;
                send_reply(&up, id, &reply).await
            }
            Action::Hold(h) => {
                let reply = state.hold(&h.ranks).await;
                send_reply(&up, id, &reply).await
            }
            Action::Release(_) => {
                let reply = state.release().await;
                send_reply(&up, id, &reply).await
            }
            Action::ReadMemory(r) => {
                let reply = state.read_memory(r).await;
                send_reply(&up, id, &reply).await
            }
            Action::Provide(p) => {
                state.provide(p);
                send_reply(&up, id, &done()).await
            }
            Action::Detach(_) => {
                state.release().await;
                stop.store(false, Ordering::SeqCst);
                send_reply(&up, id, &done()).await
            }
            Action::Shutdown(_) => {
                state.release().await;
                let _ = send_reply(&up, id, &done()).await;
                // Exit once the parent has the reply and closes the link (at most 2 s):
                // exiting at once could cut the reply off.
                let closed = async { while let Some(Some(_)) = queue.recv().await {} };
                let _ = tokio::time::timeout(Duration::from_secs(2), closed).await;
                break;
            }
        };
        if sent.is_err() {
            break;
        }
    }
    state.release().await;
    Ok(())
}

/// This daemon's answer to a command that returns nothing but that it was carried out.
fn done() -> Done {
    Done {
        daemons: 1,
        missing: vec![],
    }
}

/// Each task's path in a tree of single samples (outermost frame first): from the root,
/// the child holding the task, until none does.
fn paths_by_task(tree: &PrefixTree<TaskRuns>) -> Vec<Vec<Frame>> {
    (0..tree.task_space())
        .map(|task| {
            let mut path = Vec::new();
            let mut node = NodeId::ROOT;
            while let Some(&child) = tree
                .node(node)
                .children
                .iter()
                .find(|&&c| tree.node(c).tasks.contains(task))
            {
                path.push(tree.node_frame(child).cloned().expect("non-root"));
                node = child;
            }
            path
        })
        .collect()
}

/// Fault injection for the test suite: `STRATA_FAILPOINT=daemon-3-exit-at-setup` makes
/// daemon 3 die (as if killed) when that command arrives, a moment no outside `kill` can
/// hit reliably.
fn failpoint(index: u32, command: &str) {
    if std::env::var("STRATA_FAILPOINT")
        .is_ok_and(|f| f == format!("daemon-{index}-exit-at-{command}"))
    {
        std::process::exit(101);
    }
}

/// What a daemon learns about its targets' binaries and keeps across commands: the
/// sampler's caches (parsed binaries, address spaces, DWARF, trace frames) and the
/// variable plans made from that DWARF.
#[derive(Debug)]
struct Caches {
    sampler: Sampler,
    plans: VariableCache,
}

impl Caches {
    /// Empty caches for a session with these symbol settings.
    fn new(symbols: &SymbolOptions) -> Caches {
        Caches {
            sampler: Sampler::new(Symbolizer::new(symbols.clone())),
            plans: VariableCache::default(),
        }
    }
}

struct State {
    index: u32,
    host: String,
    /// The session's symbol settings (`--debug-dir`): every sampler is built with them.
    symbols: SymbolOptions,
    /// This daemon's tasks, in rank order: task index = position.
    tasks: Vec<Task>,
    /// Lent to the thread that samples or reads variables while it runs.
    caches: Option<Caches>,
    capturer: Arc<Capturer>,
    /// Per task, the stacks of its last successful sample.
    last: Vec<Option<LastStacks>>,
    hold: Option<HoldSession>,
    /// Debug indexes asked for at setup, arriving down the tree.
    incoming: provided::Incoming,
    /// Pieces of them refused, one line each (reported with the debug statistics).
    provide_warnings: Vec<String>,
}

impl State {
    fn new(index: u32, host: String, capturer: Capturer) -> State {
        let symbols = SymbolOptions::default();
        State {
            index,
            host,
            tasks: Vec::new(),
            caches: Some(Caches::new(&symbols)),
            symbols,
            capturer: Arc::new(capturer),
            last: Vec::new(),
            hold: None,
            incoming: provided::Incoming::default(),
            provide_warnings: Vec::new(),
        }
    }

    /// The setup's `--debug-dir`s, if it names any, and its debug-index cache: the
    /// caches start over when they change (the DWARF found so far may not be what they
    /// hold). No directory named keeps the current ones.
    fn use_symbols(&mut self, dirs: &[String], cache: Option<&str>, shared: bool) {
        let options = SymbolOptions {
            debug_dirs: if dirs.is_empty() {
                self.symbols.debug_dirs.clone()
            } else {
                dirs.iter().map(Into::into).collect()
            },
            cache: cache
                .filter(|c| !c.is_empty())
                .map(|c| IndexCache::new(c.into()).shared(shared)),
            // This process is the strata binary (the daemon role).
            builder: std::env::current_exe().ok(),
            ..SymbolOptions::default()
        };
        if options != self.symbols {
            self.symbols = options;
            self.caches = Some(Caches::new(&self.symbols));
        }
    }

    async fn setup(&mut self, s: pb::Setup) -> SetupReply {
        let selector = match s.target {
            Some(Target::Pids(p)) => Selector::Pids(p.pids.iter().map(|&p| p as Pid).collect()),
            Some(Target::LauncherPid(p)) => Selector::Launcher(p as Pid),
            Some(Target::Slurm(t)) => Selector::Slurm {
                job: t.job,
                step: t.step,
            },
            None => {
                return self.failed_setup("the setup named no target".into(), ErrorKind::Internal);
            }
        };
        let opts = discovery::Options {
            uid: s.uid,
            ..discovery::Options::for_current_process()
        };
        self.use_symbols(
            &s.debug_dirs,
            s.debug_cache.as_deref(),
            s.debug_cache_shared,
        );
        let (index, host, share) = (self.index, self.host.clone(), s.share);
        let joined = tokio::task::spawn_blocking(move || {
            // A job's tasks may not be visible yet right after it started (srun launches
            // them node by node): look again for a few seconds before reporting none.
            let retry_until = std::time::Instant::now() + SLURM_RETRY;
            loop {
                let (reply, tasks) = rank_map(index, &host, &selector, &opts, share);
                let empty = reply.daemons.iter().all(|d| d.tasks.is_empty());
                if !empty
                    || !matches!(selector, Selector::Slurm { .. })
                    || std::time::Instant::now() >= retry_until
                {
                    return (reply, tasks);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
        .await;
        match joined {
            Ok((mut reply, tasks)) => {
                self.last = vec![None; tasks.len()];
                self.tasks = tasks;
                reply.wants = self.index_wants().await;
                reply
            }
            Err(e) => self.failed_setup(e.to_string(), ErrorKind::Internal),
        }
    }

    /// The debug indexes this daemon's tasks need and it lacks, for the front end to send
    /// down the tree (see `Symbolizer::wants_index`).
    async fn index_wants(&mut self) -> Vec<pb::IndexWant> {
        let pids: Vec<Pid> = self.tasks.iter().map(|t| t.pid).collect();
        let wants = self
            .with_caches(move |caches, capturer| {
                crate::wants::index_wants(&mut caches.sampler, capturer, &pids)
            })
            .await
            .unwrap_or_default();
        self.incoming = provided::Incoming::expecting(wants.iter().map(|w| w.key.clone()));
        wants
    }

    /// One piece of a debug index from the tree: once whole and checked, the symbolizer
    /// uses it instead of reading the file system.
    fn provide(&mut self, piece: pb::Provide) {
        match self.incoming.piece(piece) {
            Ok(Some(index)) => {
                if let Some(caches) = &self.caches {
                    caches.sampler.symbolizer().provide(index);
                }
            }
            Ok(None) => {}
            Err(why) => self.provide_warnings.push(why),
        }
    }

    fn failed_setup(&mut self, message: String, kind: ErrorKind) -> SetupReply {
        self.tasks.clear();
        self.last.clear();
        failed_map(self.index, &self.host, message, kind)
    }

    async fn sample(
        &mut self,
        s: pb::Sample,
        id: u64,
        up: &mpsc::Sender<Up>,
        stop: Arc<AtomicBool>,
    ) -> SampleReply {
        let options = sample_options(&s);
        let progress_up = up.clone();
        let total = options.samples as u64 * self.tasks.len() as u64;
        let n = self.tasks.len() as u64;
        let progress = move |k: u32| {
            let _ = progress_up.try_send(
                up::Kind::Progress(Progress {
                    command: id,
                    done: k as u64 * n,
                    total,
                })
                .into(),
            );
        };
        match self
            .run_sampler(self.tasks.clone(), options, stop, progress)
            .await
        {
            Ok(sampled) => {
                let mut reply = sample_reply(&sampled);
                self.last = sampled.last;
                reply.stats.push(self.debug_stat());
                reply
            }
            Err(e) => failed_sample(self.tasks.len(), &e),
        }
    }

    /// What reading debug information has cost this daemon so far (a [`NodeStat`] of level
    /// 0).
    fn debug_stat(&self) -> NodeStat {
        let loads = self
            .caches
            .as_ref()
            .map(|c| c.sampler.symbolizer().load_stats())
            .unwrap_or_default();
        NodeStat {
            level: 0,
            index: self.index,
            // VmHWM: "1234 kB".
            peak_rss_kib: crate::procfs::status_field(std::process::id() as Pid, "VmHWM")
                .ok()
                .flatten()
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
                .unwrap_or(0),
            debug_indexed: loads.indexed,
            debug_bytes_read: loads.bytes_read,
            debug_load_us: loads.micros,
            debug_build_ids: loads.build_ids,
            debug_cache_hits: loads.cache_hits,
            debug_cache_warnings: loads
                .cache_warnings
                .into_iter()
                .chain(self.provide_warnings.iter().cloned())
                .collect(),
            debug_provided: loads.provided,
            debug_index_deferred: loads.deferred,
            cpu_us: own_cpu_us(),
            ..NodeStat::default()
        }
    }

    /// Runs the sampler on `tasks` on a blocking thread (the link stays read meanwhile, so
    /// a detach can set `stop`).
    async fn run_sampler(
        &mut self,
        tasks: Vec<Task>,
        options: SampleOptions,
        stop: Arc<AtomicBool>,
        mut progress: impl FnMut(u32) + Send + 'static,
    ) -> Result<Sampled, String> {
        self.with_caches(move |caches, capturer| {
            let stop_now = || stop.load(Ordering::SeqCst);
            caches
                .sampler
                .sample(capturer, &tasks, &options, &stop_now, &mut progress)
        })
        .await
    }

    /// Runs `work` with the caches (parsed binaries, DWARF, variable plans) on a blocking
    /// thread, and takes them back. `Err` when the work panicked: a bug, reported by the
    /// caller as every task failing, while the daemon stays alive with fresh caches (the
    /// capture threads have let the targets go).
    async fn with_caches<T: Send + 'static>(
        &mut self,
        work: impl FnOnce(&mut Caches, &Capturer) -> T + Send + 'static,
    ) -> Result<T, String> {
        let Some(mut caches) = self.caches.take() else {
            return Err("daemon error: the sampler is busy".into());
        };
        let capturer = self.capturer.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let out = work(&mut caches, &capturer);
            (caches, out)
        })
        .await;
        match joined {
            Ok((caches, out)) => {
                self.caches = Some(caches);
                Ok(out)
            }
            Err(e) => {
                // Built from the session's settings, as at setup: a sampler with the
                // defaults would no longer find debug info in the `--debug-dir`s.
                self.caches = Some(Caches::new(&self.symbols));
                Err(format!("daemon error: {e}"))
            }
        }
    }

    /// One capture of the main thread of the asked ranks this daemon has (all when none
    /// are named): their function names, outermost first. The sampler does the work, so a
    /// probe stops a rank's main thread as a sample does (microseconds), leaves its other
    /// threads running, and never leaves it stopped or traced.
    async fn probe(&mut self, p: pb::Probe, stop: Arc<AtomicBool>) -> ProbeReply {
        let wanted: Vec<Task> = if p.ranks.is_empty() {
            self.tasks.clone()
        } else {
            let asked: std::collections::HashSet<u32> = p.ranks.iter().copied().collect();
            self.tasks
                .iter()
                .filter(|t| asked.contains(&t.rank))
                .cloned()
                .collect()
        };
        if wanted.is_empty() {
            return ProbeReply::default();
        }
        let mut options = SampleOptions {
            last_stacks: false,
            ..sample_options(&pb::Sample {
                samples: 1,
                max_frames: p.max_frames,
                ..pb::Sample::default()
            })
        };
        // The reply comes from the main thread alone: the others keep running.
        options.capture.main_thread_only = true;
        let sampled = match self
            .run_sampler(wanted.clone(), options, stop, |_| {})
            .await
        {
            Ok(sampled) => sampled,
            Err(e) => {
                return ProbeReply {
                    ranks: wanted
                        .iter()
                        .map(|t| RankProbe {
                            rank: t.rank,
                            error: Some(e.clone()),
                            ..RankProbe::default()
                        })
                        .collect(),
                };
            }
        };
        let paths = paths_by_task(&sampled.tree_2d);
        ProbeReply {
            ranks: wanted
                .iter()
                .zip(&sampled.tasks)
                .zip(paths)
                .map(|((t, report), path)| {
                    // The outermost MPI frame is the call the program made.
                    let call = path.iter().enumerate().find_map(|(i, f)| {
                        let call = f.code()?.mpi_call()?;
                        Some((u32::try_from(i).ok()?, call.name))
                    });
                    RankProbe {
                        rank: t.rank,
                        functions: path.iter().map(|f| f.name()).collect(),
                        exited: report.exited,
                        error: report.error.clone(),
                        mpi_entry: call.as_ref().map(|(i, _)| *i),
                        mpi_call: call.map(|(_, name)| name),
                        mpi_progress: report
                            .pmpi
                            .as_ref()
                            .and_then(|r| r.as_ref().ok())
                            .map(|r| r.state.progress()),
                        mpi_idle_s: history(report)
                            .and_then(|(read, h)| h.idle_s(read.state.call.is_some())),
                        mpi_longest_s: history(report).and_then(|(_, h)| h.longest_s()),
                    }
                })
                .collect(),
        }
    }

    /// Reads variables in the main thread of the asked ranks this daemon has (all when none
    /// are named). A rank is stopped once for all its reads and let go at once; a rank that
    /// a `Hold` holds is read from the hold's capture, at the held moment, and stays held.
    /// The work runs on a blocking thread with the sampler's caches (parsed binaries,
    /// DWARF, variable plans), which it borrows like a sample does.
    async fn read_variables(&mut self, r: pb::ReadVariables) -> pb::VariablesReply {
        let wanted: Vec<Task> = self
            .tasks
            .iter()
            .filter(|t| r.ranks.is_empty() || r.ranks.contains(&t.rank))
            .cloned()
            .collect();
        let failed = |tasks: &[Task], e: &str| pb::VariablesReply {
            ranks: tasks
                .iter()
                .map(|t| pb::RankVariables {
                    rank: t.rank,
                    values: Vec::new(),
                    error: Some(e.to_string()),
                })
                .collect(),
        };
        if wanted.is_empty() {
            return pb::VariablesReply::default();
        }
        let mut held = Vec::with_capacity(wanted.len());
        for t in &wanted {
            held.push(match &self.hold {
                Some(h) => h.capture(t.rank).await,
                None => None,
            });
        }
        let tasks = wanted.clone();
        let requests = r.requests;
        let reads = self
            .with_caches(move |caches, capturer| {
                let Caches { sampler, plans } = caches;
                tasks
                    .iter()
                    .zip(held)
                    .map(|(task, held)| match held {
                        Some(capture) => {
                            variables::read_captured(sampler, plans, &capture, &requests)
                                .map_err(|e| e.to_string())
                        }
                        None => variables::read_variables(
                            capturer,
                            sampler,
                            plans,
                            &[task.pid],
                            &requests,
                        )
                        .pop()
                        .map_or_else(
                            || Err("daemon error: no read".to_string()),
                            |r| r.values.map_err(|e| e.to_string()),
                        ),
                    })
                    .collect::<Vec<Result<Vec<pb::VariableValue>, String>>>()
            })
            .await;
        match reads {
            Ok(reads) => pb::VariablesReply {
                ranks: wanted
                    .iter()
                    .zip(reads)
                    .map(|(t, read)| match read {
                        Ok(values) => pb::RankVariables {
                            rank: t.rank,
                            values,
                            error: None,
                        },
                        Err(e) => pb::RankVariables {
                            rank: t.rank,
                            values: Vec::new(),
                            error: Some(e),
                        },
                    })
                    .collect(),
            },
            Err(e) => failed(&wanted, &e),
        }
    }

    fn stacks(&self, ranks: &[u32]) -> StacksReply {
        stacks_reply(&self.tasks, &self.last, ranks)
    }

    async fn hold(&mut self, ranks: &[u32]) -> HoldReply {
        self.release().await;
        let chosen: Vec<(u32, Pid)> = self
            .tasks
            .iter()
            .filter(|t| ranks.contains(&t.rank))
            .map(|t| (t.rank, t.pid))
            .collect();
        if chosen.is_empty() {
            return HoldReply::default();
        }
        let (session, results) = HoldSession::start(self.capturer.clone(), chosen).await;
        self.hold = Some(session);
        HoldReply { ranks: results }
    }

    async fn release(&mut self) -> HoldReply {
        match self.hold.take() {
            Some(h) => HoldReply {
                ranks: h.release().await,
            },
            None => HoldReply::default(),
        }
    }

    async fn read_memory(&self, r: pb::ReadMemory) -> ReadMemoryReply {
        let mut out = ReadMemoryReply::default();
        let wanted: Vec<u32> = self
            .tasks
            .iter()
            .filter(|t| r.ranks.contains(&t.rank))
            .map(|t| t.rank)
            .collect();
        for rank in wanted {
            let result = match &self.hold {
                Some(h) => h.read(rank, r.address, r.length.min(pb::MAX_READ)).await,
                None => Err("not held: hold the rank before reading its memory".to_string()),
            };
            out.ranks.push(match result {
                Ok(data) => MemoryBytes {
                    rank,
                    data,
                    error: None,
                },
                Err(e) => MemoryBytes {
                    rank,
                    data: vec![],
                    error: Some(e),
                },
            });
        }
        out
    }
}

/// Tasks kept stopped by a thread of their own (a held task belongs to the capture
/// thread that seized it, and the hold handle borrows the capturer).
struct HoldSession {
    requests: std::sync::mpsc::Sender<HoldRequest>,
    thread: Option<std::thread::JoinHandle<()>>,
}

enum HoldRequest {
    Read {
        rank: u32,
        address: u64,
        length: u32,
        reply: tokio::sync::oneshot::Sender<Result<Vec<u8>, String>>,
    },
    /// The capture of a held rank (registers and stacks of the held moment), `None` when
    /// that rank is not held.
    Capture {
        rank: u32,
        reply: tokio::sync::oneshot::Sender<Option<TaskCapture>>,
    },
    Release {
        reply: tokio::sync::oneshot::Sender<Vec<RankText>>,
    },
}

impl HoldSession {
    async fn start(
        capturer: Arc<Capturer>,
        chosen: Vec<(u32, Pid)>,
    ) -> (HoldSession, Vec<RankText>) {
        let (tx, rx) = std::sync::mpsc::channel::<HoldRequest>();
        let (first_tx, first_rx) = tokio::sync::oneshot::channel();
        let thread = strata_launcher::priority::spawn_raised("strata-hold", move || {
            let pids: Vec<Pid> = chosen.iter().map(|c| c.1).collect();
            let held = capturer.capture_and_hold_many(&pids, &CaptureOptions::default(), MAX_HOLD);
            let status: Vec<RankText> = chosen
                .iter()
                .zip(&held)
                .map(|(&(rank, _), h)| RankText {
                    rank,
                    text: String::new(),
                    error: h.as_ref().err().map(|e| e.to_string()),
                })
                .collect();
            let _ = first_tx.send(status);
            let mut held: Vec<(u32, Option<crate::capture::Held<'_>>)> = chosen
                .iter()
                .zip(held)
                .map(|(&(rank, _), h)| (rank, h.ok()))
                .collect();
            while let Ok(req) = rx.recv() {
                match req {
                    HoldRequest::Read {
                        rank,
                        address,
                        length,
                        reply,
                    } => {
                        let r = match held.iter().find(|(r, _)| *r == rank) {
                            Some((_, Some(h))) => {
                                let mut buf = vec![0u8; length as usize];
                                h.memory()
                                    .read(address, &mut buf)
                                    .map(|_| buf)
                                    .map_err(|e| e.to_string())
                            }
                            _ => Err("not held".to_string()),
                        };
                        let _ = reply.send(r);
                    }
                    HoldRequest::Capture { rank, reply } => {
                        // Only while the hold lasts, and long enough for the read: a
                        // task its deadline let go runs, and its memory no longer
                        // matches the capture (the caller stops it afresh instead).
                        let capture = held
                            .iter()
                            .find(|(r, _)| *r == rank)
                            .and_then(|(_, h)| h.as_ref())
                            .filter(|h| h.keep(HELD_READ))
                            .map(|h| h.capture().clone());
                        let _ = reply.send(capture);
                    }
                    HoldRequest::Release { reply } => {
                        let released = held
                            .drain(..)
                            .filter_map(|(rank, h)| {
                                Some(RankText {
                                    rank,
                                    text: String::new(),
                                    error: h?.release().err().map(|e| e.to_string()),
                                })
                            })
                            .collect();
                        let _ = reply.send(released);
                        return;
                    }
                }
            }
            // The session was dropped: the holds end with `held`.
        })
        .expect("a thread for the hold");
        let status = first_rx.await.unwrap_or_default();
        (
            HoldSession {
                requests: tx,
                thread: Some(thread),
            },
            status,
        )
    }

    async fn read(&self, rank: u32, address: u64, length: u32) -> Result<Vec<u8>, String> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.requests
            .send(HoldRequest::Read {
                rank,
                address,
                length,
                reply,
            })
            .map_err(|_| "the hold has ended".to_string())?;
        rx.await.map_err(|_| "the hold has ended".to_string())?
    }

    async fn capture(&self, rank: u32) -> Option<TaskCapture> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        self.requests
            .send(HoldRequest::Capture { rank, reply })
            .ok()?;
        rx.await.ok().flatten()
    }

    async fn release(mut self) -> Vec<RankText> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let _ = self.requests.send(HoldRequest::Release { reply });
        let released = rx.await.unwrap_or_default();
        if let Some(t) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
        released
    }
}

/// This process's CPU time so far, all threads, user and system, microseconds.
fn own_cpu_us() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000 + t.tv_nsec() as u64 / 1_000)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// A panic in sampling work (a bug) leaves the daemon with fresh caches built from the
    /// session's settings: separate debug info in a `--debug-dir` is still found after it.
    #[test]
    fn panic_recovery_keeps_debug_dirs() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let mut state = State::new(0, "here".into(), Capturer::new(1));
            state.use_symbols(&["/opt/job/debug".to_string()], None, false);
            let dirs = vec![PathBuf::from("/opt/job/debug")];
            let debug_dirs = |state: &State| {
                let caches = state.caches.as_ref().expect("caches back after the work");
                caches.sampler.symbolizer().options().debug_dirs.clone()
            };
            assert_eq!(debug_dirs(&state), dirs);

            let worked: Result<(), String> = state
                .with_caches(|_, _| panic!("a bug in sampling work"))
                .await;
            let e = worked.expect_err("the panic is reported");
            assert!(e.starts_with("daemon error:"), "{e}");
            assert_eq!(
                debug_dirs(&state),
                dirs,
                "the rebuilt sampler lost --debug-dir"
            );
        });
    }
}
