//! The test Slurm cluster (`tests/slurm/up.sh`: slurmctld and 4 slurmd, each node in its own
//! UTS+PID+mount namespace with hostnames n1..n4) and hung jobs on it. The cluster is
//! brought up once per test binary if it is not up already; `tests/run-all.sh` takes it
//! down at the end.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

pub const SLURM_CONF: &str = "/tmp/strata-slurm/cluster/etc/slurm.conf";

/// Brings the cluster up (idempotent) and returns a guard that serializes the tests that
/// use it: hung ranks spin, and two 8-rank jobs are all two cores can take.
pub fn cluster() -> MutexGuard<'static, ()> {
    static UP: OnceLock<()> = OnceLock::new();
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    UP.get_or_init(|| {
        assert!(
            nix::unistd::geteuid().is_root(),
            "the Slurm tests start a test cluster and must run as root (tests/run-all.sh)"
        );
        let script = crate::support::repo_root().join("tests/slurm/up.sh");
        let out = Command::new("bash")
            .arg(&script)
            .output()
            .expect("bash runs tests/slurm/up.sh");
        assert!(
            out.status.success(),
            "tests/slurm/up.sh failed (apt-get install slurm-wlm munge libpmix-dev; \
             tests/run-all.sh installs them):\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// A Slurm client command against the test cluster.
pub fn slurm(program: &str) -> Command {
    let mut c = Command::new(program);
    c.env("SLURM_CONF", SLURM_CONF);
    c
}

/// `program args...` against the test cluster; its stdout, trimmed. Panics on failure.
pub fn slurm_out(program: &str, args: &[&str]) -> String {
    let out = slurm(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A hung job on the cluster, cancelled on drop.
pub struct SlurmJob {
    pub id: u32,
    /// Per rank, the host it runs on (from the ring's output).
    pub hosts: Vec<String>,
    _dir: tempfile::TempDir,
}

impl Drop for SlurmJob {
    fn drop(&mut self) {
        let _ = slurm("scancel").arg(self.id.to_string()).status();
        // Wait until its processes are gone, so the next test has the cores.
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            let out = slurm("squeue")
                .args(["-h", "-j", &self.id.to_string(), "-o", "%T"])
                .output();
            if out.is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim().is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The ring, built once, in a directory every node (and user) can read.
fn ring_binary() -> PathBuf {
    mpi_binary("mpi_ring.c", "mpi_ring")
}

/// An MPI fixture compiled once per test process with mpicc, copied to a directory every
/// node (and user) can read.
pub fn mpi_binary(source: &str, name: &str) -> PathBuf {
    static BUILT: Mutex<Vec<(String, PathBuf)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let exe = crate::target::compile_with("mpicc", source, name, &["-O1", "-g"]);
    let dir = Path::new("/tmp/strata-slurm/bin");
    std::fs::create_dir_all(dir).unwrap();
    let dst = dir.join(name);
    // Not through this process's own descriptor: a node's exec of the binary would fail
    // with "Text file busy" (a rank missing from the job; see `copy_executable`).
    crate::support::copy_executable(&exe, &dst);
    built.push((name.to_string(), dst.clone()));
    dst
}

/// What a rank prints on its error output when it crashes (Open MPI's signal handler).
const RANK_CRASHED: &str = "*** Process received signal ***";

/// Waits for `ranks` lines `rank R/N pid P host H` in `out`; returns the hosts by rank.
/// A job that does not start within a minute, or whose rank crashes while starting, is an
/// error that says what the launcher said on its error output (`err`, beside `out`).
fn wait_for_ranks(out: &Path, ranks: usize, what: &str) -> Result<Vec<String>, String> {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(out).unwrap_or_default();
        let mut hosts = vec![String::new(); ranks];
        let mut seen = 0;
        for l in text.lines() {
            let w: Vec<&str> = l.split_whitespace().collect();
            if w.len() >= 6 && w[0] == "rank" && w[2] == "pid" && w[4] == "host" {
                let r: usize = w[1].split('/').next().unwrap().parse().unwrap();
                if r < ranks && hosts[r].is_empty() {
                    hosts[r] = w[5].to_string();
                    seen += 1;
                }
            }
        }
        if seen == ranks {
            // Let the ranks reach their waits.
            std::thread::sleep(Duration::from_millis(500));
            return Ok(hosts);
        }
        let err = std::fs::read_to_string(out.with_extension("err")).unwrap_or_default();
        if Instant::now() >= end || err.contains(RANK_CRASHED) {
            return Err(format!(
                "{what} did not start:\n{text}\nits error output:\n{err}"
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn job_named(name: &str) -> u32 {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let id = slurm_out("squeue", &["-h", "-n", name, "-o", "%i"]);
        if let Ok(id) = id.lines().next().unwrap_or("").parse() {
            return id;
        }
        assert!(Instant::now() < end, "no job named {name}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn unique_name(kind: &str) -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    format!(
        "strata-{kind}-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    )
}

/// The hung 8-rank ring across the 4 nodes, launched by `srun --mpi=pmix`.
pub fn srun_ring() -> SlurmJob {
    srun_job(&ring_binary(), &[], "srun")
}

/// `program ARGS` as 8 ranks across the 4 nodes (`srun --mpi=pmix`); returns once every
/// rank has printed its `rank R/N pid P host H` line.
///
/// Open MPI 4.1's ranks under Slurm's PMIx now and then crash in start-up (rank 0, a null
/// pointer, before its first line: seen twice in some hundred jobs), which has nothing to
/// do with what the tests test: such a job is cancelled and started once more, saying so.
pub fn srun_job(program: &Path, args: &[&str], kind: &str) -> SlurmJob {
    for attempt in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("job.out");
        let name = unique_name(kind);
        // setsid: srun in a session of its own, out of the test's process group. It is
        // not waited on here: it ends when the job ends or is cancelled (SlurmJob's drop),
        // and the child handle is reaped by a thread.
        let mut srun = slurm("setsid")
            .args(["srun", "-N4", "-n8", "--mpi=pmix", "-J", &name])
            .arg(program)
            .args(args)
            .env("OMPI_MCA_mpi_yield_when_idle", "1")
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(out.with_extension("err")).unwrap())
            .spawn()
            .expect("srun (slurm-client)");
        std::thread::spawn(move || srun.wait());
        let id = job_named(&name);
        match wait_for_ranks(&out, 8, &format!("the {kind} job")) {
            Ok(hosts) => {
                return SlurmJob {
                    id,
                    hosts,
                    _dir: dir,
                };
            }
            Err(why) if attempt == 1 && why.contains(RANK_CRASHED) => {
                eprintln!("a rank crashed while the job started; starting it again:\n{why}");
                drop(SlurmJob {
                    id,
                    hosts: Vec::new(),
                    _dir: dir,
                });
            }
            Err(why) => panic!("{why}"),
        }
    }
    unreachable!("the loop returns or panics")
}

/// The same ring started by `mpirun` inside an `sbatch` script (Open MPI starts its orteds
/// through Slurm; the ranks on the batch host carry no step id).
pub fn sbatch_mpirun_ring() -> SlurmJob {
    let ring = ring_binary();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ring.out");
    let name = unique_name("sbatch");
    let script = format!("exec mpirun --oversubscribe -np 8 {}", ring.display());
    let status = slurm("sbatch")
        .args(["-N4", "--ntasks-per-node=2", "-J", &name, "-o"])
        .arg(&out)
        .arg(format!("--wrap={script}"))
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::null())
        .status()
        .expect("sbatch (slurm-client)");
    assert!(status.success());
    let id = job_named(&name);
    let hosts =
        wait_for_ranks(&out, 8, "the mpirun ring in sbatch").unwrap_or_else(|e| panic!("{e}"));
    SlurmJob {
        id,
        hosts,
        _dir: dir,
    }
}
