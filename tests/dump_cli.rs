//! `strata dump` end to end, and the safety promise: whatever happens to strata (normal
//! exit, Ctrl-C, `kill -9` during a capture or while it holds a task), every target ends
//! up running and untraced. Also bad input: missing processes, processes of other users,
//! processes already traced.

mod support;
#[path = "support/target.rs"]
mod target;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use support::{parts, strata, strata_bin};
use target::{Target, assert_free, thread_ids, thread_state, tracer, wait_for};

fn blocked_target(threads: usize) -> Target {
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let t = Target::start(&exe, &[&threads.to_string()]);
    t.wait_all_sleeping(threads + 1);
    t
}

/// `strata dump --hold 60 PID` in the background, once it holds every thread of `t`.
fn hold_in_background(t: &Target, stderr: Stdio) -> std::process::Child {
    let strata = Command::new(strata_bin())
        .args(["dump", "--hold", "60", &t.pid().to_string()])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap();
    wait_for(Duration::from_secs(10), || {
        thread_ids(t.pid()).iter().all(|&tid| {
            thread_state(t.pid(), tid) == Some('t') && tracer(t.pid(), tid).is_some_and(|p| p != 0)
        })
    });
    strata
}

#[test]
fn dump_prints_every_thread_and_leaves_the_process_running() {
    let t = blocked_target(2);
    let pid = t.pid().to_string();
    let (code, out, err) = parts(&strata(&["dump", &pid]));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with(&format!("Process {pid} (capture_target): 3 thread(s)")),
        "{out}"
    );
    // The main thread's nested calls, innermost first, then the two others.
    let main_block: String = out
        .split("  Thread ")
        .nth(1)
        .expect("a main thread block")
        .to_string();
    let order: Vec<usize> = ["main_level3", "main_level2", "main_level1", " main at "]
        .iter()
        .map(|f| {
            main_block
                .find(f)
                .unwrap_or_else(|| panic!("{f} missing: {out}"))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert_eq!(out.matches("thread_level2").count(), 2, "{out}");
    // Where each thread waits: the system call (the kernel's wchan is best effort).
    assert_eq!(out.matches("(system call pause)").count(), 3, "{out}");
    assert_free(t.pid());
}

#[test]
fn missing_processes_get_one_line_and_the_right_exit_code() {
    let (code, out, err) = parts(&strata(&["dump", "2147483000"]));
    assert_eq!(code, 5, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("2147483000") && err.contains("does not exist"),
        "{err}"
    );

    let t = blocked_target(0);
    let (code, out, err) = parts(&strata(&["dump", &t.pid().to_string(), "2147483000"]));
    assert_eq!(code, 4, "partial: one of two\n{err}");
    assert!(out.contains("main_level3"), "{out}");
    assert_free(t.pid());

    let (code, _, err) = parts(&strata(&["dump", "notapid"]));
    assert_eq!(code, 2, "{err}");

    // kthreadd, pid 2, in every pid namespace that shows kernel threads.
    if std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd") {
        let (code, _, err) = parts(&strata(&["dump", "2"]));
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("kernel thread"), "{err}");
    }
}

#[test]
fn hold_keeps_the_process_stopped_and_ctrl_c_releases_it() {
    let t = blocked_target(1);
    let mut strata = hold_in_background(&t, Stdio::piped());
    kill(Pid::from_raw(strata.id() as i32), Signal::SIGINT).unwrap();
    let status = strata.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert_free(t.pid());
}

#[test]
fn kill_9_while_holding_leaves_the_process_running() {
    let t = blocked_target(3);
    let mut strata = hold_in_background(&t, Stdio::null());
    strata.kill().unwrap(); // SIGKILL
    strata.wait().unwrap();
    // The kernel detaches the tracees of a dead tracer and resumes them.
    wait_for(Duration::from_secs(5), || {
        thread_ids(t.pid())
            .iter()
            .all(|&tid| tracer(t.pid(), tid) == Some(0) && thread_state(t.pid(), tid) == Some('S'))
    });
    assert_free(t.pid());
}

#[test]
fn kill_9_during_captures_never_leaves_a_target_stopped() {
    // Many threads make each capture long enough (hundreds of microseconds) for kills to
    // land inside one; the kill times are spread over the whole run.
    let t = blocked_target(48);
    let pid = t.pid().to_string();
    let mut killed_running = 0;
    for i in 0..30u64 {
        let mut strata = Command::new(strata_bin())
            .args(["dump", &pid])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros((i * 677) % 6000));
        if strata.try_wait().unwrap().is_none() {
            killed_running += 1;
        }
        let _ = strata.kill();
        strata.wait().unwrap();
        wait_for(Duration::from_secs(5), || {
            thread_ids(t.pid()).iter().all(|&tid| {
                tracer(t.pid(), tid) == Some(0) && thread_state(t.pid(), tid) == Some('S')
            })
        });
    }
    assert!(
        killed_running > 10,
        "only {killed_running} kills hit a running strata"
    );
    assert_free(t.pid());
}

/// A process another strata holds (`dump --hold`) past the capture's deadline: refused,
/// naming that strata session and its pid (not "a debugger").
#[test]
fn process_held_by_another_strata_is_refused_with_the_session_named() {
    let t = blocked_target(0);
    let mut holder = hold_in_background(&t, Stdio::null());
    let (code, _, err) = parts(&strata(&["dump", &t.pid().to_string()]));
    assert_eq!(code, 6, "{err}");
    assert!(
        err.contains("another strata session") && err.contains(&holder.id().to_string()),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    kill(Pid::from_raw(holder.id() as i32), Signal::SIGTERM).unwrap();
    assert_eq!(holder.wait().unwrap().code(), Some(130));
    assert_free(t.pid());
}

/// strata run as `nobody` against root's process is refused with a hint, and works on
/// nobody's own process. Needs root to switch users (the test suite runs as root in CI).
#[test]
fn other_users_processes_are_refused_and_own_ones_work_as_nobody() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test switches to the user nobody and must run as root"
    );
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let (_dir, bin, public_exe) = support::public_copies(&exe);

    let roots = Target::start(&public_exe, &["0"]);
    let as_nobody = |pid: i32| {
        Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(&bin)
            .args(["dump", &pid.to_string()])
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let (code, _, err) = parts(&as_nobody(roots.pid()));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("belongs to uid 0"), "{err}");
    assert_free(roots.pid());

    let nobodys = Target::start_as(&public_exe, &["1"], Some("nobody"));
    let start = Instant::now();
    let (code, out, err) = parts(&as_nobody(nobodys.pid()));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("main_level3"), "{out}");
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_free(nobodys.pid());

    // Root too inspects only its own processes, as attach does: one rule for both (root
    // used to dump anyone's). The owner is named, and how to do it.
    let nobody = nix::unistd::User::from_name("nobody")
        .unwrap()
        .expect("user nobody")
        .uid;
    let (code, out, err) = parts(&strata(&["dump", &nobodys.pid().to_string()]));
    assert_eq!(code, 6, "{out}\n{err}");
    assert!(
        err.contains(&format!("belongs to uid {nobody}"))
            && err.contains("run strata as its owner"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    let pid = nobodys.pid().to_string();
    let attach = ["attach", "--pids", &pid, "-n", "1", "--no-files"];
    let (code, _, err) = parts(&strata(&attach));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains(&format!("uid {nobody}")), "{err}");
    assert_free(nobodys.pid());
}
