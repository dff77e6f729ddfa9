//! `strata demo`, the README's main job: a hung ring of strata's own processes, sampled
//! through the real capture path, must show the ring's three classes, and leave nothing
//! behind, even when strata is killed.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{parts, strata, strata_bin};

/// The rank pids the demo announces on stderr: "... (pids 1,2,3) hung ...".
fn announced_pids(stderr: &str) -> Vec<i32> {
    let start = stderr.find("(pids ").expect("pids announced") + 6;
    let end = start + stderr[start..].find(')').unwrap();
    stderr[start..end]
        .split(',')
        .map(|p| p.parse().unwrap())
        .collect()
}

fn gone(pid: i32) -> bool {
    // Gone, or a zombie of a parent that is itself gone (reaped by init shortly).
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z')
    })
}

#[test]
fn demo_shows_the_three_classes_of_the_hung_ring() {
    let (code, out, err) = parts(&strata(&["demo", "-n", "3", "--interval", "20ms"]));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("job demo-ring-8"), "{out}");
    // Through the full tree: 4 daemons under a level of 2 commnodes.
    assert!(err.contains("tree 1 -> 2 -> 4"), "{err}");
    let classes: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.contains("equivalence classes"))
        .skip(1)
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(classes.len(), 3, "{out}");
    // The demo's ranks talk through pipes, not MPI: the verdict says it cannot decide.
    assert!(
        out.contains("Why it hangs: not decided") && out.contains("no rank is inside MPI"),
        "{out}"
    );
    // The class lines are shortened from the left; the tree has the distinguishing frames.
    let branch = |ranks: &str, frame: &str| {
        out.lines().any(|l| {
            l.contains(&format!(
                "{ranks}  strata_frontend::commands::demo::{frame}"
            ))
        })
    };
    assert!(branch("1:[1]", "compute_forever"), "{out}");
    assert!(branch("1:[2]", "receive_token"), "{out}");
    assert!(branch("6:[0,3-7]", "barrier_wait"), "{out}");
    // The C and Rust start-up frames above the program's own main are hidden.
    assert!(
        out.lines()
            .nth(1)
            .is_some_and(|l| l.ends_with("  strata::main")),
        "{out}"
    );
    assert!(
        !out.contains("lang_start") && !out.contains("_start"),
        "{out}"
    );
    for pid in announced_pids(&err) {
        assert!(gone(pid), "demo rank {pid} left behind");
    }
}

#[test]
fn demo_ranks_die_with_a_killed_strata() {
    let mut demo = Command::new(strata_bin())
        .args(["demo", "-n", "1000", "--interval", "10ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(demo.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pids = announced_pids(&line);
    assert_eq!(pids.len(), 8, "{line}");
    std::thread::sleep(Duration::from_millis(200));
    demo.kill().unwrap();
    demo.wait().unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while !pids.iter().all(|&p| gone(p)) {
        assert!(Instant::now() < end, "demo ranks outlived strata: {pids:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
