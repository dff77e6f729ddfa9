//! The Slurm back end (`--rm slurm`, chosen automatically for a job id when `squeue`
//! answers): look a job up, choose its step, and start every daemon in one bulk launch,
//! `srun --jobid=J --overlap --mpi=none -N<nodes> --ntasks-per-node=1 strata daemon ...`.
//!
//! Each daemon runs in a step of the job on its node and reads its index from
//! `SLURM_NODEID`, so all of them share one command line. Commnodes run on the front-end
//! host (the local launcher). The session key travels in the launch's environment
//! (`srun` forwards it to the daemons; it never appears on a command line). Slurm reports
//! errors in prose on stderr and exit code 1: the messages below are what Slurm 22.05
//! prints (see `tests/slurm/`), mapped onto strata's exit codes by the front end.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::local::LocalLauncher;
use crate::{CommnodeSpec, DaemonSpec, LaunchError, Launcher, LostEnder};

/// A job as `squeue` describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlurmJob {
    pub id: u32,
    /// `RUNNING`, `PENDING`, `COMPLETED`, ...
    pub state: String,
    pub user: String,
    pub uid: u32,
    pub nodes: u32,
    /// Compressed host list, `n[1-4]`.
    pub node_list: String,
    /// Where the batch script runs (ranks of an `mpirun` there carry no step id).
    pub batch_host: String,
    /// Why it pends, when it does.
    pub reason: String,
    /// Its steps (not `batch` or `extern`): id and task count.
    pub steps: Vec<(u32, u32)>,
}

/// Why a job cannot be attached to.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlurmError {
    #[error(
        "no Slurm cluster answers here ({0}): run strata on a node of the cluster (where \
         squeue works), or attach with --launcher-pid or --pids on the node of the ranks"
    )]
    NotConfigured(String),
    #[error("Slurm job {0} does not exist (or ended long ago): check the id with squeue")]
    NotFound(u32),
    #[error("Slurm job {0} has ended ({1}): there is nothing left to attach to")]
    Finished(u32, String),
    #[error("Slurm job {0} is still pending ({1}): its ranks have not started yet")]
    Pending(u32, String),
    #[error("Slurm job {job} belongs to {user} (uid {uid}): strata attaches only to your own jobs")]
    OtherUser { job: u32, user: String, uid: u32 },
    #[error("Slurm job {job} has no step {step} (its steps: {steps})")]
    NoSuchStep { job: u32, step: u32, steps: String },
    #[error("squeue: {0}")]
    Failed(String),
}

/// How long a Slurm client command may take: without a reachable configuration they retry
/// for a minute before failing.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(8);

/// A Slurm client command (`squeue`, `scancel`) that failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// It could not be started or waited for.
    #[error("{program}: {source}")]
    Run {
        program: String,
        source: std::io::Error,
    },
    #[error("{program} did not answer within {secs} s")]
    Timeout { program: String, secs: u64 },
    /// It failed: its first stderr line.
    #[error("{0}")]
    Failed(String),
}

/// Runs a Slurm client command; `Err` carries its first stderr line.
fn slurm_command(program: &str, args: &[&str]) -> Result<String, ClientError> {
    let run = |source| ClientError::Run {
        program: program.to_string(),
        source,
    };
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(run)?;
    // Read both pipes on threads so a chatty command cannot block on a full pipe.
    let out_pipe = child.stdout.take().expect("piped");
    let err_pipe = child.stderr.take().expect("piped");
    let read_all = |mut pipe: Box<dyn std::io::Read + Send>| {
        crate::priority::spawn_raised("strata-slurm-client", move || {
            let mut s = String::new();
            let _ = pipe.read_to_string(&mut s);
            s
        })
    };
    let run_err = |source| ClientError::Run {
        program: program.to_string(),
        source,
    };
    let out_reader = read_all(Box::new(out_pipe)).map_err(run_err)?;
    let err_reader = read_all(Box::new(err_pipe)).map_err(run_err)?;
    let end = Instant::now() + CLIENT_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= end => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ClientError::Timeout {
                    program: program.to_string(),
                    secs: CLIENT_TIMEOUT.as_secs(),
                });
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(run(e)),
        }
    };
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    if status.success() {
        Ok(out)
    } else {
        Err(ClientError::Failed(
            err.lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed without a message")
                .trim()
                .to_string(),
        ))
    }
}

/// Whether a Slurm controller answers here (for choosing the resource manager of a job id).
pub fn available() -> bool {
    slurm_command("squeue", &["-h", "-j", "0", "-o", "%i"])
        .map_or_else(|e| e.to_string().contains("Invalid job id"), |_| true)
}

/// Cancels job `id` (`scancel`), as `strata watch --on-hang cancel` does after its report.
pub fn cancel(id: u32) -> Result<(), ClientError> {
    slurm_command("scancel", &[&id.to_string()]).map(|_| ())
}

/// Looks job `id` up and checks that `uid` may attach to it.
pub fn lookup(id: u32, uid: u32) -> Result<SlurmJob, SlurmError> {
    let job = id.to_string();
    let line = slurm_command(
        "squeue",
        &[
            "-h",
            "-t",
            "all",
            "-j",
            &job,
            "-o",
            "%i|%T|%u|%U|%D|%N|%B|%r",
        ],
    )
    .map_err(|e| classify(id, e))?;
    let line = line.lines().next().unwrap_or("").trim().to_string();
    let f: Vec<&str> = line.split('|').collect();
    if f.len() < 8 {
        // squeue forgets finished jobs after MinJobAge, answering with nothing.
        return Err(SlurmError::NotFound(id));
    }
    let mut j = SlurmJob {
        id,
        state: f[1].to_string(),
        user: f[2].to_string(),
        uid: f[3].parse().unwrap_or(u32::MAX),
        nodes: f[4].parse().unwrap_or(0),
        node_list: f[5].to_string(),
        batch_host: f[6].to_string(),
        reason: f[7].to_string(),
        steps: Vec::new(),
    };
    if j.uid != uid {
        return Err(SlurmError::OtherUser {
            job: id,
            user: j.user.clone(),
            uid: j.uid,
        });
    }
    match j.state.as_str() {
        "RUNNING" | "SUSPENDED" | "COMPLETING" | "STOPPED" => {}
        "PENDING" | "CONFIGURING" | "REQUEUED" | "RESIZING" => {
            return Err(SlurmError::Pending(id, j.reason.clone()));
        }
        other => return Err(SlurmError::Finished(id, other.to_string())),
    }
    let steps = slurm_command("squeue", &["-h", "-s", "-j", &job, "-o", "%i|%A"])
        .map_err(|e| classify(id, e))?;
    j.steps = parse_steps(&steps, id);
    Ok(j)
}

fn classify(id: u32, e: ClientError) -> SlurmError {
    let stderr = e.to_string();
    if stderr.contains("Invalid job id") {
        SlurmError::NotFound(id)
    } else if stderr.contains("No such file")
        || stderr.contains("did not answer")
        || stderr.contains("cannot stat")
        || stderr.contains("Unable to contact")
        || stderr.contains("configuration")
        || stderr.contains("Could not")
    {
        SlurmError::NotConfigured(stderr)
    } else {
        SlurmError::Failed(stderr)
    }
}

/// `J.S|tasks` lines: the numbered steps of job `id`.
fn parse_steps(text: &str, id: u32) -> Vec<(u32, u32)> {
    let prefix = format!("{id}.");
    text.lines()
        .filter_map(|l| {
            let (step, tasks) = l.trim().split_once('|')?;
            let s = step.strip_prefix(&prefix)?.parse().ok()?;
            Some((s, tasks.trim().parse().unwrap_or(0)))
        })
        .collect()
}

impl SlurmJob {
    /// The step to sample: `wanted` if it exists; else none at all (every rank of the job)
    /// when it has at most one step, which also keeps the ranks of an `mpirun` on the batch
    /// host (they carry no step id); else the step with the most tasks.
    pub fn choose_step(&self, wanted: Option<u32>) -> Result<Option<u32>, SlurmError> {
        let list = || {
            if self.steps.is_empty() {
                "none".to_string()
            } else {
                self.steps
                    .iter()
                    .map(|(s, n)| format!("{s} ({n} tasks)"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        match wanted {
            Some(s) if self.steps.iter().any(|(t, _)| *t == s) => Ok(Some(s)),
            Some(s) => Err(SlurmError::NoSuchStep {
                job: self.id,
                step: s,
                steps: list(),
            }),
            None if self.steps.len() <= 1 => Ok(None),
            None => Ok(self
                .steps
                .iter()
                .max_by_key(|(s, n)| (*n, std::cmp::Reverse(*s)))
                .map(|(s, _)| *s)),
        }
    }

    /// A one-line description of the steps, for the user.
    pub fn describe_steps(&self) -> String {
        self.steps
            .iter()
            .map(|(s, n)| format!("{}.{s} ({n} tasks)", self.id))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Starts commnodes on this host and the daemons in the job's allocation.
#[derive(Debug)]
pub struct SlurmLauncher {
    job: SlurmJob,
    /// Commnodes run inside the allocation (one srun per level), not on this host.
    commnodes_in_job: bool,
    /// The sruns of the commnode levels.
    levels: Vec<Child>,
    exe: PathBuf,
    key_hex: String,
    listen_host: String,
    local: LocalLauncher,
    srun: Option<Child>,
}

impl SlurmLauncher {
    /// `listen_host`: this host's address as the job's nodes reach it.
    pub fn new(
        job: SlurmJob,
        exe: PathBuf,
        key_hex: String,
        listen_host: String,
        commnodes_in_job: bool,
    ) -> Self {
        SlurmLauncher {
            local: LocalLauncher::new(exe.clone(), key_hex.clone()),
            job,
            commnodes_in_job,
            levels: Vec::new(),
            exe,
            key_hex,
            listen_host,
            srun: None,
        }
    }

    /// Waits up to `grace` for the daemons' step to end (they exit after the shutdown),
    /// then ends it: srun killed takes its step's processes with it, on every node.
    fn reap_all(&mut self, grace: Duration) {
        let mut sruns: Vec<Child> = self.srun.take().into_iter().collect();
        sruns.append(&mut self.levels);
        crate::reap_children(&mut sruns, grace);
        self.local.reap(grace);
    }
}

impl Drop for SlurmLauncher {
    fn drop(&mut self) {
        self.reap_all(Duration::from_secs(3));
    }
}

impl Launcher for SlurmLauncher {
    fn name(&self) -> &'static str {
        "slurm"
    }

    fn reap(&mut self, grace: Duration) {
        self.reap_all(grace);
    }

    fn listen_host(&self) -> String {
        self.listen_host.clone()
    }

    fn lost_ender(&self) -> LostEnder {
        let local = self.local.lost_ender();
        let job = self.job.id;
        let commnodes_in_job = self.commnodes_in_job;
        std::sync::Arc::new(move |lost| {
            use strata_proto::overlay::Role;
            let daemon = lost.role == Role::Daemon as i32;
            if !daemon && !commnodes_in_job {
                return local(lost);
            }
            // Another step on the lost process's node kills it by its pid there (the pid its
            // hello gave, in the node's own pid space). A daemon's node is the one at its
            // index in the allocation (each daemon's index is its SLURM_NODEID); a commnode
            // is found by its host name.
            let mut srun = Command::new("srun");
            srun.arg(format!("--jobid={job}"))
                .args(["--overlap", "--mpi=none", "--quiet", "-N1", "-n1"])
                .arg("--job-name=strata-end-lost");
            let place = if daemon {
                srun.arg(format!("--relative={}", lost.index));
                format!("node {} of job {job}", lost.index)
            } else {
                srun.arg(format!("--nodelist={}", lost.host));
                format!("{} in job {job}", lost.host)
            };
            let mut child = srun
                .args(["kill", "-KILL", &lost.pid.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot run srun to kill it: {e}"))?;
            // Waited for elsewhere: this runs on the thread of the link that noticed.
            let _ = crate::priority::spawn_raised("strata-end-lost", move || {
                let end = Instant::now() + Duration::from_secs(30);
                while Instant::now() < end && matches!(child.try_wait(), Ok(None)) {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let _ = child.kill();
                let _ = child.wait();
            });
            Ok(format!("asked Slurm to kill pid {} on {place}", lost.pid))
        })
    }

    fn start_commnodes(&mut self, specs: &[CommnodeSpec]) -> Result<Vec<SocketAddr>, LaunchError> {
        if !self.commnodes_in_job {
            return self.local.start_commnodes(specs);
        }
        // One launch for the level: every task gets every commnode's arguments and takes
        // its own by SLURM_PROCID; each listens on its node's address.
        let n = specs.len() as u32;
        let mut srun = Command::new("srun");
        srun.arg(format!("--jobid={}", self.job.id))
            .args([
                "--overlap",
                "--mpi=none",
                "--kill-on-bad-exit=0",
                "--quiet",
                "--label",
            ])
            .arg(format!("--ntasks={n}"))
            .arg(format!("--nodes={}", n.min(self.job.nodes).max(1)))
            .arg("--job-name=strata-commnodes")
            .arg(&self.exe)
            .arg("commnode");
        for s in specs {
            let mut one = s.clone();
            one.listen_host = "auto".into();
            srun.arg("--in-job").arg(one.args().join(" "));
        }
        let what = || format!("the commnodes with srun in job {}", self.job.id);
        let mut child = srun
            .env(crate::KEY_ENV, &self.key_hex)
            .env(crate::ROLE_ENV, "commnode")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| LaunchError::Spawn {
                what: what(),
                reason: e.to_string(),
            })?;
        let stdout = child.stdout.take().expect("piped");
        self.levels.push(child);
        // `K: listening ADDR`, one line per task, in any order.
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = crate::priority::spawn_raised("strata-commnode-addrs", move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        reader.map_err(|e| LaunchError::Spawn {
            what: what(),
            reason: format!("cannot start a thread: {e}"),
        })?;
        let mut addrs: Vec<Option<SocketAddr>> = vec![None; specs.len()];
        let end = Instant::now() + Duration::from_secs(30);
        while addrs.iter().any(Option::is_none) {
            let left = end.saturating_duration_since(Instant::now());
            let line = rx.recv_timeout(left).map_err(|_| LaunchError::Spawn {
                what: what(),
                reason: "not every commnode said where it listens within 30 s".into(),
            })?;
            let Some((task, rest)) = line.split_once(':') else {
                continue;
            };
            let (Ok(task), Some(addr)) = (
                task.trim().parse::<usize>(),
                rest.trim().strip_prefix("listening "),
            ) else {
                continue;
            };
            if let (Some(slot), Ok(a)) = (addrs.get_mut(task), addr.parse()) {
                *slot = Some(a);
            }
        }
        Ok(addrs.into_iter().map(|a| a.expect("all set")).collect())
    }

    fn start_daemons(&mut self, spec: &DaemonSpec) -> Result<(), LaunchError> {
        let mut args = spec.args(0);
        // Every daemon gets the same line; each reads its index from SLURM_NODEID.
        let at = args.iter().position(|a| a == "--index").expect("--index");
        args.drain(at..at + 2);
        let srun = Command::new("srun")
            .arg(format!("--jobid={}", self.job.id))
            .args(["--overlap", "--mpi=none", "--kill-on-bad-exit=0", "--quiet"])
            .arg(format!("--nodes={}", spec.daemons))
            .args(["--ntasks-per-node=1", "--job-name=strata-daemons"])
            .arg(&self.exe)
            .arg("daemon")
            .args(&args)
            .env(crate::KEY_ENV, &self.key_hex)
            .env(crate::ROLE_ENV, "daemon")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| LaunchError::Spawn {
                what: format!("the daemons with srun in job {}", self.job.id),
                reason: e.to_string(),
            })?;
        self.srun = Some(srun);
        Ok(())
    }
}

/// This host's address as other hosts reach it: its name resolved (the first non-loopback
/// IPv4 address, else the first address), or `STRATA_LISTEN_HOST` when set (on the front
/// end; a commnode in the job resolves its own node's name).
pub fn this_host_address() -> String {
    if let Ok(h) = std::env::var("STRATA_LISTEN_HOST")
        && !h.trim().is_empty()
    {
        return h.trim().to_string();
    }
    let name = strata_proto::link::hostname();
    use std::net::ToSocketAddrs;
    let addrs: Vec<SocketAddr> = (name.as_str(), 0)
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default();
    if let Some(a) = addrs.iter().find(|a| a.is_ipv4() && !a.ip().is_loopback()) {
        return a.ip().to_string();
    }
    // Debian maps the host name to 127.0.1.1: then the first IPv4 address of an interface
    // that is up and not loopback, which other hosts can reach.
    if let Some(a) = interface_address() {
        return a;
    }
    addrs
        .first()
        .map_or_else(|| "127.0.0.1".to_string(), |a| a.ip().to_string())
}

fn interface_address() -> Option<String> {
    use nix::net::if_::InterfaceFlags;
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifa| {
        let up = ifa.flags.contains(InterfaceFlags::IFF_UP)
            && !ifa.flags.contains(InterfaceFlags::IFF_LOOPBACK);
        let ip = ifa.address?.as_sockaddr_in()?.ip();
        (up && !ip.is_loopback()).then(|| ip.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(steps: Vec<(u32, u32)>) -> SlurmJob {
        SlurmJob {
            id: 7,
            state: "RUNNING".into(),
            user: "u".into(),
            uid: 1,
            nodes: 4,
            node_list: "n[1-4]".into(),
            batch_host: "n1".into(),
            reason: "None".into(),
            steps,
        }
    }

    #[test]
    fn steps_are_parsed_without_batch_and_extern() {
        let text = "7.0|8\n7.batch|1\n7.extern|4\n7.12|2\n";
        assert_eq!(parse_steps(text, 7), [(0, 8), (12, 2)]);
    }

    #[test]
    fn the_step_with_most_tasks_unless_one_is_named() {
        assert_eq!(job(vec![]).choose_step(None), Ok(None));
        assert_eq!(job(vec![(0, 4)]).choose_step(None), Ok(None));
        assert_eq!(job(vec![(0, 2), (1, 8)]).choose_step(None), Ok(Some(1)));
        assert_eq!(job(vec![(0, 8), (1, 8)]).choose_step(None), Ok(Some(0)));
        assert_eq!(job(vec![(0, 2), (1, 8)]).choose_step(Some(0)), Ok(Some(0)));
        assert!(matches!(
            job(vec![(0, 2)]).choose_step(Some(5)),
            Err(SlurmError::NoSuchStep { step: 5, .. })
        ));
    }

    #[test]
    fn slurm_errors_are_classified() {
        assert_eq!(
            classify(
                3,
                ClientError::Failed("slurm_load_jobs error: Invalid job id specified".into())
            ),
            SlurmError::NotFound(3)
        );
        assert!(matches!(
            classify(
                3,
                ClientError::Failed("squeue: No such file or directory".into())
            ),
            SlurmError::NotConfigured(_)
        ));
    }
}
