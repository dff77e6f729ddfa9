//! The front end's side of the tree network: the root node of the tree.
//!
//! A session computes the topology, listens, launches the commnodes level by level (each
//! says where it listens) and the daemons in one launch, waits for its children to join,
//! then drives the commands: the rank map once, the samples, the stacks of chosen ranks,
//! the shutdown. Each command has a deadline; what did not answer comes back as missing.
//! Ctrl-C (or SIGTERM, SIGHUP) sends a shutdown down the tree at once: daemons stop between
//! two samples and detach, and the session ends with [`Outcome::Interrupted`].

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use strata_commnode::children::{Answer, Children};
use strata_commnode::merge::{self, Merged};
use strata_commnode::node::describe_child;
use strata_filters::wire::Limits;
use strata_launcher::topology::{Topology, children_of, parent_of};
use strata_launcher::{CommnodeSpec, DaemonSpec, Launcher};
use strata_proto::auth::SessionKey;
use strata_proto::overlay::{
    Command, Probe, ProbeReply, ReadVariables, Role, Sample, Setup, SetupReply, StacksReply,
    VariableRequest, VariablesReply, command::Action,
};
use tokio::time::Instant;

use crate::provide;

/// What the session is asked to do.
#[derive(Clone, Debug)]
pub struct Plan {
    pub topology: Topology,
    pub setup: Setup,
    pub sample: Sample,
    /// Ranks whose full stacks are wanted after sampling.
    pub stacks_of: Vec<u32>,
    /// How long the daemons may take to start and join.
    pub connect_timeout: Duration,
    /// Show a progress bar (stderr is a terminal and the user wants one).
    pub progress: bool,
}

/// What came back.
#[derive(Debug)]
pub enum Outcome {
    Done(Box<Gathered>),
    /// Interrupted by a signal before the result was complete.
    Interrupted(nix::sys::signal::Signal),
}

#[derive(Debug)]
pub struct Gathered {
    pub rank_map: SetupReply,
    /// The root's merge, its trees as built (never encoded).
    pub sampled: Merged,
    pub stacks: StacksReply,
    /// The variables read after sampling (`--var`, loop-order variables, the verdict's
    /// call arguments) and their values.
    pub variables: Option<(Vec<VariableRequest>, VariablesReply)>,
    /// Those read for the verdict only (not shown in the report's variables).
    pub verdict_only: Vec<VariableRequest>,
    /// Per phase, wall time.
    pub timings: Vec<(&'static str, Duration)>,
    /// The debug indexes the front end sent down the tree.
    pub provided: provide::Sent,
}

/// Why a session could not produce anything.
#[derive(Debug)]
pub struct SessionError(pub String);

/// Decides, from the rank map and the samples, which variables to read before the tree
/// shuts down (the progress order's loop variables depend on where the ranks are).
pub type VariablePicker<'a> = &'a mut dyn FnMut(&SetupReply, &Merged) -> Vec<VariableRequest>;

/// Runs a whole session on the current tokio runtime: open, sample once, read the stacks
/// and the variables asked for, shut the tree down.
pub async fn run(
    plan: Plan,
    launcher: &mut dyn Launcher,
    key: SessionKey,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    pick_variables: Option<VariablePicker<'_>>,
) -> Result<Outcome, SessionError> {
    let mut session = match Session::open(&plan, launcher, key, signals).await? {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(Outcome::Interrupted(sig)),
    };
    let Some(sampled) = session.sample(&plan.sample).await else {
        return Ok(session.finish_interrupted().await);
    };
    let mut stacks = StacksReply::default();
    if !plan.stacks_of.is_empty() {
        match session.stacks(plan.stacks_of.clone()).await {
            Some(s) => stacks = s,
            None => return Ok(session.finish_interrupted().await),
        }
    }
    let mut variables = None;
    if let Some(pick) = pick_variables {
        let requests = pick(&session.rank_map, &sampled);
        if !requests.is_empty() {
            match session.read_variables(Vec::new(), requests.clone()).await {
                Some(reply) => variables = Some((requests, reply)),
                None => return Ok(session.finish_interrupted().await),
            }
        }
    }
    let provided = session.provided.clone();
    let (rank_map, timings, interrupted) = session.close().await;
    if let Some(sig) = interrupted {
        return Ok(Outcome::Interrupted(sig));
    }
    Ok(Outcome::Done(Box::new(Gathered {
        rank_map,
        sampled,
        stacks,
        variables,
        verdict_only: Vec::new(),
        timings,
        provided,
    })))
}

/// [`Session::open`] on `runtime`, for the commands that keep a session (`attach -i`,
/// `watch`). `None` after an interrupt (said on stderr); on an interrupt or a failure the
/// runtime is dropped (closing every link) and the launched processes reaped.
pub fn open_blocking(
    runtime: tokio::runtime::Runtime,
    plan: &Plan,
    launcher: &mut dyn Launcher,
    key: SessionKey,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> Result<Option<(tokio::runtime::Runtime, Box<Session>)>, SessionError> {
    let opened = runtime.block_on(Session::open(plan, launcher, key, signals));
    let failed = match opened {
        Ok(Opened::Ready(s)) => return Ok(Some((runtime, s))),
        Ok(Opened::Interrupted(sig)) => {
            eprintln!("strata: {sig}: stopped; every process detached");
            None
        }
        Err(e) => Some(e),
    };
    drop(runtime);
    launcher.reap(Duration::from_secs(5));
    failed.map_or(Ok(None), Err)
}

/// What [`Session::open`] came to.
#[derive(Debug)]
pub enum Opened {
    Ready(Box<Session>),
    /// A signal arrived while the tree was starting; it has been shut down.
    Interrupted(nix::sys::signal::Signal),
}

/// An open session: the tree is up and the rank map gathered. Commands can be sent until
/// [`Session::close`] (a live `strata attach -i` samples as often as the user asks).
pub struct Session {
    root: Children,
    interrupted: Arc<std::sync::Mutex<Option<nix::sys::signal::Signal>>>,
    bar: Bar,
    /// Where the children's warnings go: stderr, or a buffer while a full-screen UI owns
    /// the terminal.
    warnings: Arc<std::sync::Mutex<Option<Vec<String>>>>,
    counts: Vec<(u32, Option<u32>)>,
    next_id: u64,
    pub rank_map: SetupReply,
    /// Per phase, wall time (a phase run twice appears twice).
    pub timings: Vec<(&'static str, Duration)>,
    /// The debug indexes sent down the tree after setup.
    pub provided: provide::Sent,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("tasks", &self.tasks())
            .field("next_id", &self.next_id)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Launches the tree `plan` describes, waits for its children and gathers the rank map.
    pub async fn open(
        plan: &Plan,
        launcher: &mut dyn Launcher,
        key: SessionKey,
        signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    ) -> Result<Opened, SessionError> {
        let topo = &plan.topology;
        let levels = topo.levels().to_vec();
        let depth = levels.len() - 1;
        let mut timings = Vec::new();
        let t0 = std::time::Instant::now();

        // The root's children: the first commnode level, or the daemons.
        let first_role = if depth == 1 {
            Role::Daemon
        } else {
            Role::Commnode
        };
        let below: Vec<std::ops::Range<u32>> =
            (0..levels[1]).map(|c| topo.daemons_below(1, c)).collect();
        let describe = Arc::new(move |i: u32| describe_child(first_role, i, below.get(i as usize)));
        let listen: SocketAddr = format!("{}:0", launcher.listen_host())
            .parse()
            .map_err(|e| SessionError(format!("bad listen address: {e}")))?;
        let warnings: Arc<std::sync::Mutex<Option<Vec<String>>>> = Default::default();
        let log: Arc<dyn Fn(String) + Send + Sync> = {
            let warnings = warnings.clone();
            Arc::new(
                move |line: String| match warnings.lock().expect("not poisoned").as_mut() {
                    Some(buffer) => buffer.push(line),
                    None => strata_commnode::stderr::line(format!("strata: warning: {line}")),
                },
            )
        };
        let root = Children::listen(listen, key, first_role, 0..levels[1], describe, log.clone())
            .await
            .map_err(|e| SessionError(format!("cannot listen on {listen}: {e}")))?;
        // A process of the tree gone silent may be stopped with ranks it had stopped: its
        // launcher ends it at once, whatever the session is doing.
        let end = launcher.lost_ender();
        root.on_lost(Arc::new(move |lost| {
            let said = match end(&lost) {
                Ok(how) => format!("{how}, so that the ranks it held run on"),
                Err(why) => format!(
                    "could not end it ({why}): ranks it had stopped stay stopped until it dies"
                ),
            };
            log(format!(
                "{} (host {}): {}; {said}",
                lost.who, lost.host, lost.reason
            ));
        }));

        // Signals: a shutdown goes down the tree at once; the session notices at its next
        // step.
        let interrupted: Arc<std::sync::Mutex<Option<nix::sys::signal::Signal>>> =
            Default::default();
        let woken = Arc::new(tokio::sync::Notify::new());
        {
            let urgent = root.broadcaster();
            let interrupted = interrupted.clone();
            let woken = woken.clone();
            std::thread::Builder::new()
                .name("strata-interrupt".into())
                .spawn(move || {
                    strata_launcher::priority::raise_current_thread();
                    if let Ok(sig) = signals.recv() {
                        *interrupted.lock().expect("not poisoned") = Some(sig);
                        urgent.send(&shutdown_command());
                        woken.notify_one();
                    }
                })
                .map_err(|e| SessionError(format!("cannot start a thread: {e}")))?;
        }
        let bar = Bar::new(plan.progress);
        let mut session = Session {
            root,
            interrupted,
            bar,
            warnings,
            counts: Vec::new(),
            next_id: 1,
            rank_map: SetupReply::default(),
            timings: Vec::new(),
            provided: provide::Sent::default(),
        };

        session
            .bar
            .phase(&format!("starting the tree ({})", topo.describe()));
        // Commnodes, level by level: a level's parents must listen before it starts.
        let mut parents: Vec<SocketAddr> = vec![session.root.addr()];
        for l in 1..depth {
            let specs: Vec<CommnodeSpec> = (0..levels[l])
                .map(|j| {
                    let children = children_of(j, levels[l + 1], levels[l]);
                    CommnodeSpec {
                        index: j,
                        level: l as u32,
                        parent: parents[parent_of(j, levels[l], levels[l - 1]) as usize],
                        child_daemons: children
                            .clone()
                            .map(|c| topo.daemons_below(l + 1, c))
                            .collect(),
                        children,
                        children_are_daemons: l + 1 == depth,
                        listen_host: launcher.listen_host(),
                    }
                })
                .collect();
            parents = launcher
                .start_commnodes(&specs)
                .map_err(|e| SessionError(e.to_string()))?;
        }
        launcher
            .start_daemons(&DaemonSpec {
                daemons: topo.daemons(),
                parents,
            })
            .map_err(|e| SessionError(e.to_string()))?;

        timings.push(("launch", t0.elapsed()));
        let t = std::time::Instant::now();
        let expected = levels[1] as usize;
        session.bar.count(
            if first_role == Role::Daemon {
                "connecting daemons"
            } else {
                "connecting commnodes"
            },
            expected as u64,
        );
        let deadline = Instant::now() + plan.connect_timeout;
        // Interruptible: a child that never connects must not hold a Ctrl-C for 20 s.
        let bar = &session.bar;
        let joined = tokio::select! {
            n = session.root.wait_joined(deadline, |n| bar.set(n as u64)) => n,
            _ = woken.notified() => 0,
        };
        timings.push(("connect", t.elapsed()));
        if let Some(sig) = session.stopped() {
            return Ok(Opened::Interrupted(
                session.finish_interrupted_with(sig).await,
            ));
        }
        if joined == 0 {
            session.bar.clear();
            return Err(SessionError(format!(
                "no {} connected within {} s: {}",
                if first_role == Role::Daemon {
                    "daemon"
                } else {
                    "commnode"
                },
                plan.connect_timeout.as_secs(),
                session.root.absence(0)
            )));
        }

        // The rank map, once. The commnodes below wait for their own children first.
        let t = std::time::Instant::now();
        session.bar.phase("gathering the rank map");
        let setup_timeout = plan.connect_timeout + Duration::from_secs(30);
        let answers = session
            .command(setup_timeout, Action::Setup(plan.setup.clone()), |_, _| {})
            .await;
        let describe = |i| session.root.describe(i);
        let (rank_map, counts) = merge::merge_setup(&answers, &describe);
        timings.push(("rank map", t.elapsed()));
        session.rank_map = rank_map;
        session.counts = counts;
        let t = std::time::Instant::now();
        session.provide_indexes(&plan.setup).await;
        timings.push(("debug indexes", t.elapsed()));
        session.timings = timings;
        if let Some(sig) = session.stopped() {
            return Ok(Opened::Interrupted(
                session.finish_interrupted_with(sig).await,
            ));
        }
        Ok(Opened::Ready(Box::new(session)))
    }

    /// The signal that interrupted the session, if one did.
    pub fn stopped(&self) -> Option<nix::sys::signal::Signal> {
        *self.interrupted.lock().expect("not poisoned")
    }

    /// From now on, no progress bar, and the children's warnings are kept (see
    /// [`Session::warnings_handle`]) instead of written to stderr (a full-screen UI owns the
    /// terminal).
    pub fn quiet(&mut self) {
        self.bar.clear();
        self.bar = Bar::new(false);
        let mut w = self.warnings.lock().expect("not poisoned");
        if w.is_none() {
            *w = Some(Vec::new());
        }
    }

    /// Where the warnings are kept after [`Session::quiet`] (it outlives the session).
    pub fn warnings_handle(&self) -> Arc<std::sync::Mutex<Option<Vec<String>>>> {
        self.warnings.clone()
    }

    /// The signal that interrupted the session, shared with the thread that receives it.
    pub fn interrupt_flag(&self) -> Arc<std::sync::Mutex<Option<nix::sys::signal::Signal>>> {
        self.interrupted.clone()
    }

    /// Tasks in the rank map.
    pub fn tasks(&self) -> u64 {
        self.rank_map
            .daemons
            .iter()
            .map(|d| d.tasks.len() as u64)
            .sum()
    }

    /// Samples every task through the tree and merges the replies; `None` when a signal
    /// interrupted it (call [`Session::finish_interrupted`] then).
    pub async fn sample(&mut self, s: &Sample) -> Option<Merged> {
        if self.stopped().is_some() {
            return None;
        }
        let t = std::time::Instant::now();
        let per_sample =
            Duration::from_micros(s.interval_us).mul_f64(1.0 + s.jitter) + Duration::from_secs(3);
        let sample_timeout = Duration::from_secs(30) + per_sample * s.samples;
        self.bar.count("sampling", self.tasks() * s.samples as u64);
        let bar = Bar(self.bar.0.clone());
        let answers = self
            .command(sample_timeout, Action::Sample(s.clone()), |done, _| {
                bar.set(done)
            })
            .await;
        // The round trip: the daemons' sampling, their replies and every commnode's merge.
        self.timings
            .push(("sample (through the tree)", t.elapsed()));
        let t = std::time::Instant::now();
        let taking_part = merge::taking_part(&self.counts, &answers);
        let describe = |i| self.root.describe(i);
        // The root is the merge's only user: its trees stay decoded.
        let mut sampled =
            merge::merge_sample_trees(&taking_part, &describe, s.dense, &Limits::default());
        strata_filters::places::inline(&mut sampled.reply);
        self.timings.push(("merge at the root", t.elapsed()));
        self.bar.phase("sampled");
        if self.stopped().is_some() {
            return None;
        }
        Some(sampled)
    }

    /// The full stacks (every thread) of `ranks`, as their daemons render them; `None`
    /// when a signal interrupted it.
    pub async fn stacks(&mut self, ranks: Vec<u32>) -> Option<StacksReply> {
        if self.stopped().is_some() {
            return None;
        }
        let t = std::time::Instant::now();
        self.bar.phase("reading full stacks");
        let answers = self
            .command(
                Duration::from_secs(30),
                Action::Stacks(strata_proto::overlay::Stacks { ranks }),
                |_, _| {},
            )
            .await;
        self.timings.push(("stacks", t.elapsed()));
        if self.stopped().is_some() {
            return None;
        }
        Some(merge::merge_stacks(&answers))
    }

    /// One capture of the main thread of `ranks` (every rank when empty): their function
    /// names, in no particular order; `None` when a signal interrupted it. A rank whose
    /// daemon did not answer is absent.
    pub async fn probe(&mut self, ranks: Vec<u32>) -> Option<ProbeReply> {
        if self.stopped().is_some() {
            return None;
        }
        let answers = self
            .command(
                Duration::from_secs(30),
                Action::Probe(Probe {
                    ranks,
                    max_frames: 0,
                }),
                |_, _| {},
            )
            .await;
        if self.stopped().is_some() {
            return None;
        }
        Some(merge::merge_probe(&answers))
    }

    /// Reads `requests` in the main thread of `ranks` (every rank when empty), each rank
    /// stopped once for its reads; `None` when a signal interrupted it. A rank whose daemon
    /// did not answer is absent.
    pub async fn read_variables(
        &mut self,
        ranks: Vec<u32>,
        requests: Vec<VariableRequest>,
    ) -> Option<VariablesReply> {
        if self.stopped().is_some() {
            return None;
        }
        let t = std::time::Instant::now();
        self.bar.phase("reading variables");
        let answers = self
            .command(
                Duration::from_secs(60),
                Action::ReadVariables(ReadVariables { ranks, requests }),
                |_, _| {},
            )
            .await;
        self.timings.push(("read variables", t.elapsed()));
        if self.stopped().is_some() {
            return None;
        }
        Some(merge::merge_variables(&answers))
    }

    /// Shuts the tree down (every daemon detaches and exits). Returns the rank map, the
    /// timings, and the signal that interrupted the session, if any.
    pub async fn close(
        mut self,
    ) -> (
        SetupReply,
        Vec<(&'static str, Duration)>,
        Option<nix::sys::signal::Signal>,
    ) {
        let t = std::time::Instant::now();
        self.bar.phase("detaching");
        let _ = self
            .command(
                Duration::from_secs(10),
                Action::Shutdown(Default::default()),
                |_, _| {},
            )
            .await;
        self.timings.push(("shutdown", t.elapsed()));
        self.bar.clear();
        // The tree's warnings before the result.
        strata_commnode::stderr::flush(Duration::from_millis(500));
        let sig = self.stopped();
        (self.rank_map, self.timings, sig)
    }

    /// After a signal: collect the shutdown confirmations (sent already) for a few seconds.
    pub async fn finish_interrupted(mut self) -> Outcome {
        let sig = self.stopped().expect("called after a signal");
        Outcome::Interrupted(self.finish_interrupted_with(sig).await)
    }

    async fn finish_interrupted_with(
        &mut self,
        sig: nix::sys::signal::Signal,
    ) -> nix::sys::signal::Signal {
        self.bar.phase("interrupted: detaching");
        // Sent again: children that joined after the signal have not had it; the others
        // answer once and ignore the copy.
        let cmd = shutdown_command();
        let _ = self
            .root
            .round(
                &cmd,
                Instant::now() + Duration::from_secs(10),
                false,
                |_, _| {},
            )
            .await;
        self.bar.clear();
        sig
    }

    /// Sends down the tree the debug indexes the daemons named at setup (see
    /// [`crate::provide`]); a piece that does not arrive costs only the time it waited: that
    /// daemon reads the file system instead.
    async fn provide_indexes(&mut self, setup: &Setup) {
        let wants = std::mem::take(&mut self.rank_map.wants);
        if wants.is_empty() || self.stopped().is_some() {
            return;
        }
        self.bar
            .phase("reading debug information once for the tree");
        let dirs: Vec<std::path::PathBuf> = setup.debug_dirs.iter().map(Into::into).collect();
        let options = provide::symbol_options(&dirs, setup.debug_cache.as_deref().map(Path::new));
        let (entries, sent) =
            tokio::task::spawn_blocking(move || provide::indexes(&wants, options))
                .await
                .unwrap_or_default();
        self.provided = sent;
        for (key, bytes) in &entries {
            for piece in provide::pieces(key, bytes) {
                if self.stopped().is_some() {
                    return;
                }
                self.command(PROVIDE_TIMEOUT, Action::Provide(piece), |_, _| {})
                    .await;
            }
        }
    }

    async fn command(
        &mut self,
        timeout: Duration,
        action: Action,
        progress: impl FnMut(u64, u64),
    ) -> Vec<(u32, Answer)> {
        let cmd = Command {
            id: self.next_id,
            timeout_ms: timeout.as_millis() as u64,
            action: Some(action),
        };
        self.next_id += 1;
        self.root
            .round(&cmd, Instant::now() + timeout, false, progress)
            .await
    }
}

/// How long a piece of a debug index may take to reach every daemon (1 MiB a link).
const PROVIDE_TIMEOUT: Duration = Duration::from_secs(10);

/// The shutdown a signal sends down the tree (an id no ordinary command reaches).
fn shutdown_command() -> Command {
    Command::shutdown(u64::MAX - 1)
}

/// The progress bar on stderr (hidden when stderr is not a terminal).
struct Bar(ProgressBar);

impl Bar {
    fn new(show: bool) -> Bar {
        let target = if show {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let pb = ProgressBar::with_draw_target(None, target);
        // The spinner turns on a raised thread of ours, not indicatif's steady tick: its
        // ticker thread runs at the normal policy and is joined when the bar ends, which
        // beside spinning ranks held an attach up for 36 s. Ours is never joined: it ends
        // by itself once the bar is finished or gone.
        if show {
            let weak = pb.downgrade();
            let _ = strata_launcher::priority::spawn_raised("strata-progress", move || {
                while let Some(pb) = weak.upgrade() {
                    if pb.is_finished() {
                        break;
                    }
                    pb.tick();
                    drop(pb);
                    std::thread::sleep(Duration::from_millis(120));
                }
            });
        }
        Bar(pb)
    }

    fn phase(&self, msg: &str) {
        self.0.set_style(
            ProgressStyle::with_template("strata: {spinner} {msg} ({elapsed})")
                .expect("valid template"),
        );
        self.0.set_message(msg.to_string());
    }

    fn count(&self, msg: &str, total: u64) {
        self.0.set_style(
            ProgressStyle::with_template("strata: {msg} [{bar:30}] {pos}/{len} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        self.0.set_length(total);
        self.0.set_position(0);
        self.0.set_message(msg.to_string());
    }

    fn set(&self, pos: u64) {
        self.0.set_position(pos);
    }

    fn clear(&self) {
        self.0.finish_and_clear();
    }
}
