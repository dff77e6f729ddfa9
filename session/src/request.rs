//! What an attach asks for: the typed request that `strata attach`, its live mode, `strata
//! demo` and `strata watch` each build from their own options.

use std::path::PathBuf;

use strata_proto::sampling::Sampling;
use strata_result::variables::VariableSpec;

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

impl JobTarget {
    /// The target a command line names: a job id (with its `--step`), else a launcher, else
    /// the pids. The command line allows only one of the three; a job id wins regardless.
    pub fn chosen(
        job: Option<String>,
        step: Option<u32>,
        launcher_pid: Option<i32>,
        pids: Vec<i32>,
    ) -> JobTarget {
        match (job, launcher_pid) {
            (Some(id), _) => JobTarget::Job { id, step },
            (None, Some(pid)) => JobTarget::Launcher(pid),
            (None, None) => JobTarget::Pids(pids),
        }
    }
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
    /// The persistent cache of debug indexes the daemons read and fill (`None`: none, each
    /// daemon indexes what it needs afresh).
    pub debug_cache: Option<PathBuf>,
    /// The cache is on a file system the nodes share (see `IndexCache::shared`).
    pub debug_cache_shared: bool,
    /// Ranks whose full stacks come back with the last sample (`--rank`).
    pub stacks_of: Vec<u32>,
    /// Variables read in every rank after sampling (`--var`).
    pub variables: Vec<VariableSpec>,
    /// Also read the loop-order variables the progress order needs (`--progress`).
    pub loop_variables: bool,
    /// Where the job's sources live, for the loop-order variables.
    pub source_dirs: Vec<PathBuf>,
    /// Take the ranks below a launcher pid whatever program it runs (`--any-launcher`):
    /// else it must be a known MPI launcher, so that `--launcher-pid 1` does not sample
    /// every MPI rank on the machine.
    pub any_launcher: bool,
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
            debug_cache: strata_daemon::debug_index::IndexCache::default_dir(),
            debug_cache_shared: false,
            stacks_of: Vec::new(),
            variables: Vec::new(),
            loop_variables: false,
            source_dirs: Vec::new(),
            any_launcher: false,
        }
    }

    /// The launcher's pid, when the target is a launcher.
    pub fn launcher_pid(&self) -> Option<i32> {
        match self.target {
            JobTarget::Launcher(pid) => Some(pid),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_id_wins_then_a_launcher_then_the_pids() {
        let job = Some("4711.0".to_string());
        assert_eq!(
            JobTarget::chosen(job, Some(2), Some(9), vec![1]),
            JobTarget::Job {
                id: "4711.0".into(),
                step: Some(2)
            }
        );
        assert_eq!(
            JobTarget::chosen(None, None, Some(9), vec![1]),
            JobTarget::Launcher(9)
        );
        assert_eq!(
            JobTarget::chosen(None, None, None, vec![1, 2]),
            JobTarget::Pids(vec![1, 2])
        );
    }
}
