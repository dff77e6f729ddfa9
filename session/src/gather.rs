//! Gathering the samples: the tree for a job (shape, launcher, session key, commands), run
//! to the end or kept open for a live session, or `--serial` in this process. Both paths end
//! in the two replies a tree root receives, the rank map and the merged samples, so
//! everything after them is one code path ([`crate::assemble`]).

use std::time::Duration;

use strata_commnode::merge::{Merged, Trees};
use strata_daemon::agent;
use strata_daemon::capture::Capturer;
use strata_daemon::discovery::{self, Selector};
use strata_daemon::sampler::Sampler;
use strata_daemon::symbols::Symbolizer;
use strata_filters::PrefixTree;
use strata_launcher::Launcher;
use strata_launcher::local::LocalLauncher;
use strata_launcher::slurm::{self, SlurmLauncher};
use strata_launcher::topology::Topology;
use strata_progress::order;
use strata_progress::source::SourceIndex;
use strata_proto::auth::SessionKey;
use strata_proto::overlay::{
    PidList, Sample, SampleReply, Setup, SetupReply, SlurmTarget, VariableRequest, setup::Target,
};
use strata_result::JobInfo;
use strata_result::variables::VariableSpec;

use crate::assemble::{Assembled, assemble, report_problems};
use crate::error::AttachError;
use crate::place::Place;
use crate::request::{AttachRequest, JobTarget};
use crate::root::{self, Outcome, Plan};

/// What the daemons are asked: which tasks (the rank map's target) and how to sample.
pub fn requests(req: &AttachRequest, place: &Place) -> (Setup, Sample) {
    let target = match (place, &req.target) {
        (Place::Slurm { job, step }, _) => Target::Slurm(SlurmTarget {
            job: job.id,
            step: *step,
        }),
        (Place::Local, JobTarget::Launcher(pid)) => Target::LauncherPid(*pid as u32),
        (Place::Local, JobTarget::Pids(pids)) => Target::Pids(PidList {
            pids: pids.iter().map(|&p| p as u32).collect(),
        }),
        (Place::Local, JobTarget::Job { .. }) => unreachable!("a job id is placed under Slurm"),
    };
    let sample = req.sampling.to_command();
    let setup = Setup {
        uid: nix::unistd::getuid().as_raw(),
        target: Some(target),
        share: 0,
        debug_dirs: req
            .debug_dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
        debug_cache: req
            .debug_cache
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned()),
        debug_cache_shared: req.debug_cache_shared,
    };
    (setup, sample)
}

/// The variables the analyses of a result need read in its ranks, decided from its
/// samples: `asked` (`--var`) first, then the loop-order variables of the loops the ranks
/// are in (`with_loops`, for the progress order), then the variables in the arguments of
/// the MPI calls the ranks are blocked in (for the verdict's wait-for graph).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnalysisRequests {
    pub all: Vec<VariableRequest>,
    /// Those only the verdict asked for: kept in the result, not listed in its report
    /// ([`strata_result::StrataResult::mark_verdict_reads`]).
    pub verdict_only: Vec<VariableRequest>,
}

/// See [`AnalysisRequests`].
pub fn analysis_requests(
    result: &strata_result::StrataResult,
    sources: &mut SourceIndex,
    asked: Vec<VariableRequest>,
    with_loops: bool,
) -> AnalysisRequests {
    let mut wanted = AnalysisRequests {
        all: asked,
        verdict_only: Vec::new(),
    };
    if with_loops {
        for r in order::loop_requests(result, sources) {
            if !wanted.all.contains(&r) {
                wanted.all.push(r);
            }
        }
    }
    for r in strata_verdict::Verdict::requests(result, sources) {
        if !wanted.all.contains(&r) {
            wanted.verdict_only.push(r.clone());
            wanted.all.push(r);
        }
    }
    wanted
}

/// Opens a session that stays up (`attach -i`, `strata watch`): the tree started and
/// joined, discovery problems reported once; `None` when a signal came first (everything
/// detached already).
pub fn open_live(
    plan: &Plan,
    launcher: &mut dyn Launcher,
    key: SessionKey,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> Result<Option<(tokio::runtime::Runtime, Box<root::Session>)>, AttachError> {
    let opened = root::open_blocking(runtime()?, plan, launcher, key, signals)?;
    if let Some((_, s)) = &opened {
        report_problems(&s.rank_map);
    }
    Ok(opened)
}

/// Through the tree: launch, connect, command, merge.
pub fn tree(
    setup: Setup,
    sample: Sample,
    req: &AttachRequest,
    place: &Place,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    progress: bool,
    early: &mut Option<Assembled>,
) -> Result<Outcome, AttachError> {
    let fixed: Vec<VariableRequest> = req.variables.iter().map(VariableSpec::request).collect();
    let (with_loops, source_dirs) = (req.loop_variables, req.source_dirs.clone());
    // `--var` reads what it names; `--progress` also the loop-order variables of the loops
    // the sampled ranks are in; the verdict the variables in the arguments of the MPI calls
    // the ranks are blocked in (their peers and communicators). Both need the samples, so
    // they are decided here.
    let mut verdict_only = Vec::new();
    let mut pick = |rank_map: &SetupReply, sampled: &Merged| {
        let Ok(a) = assemble(JobInfo::default(), rank_map, sampled, &sample) else {
            return fixed.clone();
        };
        let mut sources = SourceIndex::new(source_dirs.clone());
        let wanted = analysis_requests(&a.result, &mut sources, fixed.clone(), with_loops);
        verdict_only = wanted.verdict_only;
        *early = Some(a);
        wanted.all
    };
    let (plan, mut launcher, key) = tree_plan(setup, sample.clone(), req, place, progress)?;
    let runtime = runtime()?;
    let outcome = runtime.block_on(root::run(
        plan,
        launcher.as_mut(),
        key,
        signals,
        Some(&mut pick),
    ));
    // Closes every link: the tree's processes, their shutdown answered, exit on that.
    let t = std::time::Instant::now();
    drop(runtime);
    let closed = t.elapsed();
    let t = std::time::Instant::now();
    launcher.reap(Duration::from_secs(5));
    let reaped = t.elapsed();
    let mut outcome = outcome?;
    if let Outcome::Done(g) = &mut outcome {
        g.verdict_only = verdict_only;
        g.timings.push(("close the links", closed));
        g.timings.push(("reap the tree's processes", reaped));
    }
    Ok(outcome)
}

/// The tree for this job (topology, launcher, session key) and what to ask of it.
pub fn tree_plan(
    setup: Setup,
    sample: Sample,
    req: &AttachRequest,
    place: &Place,
    progress: bool,
) -> Result<(Plan, Box<dyn Launcher>, SessionKey), AttachError> {
    let daemons = match place {
        Place::Local => req.tree.daemons.unwrap_or(1),
        Place::Slurm { job, .. } => job.nodes,
    };
    let topology = Topology::choose(daemons, req.tree.fanout, req.tree.depth)?;
    let key = SessionKey::generate()
        .map_err(|e| AttachError::Internal(format!("no random session key: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| AttachError::Internal(format!("cannot find strata's binary: {e}")))?;
    let (launcher, share): (Box<dyn Launcher>, u32) = match place {
        Place::Local => (
            Box::new(LocalLauncher::new(exe, key.to_hex())),
            topology.daemons(),
        ),
        Place::Slurm { job, .. } => (
            Box::new(SlurmLauncher::new(
                job.clone(),
                exe,
                key.to_hex(),
                slurm::this_host_address(),
                req.tree.commnodes_in_job,
            )),
            0,
        ),
    };
    let commnodes: u32 = topology.commnode_levels().iter().sum();
    let inside = if req.tree.commnodes_in_job && commnodes > 0 {
        " in the job"
    } else {
        ""
    };
    eprintln!(
        "strata: tree {} ({} commnode(s){inside}, {} daemon(s), {} launcher)",
        topology.describe(),
        commnodes,
        topology.daemons(),
        launcher.name(),
    );
    let plan = Plan {
        setup: Setup { share, ..setup },
        topology,
        sample,
        stacks_of: req.stacks_of.clone(),
        connect_timeout: Duration::from_secs(20),
        progress,
    };
    Ok((plan, launcher, key))
}

/// In this process: the front end is its own (only) daemon. For comparison and debugging.
pub fn serial(
    setup: Setup,
    sample: &Sample,
    req: &AttachRequest,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> Result<Outcome, AttachError> {
    let t0 = std::time::Instant::now();
    let selector = match setup.target {
        Some(Target::LauncherPid(p)) => Selector::Launcher(p as i32),
        Some(Target::Pids(p)) => Selector::Pids(p.pids.iter().map(|&p| p as i32).collect()),
        Some(Target::Slurm(_)) | None => unreachable!("--serial takes --pids or --launcher-pid"),
    };
    let opts = discovery::Options::for_current_process();
    let host = strata_proto::link::hostname();
    let (rank_map, tasks) = agent::rank_map(0, &host, &selector, &opts, 1);
    let mut timings = vec![("rank map", t0.elapsed())];
    let t = std::time::Instant::now();
    let capturer = Capturer::with_default_threads();
    let mut sampler = Sampler::new(Symbolizer::new(symbol_options(
        &req.debug_dirs,
        req.debug_cache.as_deref(),
    )));
    let options = agent::sample_options(sample);
    let interrupted = std::cell::Cell::new(None);
    let stop = || {
        if let Ok(sig) = signals.try_recv() {
            interrupted.set(Some(sig));
        }
        interrupted.get().is_some()
    };
    let mut sampled = sampler.sample(&capturer, &tasks, &options, &stop, &mut |_| {});
    drop(capturer);
    if let Some(sig) = interrupted.get() {
        return Ok(Outcome::Interrupted(sig));
    }
    timings.push(("sample", t.elapsed()));
    let stacks = agent::stacks_reply(&tasks, &sampled.last, &req.stacks_of);
    // This process is the only daemon: its trees are the merge, used as built. They are
    // taken out first so that the daemon's reply (the rest) does not encode them for nothing.
    let take = |t: &mut PrefixTree<_>| std::mem::replace(t, PrefixTree::new(0, 0));
    let trees = Trees::Runs(take(&mut sampled.tree_2d), take(&mut sampled.tree_3d));
    let reply = SampleReply {
        tree_2d: None,
        tree_3d: None,
        ..agent::sample_reply(&sampled)
    };
    Ok(Outcome::Done(Box::new(root::Gathered {
        rank_map,
        sampled: Merged { trees, reply },
        stacks,
        variables: None,
        verdict_only: Vec::new(),
        timings,
        provided: Default::default(),
    })))
}

/// The async runtime of every networked role (front end, commnode, daemon, emulator): two
/// workers are plenty for a node's links, and leave the cores to the sampling threads.
pub fn runtime() -> Result<tokio::runtime::Runtime, AttachError> {
    // The thread that drives the runtime (`block_on`) and every worker and blocking thread
    // keep up with spinning ranks: see `strata_launcher::priority`.
    strata_launcher::priority::raise_current_thread();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .on_thread_start(|| {
            strata_launcher::priority::raise_current_thread();
        })
        .enable_all()
        .build()
        .map_err(|e| AttachError::Internal(format!("cannot start the runtime: {e}")))
}

pub use crate::provide::symbol_options;
