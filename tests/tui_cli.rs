//! The terminal UI on a live job, driven like a user would: a real terminal (tmux), keys,
//! the screen read back. `strata demo -i` attaches through the real tree (2 commnodes, 4
//! daemons) to the hung demo ring; `strata attach -i` to a C target. Afterwards every
//! target runs untraced.

mod support;
#[path = "support/target.rs"]
mod target;
#[path = "support/tmux.rs"]
mod tmux;

use std::path::Path;
use std::time::Duration;

use support::{assert_result_files, strata_bin};
use target::{Target, assert_free};
use tmux::Tmux;

const START: Duration = Duration::from_secs(60);
const STEP: Duration = Duration::from_secs(20);

/// `strata ARGS` in a 100x30 terminal, stderr and the exit code into files of `dir`.
fn in_terminal(args: &str, dir: &Path) -> Tmux {
    let command = format!(
        "NO_COLOR=1 {} {args} 2> {dir}/err; echo $? > {dir}/code; sleep 600",
        strata_bin().display(),
        dir = dir.display()
    );
    Tmux::start(&command, 100, 30, dir)
}

fn wait_exit_code(dir: &Path) -> i32 {
    // The shell creates the file before `echo` fills it: wait for the whole line.
    let read = || std::fs::read_to_string(dir.join("code")).unwrap_or_default();
    target::wait_for(STEP, || read().ends_with('\n'));
    read().trim().parse().unwrap()
}

fn announced_pids(dir: &Path) -> Vec<i32> {
    let err = std::fs::read_to_string(dir.join("err")).unwrap();
    let start = err.find("(pids ").expect("pids announced") + 6;
    let end = start + err[start..].find(')').unwrap();
    err[start..end]
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect()
}

#[test]
fn a_live_session_on_the_demo_job_searches_focuses_resamples_and_detaches() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result");
    let t = in_terminal(
        &format!("demo -i -n 3 --interval 20ms -o {}", out.display()),
        dir.path(),
    );
    let screen = t.wait_text("barrier_wait", START);
    assert!(screen.contains("job demo-ring-8"), "{screen}");
    assert!(screen.contains("attached"), "{screen}");
    assert!(screen.contains(" · function · "), "{screen}");
    let pids = announced_pids(dir.path());
    assert_eq!(pids.len(), 8);

    // Find rank 2 (the one waiting for the token that never comes): its branch is selected.
    t.keys(&["#"]);
    t.type_text("2");
    t.keys(&["Enter"]);
    t.wait_text("rank 2: 1 of 1 place", STEP);

    // Its details: host, pid (rank 2 is the third announced pid) and state.
    t.keys(&["i"]);
    t.wait_text(&pids[2].to_string(), STEP);
    t.keys(&["Escape"]);

    // Focus on the selected subtree: the path above it becomes a header.
    t.keys(&["f"]);
    let screen = t.wait_text("focus:", STEP);
    assert!(screen.contains("receive_token"), "{screen}");

    // Sample again, through the tree.
    t.keys(&["r"]);
    t.wait_text("took 3 samples", STEP);

    // Line granularity, derived from the samples: frames carry file:line.
    t.keys(&["g"]);
    let screen = t.wait_text(" · line · ", STEP);
    assert!(screen.contains(".rs:"), "{screen}");

    // Detach: the UI stays on the last result; every rank runs untraced.
    t.keys(&["D"]);
    t.wait_text("detached", STEP);
    for &pid in &pids {
        assert_free(pid);
    }
    t.keys(&["q"]);
    assert_eq!(wait_exit_code(dir.path()), 0);
    assert!(!t.alternate_screen());
    // Quitting wrote the last result.
    assert_result_files(&out);
}

#[test]
fn sigterm_ends_a_live_session_and_leaves_the_target_untraced() {
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let mut job = Target::start_ready(&exe, &["2"], 1);
    let dir = tempfile::tempdir().unwrap();
    let t = in_terminal(
        &format!("attach -i --no-files -n 2 --pids {}", job.pid()),
        dir.path(),
    );
    t.wait_text("main_level3", START);
    assert!(t.alternate_screen());
    // Every thread, on request: the target's main thread and its 2 others.
    t.keys(&["t"]);
    let screen = t.wait_text("all threads", STEP);
    assert!(screen.contains("(2 thr)  thread_level2"), "{screen}");
    let front_end = support::processes()
        .into_iter()
        .find(|p| p.args.iter().any(|a| a == "attach") && p.args.iter().any(|a| a == "-i"))
        .expect("the front end runs");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(front_end.pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(wait_exit_code(dir.path()), 130);
    let err = std::fs::read_to_string(dir.path().join("err")).unwrap();
    assert!(err.contains("SIGTERM: stopped"), "{err}");
    // The terminal is given back (raw mode off, the alternate screen left), and the target
    // runs untraced.
    assert!(!t.alternate_screen());
    assert_free(job.pid());
    assert!(!job.reaped());
}

#[test]
fn the_debugger_hand_off_opens_gdb_on_the_rank_and_comes_back() {
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let job = Target::start_ready(&exe, &["0"], 1);
    let dir = tempfile::tempdir().unwrap();
    let t = in_terminal(
        &format!("attach -i --no-files -n 2 --pids {}", job.pid()),
        dir.path(),
    );
    t.wait_text("main_level3", START);
    // The command for the selected class's representative rank, on this host.
    t.keys(&["G"]);
    t.wait_text(&format!("gdb -p {}", job.pid()), STEP);
    // Enter runs it on this terminal: a real gdb, attached to the rank.
    t.keys(&["Enter"]);
    t.wait_text("(gdb)", START);
    t.type_text("bt");
    t.keys(&["Enter"]);
    t.wait_text("in main_level3 ()", STEP);
    t.type_text("quit");
    t.keys(&["Enter"]);
    t.wait_text("Quit anyway?", STEP);
    t.type_text("y");
    t.keys(&["Enter"]);
    // Back in the UI, still attached: sampling again works after gdb detached.
    t.wait_text(&format!("gdb -p {}: done", job.pid()), STEP);
    t.keys(&["r"]);
    t.wait_text("took 2 samples", STEP);
    t.keys(&["q"]);
    assert_eq!(wait_exit_code(dir.path()), 0);
    assert_free(job.pid());
}
