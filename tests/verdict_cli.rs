//! The verdict's evidence end to end: each hung program of `tests/hangs/` runs under real
//! Open MPI, `strata attach` samples it through the tree, and the `verdict` object of its
//! `result.json` must say, for every rank, what the program's header says it does.
//!
//! A program states its expectations in its header comment, written with the program and
//! before strata's output was looked at:
//!
//! ```text
//! strata-corpus: ranks 4
//! strata-expect: state 0-1 in_mpi MPI_Recv @RECV unchanged
//! strata-expect: state 2 outside_mpi @SPIN unchanged signal_handler
//! strata-expect: motion 0-3 changed
//! ```
//!
//! A `state` line names a group of ranks exactly: their state, the MPI call, the line the
//! program called it from (or, outside MPI, the program's innermost line), marked in the
//! source by a `/* @NAME */` comment, and their motion; the groups of a program must cover
//! its ranks. A `motion` line only asks every rank of the set to have that motion (a job
//! that moves is anywhere at its last sample). An expected `unchanged` also accepts
//! `partly_seen` (no change seen, but a sample could not stop the rank in time: a loaded
//! machine), never `changed`.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::MpiJob;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use support::{parts, repo_root, strata};

fn hangs_dir() -> PathBuf {
    repo_root().join("tests/hangs")
}

/// Compiles `tests/hangs/<name>.c` with mpicc at `-O0 -g`.
fn build(name: &str) -> PathBuf {
    let out = target::build_dir().join(format!("hang_{name}"));
    let result = Command::new("mpicc")
        .args(["-O0", "-g", "-o"])
        .arg(&out)
        .arg(hangs_dir().join(format!("{name}.c")))
        .output()
        .expect("mpicc (libopenmpi-dev) is needed by this test");
    assert!(
        result.status.success(),
        "compiling {name}.c: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    out
}

/// What a program's header expects.
#[derive(Debug)]
enum Expect {
    State {
        ranks: String,
        state: String,
        call: Option<String>,
        line: u32,
        motion: String,
        signal_handler: bool,
    },
    Motion {
        ranks: Vec<u32>,
        motion: String,
    },
}

/// The line holding `/* @NAME */` in `source`; exactly one must.
fn marker_line(source: &str, name: &str) -> u32 {
    let tag = format!("/* @{name} */");
    let lines: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&tag))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "marker @{name} on lines {lines:?}");
    lines[0] as u32
}

fn rank_list(text: &str) -> Vec<u32> {
    let mut ranks = Vec::new();
    for part in text.split(',') {
        match part.split_once('-') {
            Some((a, b)) => ranks.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => ranks.push(part.parse().unwrap()),
        }
    }
    ranks
}

/// The program's rank count and expectations.
fn expectations(source: &str) -> (usize, Vec<Expect>) {
    let mut ranks = None;
    let mut expect = Vec::new();
    for line in source.lines() {
        let line = line.trim_start_matches([' ', '*', '/']);
        if let Some(rest) = line.strip_prefix("strata-corpus: ranks ") {
            ranks = Some(rest.trim().parse().expect("a rank count"));
        }
        let Some(rest) = line.strip_prefix("strata-expect: ") else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        match words[0] {
            "state" => {
                let call = words
                    .iter()
                    .find(|w| w.starts_with("MPI_"))
                    .map(|w| w.to_string());
                let mark = words
                    .iter()
                    .find_map(|w| w.strip_prefix('@'))
                    .expect("@MARK");
                let at = words.iter().position(|w| w.starts_with('@')).unwrap();
                expect.push(Expect::State {
                    ranks: words[1].to_string(),
                    state: words[2].to_string(),
                    call,
                    line: marker_line(source, mark),
                    motion: words[at + 1].to_string(),
                    signal_handler: words.contains(&"signal_handler"),
                });
            }
            "motion" => expect.push(Expect::Motion {
                ranks: rank_list(words[1]),
                motion: words[2].to_string(),
            }),
            other => panic!("unknown expectation {other}"),
        }
    }
    (ranks.expect("a strata-corpus line"), expect)
}

fn motion_matches(expected: &str, got: &str) -> bool {
    expected == got || (expected == "unchanged" && got == "partly_seen")
}

/// Runs `tests/hangs/<name>.c`, attaches, and checks the verdict's states against the
/// program's header.
fn check(name: &str) {
    let source = std::fs::read_to_string(hangs_dir().join(format!("{name}.c"))).unwrap();
    let (np, expected) = expectations(&source);
    let exe = build(name);
    let job = MpiJob::start(&exe, np);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("result");
    let (code, out, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "-n",
        "15",
        "--interval",
        "50ms",
        "-o",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{out}\n{err}");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("result.json")).unwrap())
            .unwrap();
    let states = file["verdict"]["states"]
        .as_array()
        .expect("verdict.states")
        .clone();
    let context = || {
        format!(
            "{name}: {}\n{out}",
            serde_json::to_string_pretty(&states).unwrap()
        )
    };
    let groups_expected = expected
        .iter()
        .filter(|e| matches!(e, Expect::State { .. }))
        .count();
    if groups_expected > 0 {
        assert_eq!(states.len(), groups_expected, "{}", context());
    }
    for e in &expected {
        match e {
            Expect::State {
                ranks,
                state,
                call,
                line,
                motion,
                signal_handler,
            } => {
                let group = states
                    .iter()
                    .find(|g| g["ranks"] == ranks.as_str())
                    .unwrap_or_else(|| panic!("no group of ranks {ranks}: {}", context()));
                assert_eq!(group["state"], state.as_str(), "{}", context());
                assert_eq!(
                    group["call"]["name"].as_str(),
                    call.as_deref(),
                    "{}",
                    context()
                );
                let place = if state == "in_mpi" {
                    &group["call_site"]
                } else {
                    &group["at"]
                };
                assert_eq!(place["line"], *line, "ranks {ranks}: {}", context());
                let file = place["file"].as_str().unwrap_or_default();
                assert!(
                    file.ends_with(&format!("{name}.c")),
                    "{file}: {}",
                    context()
                );
                let got = group["motion"].as_str().unwrap();
                assert!(
                    motion_matches(motion, got),
                    "ranks {ranks} {got}: {}",
                    context()
                );
                assert_eq!(
                    group["signal_handler"].as_bool().unwrap_or(false),
                    *signal_handler,
                    "{}",
                    context()
                );
            }
            Expect::Motion { ranks, motion } => {
                for &rank in ranks {
                    let group = states
                        .iter()
                        .find(|g| rank_list(g["ranks"].as_str().unwrap()).contains(&rank))
                        .unwrap_or_else(|| panic!("rank {rank} in no group: {}", context()));
                    let got = group["motion"].as_str().unwrap();
                    assert!(
                        motion_matches(motion, got),
                        "rank {rank} {got}: {}",
                        context()
                    );
                }
            }
        }
    }
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

#[test]
fn a_receive_cycle_two_ranks_in_mpi_recv_at_their_line() {
    check("recv_cycle");
}

#[test]
fn a_rank_stuck_computing_is_outside_mpi_at_its_loop() {
    check("stuck_computing");
}

#[test]
fn ranks_in_open_mpi_finalize_are_in_mpi_finalize() {
    check("finalize_recv");
}

#[test]
fn a_handler_that_never_returns_is_where_the_rank_is() {
    check("signal_stall");
}

#[test]
fn a_wait_on_a_receive_is_a_completion_call() {
    check("irecv_wait");
}

#[test]
fn a_job_that_computes_and_communicates_is_seen_moving() {
    check("not_hung");
}

/// Every program of the corpus has a test above and states what it expects.
#[test]
fn every_program_of_the_corpus_is_checked() {
    let this = std::fs::read_to_string(repo_root().join("tests/verdict_cli.rs")).unwrap();
    for entry in std::fs::read_dir(hangs_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("c") {
            continue;
        }
        let name = path.file_stem().unwrap().to_str().unwrap();
        assert!(
            this.contains(&format!("check(\"{name}\")")),
            "{name}.c has no test"
        );
        let (_, expected) = expectations(&std::fs::read_to_string(&path).unwrap());
        assert!(!expected.is_empty(), "{name}.c states no expectation");
    }
}
