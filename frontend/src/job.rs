//! Finding a job's ranks and opening the tree network on them: what `strata attach`, its
//! live mode, `strata demo` and `strata watch` share. From the original `strata attach`: find the job's ranks, sample them through the tree network (or, with
//! `--serial`, in this process), merge, remap to rank order, show the default view, write
//! the result files.
//!
//! Both paths produce the same two replies a tree root receives, the rank map
//! ([`SetupReply`]) and the merged samples ([`Merged`]), so everything after them
//! (remap, `[ranks unknown]`, the result, hints, exit code) is one code path.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use strata_commnode::merge::{Merged, Trees};
use strata_daemon::agent;
use strata_daemon::capture::Capturer;
use strata_daemon::discovery::{self, Selector};
use strata_daemon::sampler::Sampler;
use strata_daemon::symbols::{SymbolOptions, Symbolizer};
use strata_filters::taskset::format_runs;
use strata_filters::{Frame, IndexMap, PrefixTree, Special, remap};
use strata_launcher::Launcher;
use strata_launcher::local::LocalLauncher;
use strata_launcher::slurm::{self, SlurmJob, SlurmLauncher};
use strata_launcher::topology::Topology;
use strata_proto::auth::SessionKey;
use strata_proto::overlay::{
    ErrorKind, PidList, Sample, SampleReply, Setup, SetupReply, SlurmTarget, TaskNote,
    VariableRequest, setup::Target,
};

use crate::exit::Exit;
use crate::failure::Failure;
use crate::session::{self, Outcome, Plan};
use std::path::PathBuf;
use strata_progress::order;
use strata_progress::source::SourceIndex;
use strata_proto::sampling::Sampling;
use strata_result::variables::VariableSpec;
use strata_result::{
    JobInfo, MAX_JOB_SIZE, MissingRanks, RankInfo, ResultMeta, SamplingInfo, StrataResult,
    ThreadInfo, rfc3339,
};

/// Which processes an attach is aimed at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobTarget {
    /// A resource manager's job id as typed (`1234`, `1234.0`), and `--step`.
    Job { id: String, step: Option<u32> },
    /// The ranks' process ids on this host, in rank order.
    Pids(Vec<i32>),
    /// A launcher on this host; its descendants with an MPI rank are the ranks.
    Launcher(i32),
}

/// Who starts the daemons.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResourceManager {
    /// Processes on this host.
    Local,
    /// A Slurm job's nodes, one daemon per node.
    Slurm,
}

/// The tree network's shape, as asked for (`None`: strata chooses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TreeShape {
    /// Daemons on this host (local jobs; Slurm starts one per node).
    pub daemons: Option<u32>,
    /// Most children per tree node.
    pub fanout: Option<u32>,
    /// Edges from the front end to a daemon.
    pub depth: Option<u32>,
    /// Run the commnodes inside the job's allocation (Slurm).
    pub commnodes_in_job: bool,
}

/// What an attach asks for, whoever asks: `strata attach` (and its live mode), `strata
/// demo` and `strata watch` each build one from their own options.
#[derive(Clone, Debug)]
pub struct AttachRequest {
    pub target: JobTarget,
    /// `None`: Slurm for a job id, local for pids or a launcher.
    pub rm: Option<ResourceManager>,
    pub sampling: Sampling,
    pub tree: TreeShape,
    /// Sample in this process, without daemons or a tree.
    pub serial: bool,
    /// Where separate debug information lives.
    pub debug_dirs: Vec<PathBuf>,
    /// Ranks whose full stacks come back with the last sample (`--rank`).
    pub stacks_of: Vec<u32>,
    /// Variables read in every rank after sampling (`--var`).
    pub variables: Vec<VariableSpec>,
    /// Also read the loop-order variables the progress order needs (`--progress`).
    pub loop_variables: bool,
    /// Where the job's sources live, for the loop-order variables.
    pub source_dirs: Vec<PathBuf>,
}

impl AttachRequest {
    /// A request for `target` with every other setting at its default.
    pub fn new(target: JobTarget) -> AttachRequest {
        AttachRequest {
            target,
            rm: None,
            sampling: Sampling::default(),
            tree: TreeShape::default(),
            serial: false,
            debug_dirs: Vec::new(),
            stacks_of: Vec::new(),
            variables: Vec::new(),
            loop_variables: false,
            source_dirs: Vec::new(),
        }
    }

    /// The launcher's pid, when the target is a launcher.
    fn launcher_pid(&self) -> Option<i32> {
        match self.target {
            JobTarget::Launcher(pid) => Some(pid),
            _ => None,
        }
    }
}

/// What the daemons are asked: which tasks (the rank map's target) and how to sample.
pub(crate) fn requests(req: &AttachRequest, place: &Place) -> (Setup, Sample) {
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
    };
    (setup, sample)
}

/// The job as the result file names it.
pub(crate) fn job_info(
    place: &Place,
    req: &AttachRequest,
    rank_map: &SetupReply,
    job_name: Option<String>,
) -> JobInfo {
    match place {
        Place::Slurm { job, step } => JobInfo {
            id: job.id.to_string(),
            resource_manager: "slurm".to_string(),
            step: step.map(|s| format!("{}.{s}", job.id)),
            launcher_pid: None,
        },
        Place::Local => JobInfo {
            id: job_name.unwrap_or_else(|| job_id(req, rank_map)),
            resource_manager: "local".to_string(),
            step: None,
            launcher_pid: req.launcher_pid().map(|p| p as u32),
        },
    }
}

/// Where the job runs, as the options and the resource manager say.
pub(crate) enum Place {
    /// On this host (`--pids`, `--launcher-pid`).
    Local,
    /// A Slurm job; `step` as chosen (`None`: every step).
    Slurm { job: SlurmJob, step: Option<u32> },
}

/// Checks the request's settings against each other and looks a job id up.
pub(crate) fn where_to_attach(req: &AttachRequest) -> Result<Place, Failure> {
    let bad = |m: &str| Err(Failure::new(Exit::BadInput, m.to_string()));
    req.sampling.validate()?;
    let JobTarget::Job {
        id: text,
        step: step_option,
    } = &req.target
    else {
        if req.rm == Some(ResourceManager::Slurm) {
            return bad("--rm slurm needs a job id: strata attach JOBID");
        }
        return Ok(Place::Local);
    };
    if req.rm == Some(ResourceManager::Local) {
        return bad(
            "a job id needs a resource manager (--rm slurm); on the ranks' host, --rm local \
             takes --launcher-pid or --pids",
        );
    }
    if req.tree.daemons.is_some() {
        return bad("under Slurm strata starts one daemon per node of the job: drop --daemons");
    }
    let (id, step_in_id) = match text.split_once('.') {
        Some((j, s)) => (j, Some(s)),
        None => (text.as_str(), None),
    };
    let id: u32 = id.trim().parse().map_err(|_| {
        Failure::new(
            Exit::BadInput,
            format!("'{text}' is not a job id (a number, or JOB.STEP)"),
        )
    })?;
    let step_in_id = match step_in_id {
        Some(s) => Some(s.trim().parse::<u32>().map_err(|_| {
            Failure::new(
                Exit::BadInput,
                format!("'{text}': the step is not a number"),
            )
        })?),
        None => None,
    };
    if step_in_id.is_some() && step_option.is_some() && step_in_id != *step_option {
        return bad("the job id names one step and --step another");
    }
    if req.rm.is_none() && !slurm::available() {
        return Err(Failure::new(
            Exit::NotFound,
            format!(
                "job {id}: no resource manager answers here (squeue does not work): run \
                 strata where Slurm's commands work, or attach with --launcher-pid or --pids"
            ),
        ));
    }
    let job = slurm::lookup(id, nix::unistd::getuid().as_raw()).map_err(Failure::from)?;
    let step = job
        .choose_step(step_in_id.or(*step_option))
        .map_err(Failure::from)?;
    if job.steps.len() > 1 && step_in_id.or(*step_option).is_none() {
        eprintln!(
            "strata: job {id} has steps {}: sampling step {id}.{} (the most tasks; --step \
             chooses another)",
            job.describe_steps(),
            step.unwrap_or(0)
        );
    }
    Ok(Place::Slurm { job, step })
}

/// Opens a session that stays up (`attach -i`, `strata watch`): the tree started and
/// joined, discovery problems reported once; `None` when a signal came first (everything
/// detached already).
pub(crate) fn open_live(
    plan: &Plan,
    launcher: &mut dyn Launcher,
    key: SessionKey,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> Result<Option<(tokio::runtime::Runtime, Box<session::Session>)>, Failure> {
    let opened = session::open_blocking(runtime()?, plan, launcher, key, signals)?;
    if let Some((_, s)) = &opened {
        report_problems(&s.rank_map);
    }
    Ok(opened)
}

/// Through the tree: launch, connect, command, merge.
pub(crate) fn tree(
    setup: Setup,
    sample: Sample,
    req: &AttachRequest,
    place: &Place,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    progress: bool,
    early: &mut Option<Assembled>,
) -> Result<Outcome, Failure> {
    let fixed: Vec<VariableRequest> = req.variables.iter().map(VariableSpec::request).collect();
    let (with_loops, source_dirs) = (req.loop_variables, req.source_dirs.clone());
    // `--var` reads what it names; `--progress` also the loop-order variables of the loops
    // the sampled ranks are in (which needs the samples, so it is decided here).
    let mut pick = |rank_map: &SetupReply, sampled: &Merged| {
        let mut requests = fixed.clone();
        if with_loops && let Ok(a) = assemble(JobInfo::default(), rank_map, sampled, &sample) {
            let mut sources = SourceIndex::new(source_dirs.clone());
            for r in order::loop_requests(&a.result, &mut sources) {
                if !requests.contains(&r) {
                    requests.push(r);
                }
            }
            *early = Some(a);
        }
        requests
    };
    let (plan, mut launcher, key) = tree_plan(setup, sample.clone(), req, place, progress)?;
    let runtime = runtime()?;
    let outcome = runtime.block_on(session::run(
        plan,
        launcher.as_mut(),
        key,
        signals,
        Some(&mut pick),
    ));
    // Closes every link: the tree's processes, their shutdown answered, exit on that.
    drop(runtime);
    launcher.reap(Duration::from_secs(5));
    Ok(outcome?)
}

/// The tree for this job (topology, launcher, session key) and what to ask of it.
pub(crate) fn tree_plan(
    setup: Setup,
    sample: Sample,
    req: &AttachRequest,
    place: &Place,
    progress: bool,
) -> Result<(Plan, Box<dyn Launcher>, SessionKey), Failure> {
    let daemons = match place {
        Place::Local => req.tree.daemons.unwrap_or(1),
        Place::Slurm { job, .. } => job.nodes,
    };
    let topology = Topology::choose(daemons, req.tree.fanout, req.tree.depth)?;
    let key = SessionKey::generate()
        .map_err(|e| Failure::new(Exit::Internal, format!("no random session key: {e}")))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::new(Exit::Internal, format!("cannot find strata's binary: {e}")))?;
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
pub(crate) fn serial(
    setup: Setup,
    sample: &Sample,
    req: &AttachRequest,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> Result<Outcome, Failure> {
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
    let mut sampler = Sampler::new(Symbolizer::new(symbol_options(&req.debug_dirs)));
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
    Ok(Outcome::Done(Box::new(session::Gathered {
        rank_map,
        sampled: Merged { trees, reply },
        stacks,
        variables: None,
        timings,
    })))
}

/// Discovery problems, once each (daemons on one host see the same processes).
pub(crate) fn report_problems(rank_map: &SetupReply) {
    let mut seen = BTreeSet::new();
    let any_task = rank_map.daemons.iter().any(|d| !d.tasks.is_empty());
    for d in &rank_map.daemons {
        // A daemon that found nothing while others did (a node of the job without ranks).
        if let (Some(e), true) = (&d.error, any_task)
            && seen.insert(e.clone())
        {
            eprintln!("strata: warning: daemon {} on {}: {e}", d.index, d.host);
        }
        for p in &d.problems {
            if seen.insert(p.clone()) {
                eprintln!("strata: warning: {p}");
            }
        }
    }
    let dups: BTreeSet<u32> = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.duplicate_ranks.iter().copied())
        .collect();
    if !dups.is_empty() {
        eprintln!(
            "strata: warning: rank(s) {} are claimed by several unrelated processes (none or \
             several mapping MPI): name the job step, or the pids",
            list(&dups.into_iter().collect::<Vec<_>>())
        );
    }
}

/// The failure when no daemon found any task: the first daemon's own reason.
pub(crate) fn nothing_found(rank_map: &SetupReply) -> Option<Failure> {
    let any_task = rank_map
        .daemons
        .iter()
        .any(|d| !d.tasks.is_empty() || !d.duplicate_ranks.is_empty());
    if any_task {
        return None;
    }
    if let Some(d) = rank_map.daemons.iter().find(|d| d.error.is_some()) {
        let exit = match ErrorKind::try_from(d.error_kind).unwrap_or(ErrorKind::Internal) {
            ErrorKind::NotFound => Exit::NotFound,
            ErrorKind::PermissionDenied => Exit::PermissionDenied,
            ErrorKind::None | ErrorKind::Internal => Exit::Internal,
        };
        return Some(Failure::new(exit, d.error.clone().unwrap_or_default()));
    }
    let why = rank_map.missing.first().map_or_else(
        || "no daemon answered".to_string(),
        |m| format!("{}: {}", m.who, m.reason),
    );
    Some(Failure::new(
        Exit::Internal,
        format!("no rank map arrived ({why}); see the messages above"),
    ))
}

/// `mpirun-1234` for a launcher, `ring-5678` (executable, first pid) for pids.
pub(crate) fn job_id(req: &AttachRequest, rank_map: &SetupReply) -> String {
    let comm = |pid: i32| {
        strata_daemon::procfs::stat(pid)
            .map(|s| s.comm)
            .unwrap_or_else(|_| "job".to_string())
    };
    if let Some(pid) = req.launcher_pid() {
        return format!("{}-{pid}", comm(pid));
    }
    let first = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.tasks.iter())
        .min_by_key(|t| t.rank);
    first.map_or_else(
        || "pids".to_string(),
        |t| format!("{}-{}", comm(t.pid as i32), t.pid),
    )
}

/// The result and what the hints need.
pub(crate) struct Assembled {
    pub(crate) result: StrataResult,
    /// Per task (root task order): rank and note.
    pub(crate) notes: Vec<(u32, TaskNote)>,
    /// Per task: executable path.
    pub(crate) executables: Vec<String>,
}

pub(crate) fn assemble(
    job: JobInfo,
    rank_map: &SetupReply,
    merged: &Merged,
    sample: &Sample,
) -> Result<Assembled, Failure> {
    let internal = |m: String| Failure::new(Exit::Internal, m);
    let sampled = &merged.reply;
    let mut ranks = Vec::new();
    let mut rank_info = Vec::new();
    let mut executables = Vec::new();
    for d in &rank_map.daemons {
        for t in &d.tasks {
            ranks.push(t.rank);
            let exe = d
                .executables
                .get(t.executable as usize)
                .cloned()
                .unwrap_or_default();
            executables.push(exe.clone());
            rank_info.push(RankInfo {
                rank: t.rank,
                host: Some(d.host.clone()),
                pid: Some(t.pid),
                executable: Some(exe),
                ..RankInfo::default()
            });
        }
    }
    let dups: BTreeSet<u32> = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.duplicate_ranks.iter().copied())
        .collect();
    let hinted = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.tasks.iter().filter_map(|t| t.job_size))
        .max()
        .unwrap_or(0);
    let highest = ranks.iter().chain(&dups).max().map_or(0, |r| r + 1);
    let job_size = hinted.max(highest);
    // Ranks and sizes come from the ranks' environments, through the daemons: bounded
    // before anything is allocated or walked per rank.
    if job_size > MAX_JOB_SIZE {
        return Err(Failure::new(
            Exit::BadInput,
            format!(
                "the job claims {job_size} ranks (a rank or MPI size variable in a rank's \
                 environment), more than strata handles ({MAX_JOB_SIZE})"
            ),
        ));
    }
    if sampled.notes.len() != ranks.len() {
        return Err(internal(format!(
            "the merged samples cover {} tasks, the rank map {}",
            sampled.notes.len(),
            ranks.len()
        )));
    }
    let index_map =
        IndexMap::new(ranks.clone(), job_size, "rank").map_err(|e| internal(e.to_string()))?;
    let threads = sample
        .threads
        .then(|| IndexMap::identity(sampled.threads.len() as u32, "thread"));
    // Job-wide vectors need no remap and are `strata bench --dense`'s alone.
    let Trees::Runs(merged_2d, merged_3d) = &merged.trees else {
        return Err(internal(
            "the merged samples hold job-wide bit vectors, not task runs".into(),
        ));
    };
    let mut tree_2d =
        remap(merged_2d, &index_map, threads.as_ref()).map_err(|e| internal(e.to_string()))?;
    let mut tree_3d =
        remap(merged_3d, &index_map, threads.as_ref()).map_err(|e| internal(e.to_string()))?;

    for (info, note) in rank_info.iter_mut().zip(&sampled.notes) {
        info.build_id = note.build_id.clone();
        info.state = (!note.state.is_empty()).then(|| note.state.clone());
        info.error = note.error.clone();
    }
    let thread_info = sampled
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThreadInfo {
            id: i as u32,
            rank: ranks.get(t.task as usize).copied().unwrap_or(u32::MAX),
            tid: t.tid,
            name: Some(t.name.clone()),
        })
        .collect();

    let mut missing = Vec::new();
    // Subtrees lost after the rank map: their ranks are known.
    let mut lost: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for m in &sampled.missing {
        let rs = ranks
            .get(m.first as usize..m.end as usize)
            .ok_or_else(|| internal("a missing range outside the rank map".into()))?;
        lost.entry(format!("{} did not answer: {}", m.who, m.reason))
            .or_default()
            .extend(rs);
    }
    for (reason, mut rs) in lost {
        rs.sort_unstable();
        missing.push(MissingRanks {
            ranks: list(&rs),
            reason,
        });
    }
    let dup_runs = runs_of((0..job_size).filter(|r| dups.contains(r)));
    if !dup_runs.is_empty() {
        missing.push(MissingRanks {
            ranks: format_runs(&dup_runs),
            reason: "several unrelated processes claim these ranks".to_string(),
        });
    }
    let found: BTreeSet<u32> = ranks.iter().copied().collect();
    let unmapped: Vec<u32> = (0..job_size)
        .filter(|r| !found.contains(r) && !dups.contains(r))
        .collect();
    if !unmapped.is_empty() {
        if rank_map.missing.is_empty() {
            missing.push(MissingRanks {
                ranks: list(&unmapped),
                reason: "no process of these ranks was found".to_string(),
            });
        } else {
            // Some daemons never gave their rank map: these ranks are probably theirs,
            // and are shown in the tree as unknown.
            let who: Vec<String> = rank_map
                .missing
                .iter()
                .map(|m| format!("{} ({})", m.who, m.reason))
                .collect();
            missing.push(MissingRanks {
                ranks: list(&unmapped),
                reason: format!("ranks unknown: no rank map from {}", who.join(", ")),
            });
            let path = [Frame::Special(Special::RanksUnknown)];
            for &r in &unmapped {
                tree_2d.add_trace(&path, r, None);
                tree_3d.add_trace(&path, r, None);
            }
        }
    } else if !rank_map.missing.is_empty() {
        for m in &rank_map.missing {
            eprintln!(
                "strata: warning: {} gave no rank map ({}); every rank of the job is accounted \
                 for without it",
                m.who, m.reason
            );
        }
    }
    let time = |us: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_micros(us));
    let notes = ranks
        .iter()
        .copied()
        .zip(sampled.notes.iter().cloned())
        .collect();
    let result = StrataResult {
        meta: ResultMeta {
            strata_version: env!("CARGO_PKG_VERSION").to_string(),
            created: rfc3339(SystemTime::now()),
            job,
            sampling: SamplingInfo {
                samples: sampled.samples,
                interval_ms: sample.interval_us / 1000,
                threads: sample.threads,
                started: time(sampled.started_us),
                finished: time(sampled.finished_us),
            },
            job_size,
            ranks: rank_info,
            threads: thread_info,
            missing,
            variables: Vec::new(),
        },
        tree_2d,
        tree_3d,
    };
    Ok(Assembled {
        result,
        notes,
        executables,
    })
}

pub(crate) fn list(ranks: &[u32]) -> String {
    format_runs(&runs_of(ranks.iter().copied()))
}

/// Ascending ranks as runs `(first, end)`.
fn runs_of(ranks: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in ranks {
        match runs.last_mut() {
            Some((_, end)) if *end == r => *end = r + 1,
            _ => runs.push((r, r + 1)),
        }
    }
    runs
}

/// The async runtime of every networked role (front end, commnode, daemon, emulator): two
/// workers are plenty for a node's links, and leave the cores to the sampling threads.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::new(Exit::Internal, format!("cannot start the runtime: {e}")))
}

/// Debug directories from `--debug-dir`, else the system's.
pub fn symbol_options(dirs: &[PathBuf]) -> SymbolOptions {
    if dirs.is_empty() {
        SymbolOptions::default()
    } else {
        SymbolOptions {
            debug_dirs: dirs.to_vec(),
        }
    }
}
