//! `strata attach` through the real tree network on this host: the front end, commnodes and
//! daemons as separate processes talking gRPC over loopback, on hung Open MPI rings.
//! Faults (a daemon or a commnode killed with SIGKILL while sampling), a stranger writing
//! garbage to a commnode's port, and a session of another user. Every target is checked to
//! be running and untraced afterwards.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mpi::{MpiJob, assert_ring_classes};
use nix::sys::signal::Signal;
use support::{parts, strata, strata_bin};
use target::{Target, assert_free, wait_for};

/// `strata attach --launcher-pid MPIRUN --daemons 4 --fanout 2 --no-files EXTRA...`
fn attach_tree(job: &MpiJob, extra: &[&str]) -> (i32, String, String) {
    let pid = job.mpirun.id().to_string();
    let mut args = vec![
        "attach",
        "--launcher-pid",
        &pid,
        "--daemons",
        "4",
        "--fanout",
        "2",
        "--no-files",
        "-n",
        "3",
        "--interval",
        "50ms",
    ];
    args.extend_from_slice(extra);
    parts(&strata(&args))
}

#[test]
fn eight_rank_ring_through_two_levels_twice_in_a_row() {
    let job = MpiJob::ring(8);
    for round in 0..2 {
        let (code, out, err) = attach_tree(&job, &[]);
        assert_eq!(code, 0, "attach {round}:\n{out}\n{err}");
        assert_ring_classes(&out, 8);
        assert!(
            err.contains("1 -> 2 -> 4"),
            "the tree used (front end, 2 commnodes, 4 daemons) is reported:\n{err}"
        );
    }
    // The serial mode (no daemons, no tree) sees the same job the same way.
    let (code, out, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "--serial",
        "--no-files",
        "-n",
        "3",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_ring_classes(&out, 8);
    assert!(!err.contains("tree"), "{err}");
    // --json: the result file's JSON on stdout, for scripts.
    let (code, out, err) = attach_tree(&job, &["--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("--json prints JSON");
    assert_eq!(v["job_size"], 8, "{out}");
    assert_eq!(v["ranks"].as_array().unwrap().len(), 8);
    assert!(v["missing"].as_array().is_none_or(|m| m.is_empty()));
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn thirty_two_rank_ring_through_four_daemons() {
    let job = MpiJob::ring(32);
    let (code, out, err) = attach_tree(&job, &["--rank", "2"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_ring_classes(&out, 32);
    // --rank through the tree: rank 2's daemon sends its full stacks.
    assert!(
        out.contains(&format!("Process {} (mpi_ring) rank 2", job.ranks[2])),
        "{out}"
    );
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

/// A strata process started by `strata attach` (its direct child) in `role`, with its
/// `--index`.
fn role_processes(strata_pid: u32, role: &str) -> Vec<(i32, u32)> {
    support::processes()
        .into_iter()
        .filter(|p| p.ppid == strata_pid as i32 && p.args.get(1).is_some_and(|a| a == role))
        .map(|p| (p.pid, p.arg_after("--index").unwrap().parse().unwrap()))
        .collect()
}

/// Starts `strata attach` on the ring (long sampling), waits until all its daemons run.
fn start_long_attach(job: &MpiJob, extra: &[&str]) -> Child {
    let mut args: Vec<String> = [
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "--daemons",
        "4",
        "--fanout",
        "2",
        "--no-files",
        "--json",
        "-n",
        "40",
        "--interval",
        "100ms",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    let child = Command::new(strata_bin())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let id = child.id();
    // A deadline, not a measure: with the other tests of this file running, 4 daemons
    // have once taken more than 20 s to start on 2 cores.
    wait_for(Duration::from_secs(60), || {
        role_processes(id, "daemon").len() == 4
    });
    child
}

fn finish(child: Child) -> (i32, String, String) {
    let out = child.wait_with_output().unwrap();
    parts(&out)
}

/// The `missing` entries of a --json result: (ranks, reason).
fn missing(out: &str) -> Vec<(String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}):\n{out}"));
    v["missing"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|e| {
                    (
                        e["ranks"].as_str().unwrap().to_string(),
                        e["reason"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The path to a special frame, with its ranks, as the JSON tree has it.
fn special_ranks(out: &str, label: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    let nodes = v["trees"]["3d"]["nodes"].as_array()?;
    let name = label.trim_matches(['[', ']']);
    nodes.iter().find_map(|n| {
        (n["frame"]["special"].as_str() == Some(name))
            .then(|| n["ranks"].as_str().unwrap_or_default().to_string())
    })
}

fn signal(pid: i32, sig: Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).unwrap();
}

fn wait_gone(pids: &[i32]) {
    wait_for(Duration::from_secs(20), || {
        pids.iter()
            .all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists() || is_zombie(*p))
    });
}

fn is_zombie(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
        .unwrap_or(true)
}

/// Starts a long attach through 4 daemons under 2 commnodes, lets sampling begin, sends
/// `sig` to the `role` process of that `index`, and returns the attach's exit code, stdout
/// (JSON), stderr, and the pids of the tree's processes.
fn fault_while_sampling(
    job: &MpiJob,
    role: &str,
    index: u32,
    sig: Signal,
) -> (i32, String, String, Vec<i32>) {
    // Long enough that the victim is still sampling when this test (which runs at the
    // normal priority, below strata's, beside spinning ranks) wakes up to signal it.
    let child = start_long_attach(job, &["-n", "60"]);
    let tree: Vec<(i32, u32)> = role_processes(child.id(), "daemon")
        .into_iter()
        .chain(role_processes(child.id(), "commnode"))
        .collect();
    let victim = role_processes(child.id(), role)
        .into_iter()
        .find(|(_, i)| *i == index)
        .unwrap_or_else(|| panic!("no {role} {index}"))
        .0;
    std::thread::sleep(Duration::from_millis(1500));
    signal(victim, sig);
    let (code, out, err) = finish(child);
    (code, out, err, tree.into_iter().map(|p| p.0).collect())
}

/// One `missing` entry, for `ranks`, whose reason names `who`; the same ranks under
/// `[daemon unreachable]`; exit code 4; every target free; every tree process gone.
fn assert_lost(job: &MpiJob, result: (i32, String, String, Vec<i32>), ranks: &str, who: &str) {
    let (code, out, err, tree) = result;
    assert_eq!(code, 4, "partial result expected:\n{err}");
    let m = missing(&out);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].0, ranks, "exactly the ranks of {who}: {m:?}");
    assert!(m[0].1.contains(who), "{m:?}");
    assert_eq!(
        special_ranks(&out, "[daemon unreachable]").as_deref(),
        Some(ranks),
        "its ranks stay in the tree under [daemon unreachable]"
    );
    assert!(err.contains(who), "{err}");
    // A stopped daemon may have been stopped mid-capture, its targets with it: the front
    // end kills what did not exit after the shutdown, and the kernel lets the tracees go.
    wait_gone(&tree);
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn a_daemon_killed_while_sampling_leaves_a_partial_result_naming_its_ranks() {
    let job = MpiJob::ring(8);
    // Daemon 1 has ranks 2-3 (8 ranks in blocks of 2).
    let result = fault_while_sampling(&job, "daemon", 1, Signal::SIGKILL);
    assert_lost(&job, result, "2-3", "daemon 1");
}

#[test]
fn a_commnode_killed_while_sampling_leaves_a_partial_result_naming_its_subtree() {
    let job = MpiJob::ring(8);
    // Commnode 0 has daemons 0 and 1: ranks 0-3. Its orphaned daemons detach and exit.
    let result = fault_while_sampling(&job, "commnode", 0, Signal::SIGKILL);
    assert_lost(&job, result, "0-3", "commnode 0 (daemons 0-1)");
}

#[test]
fn a_hung_daemon_is_reported_missing_and_its_targets_freed_when_it_dies() {
    let job = MpiJob::ring(8);
    // A daemon that stops answering (stopped, swapping, a hung NFS read...) but whose
    // connection stays open: only its silence tells.
    let result = fault_while_sampling(&job, "daemon", 2, Signal::SIGSTOP);
    assert_lost(&job, result, "4-5", "daemon 2");
}

/// A stopped daemon keeps its connection open; only its silence tells, after 10 s. It used
/// to keep the rank thread it had stopped in `t` until the session ended (about 25 s, or as
/// long as a live session stays open). Declared lost, it is killed at once by the front
/// end, which launched it, and the kernel lets its ranks go while the others still sample.
#[test]
fn a_stopped_daemon_is_killed_at_once_and_its_ranks_run_on() {
    let job = MpiJob::ring(8);
    // 40 s of sampling: the loss is declared long before the end.
    let mut child = start_long_attach(&job, &["-n", "400"]);
    let victim = role_processes(child.id(), "daemon")
        .into_iter()
        .find(|(_, i)| *i == 2)
        .expect("daemon 2")
        .0;
    std::thread::sleep(Duration::from_millis(1500));
    signal(victim, Signal::SIGSTOP);
    wait_for(Duration::from_secs(25), || is_zombie(victim));
    assert!(
        matches!(child.try_wait(), Ok(None)),
        "the session still samples the other daemons' ranks"
    );
    // Daemon 2 has ranks 4 and 5.
    for &pid in &job.ranks[4..6] {
        assert_free(pid);
    }
    signal(child.id() as i32, Signal::SIGINT);
    let (code, out, err) = finish(child);
    assert_eq!(code, 130, "{out}\n{err}");
    assert!(
        err.contains("daemon 2") && err.contains("silent for") && err.contains("killed it"),
        "the loss and what was done about it, on stderr:\n{err}"
    );
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn a_daemon_lost_before_the_rank_map_leaves_its_ranks_unknown() {
    let job = MpiJob::ring(8);
    let pid = job.mpirun.id().to_string();
    let out = support::strata_command(&[
        "attach",
        "--launcher-pid",
        &pid,
        "--daemons",
        "4",
        "--fanout",
        "2",
        "--no-files",
        "--json",
        "-n",
        "2",
        "--interval",
        "50ms",
    ])
    .env("STRATA_FAILPOINT", "daemon-3-exit-at-setup")
    .output()
    .unwrap();
    let (code, out, err) = parts(&out);
    assert_eq!(code, 4, "{err}");
    // Daemon 3 would have had ranks 6-7: nobody can name them for sure, but the job has 8.
    let m = missing(&out);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0].0, "6-7", "{m:?}");
    assert!(
        m[0].1.contains("ranks unknown") && m[0].1.contains("daemon 3"),
        "{m:?}"
    );
    assert_eq!(
        special_ranks(&out, "[ranks unknown]").as_deref(),
        Some("6-7")
    );
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn ctrl_c_or_kill_9_of_the_front_end_stops_the_whole_tree_and_frees_the_targets() {
    let job = MpiJob::ring(8);
    // Ctrl-C (SIGINT): a shutdown goes down through the commnodes at once.
    let child = start_long_attach(&job, &["-n", "200"]);
    let helpers: Vec<i32> = role_processes(child.id(), "daemon")
        .into_iter()
        .chain(role_processes(child.id(), "commnode"))
        .map(|p| p.0)
        .collect();
    assert_eq!(helpers.len(), 6);
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id() as i32, Signal::SIGINT);
    let (code, out, err) = finish(child);
    assert_eq!(code, 130, "{out}\n{err}");
    assert!(err.contains("every process detached"), "{err}");
    wait_gone(&helpers);
    for &pid in &job.ranks {
        assert_free(pid);
    }
    // kill -9 of the front end: its commnodes and daemons see their links close, detach
    // and exit by themselves.
    let child = start_long_attach(&job, &["-n", "200"]);
    let helpers: Vec<i32> = role_processes(child.id(), "daemon")
        .into_iter()
        .chain(role_processes(child.id(), "commnode"))
        .map(|p| p.0)
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    signal(child.id() as i32, Signal::SIGKILL);
    let _ = finish(child);
    wait_gone(&helpers);
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn garbage_sent_to_a_commnode_port_does_not_disturb_the_session() {
    let job = MpiJob::ring(8);
    // Sampling long enough (6 s) that a loaded machine's test thread still finds the
    // session running once its daemons are up: with 2 s, a fresh machine's full suite saw
    // the commnode once and then no more, its session over.
    let child = start_long_attach(&job, &["-n", "60"]);
    let id = child.id();
    let mut commnodes = Vec::new();
    wait_for(Duration::from_secs(60), || {
        commnodes = role_processes(id, "commnode");
        !commnodes.is_empty()
    });
    let commnode = commnodes[0].0;
    let port = support::listening_port(commnode).expect("the commnode listens");
    let addr = format!("127.0.0.1:{port}");
    // Random bytes, an HTTP/2 preface followed by junk, and an oversized frame header.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut junk = vec![0u8; 64 * 1024];
    for b in &mut junk {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        *b = seed as u8;
    }
    let mut preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    preface.extend_from_slice(&[0xff, 0xff, 0xff, 0x00, 0x00, 0, 0, 0, 1]);
    preface.extend_from_slice(&junk);
    for payload in [&junk, &preface] {
        for _ in 0..3 {
            if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
                let _ = s.write_all(payload);
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let mut buf = [0u8; 256];
                let _ = s.read(&mut buf);
            }
        }
    }
    assert!(
        std::path::Path::new(&format!("/proc/{commnode}")).exists(),
        "the commnode (pid {commnode}) is gone before its session ended"
    );
    let (code, out, err) = finish(child);
    assert_eq!(code, 0, "the session is undisturbed:\n{err}");
    assert!(missing(&out).is_empty());
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 8);
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

#[test]
fn a_session_cannot_attach_to_another_users_processes() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test switches to the user nobody: run the suite as root (tests/run-all.sh)"
    );
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let (_dir, bin, public_exe) = support::public_copies(&exe);
    let nobody_uid = nix::unistd::User::from_name("nobody")
        .unwrap()
        .expect("user nobody")
        .uid
        .as_raw();

    // A root-owned target, a session of nobody (its daemon runs as nobody too): refused.
    let roots = Target::start(&public_exe, &["0"]);
    roots.wait_all_sleeping(1);
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args([
            "attach",
            "--no-files",
            "-n",
            "1",
            "--pids",
            &roots.pid().to_string(),
        ])
        .current_dir("/")
        .output()
        .unwrap();
    let (code, _, err) = parts(&out);
    assert_eq!(code, 6, "permission denied expected:\n{err}");
    assert!(err.contains("owned by uid 0"), "{err}");
    assert_free(roots.pid());

    // A target of nobody, a session of root: the explicit uid check refuses it too (root's
    // power to trace it does not widen a session).
    let nobodys = Target::start_as(&public_exe, &["0"], Some("nobody"));
    nobodys.wait_all_sleeping(1);
    let (code, _, err) = parts(&strata(&[
        "attach",
        "--no-files",
        "-n",
        "1",
        "--pids",
        &nobodys.pid().to_string(),
    ]));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains(&format!("owned by uid {nobody_uid}")), "{err}");
    assert_free(nobodys.pid());
}

#[test]
fn bad_tree_options_get_one_line_and_exit_code_2() {
    for args in [
        &["--fanout", "1"][..],
        &["--depth", "0"],
        &["--depth", "9"],
        &["--daemons", "0"],
        &["--rm", "slurm"],
        &["--serial", "--daemons", "4"],
    ] {
        let mut all = vec!["attach", "--pids", "1", "--no-files"];
        all.extend_from_slice(args);
        let (code, out, err) = parts(&strata(&all));
        assert_eq!(code, 2, "{args:?}: {out}\n{err}");
        assert!(!err.trim().is_empty(), "{args:?}: an error message");
    }
}

/// What daemons report is bounded before the front end allocates per rank: a rank whose
/// environment claims a job of 100 million ranks gets one line and exit 2, not an
/// allocation of that size.
#[test]
fn an_absurd_job_size_from_a_ranks_environment_is_refused() {
    let mut launcher = Command::new("sh")
        .args(["-c", "sleep 30 & wait"])
        .env("OMPI_COMM_WORLD_RANK", "0")
        .env("OMPI_COMM_WORLD_SIZE", "100000000")
        .spawn()
        .unwrap();
    let pid = launcher.id() as i32;
    wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
            .is_ok_and(|c| !c.trim().is_empty())
    });
    let (code, _, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &pid.to_string(),
        "--any-launcher",
        "-n",
        "1",
        "--no-files",
    ]));
    let children =
        std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
    for c in children.split_whitespace().filter_map(|c| c.parse().ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(c), Signal::SIGKILL);
    }
    let _ = launcher.kill();
    let _ = launcher.wait();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("claims 100000000 ranks"), "{err}");
}
