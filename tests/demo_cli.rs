//! `strata demo`, the README's main job: a hung ring of strata's own processes, sampled
//! through the real capture path, must show the ring's three classes, and leave nothing
//! behind, even when strata is killed.

mod support;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{parts, strata, strata_bin, strata_command};

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

/// The demo's ranks are strata itself, whose debug build has far more DWARF than an
/// attach should wait to index: the first run reads it lazily and leaves the index to a
/// detached builder; once that is done, the next run reads no DWARF at all, and shows
/// the same tree.
#[test]
fn a_large_binary_is_indexed_in_the_background_for_the_next_attach() {
    let home = tempfile::tempdir().unwrap();
    let run = || {
        let out = strata_command(&["demo", "-n", "2", "--interval", "20ms"])
            .env("XDG_CACHE_HOME", home.path())
            .env("STRATA_TIMINGS", "1")
            .output()
            .unwrap();
        let (code, out, err) = parts(&out);
        assert_eq!(code, 0, "{out}\n{err}");
        let debug = err
            .lines()
            .find(|l| l.starts_with("strata: debug info:"))
            .unwrap_or_else(|| panic!("no debug info line: {err}"))
            .to_string();
        let classes = out
            .lines()
            .skip_while(|l| !l.contains("equivalence classes"))
            .take_while(|l| !l.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>();
        (debug, classes)
    };
    let (cold, cold_classes) = run();
    // libc's index is built inline by the front end and sent down the tree; strata's by
    // nobody while the demo waits.
    assert!(
        cold.contains("read 4 large binaries lazily"),
        "the debug build of strata is over the inline limit: {cold}"
    );
    assert!(
        !cold.contains("took 0 down the tree"),
        "libc's index came down the tree: {cold}"
    );
    let entries = home.path().join("strata/debug-index/v1");
    // The entry of strata itself: its key ends in the binary's size, far over 32 MiB
    // (the small libraries' entries were written during the attach).
    let built = || {
        std::fs::read_dir(&entries).is_ok_and(|d| {
            d.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".idx")
                    .and_then(|key| key.rsplit('-').next()?.parse::<u64>().ok())
                    .is_some_and(|size| size > 32 << 20)
            })
        })
    };
    // The builder runs at idle priority: under a busy suite it takes its time.
    let end = Instant::now() + Duration::from_secs(300);
    while !built() {
        assert!(
            Instant::now() < end,
            "strata's index never appeared in {entries:?}"
        );
        // The builder carries nothing of the daemon's environment (the session key).
        for builder in support::processes()
            .iter()
            .filter(|p| p.args.get(1).is_some_and(|a| a == "index-debug-info"))
        {
            assert!(builder.env.is_empty(), "{:?}", builder.env.keys());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let (warm, warm_classes) = run();
    assert!(
        warm.contains("indexed 0 binaries") && warm.contains("took 8 from the index cache"),
        "{warm}"
    );
    assert!(!warm.contains("lazily"), "{warm}");
    assert_eq!(warm_classes, cold_classes);
    assert_eq!(cold_classes.len(), 4, "{cold_classes:?}");
}
