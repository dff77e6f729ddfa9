//! The MPI jobs of this user on this host, for `strata attach` without a target: a user at
//! a hung job's terminal types `strata attach` and gets it when it is the only one.
//!
//! A rank is a process of this user with an MPI rank in its environment
//! ([`rank_from_env`]); its job is its outermost ancestor that is an MPI launcher
//! ([`is_known_launcher`]: `mpirun`, `prterun`, `mpiexec`, ...), which `--launcher-pid`
//! then takes. Ranks with no launcher above them (a Slurm step, whose ranks hang under
//! `slurmstepd`, is attached by its job id) are left out.

use std::collections::BTreeMap;
use strata_daemon::discovery::{is_known_launcher, rank_from_env};
use strata_daemon::procfs::{self, Pid};

/// One MPI job on this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalJob {
    pub launcher: Pid,
    /// The launcher's command line, as `ps` shows it.
    pub command: String,
    pub ranks: usize,
}

/// The launchers a Slurm step's ranks hang under: not a job a user starts on this host.
const NOT_A_JOB: [&str; 2] = ["slurmstepd", "srun"];

/// Ancestors are followed this far (a deeper chain is a loop of reused pids).
const MAX_DEPTH: usize = 64;

/// The MPI jobs of the user `uid` on this host, by launcher pid.
pub fn local_jobs(uid: u32) -> Vec<LocalJob> {
    let mut ranks_of: BTreeMap<Pid, usize> = BTreeMap::new();
    for pid in procfs::all_pids().unwrap_or_default() {
        if procfs::uid(pid).ok() != Some(uid) {
            continue;
        }
        let Ok(env) = procfs::environ(pid) else {
            continue;
        };
        if rank_from_env(&env).is_none() {
            continue;
        }
        if let Some(launcher) = outermost_launcher(pid) {
            *ranks_of.entry(launcher).or_default() += 1;
        }
    }
    ranks_of
        .into_iter()
        .map(|(launcher, ranks)| LocalJob {
            launcher,
            command: command_line(launcher),
            ranks,
        })
        .collect()
}

fn outermost_launcher(pid: Pid) -> Option<Pid> {
    let mut found = None;
    let mut at = procfs::stat(pid).ok()?.ppid;
    for _ in 0..MAX_DEPTH {
        if at <= 1 {
            break;
        }
        let Ok(stat) = procfs::stat(at) else { break };
        if is_known_launcher(&stat.comm) {
            found = Some((at, stat.comm.clone()));
        }
        at = stat.ppid;
    }
    found
        .filter(|(_, comm)| !NOT_A_JOB.contains(&comm.as_str()))
        .map(|(pid, _)| pid)
}

fn command_line(pid: Pid) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|bytes| {
            bytes
                .split(|&b| b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}
