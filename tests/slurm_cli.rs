//! `strata attach JOBID` on a real Slurm cluster: 4 slurmd nodes, each in its own
//! namespaces (hostnames n1..n4, their own /proc), started by `tests/slurm/up.sh`. Hung
//! Open MPI rings launched by `srun --mpi=pmix` and by `mpirun` inside `sbatch`; bad job
//! ids; a daemon killed on one node. Every rank is checked to be running and untraced
//! afterwards (through the host's view of the nodes' processes).

#[path = "support/mpi.rs"]
mod mpi;
#[path = "support/slurm.rs"]
mod slurm;
mod support;
#[path = "support/target.rs"]
mod target;
#[path = "support/tmux.rs"]
mod tmux;

use std::process::{Command, Stdio};
use std::time::Duration;

use mpi::assert_ring_classes;
use slurm::{SLURM_CONF, SlurmJob, cluster, sbatch_mpirun_ring, slurm_out, srun_ring};
use support::{parts, strata_bin};
use target::wait_for;

/// `strata attach ARGS...` with the test cluster's configuration.
fn strata_slurm(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(strata_bin())
        .args(args)
        .env("SLURM_CONF", SLURM_CONF)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    parts(&out)
}

/// The pids (in the host's pid namespace) of the job's rank processes, and of the strata
/// daemons of a session, found through their environments.
fn job_processes(job: u32, role_daemon: bool) -> Vec<support::Proc> {
    support::processes()
        .into_iter()
        .filter(|p| {
            let is_daemon = p.env_is("STRATA_ROLE", "daemon");
            p.env_is("SLURM_JOB_ID", &job.to_string())
                && if role_daemon {
                    is_daemon && p.comm == "strata"
                } else {
                    !is_daemon && p.comm == "mpi_ring"
                }
        })
        .collect()
}

/// Processes of strata (any role) that carry the job's id.
fn strata_in_job(job: u32) -> usize {
    support::processes()
        .iter()
        .filter(|p| p.comm == "strata" && p.env_is("SLURM_JOB_ID", &job.to_string()))
        .count()
}

/// Every rank of the job runs and is not traced (seen free within a second: a session
/// still sampling the other nodes' ranks captures each for microseconds every interval).
fn assert_ranks_free(job: &SlurmJob) {
    let ranks = job_processes(job.id, false);
    assert_eq!(ranks.len(), 8, "8 rank processes expected: {ranks:?}");
    for p in ranks {
        target::assert_free_within(p.pid, Duration::from_secs(1));
    }
}

fn check_hosts(out: &str, job: &SlurmJob) {
    let v: serde_json::Value = serde_json::from_str(out).expect("--json");
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 8, "{out}");
    for r in ranks {
        let rank = r["rank"].as_u64().unwrap() as usize;
        assert_eq!(
            r["host"].as_str().unwrap(),
            job.hosts[rank],
            "rank {rank}'s host as the rank itself printed it"
        );
    }
    assert_eq!(v["job"]["id"], job.id.to_string());
    assert_eq!(v["job"]["resource_manager"], "slurm");
}

#[test]
fn srun_ring_across_four_nodes_by_job_id() {
    let _cluster = cluster();
    let job = srun_ring();
    let id = job.id.to_string();
    let (code, out, err) =
        strata_slurm(&["attach", &id, "-n", "3", "--interval", "50ms", "--no-files"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_ring_classes(&out, 8);
    assert!(err.contains("tree 1 -> 4"), "one daemon per node: {err}");
    // The hosts of the ranks are the nodes', as each rank saw its own.
    let (code, out, err) = strata_slurm(&["attach", &id, "-n", "2", "--json", "--no-files"]);
    assert_eq!(code, 0, "{err}");
    check_hosts(&out, &job);
    // Through a commnode level too, and with the step named.
    let step = format!("{id}.0");
    let (code, out, err) =
        strata_slurm(&["attach", &step, "-n", "2", "--fanout", "2", "--no-files"]);
    assert_eq!(code, 0, "{err}");
    assert_ring_classes(&out, 8);
    assert!(err.contains("tree 1 -> 2 -> 4"), "{err}");
    // The commnodes inside the allocation (one more srun), listening on their nodes.
    let (code, out, err) = strata_slurm(&[
        "attach",
        &id,
        "-n",
        "2",
        "--fanout",
        "2",
        "--commnodes-in-job",
        "--no-files",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_ring_classes(&out, 8);
    assert!(err.contains("2 commnode(s) in the job"), "{err}");
    assert_ranks_free(&job);
    // The daemons' and commnodes' steps are gone: nothing of strata stays in the job.
    wait_for(Duration::from_secs(20), || {
        job_processes(job.id, true).is_empty() && strata_in_job(job.id) == 0
    });
}

#[test]
fn mpirun_inside_sbatch_by_job_id() {
    let _cluster = cluster();
    let job = sbatch_mpirun_ring();
    let id = job.id.to_string();
    let (code, out, err) = strata_slurm(&[
        "attach",
        &id,
        "-n",
        "3",
        "--interval",
        "50ms",
        "--json",
        "--no-files",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    check_hosts(&out, &job);
    let (code, text, err) = strata_slurm(&["attach", &id, "-n", "2", "--no-files"]);
    assert_eq!(code, 0, "{err}");
    assert_ring_classes(&text, 8);
    assert_ranks_free(&job);
}

#[test]
fn bad_job_ids_get_one_line_and_their_exit_code() {
    let _cluster = cluster();
    let one_line = |err: &str| {
        assert_eq!(
            err.lines().filter(|l| l.contains("error")).count(),
            1,
            "{err}"
        );
    };
    // Does not exist.
    let (code, _, err) = strata_slurm(&["attach", "999999", "--no-files"]);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("999999 does not exist"), "{err}");
    one_line(&err);
    // Has ended.
    let out = slurm::slurm("srun")
        .args(["-N1", "-n1", "--mpi=none", "sh", "-c", "echo $SLURM_JOB_ID"])
        .output()
        .unwrap();
    let ended = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let (code, _, err) = strata_slurm(&["attach", &ended, "--no-files"]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("has ended") || err.contains("does not exist"),
        "{err}"
    );
    one_line(&err);
    // Still pending.
    let pending = slurm_out(
        "sbatch",
        &[
            "--parsable",
            "--begin=now+1hour",
            "-o",
            "/dev/null",
            "--wrap",
            "true",
        ],
    );
    let (code, _, err) = strata_slurm(&["attach", &pending, "--no-files"]);
    let _ = slurm::slurm("scancel").arg(&pending).status();
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("still pending"), "{err}");
    one_line(&err);
    // Another user's.
    let theirs = {
        let out = slurm::slurm("runuser")
            .args([
                "-u",
                "nobody",
                "--",
                "sbatch",
                "--parsable",
                "--chdir=/tmp",
                "-o",
                "/dev/null",
            ])
            .args(["--begin=now+1hour", "--wrap", "true"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let (code, _, err) = strata_slurm(&["attach", &theirs, "--no-files"]);
    let _ = slurm::slurm("scancel").arg(&theirs).status();
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("belongs to nobody"), "{err}");
    one_line(&err);
    // Not a job id; a job id with --rm local; no Slurm configured here.
    let (code, _, err) = strata_slurm(&["attach", "12x", "--no-files"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = strata_slurm(&["attach", "12", "--rm", "local", "--no-files"]);
    assert_eq!(code, 2, "{err}");
    let out = Command::new(strata_bin())
        .args(["attach", "12", "--no-files"])
        .env("SLURM_CONF", "/nonexistent/slurm.conf")
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let (code, _, err) = parts(&out);
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("no resource manager answers here"), "{err}");
}

/// Starts `strata attach JOB -n SAMPLES --interval 100ms --json --no-files` and waits for
/// the daemon of the job's third node (SLURM_NODEID 2); returns the attach and that pid.
fn attach_with_samples(job: &SlurmJob, samples: &str) -> (std::process::Child, i32) {
    let child = Command::new(strata_bin())
        .args(["attach", &job.id.to_string(), "-n", samples])
        .args(["--interval", "100ms", "--json", "--no-files"])
        .env("SLURM_CONF", SLURM_CONF)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut victim = None;
    wait_for(Duration::from_secs(20), || {
        victim = job_processes(job.id, true)
            .into_iter()
            .find(|p| p.env_is("SLURM_NODEID", "2"))
            .map(|p| p.pid);
        victim.is_some()
    });
    (child, victim.unwrap())
}

#[test]
fn a_node_daemon_killed_after_the_rank_map_costs_exactly_that_nodes_ranks() {
    let _cluster = cluster();
    let job = srun_ring();
    // The daemon of the job's third node (SLURM_NODEID 2).
    let (child, victim) = attach_with_samples(&job, "40");
    // The rank map is gathered within a second of the launch; sampling takes 4 s.
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(victim),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (code, out, err) = parts(&child.wait_with_output().unwrap());
    assert_eq!(code, 4, "partial result expected:\n{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let missing = v["missing"].as_array().unwrap();
    assert_eq!(missing.len(), 1, "{missing:?}");
    // That node's ranks, as the ranks printed their hosts.
    let node = job.hosts.iter().collect::<std::collections::BTreeSet<_>>();
    let third = node.iter().nth(2).unwrap().to_string();
    let expected: Vec<String> = (0..8)
        .filter(|&r| job.hosts[r] == third)
        .map(|r| r.to_string())
        .collect();
    let named = missing[0]["ranks"].as_str().unwrap();
    let named: Vec<String> = strata_ranks(named);
    assert_eq!(named, expected, "exactly the ranks of {third}: {missing:?}");
    assert!(
        missing[0]["reason"].as_str().unwrap().contains("daemon 2"),
        "{missing:?}"
    );
    assert_ranks_free(&job);
}

/// A stopped daemon on a node holds the rank thread it had stopped until it dies. Declared
/// lost (silent for 10 s), it is killed at once through Slurm (a step on its node kills it
/// by the pid it gave), and that node's ranks run on while the others are still sampled.
#[test]
fn a_stopped_node_daemon_is_killed_through_slurm_at_once() {
    let _cluster = cluster();
    let job = srun_ring();
    let (mut child, victim) = attach_with_samples(&job, "400");
    std::thread::sleep(Duration::from_millis(1500));
    let signal = |pid: i32, sig| nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
    signal(victim, nix::sys::signal::Signal::SIGSTOP).unwrap();
    // Gone, or a zombie its slurmstepd has yet to reap.
    wait_for(Duration::from_secs(30), || {
        std::fs::read_to_string(format!("/proc/{victim}/stat"))
            .map(|s| s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
            .unwrap_or(true)
    });
    assert!(
        matches!(child.try_wait(), Ok(None)),
        "the session still samples the other nodes' ranks"
    );
    assert_ranks_free(&job);
    signal(child.id() as i32, nix::sys::signal::Signal::SIGINT).unwrap();
    let (code, out, err) = parts(&child.wait_with_output().unwrap());
    assert_eq!(code, 130, "{out}\n{err}");
    assert!(
        err.contains("daemon 2") && err.contains("asked Slurm to kill"),
        "{err}"
    );
    assert_ranks_free(&job);
}

/// `2-3` or `2,5` as rank strings.
fn strata_ranks(text: &str) -> Vec<String> {
    text.split(',')
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().unwrap(), b.parse().unwrap());
                (a..=b).map(|r| r.to_string()).collect::<Vec<_>>()
            }
            None => vec![part.to_string()],
        })
        .collect()
}

#[test]
fn the_terminal_ui_hands_a_remote_rank_to_gdb_through_srun() {
    let _cluster = cluster();
    let job = srun_ring();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display();
    let t = tmux::Tmux::start(
        &format!(
            "SLURM_CONF={SLURM_CONF} NO_COLOR=1 {} attach {} -i -n 2 --no-files 2> {d}/err; \
             echo $? > {d}/code; sleep 600",
            strata_bin().display(),
            job.id
        ),
        120,
        30,
        dir.path(),
    );
    let long = Duration::from_secs(60);
    t.wait_text("8 of 8 ranks", long);
    // Rank 3's class (the ranks in MPI_Barrier): its representative is the class's lowest
    // rank; its node is not this host, so the command goes through Slurm.
    t.keys(&["#"]);
    t.type_text("3");
    t.keys(&["Enter"]);
    t.wait_text("rank 3:", long);
    t.keys(&["G"]);
    let screen = t.wait_text("srun --jobid=", long);
    let line = screen
        .lines()
        .find(|l| l.contains("representative: rank "))
        .expect("the representative named");
    let rank: usize = line.split("representative: rank ").nth(1).unwrap()[..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        screen.contains(&format!(
            "srun --jobid={} --overlap -w {} -N1 -n1 --pty gdb -p",
            job.id, job.hosts[rank]
        )),
        "rank {rank} runs on {}:\n{screen}",
        job.hosts[rank]
    );
    // Run it: gdb on the rank's node, attached to the rank.
    t.keys(&["Enter"]);
    t.wait_text("(gdb)", long);
    t.type_text("bt");
    t.keys(&["Enter"]);
    t.wait_text(" in main (", long);
    t.type_text("quit");
    t.keys(&["Enter"]);
    t.wait_text("Quit anyway?", long);
    t.type_text("y");
    t.keys(&["Enter"]);
    t.wait_text(": done", long);
    t.keys(&["q"]);
    // The shell creates the file before `echo` writes the code into it: wait for a line.
    let code_file = dir.path().join("code");
    wait_for(long, || {
        std::fs::read_to_string(&code_file).is_ok_and(|c| c.ends_with('\n'))
    });
    let code = std::fs::read_to_string(&code_file).unwrap();
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    assert_eq!(code.trim(), "0", "{err}");
    assert_ranks_free(&job);
}
