//! ptrace capture against real processes built by this test (`tests/fixtures/capture_*.c`):
//! blocked threads, spinning threads, threads that come and go, a thread in uninterruptible
//! sleep, a group-stopped process, a process that exits during capture. After every test
//! the targets must be running (or stopped only as they were) and untraced.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid as NixPid;
use strata_daemon::capture::{CaptureError, CaptureOptions, Capturer, ThreadError};
use strata_daemon::memory::MemoryReader;
use strata_daemon::procfs::{self, Pid};

#[path = "../../tests/support/target.rs"]
mod target;

use target::{Target, assert_free, wait_for};

/// The capture fixtures, at -O0 with debug info.
fn fixture(name: &str) -> std::path::PathBuf {
    target::compile(&format!("{name}.c"), name, &["-O0", "-g"])
}

impl Target {
    fn of(name: &str, args: &[&str]) -> Target {
        Target::start(&fixture(name), args)
    }
}

#[test]
fn captures_every_thread_and_releases() {
    let target = Target::of("capture_target", &["3"]);
    target.wait_all_sleeping(4);
    let capturer = Capturer::new(2);
    let result = capturer
        .capture(&[target.pid()], &CaptureOptions::default())
        .pop()
        .unwrap()
        .unwrap();
    assert_free(target.pid());
    assert_eq!(result.threads.len(), 4);
    assert_eq!(
        result.threads[0].info.tid,
        target.pid(),
        "main thread first"
    );
    for t in &result.threads {
        let snap = t.snapshot.as_ref().expect("every thread stopped");
        assert_eq!(t.info.state, 'S');
        assert_eq!(t.info.comm, "capture_target");
        // Blocked in pause() (x86-64 system call 34): the kernel names the wait, or at
        // least the system call when it answers wchan "0" (see `ThreadInfo::syscall`).
        assert!(
            t.info.wchan.is_some() || t.info.syscall.is_some(),
            "neither wchan nor system call for a sleeping thread: {:?}",
            t.info
        );
        if let Some(nr) = t.info.syscall {
            assert_eq!(procfs::syscall_name(nr), Some("pause"), "{:?}", t.info);
        }
        // The stack copy starts in the red zone and holds the word at SP.
        let sp = snap.regs.sp();
        assert_eq!(snap.stack.base, sp - 128);
        assert!(snap.stack.bytes.len() >= 256, "stack copy too short");
        assert!(snap.stack.read_u64(sp).is_ok());
        assert!(snap.pending_signal.is_none());
        assert!(!snap.group_stopped);
        // The instruction pointer is inside an executable mapping.
        let ip = snap.regs.ip();
        assert!(
            result
                .maps
                .iter()
                .any(|m| m.is_executable() && m.start <= ip && ip < m.end),
            "ip {ip:#x} outside code"
        );
    }
    assert!(result.stopped_for < Duration::from_secs(1));
    // The process still works: it takes a signal and answers.
    kill(NixPid::from_raw(target.pid()), Signal::SIGUSR1).unwrap();
}

#[test]
fn captures_many_tasks_in_parallel() {
    let targets: Vec<Target> = (0..6)
        .map(|i| Target::of("capture_target", &[&(i % 3).to_string()]))
        .collect();
    let pids: Vec<Pid> = targets.iter().map(Target::pid).collect();
    let capturer = Capturer::new(3);
    for round in 0..20 {
        let results = capturer.capture(&pids, &CaptureOptions::default());
        for (i, (r, &pid)) in results.iter().zip(&pids).enumerate() {
            let r = r
                .as_ref()
                .unwrap_or_else(|e| panic!("round {round} task {i}: {e}"));
            assert_eq!(r.pid, pid, "results come in the order asked");
            assert_eq!(r.threads.len(), 1 + i % 3);
            assert!(r.threads.iter().all(|t| t.snapshot.is_ok()));
        }
        for &pid in &pids {
            assert_free(pid);
        }
    }
}

#[test]
fn spinning_threads_are_stopped_together() {
    let target = Target::of("capture_spin", &["3"]);
    let capturer = Capturer::new(1);
    for _ in 0..20 {
        let r = capturer
            .capture(&[target.pid()], &CaptureOptions::default())
            .pop()
            .unwrap()
            .unwrap();
        assert_eq!(r.threads.len(), 4);
        assert!(r.threads.iter().all(|t| t.snapshot.is_ok()));
        assert_free(target.pid());
    }
}

/// What a watch probe asks for: the main thread is stopped and copied, the others keep
/// running untraced (here they spin, so a stopped one would show as `t`).
#[test]
fn a_main_thread_capture_leaves_the_other_threads_running() {
    let target = Target::of("capture_spin", &["3"]);
    let pid = target.pid();
    wait_for(Duration::from_secs(10), || {
        procfs::threads(pid).unwrap().len() == 4
    });
    let only_main = CaptureOptions {
        main_thread_only: true,
        ..CaptureOptions::default()
    };
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(pid, &only_main, Duration::from_secs(30))
        .unwrap();
    let threads = &held.capture().threads;
    assert_eq!(threads.len(), 1, "{threads:?}");
    assert_eq!(threads[0].info.tid, pid);
    assert!(threads[0].snapshot.is_ok());
    for tid in procfs::threads(pid).unwrap() {
        let state = procfs::thread_stat(pid, tid).unwrap().state;
        if tid == pid {
            assert_eq!(state, 't', "the main thread is held");
        } else {
            assert_ne!(state, 't', "thread {tid} was stopped");
            assert_eq!(target::tracer(pid, tid), Some(0), "thread {tid} was traced");
        }
    }
    held.release().unwrap();
    assert_free(pid);
    // Captured and let go many times over, it is never left stopped.
    for _ in 0..20 {
        let r = capturer.capture(&[pid], &only_main).pop().unwrap().unwrap();
        assert_eq!(r.threads.len(), 1);
        assert_free(pid);
    }
}

/// A task whose main thread has exited still has a stack to show: its other threads'.
#[test]
fn a_main_thread_capture_of_a_zombie_leader_captures_the_live_threads() {
    let target = Target::of("capture_target", &["2", "exit-main"]);
    let pid = target.pid();
    wait_for(Duration::from_secs(10), || {
        procfs::stat(pid).is_ok_and(|s| s.state == 'Z') && procfs::threads(pid).unwrap().len() == 3
    });
    let only_main = CaptureOptions {
        main_thread_only: true,
        ..CaptureOptions::default()
    };
    let r = Capturer::new(1)
        .capture(&[pid], &only_main)
        .pop()
        .unwrap()
        .unwrap();
    let live = r.threads.iter().filter(|t| t.snapshot.is_ok()).count();
    assert_eq!(live, 2, "{:?}", r.threads);
    assert_free(pid);
}

#[test]
fn real_time_signals_arriving_during_captures_are_not_lost() {
    let dir = tempfile::tempdir().unwrap();
    let count_file = dir.path().join("count");
    let target = Target::of("capture_target", &["1", count_file.to_str().unwrap()]);
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let sigrt1 = libc::SIGRTMIN() + 1;
    let sent = 300;
    let sender = std::thread::spawn(move || {
        for _ in 0..sent {
            // nix's `Signal` has no real-time variants and this crate allows no unsafe
            // code, so the signals go through kill(1).
            let ok = Command::new("kill")
                .args([&format!("-{sigrt1}"), &pid.to_string()])
                .status()
                .unwrap()
                .success();
            assert!(ok);
        }
    });
    let mut with_signal = 0;
    while !sender.is_finished() {
        let r = capturer
            .capture(&[pid], &CaptureOptions::default())
            .pop()
            .unwrap()
            .unwrap();
        with_signal += r
            .threads
            .iter()
            .filter(|t| {
                t.snapshot
                    .as_ref()
                    .is_ok_and(|s| s.pending_signal.is_some())
            })
            .count();
    }
    sender.join().unwrap();
    assert_free(pid);
    // Real-time signals queue: every one sent must have reached the handler.
    wait_for(Duration::from_secs(5), || {
        kill(NixPid::from_raw(pid), Signal::SIGUSR1).unwrap();
        std::thread::sleep(Duration::from_millis(20));
        std::fs::read_to_string(&count_file).is_ok_and(|c| c.trim() == sent.to_string())
    });
    eprintln!("{with_signal} captures met a signal in flight and re-injected it");
}

#[test]
fn threads_that_come_and_go_are_handled() {
    let target = Target::of("capture_churn", &[]);
    let capturer = Capturer::new(1);
    let mut exited = 0;
    for _ in 0..200 {
        let r = capturer
            .capture(&[target.pid()], &CaptureOptions::default())
            .pop()
            .unwrap()
            .unwrap();
        assert!(r.threads[0].snapshot.is_ok(), "main thread captured");
        exited += r
            .threads
            .iter()
            .filter(|t| matches!(t.snapshot, Err(ThreadError::Exited)))
            .count();
    }
    // The short-lived threads are detached (or reaped) every time: the process goes on
    // creating and joining them.
    let before = procfs::stat(target.pid()).unwrap();
    assert_ne!(before.state, 'Z');
    for tid in procfs::threads(target.pid()).unwrap_or_default() {
        if let Ok(Some(t)) =
            procfs::status_field(tid, "TracerPid").map(|v| v.map(|v| v.trim().to_string()))
        {
            assert_eq!(t, "0", "thread {tid} left traced");
        }
    }
    eprintln!("{exited} threads exited during captures");
}

#[test]
fn exiting_process_is_a_per_task_error_and_its_parent_can_reap_it() {
    let capturer = Capturer::new(1);
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..60 {
        // A process that exits at about the moment of the capture.
        // `sh` waits for the `sleep`, which is the target (see `Target`).
        let mut child = Command::new("sh")
            .args(["-c", &format!("sleep 0.0{} & echo $!; wait $!", i % 10)])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pid: Pid = line.trim().parse().unwrap();
        std::thread::sleep(Duration::from_micros(((i * 997) % 90) * 100));
        let r = capturer
            .capture(&[pid], &CaptureOptions::default())
            .pop()
            .unwrap();
        let key = match &r {
            Ok(_) => "captured".to_string(),
            Err(CaptureError::NoSuchProcess(_)) => "gone".into(),
            Err(CaptureError::Zombie(_)) => "zombie".into(),
            Err(CaptureError::ExitedDuringCapture { .. }) => "exited during capture".into(),
            Err(e) => panic!("unexpected error for an exiting process: {e}"),
        };
        *outcomes.entry(key).or_default() += 1;
        // The parent (this test) must be able to reap it promptly: a tracee that exited
        // while traced and was never reaped by the tracer would block this wait.
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            assert!(
                Instant::now() < end,
                "exited target could not be reaped: {r:?}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    eprintln!("outcomes: {outcomes:?}");
    assert!(outcomes.get("captured").copied().unwrap_or(0) > 0);
}

/// A process whose only thread sleeps in D for 1.5 s: the parent of a vfork child.
fn parent_of_a_vfork_child_in_d() -> Target {
    let target = Target::of("capture_vfork", &["1500"]);
    let pid = target.pid();
    wait_for(Duration::from_secs(5), || {
        procfs::stat(pid).is_ok_and(|s| s.state == 'D')
    });
    target
}

#[test]
fn thread_in_uninterruptible_sleep_is_reported_and_detached_when_it_wakes() {
    let target = parent_of_a_vfork_child_in_d();
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let options = CaptureOptions {
        stop_timeout: Duration::from_millis(100),
        ..CaptureOptions::default()
    };
    let r = capturer.capture(&[pid], &options).pop().unwrap().unwrap();
    let main = r.main_thread().unwrap();
    assert_eq!(main.info.state, 'D');
    assert!(
        main.info.wchan.is_some() || main.info.syscall.is_some(),
        "a D-state thread shows its kernel wait: {:?}, now {:?}",
        main.info,
        procfs::wchan(pid, pid)
    );
    assert!(
        matches!(main.snapshot, Err(ThreadError::DidNotStop(_, 'D'))),
        "{:?}",
        main.snapshot
    );
    // Once the vfork child exits, the parent wakes, stops for the pending interrupt, and
    // the capture thread detaches it: running and untraced again.
    wait_for(Duration::from_secs(5), || {
        procfs::tracer_pid(pid).is_ok_and(|t| t == 0)
            && procfs::stat(pid).is_ok_and(|s| s.state == 'S')
    });
    assert_free(pid);
}

#[test]
fn group_stopped_process_stays_stopped() {
    let target = Target::of("capture_target", &["0"]);
    let pid = target.pid();
    kill(NixPid::from_raw(pid), Signal::SIGSTOP).unwrap();
    wait_for(Duration::from_secs(5), || {
        procfs::stat(pid).is_ok_and(|s| s.state == 'T')
    });
    let capturer = Capturer::new(1);
    let r = capturer
        .capture(&[pid], &CaptureOptions::default())
        .pop()
        .unwrap()
        .unwrap();
    let snap = r.threads[0].snapshot.as_ref().unwrap();
    assert!(snap.group_stopped);
    assert_eq!(r.threads[0].info.state, 'T');
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        procfs::stat(pid).unwrap().state,
        'T',
        "left as the user had it"
    );
    assert_eq!(procfs::tracer_pid(pid).unwrap(), 0);
    kill(NixPid::from_raw(pid), Signal::SIGCONT).unwrap();
    wait_for(Duration::from_secs(5), || {
        procfs::stat(pid).is_ok_and(|s| s.state == 'S')
    });
    assert_free(pid);
}

#[test]
fn hold_keeps_the_task_stopped_until_release() {
    let target = Target::of("capture_target", &["2"]);
    let pid = target.pid();
    target.wait_all_sleeping(3);
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(pid, &CaptureOptions::default(), Duration::from_secs(30))
        .unwrap();
    for tid in procfs::threads(pid).unwrap() {
        assert_eq!(procfs::thread_stat(pid, tid).unwrap().state, 't');
    }
    assert_ne!(procfs::tracer_pid(pid).unwrap(), 0);
    // Memory reads see the stopped moment: the word at SP is the one in the copy.
    let snap = held.capture().threads[0].snapshot.as_ref().unwrap();
    let sp = snap.regs.sp();
    assert_eq!(
        held.memory().read_u64(sp).unwrap(),
        snap.stack.read_u64(sp).unwrap()
    );
    assert!(matches!(
        capturer.capture_and_hold(pid, &CaptureOptions::default(), Duration::from_secs(1)),
        Err(CaptureError::AlreadyHeld(_))
    ));
    held.release().unwrap();
    assert_free(pid);
}

#[test]
fn hold_deadline_releases_by_itself() {
    let target = Target::of("capture_target", &["1"]);
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(pid, &CaptureOptions::default(), Duration::from_millis(200))
        .unwrap();
    assert_ne!(procfs::tracer_pid(pid).unwrap(), 0);
    wait_for(Duration::from_secs(5), || {
        procfs::tracer_pid(pid).is_ok_and(|t| t == 0)
    });
    assert_free(pid);
    assert!(matches!(held.release(), Err(CaptureError::NotHeld(_))));
}

#[test]
fn held_task_killed_meanwhile_is_reaped_for_its_parent() {
    let mut target = Target::of("capture_target", &["2"]);
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(pid, &CaptureOptions::default(), Duration::from_secs(30))
        .unwrap();
    kill(NixPid::from_raw(pid), Signal::SIGKILL).unwrap();
    // Still held (the handle lives), yet the parent can reap the dead task.
    let end = Instant::now() + Duration::from_secs(5);
    while !target.reaped() {
        assert!(Instant::now() < end, "killed held task could not be reaped");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(held);
}

#[test]
fn dropping_the_capturer_releases_held_tasks() {
    let target = Target::of("capture_target", &["1"]);
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(pid, &CaptureOptions::default(), Duration::from_secs(30))
        .unwrap();
    std::mem::forget(held); // no release through the handle
    drop(capturer);
    assert_free(pid);
}

#[test]
fn errors_name_what_is_wrong() {
    let capturer = Capturer::new(1);
    let r = capturer.capture(&[i32::MAX - 1], &CaptureOptions::default());
    assert!(matches!(r[0], Err(CaptureError::NoSuchProcess(_))));

    // A zombie: a child that exited and is not reaped yet.
    let mut child = Command::new("true").spawn().unwrap();
    let zpid = child.id() as Pid;
    wait_for(Duration::from_secs(5), || {
        procfs::stat(zpid).is_ok_and(|s| s.state == 'Z')
    });
    let r = capturer.capture(&[zpid], &CaptureOptions::default());
    assert!(matches!(r[0], Err(CaptureError::Zombie(_))), "{:?}", r[0]);
    child.wait().unwrap();

    // Held by another strata session (a second capturer) past the deadline: named as such.
    let target = Target::of("capture_target", &["0"]);
    let other = Capturer::new(1);
    let held = other
        .capture_and_hold(
            target.pid(),
            &CaptureOptions::default(),
            Duration::from_secs(30),
        )
        .unwrap();
    let r = capturer.capture(&[target.pid()], &CaptureOptions::default());
    match &r[0] {
        Err(e @ CaptureError::HeldByStrata { tracer, .. }) => {
            assert_eq!(
                *tracer,
                std::process::id() as Pid,
                "the tracer's process, not thread"
            );
            assert!(e.to_string().contains("another strata session"), "{e}");
        }
        other => panic!("expected HeldByStrata, got {other:?}"),
    }
    held.release().unwrap();
    assert_free(target.pid());
}

/// Two strata sessions on one job at once: a capture that finds a thread traced by the
/// other session's capture thread tries again within its deadline instead of failing with
/// EPERM, so both get their samples.
#[test]
fn two_sessions_at_once_both_capture() {
    let target = Target::of("capture_target", &["0"]);
    let other = Capturer::new(1);
    let held = other
        .capture_and_hold(
            target.pid(),
            &CaptureOptions::default(),
            Duration::from_millis(30),
        )
        .unwrap();
    let capturer = Capturer::new(1);
    let r = capturer.capture(&[target.pid()], &CaptureOptions::default());
    assert!(r[0].is_ok(), "{:?}", r[0]);
    drop(held);
    assert_free(target.pid());
}

/// A thread that did not stop within the deadline stays seized by its worker until it
/// stops; the next capture of its task waits for it again instead of seizing it (which
/// the kernel refuses: strata's own daemon used to be reported as "another debugger") and
/// labels it by the state /proc gives at the deadline, never "uninterruptible" unless D.
#[test]
fn a_thread_that_misses_the_deadline_is_waited_for_again_not_blamed_on_a_debugger() {
    // A thread in D (the parent of a vfork child, for 1.5 s) misses every deadline: the
    // second capture finds it still seized by the first one's worker.
    let target = parent_of_a_vfork_child_in_d();
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let options = CaptureOptions {
        stop_timeout: Duration::from_millis(50),
        ..CaptureOptions::default()
    };
    for round in 0..2 {
        let r = capturer.capture(&[pid], &options).pop().unwrap();
        let task = r.unwrap_or_else(|e| panic!("capture {round} failed: {e}"));
        let main = task.main_thread().unwrap();
        assert!(
            matches!(main.snapshot, Err(ThreadError::DidNotStop(_, 'D'))),
            "capture {round}: {:?}",
            main.snapshot
        );
    }
    wait_for(Duration::from_secs(5), || {
        procfs::tracer_pid(pid).is_ok_and(|t| t == 0)
    });
    assert_free(pid);
    drop(target);

    // A zero deadline: running threads miss it, and are never said to be in D.
    let target = Target::of("capture_spin", &[]);
    let capturer = Capturer::new(1);
    let hurried = CaptureOptions {
        stop_timeout: Duration::ZERO,
        ..CaptureOptions::default()
    };
    let mut missed = 0;
    for _ in 0..50 {
        let r = capturer.capture(&[target.pid()], &hurried);
        let task = match &r[0] {
            Ok(t) => t,
            Err(e) => panic!("a capture failed instead of waiting again: {e}"),
        };
        for t in &task.threads {
            assert!(
                !matches!(t.snapshot, Err(ThreadError::Attach(_))),
                "a thread of strata's own capture was seized again: {:?}",
                t.snapshot
            );
            if let Err(ThreadError::DidNotStop(_, state)) = &t.snapshot {
                missed += 1;
                assert_ne!(*state, 'D', "a spinning thread is not in D");
                assert!(
                    !t.snapshot
                        .as_ref()
                        .unwrap_err()
                        .to_string()
                        .contains("uninterruptible"),
                    "{:?}",
                    t.snapshot
                );
            }
        }
    }
    assert!(
        missed > 0,
        "no thread missed a zero deadline: the test proves nothing"
    );
    // The ordinary deadline gets the lingering threads back.
    let r = capturer.capture(&[target.pid()], &CaptureOptions::default());
    assert!(r[0].is_ok(), "{:?}", r[0]);
    drop(capturer);
    assert_free(target.pid());
}

/// The starvation tests pin a target and a real-time hog to CPU 0: one at a time.
static CPU0: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A spinning target pinned to CPU 0.
fn spinner_on_cpu0() -> Target {
    let target = Target::of("capture_spin", &["0"]);
    let pin = Command::new("taskset")
        .args(["-a", "-p", "-c", "0", &target.pid().to_string()])
        .stdout(Stdio::null())
        .status()
        .expect("taskset (util-linux)");
    assert!(pin.success(), "taskset could not pin the target");
    target
}

/// A real-time hog on CPU 0 for `secs`: a target pinned there is runnable but gets no core
/// (the fair server lends it one only after most of a second). The hog spins at FIFO 2,
/// under `timeout` at FIFO 3, which can preempt it to end it.
fn hog_cpu0(secs: &str) -> std::process::Child {
    let hog = Command::new("taskset")
        .args([
            "-c", "0", "chrt", "-f", "3", "timeout", secs, "chrt", "-f", "2",
        ])
        .args(["sh", "-c", "while :; do :; done"])
        .spawn()
        .expect("taskset, chrt and timeout (util-linux, coreutils)");
    std::thread::sleep(Duration::from_millis(30));
    hog
}

/// A rank starved for a whole attach (a hung job's other ranks take every core): each
/// capture waited the whole grace period for it, and one attach of 65 samples took 157 s.
/// Once a task's captures have spent their budget on threads without a core
/// (`STARVED_BUDGET` timeouts), they wait only a twentieth of a timeout and give no grace.
/// Starves a process for as long as it lives: a cgroup (v1 `cpu`) that lends its threads
/// 1 ms of a core a second. Runnable, without a core, whatever else runs: a real-time hog
/// starves a thread only as the kernel's fair server lets it, and once in a full suite
/// starved nothing for 36 captures in a row. `None` where the cgroup cannot be made.
struct Throttled {
    dir: std::path::PathBuf,
    tids: Vec<i32>,
}

const CPU_CGROUP: &str = "/sys/fs/cgroup/cpu";

fn throttle(pid: i32) -> Option<Throttled> {
    let root = std::path::Path::new(CPU_CGROUP);
    if !root.join("cpu.cfs_quota_us").exists() {
        return None;
    }
    let dir = root.join(format!("strata-test-starved-{pid}"));
    std::fs::create_dir(&dir).ok()?;
    let throttled = Throttled {
        dir,
        tids: target::thread_ids(pid),
    };
    std::fs::write(throttled.dir.join("cpu.cfs_period_us"), "1000000").ok()?;
    std::fs::write(throttled.dir.join("cpu.cfs_quota_us"), "1000").ok()?;
    for tid in &throttled.tids {
        std::fs::write(throttled.dir.join("tasks"), tid.to_string()).ok()?;
    }
    Some(throttled)
}

impl Drop for Throttled {
    fn drop(&mut self) {
        for tid in &self.tids {
            let _ = std::fs::write(
                std::path::Path::new(CPU_CGROUP).join("tasks"),
                tid.to_string(),
            );
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_starved_task_stops_costing_a_grace_period_once_its_budget_is_spent() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    let target = spinner_on_cpu0();
    let pid = target.pid();
    let hurried = CaptureOptions {
        stop_timeout: Duration::from_millis(50),
        ..CaptureOptions::default()
    };
    // Starved by a cgroup where there is one (every Linux with cgroup v1's cpu controller),
    // else by a real-time hog on its core.
    let throttled = throttle(pid);
    let mut hog = throttled.is_none().then(|| hog_cpu0("4"));
    eprintln!(
        "starved by {}",
        if hog.is_some() {
            "a real-time hog"
        } else {
            "a cpu cgroup"
        }
    );
    // The budget is STARVED_BUDGET timeouts (500 ms) of misses: the first miss's grace
    // (250 ms) and a few whole timeouts spend it, and from then on a miss is short (a
    // twentieth of a timeout). A starved thread gets a core now and then (the cgroup's millisecond a
    // second, the fair server's), and a capture then succeeds without spending any:
    // captures go on until three short misses, 200 at most (a throttle may take a few dozen
    // captures to bite, and those that succeed cost nothing).
    let budget = hurried.stop_timeout * strata_daemon::capture::STARVED_BUDGET;
    let capturer = Capturer::new(1);
    let mut waits = Vec::new();
    let (mut before_short, mut shorts) = (Duration::ZERO, 0);
    while waits.len() < 200 && shorts < 3 {
        let task = capturer.capture(&[pid], &hurried).pop().unwrap().unwrap();
        let waited = match &task.main_thread().unwrap().snapshot {
            Err(ThreadError::DidNotStop(waited, _)) => *waited,
            Ok(_) => Duration::ZERO,
            Err(e) => panic!("{e:?}"),
        };
        waits.push(waited);
        if waited.is_zero() {
            continue;
        }
        // A whole timeout measures 49-50 ms; a short wait, a twentieth of it.
        if waited < hurried.stop_timeout / 4 {
            shorts += 1;
        } else {
            assert_eq!(shorts, 0, "a spent budget leaves short waits: {waits:?}");
            before_short += waited;
        }
    }
    drop(throttled);
    if let Some(hog) = &mut hog {
        let _ = hog.wait();
    }
    assert!(
        waits.iter().any(|w| *w >= Duration::from_millis(200)),
        "the first miss still gets its grace period: {waits:?}"
    );
    assert_eq!(
        shorts, 3,
        "the budget was not spent in 200 captures: {waits:?}"
    );
    // The capturer counts a miss from its interrupt to the capture's end, a little more
    // than the wait: the budget is spent after a bit less than its worth of waits.
    assert!(
        before_short >= budget * 3 / 5 && before_short <= budget * 2,
        "the waits before the budget was spent: {before_short:?} of {budget:?}: {waits:?}"
    );
    drop(capturer);
    assert_free(pid);
}

/// A spinning thread that had no core when its deadline passed (a node busier than its
/// cores) is runnable, not hung: it gets a grace period, and if it misses that too, the next
/// capture waits for it again in full and captures it as soon as it gets a core. It is not
/// reported as not stopped for the rest of the session.
#[test]
fn a_starved_runnable_thread_gets_a_grace_period_and_the_next_capture() {
    let _cpu0 = CPU0.lock().unwrap_or_else(|e| e.into_inner());
    let target = spinner_on_cpu0();
    let pid = target.pid();
    let hog = hog_cpu0;
    let capturer = Capturer::new(1);
    let hurried = CaptureOptions {
        stop_timeout: Duration::from_millis(50),
        ..CaptureOptions::default()
    };

    // Starved for less than the grace period (5 x 50 ms): captured by the same capture.
    let mut short = hog("0.15");
    let task = capturer.capture(&[pid], &hurried).pop().unwrap().unwrap();
    assert!(
        task.main_thread().unwrap().snapshot.is_ok(),
        "a thread starved for 150 ms was not given its grace period: {:?}",
        task.main_thread().unwrap().snapshot
    );
    let _ = short.wait();

    // Starved for longer: missed, runnable, then captured by the next capture.
    let mut long = hog("0.8");
    let first = capturer.capture(&[pid], &hurried).pop().unwrap().unwrap();
    let state = match &first.main_thread().unwrap().snapshot {
        Err(ThreadError::DidNotStop(waited, state)) => {
            // Five deadlines from the capture's start, less the moment the seize took.
            assert!(*waited >= Duration::from_millis(200), "waited {waited:?}");
            *state
        }
        other => panic!(
            "the main thread stopped beside a real-time hog on its only core \
             (needs root for chrt -f): {other:?}"
        ),
    };
    assert_ne!(
        state, 'D',
        "a starved spinning thread is runnable, not in D"
    );
    let patient = CaptureOptions {
        stop_timeout: Duration::from_secs(3),
        ..CaptureOptions::default()
    };
    let second = capturer.capture(&[pid], &patient).pop().unwrap().unwrap();
    assert!(
        second.main_thread().unwrap().snapshot.is_ok(),
        "the starved thread was given up on without a wait: {:?}",
        second.main_thread().unwrap().snapshot
    );
    let _ = long.wait();
    drop(capturer);
    assert_free(pid);
}

/// A thread whose stack pointer is less than the red zone (128 bytes) above the bottom of
/// its stack mapping, with an inaccessible page below: the copy must still hold the stack
/// from SP up, starting where the mapping starts.
#[test]
fn stack_copy_when_sp_is_near_the_bottom_of_its_mapping() {
    let target = Target::of("capture_stack_bottom", &[]);
    target.wait_all_sleeping(1);
    let result = Capturer::new(1)
        .capture(&[target.pid()], &CaptureOptions::default())
        .pop()
        .unwrap()
        .unwrap();
    assert_free(target.pid());
    let snap = result.threads[0].snapshot.as_ref().expect("stopped");
    let sp = snap.regs.sp();
    let m = result
        .maps
        .iter()
        .find(|m| m.start <= sp && sp < m.end)
        .expect("sp mapped");
    assert_eq!(sp - m.start, 64, "the fixture's premise");
    assert!(
        snap.stack.read_u64(sp).is_ok(),
        "no word at sp in the copy ({} bytes from {:#x})",
        snap.stack.bytes.len(),
        snap.stack.base
    );
    assert_eq!(snap.stack.base, m.start, "the copy starts at the mapping");
    assert_eq!(snap.stack.end(), m.end, "and goes to its end");
}
