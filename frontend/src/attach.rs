//! `strata attach`: find the job's ranks, sample them through the tree network (or, with
//! `--serial`, in this process), merge, remap to rank order, show the default view, write
//! the result files.
//!
//! Both paths produce the same two replies a tree root receives, the rank map
//! ([`SetupReply`]) and the merged samples ([`Merged`]), so everything after them
//! (remap, `[ranks unknown]`, the result, hints, exit code) is one code path.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::time::{Duration, SystemTime};

use strata_commnode::merge::{Merged, Trees};
use strata_daemon::agent;
use strata_daemon::capture::Capturer;
use strata_daemon::discovery::{self, Selector};
use strata_daemon::sampler::Sampler;
use strata_daemon::symbols::Symbolizer;
use strata_filters::taskset::format_runs;
use strata_filters::{Frame, IndexMap, PrefixTree, Special, remap};
use strata_launcher::Launcher;
use strata_launcher::local::LocalLauncher;
use strata_launcher::slurm::{self, SlurmError, SlurmJob, SlurmLauncher};
use strata_launcher::topology::Topology;
use strata_proto::auth::SessionKey;
use strata_proto::overlay::{
    ErrorKind, PidList, Sample, SampleReply, Setup, SetupReply, SlurmTarget, StacksReply, TaskNote,
    VariableRequest, setup::Target,
};

use crate::cli::{AttachArgs, Failure, ResourceManager, show, write_files, write_stdout};
use crate::dump::symbol_options;
use crate::exit::Exit;
use crate::interrupt;
use crate::session::{self, Outcome, Plan};
use strata_progress::order;
use strata_progress::source::SourceIndex;
use strata_result::directory as output;
use strata_result::variables::VariableSpec;
use strata_result::{
    JobInfo, MAX_JOB_SIZE, MissingRanks, RankInfo, ResultMeta, SamplingInfo, StrataResult,
    ThreadInfo, rfc3339,
};

pub fn run(args: AttachArgs) -> Result<Exit, Failure> {
    run_named(args, None)
}

/// [`run`], with the job named `job_name` instead of after its launcher or first process.
pub fn run_named(args: AttachArgs, job_name: Option<String>) -> Result<Exit, Failure> {
    let looked_up = std::time::Instant::now();
    let place = where_to_attach(&args)?;
    let lookup = looked_up.elapsed();
    // Before any thread exists, so that they all inherit the blocked signals.
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let (setup, sample) = requests(&args, &place);
    let progress = std::io::stderr().is_terminal() && !args.json;
    if args.interactive {
        if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            return Err(Failure::new(
                Exit::BadInput,
                "-i needs a terminal on standard input and output: run it in a terminal, or \
                 drop -i to print the tree",
            ));
        }
        let color = crate::cli::color_on(args.show.color, true);
        return crate::live::run(setup, sample, &args, &place, signals, job_name, color);
    }
    let started = looked_up;
    // `--progress` assembles the result inside the session (to choose the loop counters
    // to read); it is kept here so that the remap runs, and warns, once.
    let mut early: Option<Assembled> = None;
    let gathered = if args.serial {
        serial(setup, &sample, &args, signals)?
    } else {
        tree(
            setup,
            sample.clone(),
            &args,
            &place,
            signals,
            progress,
            &mut early,
        )?
    };
    let gathered = match gathered {
        Outcome::Done(g) => g,
        Outcome::Interrupted(sig) => {
            eprintln!("strata: {sig}: stopped; every process detached");
            return Ok(Exit::Interrupted);
        }
    };
    let rank_map = &gathered.rank_map;
    report_problems(rank_map);
    if let Some(failure) = nothing_found(rank_map) {
        return Err(failure);
    }
    let job = job_info(&place, &args, rank_map, job_name);
    let t = std::time::Instant::now();
    let mut assembled = match early {
        Some(mut a) => {
            a.result.meta.job = job;
            a
        }
        None => assemble(job, rank_map, &gathered.sampled, &sample)?,
    };
    if let Some((requests, reply)) = &gathered.variables {
        assembled.result.set_variables(requests, reply);
    }
    let remapped = t.elapsed();
    let mut show_args = args.show;
    // `--json` is the result for scripts, with or without `--progress` (whose order then
    // goes into the result directory's progress.json).
    let progress_for_files = args.json && show_args.progress;
    if args.json {
        show_args.format = Some(crate::cli::FormatArg::Json);
        show_args.progress = false;
    }
    let t = std::time::Instant::now();
    let mut progress = show(&assembled.result, &show_args)?;
    if progress_for_files {
        show_args.progress = true;
        progress = show_args.progress_order(&assembled.result);
    }
    let rendered = t.elapsed();
    hints(&assembled, args.threads);
    print_stacks(&args.rank, &gathered.stacks, &assembled)?;
    if !args.no_files {
        let dir = args
            .output
            .clone()
            .unwrap_or_else(|| output::default_dir(&assembled.result));
        write_files(&assembled.result, &dir, progress.as_ref())?;
    }
    if std::env::var_os("STRATA_TIMINGS").is_some() {
        let mut phases = vec![("job lookup", lookup)];
        phases.extend(gathered.timings.iter().cloned());
        phases.push(("remap and assemble", remapped));
        phases.push(("render", rendered));
        for (phase, d) in phases {
            eprintln!("strata: timing: {phase}: {:.1} ms", d.as_secs_f64() * 1e3);
        }
        eprintln!(
            "strata: timing: total: {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
    }
    let troubled = assembled.notes.iter().any(|(_, n)| n.error.is_some());
    Ok(if assembled.result.meta.missing.is_empty() && !troubled {
        Exit::Complete
    } else {
        Exit::Partial
    })
}

/// What the daemons are asked: which tasks (the rank map's target) and how to sample.
pub(crate) fn requests(args: &AttachArgs, place: &Place) -> (Setup, Sample) {
    let target = match (place, args.launcher_pid) {
        (Place::Slurm { job, step }, _) => Target::Slurm(SlurmTarget {
            job: job.id,
            step: *step,
        }),
        (Place::Local, Some(pid)) => Target::LauncherPid(pid as u32),
        (Place::Local, None) => Target::Pids(PidList {
            pids: args.pids.iter().map(|&p| p as u32).collect(),
        }),
    };
    let sample = Sample {
        samples: args.samples,
        interval_us: args.interval.as_micros() as u64,
        jitter: 0.2,
        threads: args.threads,
        max_frames: 0,
        dense: false,
    };
    let setup = Setup {
        uid: nix::unistd::getuid().as_raw(),
        target: Some(target),
        share: 0,
        debug_dirs: args
            .debug_dir
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect(),
    };
    (setup, sample)
}

/// The job as the result file names it.
pub(crate) fn job_info(
    place: &Place,
    args: &AttachArgs,
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
            id: job_name.unwrap_or_else(|| job_id(args, rank_map)),
            resource_manager: "local".to_string(),
            step: None,
            launcher_pid: args.launcher_pid.map(|p| p as u32),
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

/// Checks the options against each other and looks a job id up.
pub(crate) fn where_to_attach(args: &AttachArgs) -> Result<Place, Failure> {
    let bad = |m: &str| Err(Failure::new(Exit::BadInput, m.to_string()));
    let Some(text) = &args.job else {
        if args.rm == Some(ResourceManager::Slurm) {
            return bad("--rm slurm needs a job id: strata attach JOBID");
        }
        return Ok(Place::Local);
    };
    if args.rm == Some(ResourceManager::Local) {
        return bad(
            "a job id needs a resource manager (--rm slurm); on the ranks' host, --rm local \
             takes --launcher-pid or --pids",
        );
    }
    if args.daemons.is_some() {
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
    if step_in_id.is_some() && args.step.is_some() && step_in_id != args.step {
        return bad("the job id names one step and --step another");
    }
    if args.rm.is_none() && !slurm::available() {
        return Err(Failure::new(
            Exit::NotFound,
            format!(
                "job {id}: no resource manager answers here (squeue does not work): run \
                 strata where Slurm's commands work, or attach with --launcher-pid or --pids"
            ),
        ));
    }
    let job = slurm::lookup(id, nix::unistd::getuid().as_raw()).map_err(slurm_failure)?;
    let step = job
        .choose_step(step_in_id.or(args.step))
        .map_err(slurm_failure)?;
    if job.steps.len() > 1 && step_in_id.or(args.step).is_none() {
        eprintln!(
            "strata: job {id} has steps {}: sampling step {id}.{} (the most tasks; --step \
             chooses another)",
            job.describe_steps(),
            step.unwrap_or(0)
        );
    }
    Ok(Place::Slurm { job, step })
}

fn slurm_failure(e: SlurmError) -> Failure {
    let exit = match &e {
        SlurmError::NotFound(_)
        | SlurmError::Finished(..)
        | SlurmError::Pending(..)
        | SlurmError::NotConfigured(_) => Exit::NotFound,
        SlurmError::OtherUser { .. } => Exit::PermissionDenied,
        SlurmError::NoSuchStep { .. } => Exit::BadInput,
        SlurmError::Failed(_) => Exit::Internal,
    };
    Failure::new(exit, e.to_string())
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
    let opened = session::open_blocking(crate::roles::runtime()?, plan, launcher, key, signals)
        .map_err(|e| Failure::new(Exit::Internal, e.0))?;
    if let Some((_, s)) = &opened {
        report_problems(&s.rank_map);
    }
    Ok(opened)
}

/// Through the tree: launch, connect, command, merge.
fn tree(
    setup: Setup,
    sample: Sample,
    args: &AttachArgs,
    place: &Place,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    progress: bool,
    early: &mut Option<Assembled>,
) -> Result<Outcome, Failure> {
    let fixed: Vec<VariableRequest> = args.var.iter().map(VariableSpec::request).collect();
    let (with_loops, source_dirs) = (args.show.progress, args.show.source_dir.clone());
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
    let (plan, mut launcher, key) = tree_plan(setup, sample.clone(), args, place, progress)?;
    let runtime = crate::roles::runtime()?;
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
    outcome.map_err(|e| Failure::new(Exit::Internal, e.0))
}

/// The tree for this job (topology, launcher, session key) and what to ask of it.
pub(crate) fn tree_plan(
    setup: Setup,
    sample: Sample,
    args: &AttachArgs,
    place: &Place,
    progress: bool,
) -> Result<(Plan, Box<dyn Launcher>, SessionKey), Failure> {
    let daemons = match place {
        Place::Local => args.daemons.unwrap_or(1),
        Place::Slurm { job, .. } => job.nodes,
    };
    let topology = Topology::choose(daemons, args.fanout, args.depth)
        .map_err(|e| Failure::new(Exit::BadInput, e.to_string()))?;
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
                args.commnodes_in_job,
            )),
            0,
        ),
    };
    let commnodes: u32 = topology.commnode_levels().iter().sum();
    let inside = if args.commnodes_in_job && commnodes > 0 {
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
        stacks_of: args.rank.clone(),
        connect_timeout: Duration::from_secs(20),
        progress,
    };
    Ok((plan, launcher, key))
}

/// In this process: the front end is its own (only) daemon. For comparison and debugging.
fn serial(
    setup: Setup,
    sample: &Sample,
    args: &AttachArgs,
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
    let mut sampler = Sampler::new(Symbolizer::new(symbol_options(&args.debug_dir)));
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
    let stacks = agent::stacks_reply(&tasks, &sampled.last, &args.rank);
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
fn job_id(args: &AttachArgs, rank_map: &SetupReply) -> String {
    let comm = |pid: i32| {
        strata_daemon::procfs::stat(pid)
            .map(|s| s.comm)
            .unwrap_or_else(|_| "job".to_string())
    };
    if let Some(pid) = args.launcher_pid {
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
    notes: Vec<(u32, TaskNote)>,
    /// Per task: executable path.
    executables: Vec<String>,
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

/// `--rank`: each chosen rank's full stacks, in the order asked.
fn print_stacks(wanted: &[u32], stacks: &StacksReply, a: &Assembled) -> Result<(), Failure> {
    for &r in wanted {
        match stacks.ranks.iter().find(|s| s.rank == r) {
            Some(s) => match &s.error {
                None => write_stdout(&format!("\n{}", s.text))?,
                Some(e) => eprintln!("strata: rank {r}: {e}"),
            },
            None if a.notes.iter().any(|(rank, _)| *rank == r) => {
                eprintln!("strata: rank {r}: its daemon sent no stacks")
            }
            None => eprintln!("strata: rank {r}: not a rank of this job"),
        }
    }
    Ok(())
}

/// One line per thing the user should know: ranks that could not be sampled, ranks whose
/// main thread waits on its own threads, binaries without debug information.
fn hints(a: &Assembled, threads_shown: bool) {
    // One line per distinct error: a lost daemon's ranks share one.
    let mut errors: BTreeMap<&str, Vec<(u32, Option<u32>)>> = BTreeMap::new();
    for ((rank, note), info) in a.notes.iter().zip(&a.result.meta.ranks) {
        if let Some(e) = &note.error {
            errors.entry(e).or_default().push((*rank, info.pid));
        }
    }
    for (e, mut ranks) in errors {
        ranks.sort_unstable();
        match ranks.as_slice() {
            [(rank, Some(pid))] => eprintln!("strata: rank {rank} (pid {pid}): {e}"),
            _ => {
                let rs: Vec<u32> = ranks.iter().map(|r| r.0).collect();
                eprintln!("strata: rank(s) {}: {e}", list(&rs));
            }
        }
    }
    let mut waiting: Vec<u32> = a
        .notes
        .iter()
        .filter(|(_, n)| n.waits_on_threads)
        .map(|(r, _)| *r)
        .collect();
    waiting.sort_unstable();
    if !waiting.is_empty() && !threads_shown {
        eprintln!(
            "strata: rank(s) {}: the main thread waits for its own threads (join, condition, \
             barrier or lock); run with --threads to see what they do",
            list(&waiting)
        );
    }
    let no_debug: BTreeSet<&str> = a
        .notes
        .iter()
        .zip(&a.executables)
        .filter(|((_, n), _)| n.no_debug_info)
        .map(|(_, exe)| exe.as_str())
        .collect();
    for exe in no_debug {
        eprintln!(
            "strata: {exe} has no debug information: its frames are named from its symbol \
             table, without source lines (rebuild with -g, or install its debug package)"
        );
    }
}

fn list(ranks: &[u32]) -> String {
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
