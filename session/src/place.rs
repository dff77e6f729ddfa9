//! Where a job runs: the request checked against itself, and a job id looked up with its
//! resource manager; the job as the result names it.

use strata_launcher::slurm::{self, SlurmJob};
use strata_proto::overlay::SetupReply;
use strata_result::JobInfo;

use crate::error::AttachError;
use crate::request::{AttachRequest, JobTarget, ResourceManager};

/// The job as the result file names it.
pub fn job_info(
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
#[derive(Debug)]
pub enum Place {
    /// On this host (`--pids`, `--launcher-pid`).
    Local,
    /// A Slurm job; `step` as chosen (`None`: every step).
    Slurm { job: SlurmJob, step: Option<u32> },
}

/// Checks the request's settings against each other and looks a job id up.
pub fn where_to_attach(req: &AttachRequest) -> Result<Place, AttachError> {
    let bad = |m: &str| Err(AttachError::Usage(m.to_string()));
    req.sampling.validate()?;
    let JobTarget::Job {
        id: text,
        step: step_option,
    } = &req.target
    else {
        if req.rm == Some(ResourceManager::Slurm) {
            return bad("--rm slurm needs a job id: strata attach JOBID");
        }
        // Only the invoking user's processes (real uid), root included: another user's
        // launcher has no rank strata may take.
        if let JobTarget::Launcher(pid) = req.target
            && let Ok(owner) = strata_daemon::procfs::uid(pid)
            && owner != nix::unistd::getuid().as_raw()
        {
            return Err(AttachError::PermissionDenied(format!(
                "launcher pid {pid} belongs to uid {owner}, not to you (uid {}): strata \
                 inspects only your own processes; run strata as its owner",
                nix::unistd::getuid()
            )));
        }
        if let JobTarget::Launcher(pid) = req.target
            && !req.any_launcher
            && let Ok(stat) = strata_daemon::procfs::stat(pid)
            && !strata_daemon::discovery::is_known_launcher(&stat.comm)
        {
            // A launcher that does not exist is the daemon's finding (it names it).
            return Err(AttachError::Usage(format!(
                "pid {pid} ({}) is not a known MPI launcher ({}): give the launcher's pid, or \
                 add --any-launcher to take the ranks below any process",
                stat.comm,
                strata_daemon::discovery::KNOWN_LAUNCHERS.join(", ")
            )));
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
        AttachError::Usage(format!("'{text}' is not a job id (a number, or JOB.STEP)"))
    })?;
    let step_in_id = match step_in_id {
        Some(s) => Some(
            s.trim()
                .parse::<u32>()
                .map_err(|_| AttachError::Usage(format!("'{text}': the step is not a number")))?,
        ),
        None => None,
    };
    if step_in_id.is_some() && step_option.is_some() && step_in_id != *step_option {
        return bad("the job id names one step and --step another");
    }
    if req.rm.is_none() && !slurm::available() {
        return Err(AttachError::NotFound(format!(
            "job {id}: no resource manager answers here (squeue does not work): run \
                 strata where Slurm's commands work, or attach with --launcher-pid or --pids"
        )));
    }
    let job = slurm::lookup(id, nix::unistd::getuid().as_raw())?;
    let step = job.choose_step(step_in_id.or(*step_option))?;
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

/// `mpirun-1234` for a launcher, `ring-5678` (executable, first pid) for pids.
pub fn job_id(req: &AttachRequest, rank_map: &SetupReply) -> String {
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
