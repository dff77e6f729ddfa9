//! Task discovery on this node: by PIDs, by launcher PID, by Slurm job and step.
//!
//! STAT found its tasks through LaunchMON and the MPIR process table, which broke per
//! resource manager and is being dropped by Open MPI and PMIx. strata finds them *locally*:
//! it scans `/proc` for processes whose start-time environment names the job and carries an
//! MPI rank (see `testbed/README.md` for which variables appear under srun and mpirun).
//!
//! Design constraints:
//! - Only processes whose *real* uid equals the invoking user's are chosen, checked
//!   explicitly so that a daemon running as root does not attach to other users' ranks.
//!   Matching processes of other users are reported, never silently dropped.
//! - Processes come and go during a scan: a process that vanishes is skipped (scans) or
//!   reported (explicit PIDs), never a panic.
//! - One process per rank. Wrappers (`srun bash run.sh`, `numactl ./app`) and children a
//!   rank forks inherit its environment, so several processes can claim a rank; the one that
//!   maps an MPI library wins, else the deepest; anything else is reported as an unresolved
//!   duplicate rather than guessed.
//! - Nothing assumes one executable per job (MPMD jobs are fine).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io;
use std::ops::Range;
use std::path::PathBuf;

use crate::procfs::{self, Pid};

/// Environment variable that marks strata's own processes. Every process strata starts on a
/// node (daemons, their helpers) carries `STRATA_ROLE=<role>` (e.g. `daemon`), so a
/// daemon launched into the job's allocation never mistakes itself, a sibling daemon or
/// their children for ranks: they inherit the job's `SLURM_*` variables and, when launched
/// with `--mpi=pmix`, even a `PMIX_RANK`.
pub const STRATA_ROLE_VAR: &str = strata_proto::ROLE_ENV;

/// Which processes make up the job on this node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    /// Serial mode: these processes, ranks numbered in the order given (index in the list).
    Pids(Vec<Pid>),
    /// A launcher on this host (mpirun, prterun, mpiexec, ...): its descendants that carry
    /// a rank in their environment.
    Launcher(Pid),
    /// Processes whose environment carries `SLURM_JOB_ID=job` (and `SLURM_STEP_ID=step`
    /// when a step is given; ranks of an `mpirun` inside `sbatch` on the batch host have no
    /// step id, so leave it out for those).
    Slurm { job: u32, step: Option<u32> },
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Pids(pids) => write!(f, "{} given pids", pids.len()),
            Selector::Launcher(pid) => write!(f, "launcher {pid}"),
            Selector::Slurm { job, step: None } => write!(f, "Slurm job {job}"),
            Selector::Slurm { job, step: Some(s) } => write!(f, "Slurm step {job}.{s}"),
        }
    }
}

/// A Slurm job step, `job.step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlurmStep {
    pub job: u32,
    pub step: u32,
}

impl SlurmStep {
    /// The step the calling process runs in, from its own environment, if any. A daemon
    /// launched with `srun --jobid=J --overlap` runs in a step of the job it inspects.
    pub fn of_current_process() -> Option<SlurmStep> {
        let var = |k: &str| std::env::var(k).ok()?.trim().parse().ok();
        Some(SlurmStep {
            job: var("SLURM_JOB_ID")?,
            step: var("SLURM_STEP_ID")?,
        })
    }
}

/// Who is asking, and what to leave out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Only processes with this real uid are chosen (the invoking user).
    pub uid: u32,
    /// Processes of this step are strata's own (the step its daemons were launched in).
    pub own_step: Option<SlurmStep>,
}

impl Options {
    /// The invoking user (real uid of this process) and the step this process runs in.
    pub fn for_current_process() -> Options {
        Options {
            uid: nix::unistd::getuid().as_raw(),
            own_step: SlurmStep::of_current_process(),
        }
    }
}

/// Where a task's rank came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RankSource {
    /// `OMPI_COMM_WORLD_RANK` (Open MPI's mpirun/prterun).
    OmpiCommWorldRank,
    /// `PMIX_RANK` (PMIx launchers, srun --mpi=pmix).
    PmixRank,
    /// `PMI_RANK` (MPICH hydra, PMI-1/2).
    PmiRank,
    /// `SLURM_PROCID` of a task of an srun-launched step.
    SlurmProcid,
    /// Serial mode: position in the given PID list.
    Order,
}

impl RankSource {
    /// The environment variable, or `None` for [`RankSource::Order`].
    pub fn variable(self) -> Option<&'static str> {
        match self {
            RankSource::OmpiCommWorldRank => Some("OMPI_COMM_WORLD_RANK"),
            RankSource::PmixRank => Some("PMIX_RANK"),
            RankSource::PmiRank => Some("PMI_RANK"),
            RankSource::SlurmProcid => Some("SLURM_PROCID"),
            RankSource::Order => None,
        }
    }
}

impl fmt::Display for RankSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.variable().unwrap_or("order of the given pids"))
    }
}

/// One chosen process: one per rank.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    pub pid: Pid,
    pub rank: u32,
    pub rank_source: RankSource,
    /// `/proc/PID/exe` (may end in ` (deleted)`).
    pub exe: PathBuf,
    /// Clock ticks after boot (`/proc/PID/stat` field 22): with the pid, identifies the
    /// process across pid reuse.
    pub start_time: u64,
    /// Number of ranks in the job, when the environment says.
    pub job_size: Option<u32>,
}

/// A process that matched (or was named) but cannot be used, with a one-line reason a user
/// can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub pid: Pid,
    pub message: String,
}

impl Problem {
    /// The process belongs to another user.
    pub fn is_foreign(&self) -> bool {
        self.message.starts_with(OWNER_PREFIX)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pid {}: {}", self.pid, self.message)
    }
}

/// Several processes claim one rank and none could be chosen: none or several map an MPI
/// library and none descends from all the others (e.g. two job steps both have a rank 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    pub rank: u32,
    /// Ascending.
    pub pids: Vec<Pid>,
}

impl fmt::Display for Duplicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pids: Vec<String> = self.pids.iter().map(|p| p.to_string()).collect();
        write!(
            f,
            "rank {} is claimed by pids {} (unrelated processes, none or several mapping MPI): \
             name the job step, or the pids",
            self.rank,
            pids.join(", ")
        )
    }
}

/// What discovery found on this node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovery {
    /// One per rank, ascending by rank.
    pub tasks: Vec<Task>,
    /// Ascending by pid.
    pub problems: Vec<Problem>,
    /// Ranks left out because several processes claim them; ascending by rank.
    pub duplicates: Vec<Duplicate>,
}

/// Why discovery found nothing at all.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("launcher {0} does not exist on this node")]
    LauncherNotFound(Pid),
    #[error("{}", no_tasks_message(.selector, .hint, .problems))]
    NoTasks {
        selector: Selector,
        /// What else the user may try (empty when there is nothing to add).
        hint: String,
        /// Processes that matched but cannot be used.
        problems: Vec<Problem>,
    },
    #[error("cannot list processes in /proc: {0}")]
    Proc(#[source] io::Error),
}

fn no_tasks_message(selector: &Selector, hint: &str, problems: &[Problem]) -> String {
    let mut msg = match selector {
        Selector::Pids(_) => "none of the given pids can be inspected".to_string(),
        Selector::Launcher(pid) => {
            format!("launcher {pid} has no rank process among its descendants")
        }
        Selector::Slurm { .. } => format!("no process of {selector} on this node"),
    };
    if !hint.is_empty() {
        msg.push_str(": ");
        msg.push_str(hint);
    }
    if let Some(first) = problems.first() {
        msg.push_str(&format!(
            " ({} process(es) skipped; first: {first})",
            problems.len()
        ));
    }
    msg
}

/// Finds the job's tasks on this node.
///
/// Returns an error only when nothing usable was found (no task and no duplicate); partial
/// results carry their problems and duplicates in [`Discovery`].
pub fn discover(selector: &Selector, opts: &Options) -> Result<Discovery, DiscoveryError> {
    let me = std::process::id() as Pid;
    let found = match selector {
        Selector::Pids(pids) => serial(pids, 0..pids.len(), opts, me),
        Selector::Launcher(launcher) => scan(selector, opts, me, Some(*launcher))?,
        Selector::Slurm { .. } => scan(selector, opts, me, None)?,
    };
    if found.discovery.tasks.is_empty() && found.discovery.duplicates.is_empty() {
        return Err(DiscoveryError::NoTasks {
            selector: selector.clone(),
            hint: found.hint,
            problems: found.discovery.problems,
        });
    }
    Ok(found.discovery)
}

/// This daemon's part of the job's tasks when `share` daemons on one host split them:
/// daemon `index` takes the `index`-th of `share` blocks in rank order; a `share` of 0 or 1
/// takes them all.
///
/// Given pids are split before they are inspected, so each daemon reads `/proc` for its own
/// block only: inspecting the whole list and keeping a block made discovery cost every daemon
/// the whole job. Ranks stay positions in the whole list, and a pid given twice is still
/// reported (by the daemon whose block holds the repeat). A block with no pid at all is an
/// empty result, not an error. A launcher's or a step's ranks can only be told apart by
/// reading every candidate's environment, so those are found whole and then split.
pub fn discover_share(
    selector: &Selector,
    opts: &Options,
    index: u32,
    share: u32,
) -> Result<Discovery, DiscoveryError> {
    if share <= 1 {
        return discover(selector, opts);
    }
    let block = |n: usize| {
        let (i, k, n) = (index as u64, share as u64, n as u64);
        ((i * n / k).min(n) as usize)..(((i + 1) * n / k).min(n) as usize)
    };
    let Selector::Pids(pids) = selector else {
        let mut found = discover(selector, opts)?;
        found.tasks = found.tasks[block(found.tasks.len())].to_vec();
        return Ok(found);
    };
    let range = block(pids.len());
    if range.is_empty() {
        return Ok(Discovery::default());
    }
    let found = serial(pids, range, opts, std::process::id() as Pid);
    if found.discovery.tasks.is_empty() {
        return Err(DiscoveryError::NoTasks {
            selector: selector.clone(),
            hint: found.hint,
            problems: found.discovery.problems,
        });
    }
    Ok(found.discovery)
}

struct Found {
    discovery: Discovery,
    /// For the empty-result error.
    hint: String,
}

/// The programs that start MPI ranks, by the name the kernel gives their process (`comm`):
/// Open MPI 4 (`mpirun`, `orterun`, and the `orted` of each node), Open MPI 5 (`prterun`,
/// `prte`, `prted`), MPICH and Intel MPI's hydra (`mpiexec`, `mpiexec.hydra`, the
/// `hydra_pmi_proxy` of each node), Slurm (`srun`, `slurmstepd`). Names starting with
/// `mpirun` or `mpiexec` count too (`mpirun.openmpi`, `mpiexec.mpich`).
pub const KNOWN_LAUNCHERS: [&str; 10] = [
    "mpirun",
    "mpiexec",
    "orterun",
    "orted",
    "prterun",
    "prte",
    "prted",
    "hydra_pmi_proxy",
    "srun",
    "slurmstepd",
];

/// Whether a process of this name starts MPI ranks (see [`KNOWN_LAUNCHERS`]).
pub fn is_known_launcher(comm: &str) -> bool {
    KNOWN_LAUNCHERS.contains(&comm) || comm.starts_with("mpirun") || comm.starts_with("mpiexec")
}

/// The rank and where it came from, by precedence. `SLURM_PROCID` counts only for a task of
/// an srun-launched step (it has `SLURM_STEP_ID`): under mpirun it is the orted's, and the
/// rank variables Open MPI sets take precedence anyway.
pub fn rank_from_env(env: &HashMap<String, String>) -> Option<(u32, RankSource)> {
    let num = |k: &str| env.get(k)?.trim().parse::<u32>().ok();
    if let Some(r) = num("OMPI_COMM_WORLD_RANK") {
        return Some((r, RankSource::OmpiCommWorldRank));
    }
    if let Some(r) = num("PMIX_RANK") {
        return Some((r, RankSource::PmixRank));
    }
    if let Some(r) = num("PMI_RANK") {
        return Some((r, RankSource::PmiRank));
    }
    if env.contains_key("SLURM_STEP_ID")
        && let Some(r) = num("SLURM_PROCID")
    {
        return Some((r, RankSource::SlurmProcid));
    }
    None
}

/// The job size the environment gives for a rank from `source`. Slurm's task counts are used
/// only for srun-launched tasks: inside mpirun they count orteds or batch tasks, not ranks.
pub fn job_size_from_env(env: &HashMap<String, String>, source: RankSource) -> Option<u32> {
    let num = |k: &str| env.get(k)?.trim().parse::<u32>().ok();
    let srun_launched =
        env.contains_key("SLURM_STEP_ID") && !env.contains_key("OMPI_COMM_WORLD_RANK");
    let slurm = || {
        srun_launched
            .then(|| num("SLURM_STEP_NUM_TASKS").or_else(|| num("SLURM_NTASKS")))
            .flatten()
    };
    match source {
        RankSource::OmpiCommWorldRank => num("OMPI_COMM_WORLD_SIZE"),
        RankSource::PmixRank => num("OMPI_COMM_WORLD_SIZE").or_else(slurm),
        RankSource::PmiRank => num("PMI_SIZE"),
        RankSource::SlurmProcid => slurm(),
        RankSource::Order => None,
    }
}

/// Whether a mapped file is an MPI library (one definition for discovery, the sampler and
/// the views: [`strata_filters::mpi::is_mpi_library`]).
pub use strata_filters::mpi::is_mpi_library;

fn maps_mpi(pid: Pid) -> bool {
    procfs::maps(pid)
        .map(|maps| maps.iter().any(|m| is_mpi_library(&m.path)))
        .unwrap_or(false)
}

fn gone(err: &io::Error) -> bool {
    // ESRCH comes back from some /proc files of a process that exited while being read.
    err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(libc::ESRCH)
}

fn strata_role(env: &HashMap<String, String>) -> Option<&str> {
    env.get(STRATA_ROLE_VAR).map(String::as_str)
}

fn step_of(env: &HashMap<String, String>) -> Option<SlurmStep> {
    Some(SlurmStep {
        job: env.get("SLURM_JOB_ID")?.trim().parse().ok()?,
        step: env.get("SLURM_STEP_ID")?.trim().parse().ok()?,
    })
}

const OWNER_PREFIX: &str = "owned by uid ";

fn owner_message(uid: u32, opts: &Options) -> String {
    format!(
        "{OWNER_PREFIX}{uid}, not the invoking user (uid {}): strata inspects only your own processes",
        opts.uid
    )
}

/// Serial mode: every named pid in `range` of the list is a task or a problem; its rank is
/// its position in the whole list.
fn serial(pids: &[Pid], range: Range<usize>, opts: &Options, me: Pid) -> Found {
    let mut d = Discovery::default();
    // Where each pid first appears, up to the end of the range (no /proc read: cheap).
    let mut first: HashMap<Pid, usize> = HashMap::new();
    for (i, &pid) in pids[..range.end].iter().enumerate() {
        first.entry(pid).or_insert(i);
    }
    for (i, &pid) in pids.iter().enumerate().take(range.end).skip(range.start) {
        let mut problem = |m: String| d.problems.push(Problem { pid, message: m });
        if let Some(&first) = first.get(&pid).filter(|&&f| f < i) {
            problem(format!("given twice; kept as rank {first}"));
            continue;
        }
        if pid == me {
            problem("is this strata process itself".into());
            continue;
        }
        let stat = match procfs::stat(pid) {
            Ok(s) => s,
            Err(e) if gone(&e) => {
                problem("no such process (it exited, or the pid is wrong)".into());
                continue;
            }
            Err(e) => {
                problem(format!("cannot read /proc/{pid}/stat: {e}"));
                continue;
            }
        };
        if stat.state == 'Z' || stat.state == 'X' {
            problem("has exited (zombie)".into());
            continue;
        }
        match procfs::uid(pid) {
            Ok(uid) if uid != opts.uid => {
                problem(owner_message(uid, opts));
                continue;
            }
            Ok(_) => {}
            Err(e) => {
                problem(format!("cannot read its owner: {e}"));
                continue;
            }
        }
        // The environment is needed only to recognise strata's own processes, but a process
        // whose environment we cannot read we could not ptrace either: say so now.
        match procfs::environ(pid) {
            Ok(env) => {
                if let Some(role) = strata_role(&env) {
                    problem(format!("is a strata process ({STRATA_ROLE_VAR}={role})"));
                    continue;
                }
            }
            Err(e) => {
                problem(format!("cannot read its environment: {e}"));
                continue;
            }
        }
        let exe = match procfs::exe(pid) {
            Ok(exe) => exe,
            Err(e) => {
                problem(format!("cannot read its executable: {e}"));
                continue;
            }
        };
        d.tasks.push(Task {
            pid,
            rank: i as u32,
            rank_source: RankSource::Order,
            exe,
            start_time: stat.start_time,
            // Every pid the user named is a rank, found or not: one that is gone is counted
            // (and named as missing), never silently dropped from the job.
            job_size: Some(pids.len() as u32),
        });
    }
    d.problems.sort_by_key(|p| p.pid);
    Found {
        discovery: d,
        hint: String::new(),
    }
}

/// Launcher and Slurm modes: scan `/proc`, keep processes that match and carry a rank, then
/// resolve ranks claimed by several processes.
fn scan(
    selector: &Selector,
    opts: &Options,
    me: Pid,
    launcher: Option<Pid>,
) -> Result<Found, DiscoveryError> {
    let pids = procfs::all_pids().map_err(DiscoveryError::Proc)?;
    // One pass over stat for the process tree (parent links), taken before the environments
    // so that every candidate's ancestry is known.
    let mut parent: HashMap<Pid, Pid> = HashMap::new();
    let mut stats = HashMap::new();
    for &pid in &pids {
        if let Ok(s) = procfs::stat(pid) {
            parent.insert(pid, s.ppid);
            stats.insert(pid, s);
        }
    }
    let mut hint = String::new();
    let in_scope: Box<dyn Fn(Pid) -> bool> = match launcher {
        Some(l) => {
            let Some(ls) = stats.get(&l) else {
                return Err(DiscoveryError::LauncherNotFound(l));
            };
            if ls.comm == "srun" {
                // srun's local tasks are children of slurmstepd, not of srun.
                hint = "srun's tasks run under slurmstepd, not under srun: select them by \
                        Slurm job id instead"
                    .into();
                if let Some(job) = procfs::environ(l)
                    .ok()
                    .and_then(|e| e.get("SLURM_JOB_ID").cloned())
                {
                    hint.push_str(&format!(" (this srun's environment names job {job})"));
                }
            }
            let parent = parent.clone();
            Box::new(move |pid| pid != l && is_ancestor(&parent, l, pid))
        }
        None => Box::new(|_| true),
    };

    let mut d = Discovery::default();
    // Processes that match the selector and carry a rank; several may claim one rank.
    let mut candidates: Vec<Task> = Vec::new();
    let mut without_rank = 0usize;
    let mut other_steps: Vec<u32> = Vec::new();
    let mut unreadable: Vec<(Pid, io::Error)> = Vec::new();
    let mut job_pids: HashSet<Pid> = HashSet::new();
    for &pid in &pids {
        if pid == me || !in_scope(pid) {
            continue;
        }
        let Some(stat) = stats.get(&pid) else {
            continue;
        };
        if stat.state == 'Z' || stat.state == 'X' {
            continue;
        }
        let env = match procfs::environ(pid) {
            Ok(env) => env,
            Err(e) if gone(&e) => continue,
            Err(e) => {
                // Another user's process we may not read: we cannot tell whether it belongs
                // to the job, and we would not inspect it anyway. Our own unreadable
                // process (non-dumpable, setuid, another namespace) may be a rank: decided
                // after the scan, when we know which processes belong to the job.
                if procfs::uid(pid).is_ok_and(|u| u == opts.uid) {
                    unreadable.push((pid, e));
                }
                continue;
            }
        };
        if let Selector::Slurm { job, step } = selector {
            let num = |k: &str| env.get(k).and_then(|v| v.trim().parse::<u32>().ok());
            if num("SLURM_JOB_ID") != Some(*job) {
                continue;
            }
            job_pids.insert(pid);
            if let Some(step) = step
                && num("SLURM_STEP_ID") != Some(*step)
            {
                if let Some(s) = num("SLURM_STEP_ID")
                    && rank_from_env(&env).is_some()
                    && !other_steps.contains(&s)
                {
                    other_steps.push(s);
                }
                continue;
            }
        }
        if strata_role(&env).is_some() {
            continue;
        }
        if opts.own_step.is_some() && step_of(&env) == opts.own_step {
            continue;
        }
        let Some((rank, rank_source)) = rank_from_env(&env) else {
            without_rank += 1;
            continue;
        };
        match procfs::uid(pid) {
            Ok(uid) if uid != opts.uid => {
                d.problems.push(Problem {
                    pid,
                    message: owner_message(uid, opts),
                });
                continue;
            }
            Ok(_) => {}
            Err(e) if gone(&e) => continue,
            Err(e) => {
                d.problems.push(Problem {
                    pid,
                    message: format!("cannot read its owner: {e}"),
                });
                continue;
            }
        }
        // The pid may have been reused between the stat pass and now.
        match procfs::stat(pid) {
            Ok(now) if now.start_time == stat.start_time => {}
            _ => continue,
        }
        let exe = match procfs::exe(pid) {
            Ok(exe) => exe,
            Err(e) if gone(&e) => continue,
            Err(e) => {
                d.problems.push(Problem {
                    pid,
                    message: format!("cannot read its executable: {e}"),
                });
                continue;
            }
        };
        candidates.push(Task {
            pid,
            rank,
            rank_source,
            exe,
            start_time: stat.start_time,
            job_size: job_size_from_env(&env, rank_source),
        });
    }

    // Under a launcher every unreadable descendant may be a rank. In a Slurm scan, reporting
    // every unreadable process of the user (ssh-agent and gpg-agent are non-dumpable) would
    // bury the real problems: report those whose parent belongs to the job (a wrapper, an
    // orted); a rank that is a direct child of slurmstepd cannot be told apart.
    for (pid, e) in unreadable {
        let related =
            launcher.is_some() || parent.get(&pid).is_some_and(|pp| job_pids.contains(pp));
        if related {
            d.problems.push(Problem {
                pid,
                message: format!(
                    "cannot read its environment to tell whether it is a rank of the job: {e}"
                ),
            });
        }
    }

    let (tasks, duplicates) = resolve(candidates, &parent, maps_mpi);
    d.tasks = tasks;
    d.duplicates = duplicates;
    d.problems.sort_by_key(|p| p.pid);

    if hint.is_empty() {
        if !other_steps.is_empty() {
            other_steps.sort_unstable();
            let steps: Vec<String> = other_steps.iter().map(|s| s.to_string()).collect();
            hint = format!("ranks of step(s) {} are here", steps.join(", "));
        } else if without_rank > 0 {
            hint = format!(
                "{without_rank} of its processes carry no rank variable (ranks not started yet? retry)"
            );
        }
    }
    Ok(Found { discovery: d, hint })
}

/// Whether `ancestor` is a proper ancestor of `pid` in the `parent` snapshot.
fn is_ancestor(parent: &HashMap<Pid, Pid>, ancestor: Pid, pid: Pid) -> bool {
    let mut cur = pid;
    // Bounded: a snapshot taken while processes exit and pids get reused could hold a cycle.
    for _ in 0..parent.len() {
        match parent.get(&cur) {
            Some(&p) if p == ancestor => return true,
            Some(&p) if p > 0 && p != cur => cur = p,
            _ => return false,
        }
    }
    false
}

/// One task per rank, from candidates that may claim the same rank.
///
/// 1. A candidate with a candidate descendant whose rank comes from another variable is a
///    launch daemon, not a rank: orted/prted started by srun carry `SLURM_PROCID` (and
///    `PMIX_RANK` under `--mpi=pmix`) numbering nodes, while the ranks they start carry
///    `OMPI_COMM_WORLD_RANK`. Wrappers of a rank carry the same variables as the rank.
/// 2. Per rank: if some candidates map an MPI library, the one that is an ancestor of the
///    other mappers wins (the others are children it forked, which map MPI until they exec).
///    Else the one that descends from all the others wins (the others are wrappers such as
///    `sh run.sh` or `numactl` that forked rather than exec'd).
/// 3. Anything else is an unresolved duplicate.
fn resolve(
    candidates: Vec<Task>,
    parent: &HashMap<Pid, Pid>,
    maps_mpi: impl Fn(Pid) -> bool,
) -> (Vec<Task>, Vec<Duplicate>) {
    let by_pid: HashMap<Pid, RankSource> =
        candidates.iter().map(|c| (c.pid, c.rank_source)).collect();
    let mut launch_daemons: HashSet<Pid> = HashSet::new();
    for c in &candidates {
        let mut cur = c.pid;
        for _ in 0..parent.len() {
            let Some(&p) = parent.get(&cur) else { break };
            if p <= 0 || p == cur {
                break;
            }
            if let Some(&src) = by_pid.get(&p)
                && src != c.rank_source
            {
                launch_daemons.insert(p);
            }
            cur = p;
        }
    }

    let mut by_rank: BTreeMap<u32, Vec<Task>> = BTreeMap::new();
    for c in candidates {
        if !launch_daemons.contains(&c.pid) {
            by_rank.entry(c.rank).or_default().push(c);
        }
    }
    let mut tasks = Vec::new();
    let mut duplicates = Vec::new();
    for (rank, mut group) in by_rank {
        if group.len() == 1 {
            tasks.extend(group);
            continue;
        }
        group.sort_by_key(|t| t.pid);
        let mappers: Vec<&Task> = group.iter().filter(|t| maps_mpi(t.pid)).collect();
        let chosen = if mappers.is_empty() {
            group.iter().find(|t| {
                group
                    .iter()
                    .all(|o| o.pid == t.pid || is_ancestor(parent, o.pid, t.pid))
            })
        } else {
            mappers
                .iter()
                .find(|t| {
                    mappers
                        .iter()
                        .all(|o| o.pid == t.pid || is_ancestor(parent, t.pid, o.pid))
                })
                .copied()
        };
        match chosen {
            Some(t) => tasks.push(t.clone()),
            None => duplicates.push(Duplicate {
                rank,
                pids: group.iter().map(|t| t.pid).collect(),
            }),
        }
    }
    (tasks, duplicates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn mpi_library_names() {
        for yes in [
            "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.5",
            "/opt/ompi/lib/libmpi_mpifh.so.40",
            "/opt/cray/lib/libmpi_cray.so.12",
            "/usr/lib/libmpich.so.12",
            "/opt/intel/lib/libmpifort.so.12",
        ] {
            assert!(is_mpi_library(yes), "{yes}");
        }
        for no in [
            "/usr/lib/libopen-pal.so.40",
            "/usr/lib/libpmix.so.2",
            "/usr/lib/libmpfr.so.6",
            "/usr/lib/libmpix.so.1",
            "/usr/lib/libmpi.a",
            "[heap]",
            "",
        ] {
            assert!(!is_mpi_library(no), "{no}");
        }
    }

    #[test]
    fn sizes_follow_the_rank_source() {
        // mpirun inside sbatch: SLURM_NTASKS counts batch tasks, not ranks.
        let e = env(&[
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("SLURM_NTASKS", "2"),
            ("SLURM_STEP_ID", "0"),
        ]);
        assert_eq!(rank_from_env(&e), Some((1, RankSource::OmpiCommWorldRank)));
        assert_eq!(job_size_from_env(&e, RankSource::OmpiCommWorldRank), None);
        let e = env(&[
            ("PMIX_RANK", "3"),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_NTASKS", "8"),
        ]);
        assert_eq!(job_size_from_env(&e, RankSource::PmixRank), Some(8));
        assert_eq!(rank_from_env(&env(&[("PMIX_RANK", "x")])), None);
    }
}
