//! The verdict's evidence end to end: each hung program of `tests/hangs/` runs under real
//! Open MPI, `strata attach` samples it through the tree, and the `verdict` object of its
//! `result.json` must say, for every rank, what the program's header says it does.
//!
//! A program states its expectations in its header comment, written with the program and
//! before strata's output was looked at:
//!
//! ```text
//! strata-corpus: ranks 4 [flags -O2 | threads]
//! strata-expect: state 0-1 in_mpi MPI_Recv @RECV unchanged
//! strata-expect: state 2 outside_mpi @SPIN unchanged signal_handler
//! strata-expect: motion 0-3 changed
//! strata-expect: verdict undecided 0-1 @RECV
//! ```
//!
//! A `state` line names a group of ranks exactly: their state, the MPI call, the line the
//! program called it from (or, outside MPI, the program's innermost line), marked in the
//! source by a `/* @NAME */` (Fortran: `! @NAME`) comment, and their motion; every group
//! strata finds must be one a `state` line names or lie inside `motion` lines. A `motion`
//! line only asks every rank of the set to have that motion (a job that moves is anywhere
//! at its last sample). An expected `unchanged` also accepts `partly_seen` (no change seen,
//! but a sample could not stop the rank in time: a loaded machine), never `changed`.
//! `other_thread` on a `state` line says the state is another thread's than the main
//! thread's. A `verdict` line gives the verdict's kind, the ranks it names and the line
//! where the first of them is.
//!
//! C programs build with mpicc, `.cpp` with mpicxx, `.f90` with mpif90, at `-O0` unless
//! `flags` say otherwise; `threads` attaches with `--threads`.

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

/// Compiles `tests/hangs/<file>` with `-g` and `flags` (`-O0` unless they say otherwise):
/// C with mpicc, C++ (`.cpp`) with mpicxx, Fortran (`.f90`) with mpif90.
fn build(file: &str, flags: &[String]) -> PathBuf {
    let (name, compiler) = if let Some(name) = file.strip_suffix(".f90") {
        (name, "mpif90")
    } else if let Some(name) = file.strip_suffix(".cpp") {
        (name, "mpicxx")
    } else {
        (file.trim_end_matches(".c"), "mpicc")
    };
    let out = target::build_dir().join(format!("hang_{name}"));
    let optimise: &[String] = if flags.is_empty() {
        &["-O0".to_string()]
    } else {
        flags
    };
    let result = Command::new(compiler)
        .arg("-g")
        .args(optimise)
        .arg("-o")
        .arg(&out)
        .arg(hangs_dir().join(file))
        .output()
        .unwrap_or_else(|e| panic!("{compiler} (libopenmpi-dev, gfortran) is needed: {e}"));
    assert!(
        result.status.success(),
        "compiling {file}: {}",
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
        other_thread: bool,
    },
    Motion {
        ranks: Vec<u32>,
        motion: String,
    },
    Verdict {
        kind: String,
        ranks: String,
        line: Option<u32>,
    },
}

/// The line holding `/* @NAME */` (C) or ending in `! @NAME` (Fortran) in `source`;
/// exactly one must.
fn marker_line(source: &str, name: &str) -> u32 {
    let c = format!("/* @{name} */");
    let fortran = format!("! @{name}");
    let lines: Vec<usize> = source
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&c) || l.trim_end().ends_with(&fortran))
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

/// How a program is run: its rank count and compiler flags.
struct Corpus {
    ranks: usize,
    flags: Vec<String>,
    /// Sample every thread (`--threads`).
    threads: bool,
}

/// The program's `strata-corpus:` line and expectations.
fn expectations(source: &str) -> (Corpus, Vec<Expect>) {
    let mut corpus = None;
    let mut expect = Vec::new();
    for line in source.lines() {
        let line = line.trim_start_matches([' ', '*', '/', '!']);
        if let Some(rest) = line.strip_prefix("strata-corpus: ranks ") {
            let mut words = rest.split_whitespace();
            let ranks = words
                .next()
                .and_then(|r| r.parse().ok())
                .expect("a rank count");
            let (mut flags, mut threads) = (Vec::new(), false);
            match words.next() {
                Some("flags") => flags = words.map(str::to_string).collect(),
                Some("threads") => threads = true,
                Some(other) => panic!("unknown corpus setting {other}"),
                None => {}
            }
            corpus = Some(Corpus {
                ranks,
                flags,
                threads,
            });
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
                    other_thread: words.contains(&"other_thread"),
                });
            }
            "verdict" => expect.push(Expect::Verdict {
                kind: words[1].to_string(),
                ranks: words[2].to_string(),
                line: words
                    .get(3)
                    .and_then(|w| w.strip_prefix('@'))
                    .map(|mark| marker_line(source, mark)),
            }),
            "motion" => expect.push(Expect::Motion {
                ranks: rank_list(words[1]),
                motion: words[2].to_string(),
            }),
            other => panic!("unknown expectation {other}"),
        }
    }
    (corpus.expect("a strata-corpus line"), expect)
}

fn motion_matches(expected: &str, got: &str) -> bool {
    expected == got || (expected == "unchanged" && got == "partly_seen")
}

/// Runs `tests/hangs/<file>`, attaches, and checks the verdict's states against the
/// program's header.
fn check(file: &str) {
    let name = file.split('.').next().unwrap();
    let source = std::fs::read_to_string(hangs_dir().join(file)).unwrap();
    let (corpus, expected) = expectations(&source);
    let exe = build(file, &corpus.flags);
    let job = MpiJob::start(&exe, corpus.ranks);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("result");
    let launcher = job.mpirun.id().to_string();
    let mut args = vec![
        "attach",
        "--launcher-pid",
        &launcher,
        "-n",
        "15",
        "--interval",
        "50ms",
        "-o",
        out_dir.to_str().unwrap(),
    ];
    if corpus.threads {
        args.push("--threads");
    }
    let (code, out, err) = parts(&strata(&args));
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
    // Every group is one a `state` line names, or its ranks are all in `motion` lines.
    for group in &states {
        let ranks = group["ranks"].as_str().unwrap();
        let named = expected.iter().any(|e| match e {
            Expect::State { ranks: r, .. } => r == ranks,
            Expect::Motion { ranks: r, .. } => rank_list(ranks).iter().all(|x| r.contains(x)),
            Expect::Verdict { .. } => false,
        });
        assert!(named, "group {ranks} is not expected: {}", context());
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
                other_thread,
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
                    [".c", ".cpp", ".f90"]
                        .iter()
                        .any(|ext| file.ends_with(&format!("/{name}{ext}"))),
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
                assert_eq!(
                    group["other_thread"].as_bool().unwrap_or(false),
                    *other_thread,
                    "{}",
                    context()
                );
            }
            Expect::Verdict { kind, ranks, line } => {
                let verdict = &file["verdict"];
                let context = || format!("{name}: {verdict:#}");
                assert_eq!(verdict["kind"], kind.as_str(), "{}", context());
                assert_eq!(verdict["ranks"], ranks.as_str(), "{}", context());
                if let Some(line) = line {
                    assert_eq!(verdict["culprits"][0]["at"]["line"], *line, "{}", context());
                }
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
    check("recv_cycle.c");
}

#[test]
fn a_receive_cycle_of_three() {
    check("recv_cycle3.c");
}

#[test]
fn synchronous_sends_to_each_other() {
    check("ssend_cycle.c");
}

#[test]
fn a_rank_stuck_computing_is_outside_mpi_at_its_loop() {
    check("stuck_computing.c");
}

#[test]
fn ranks_in_open_mpi_finalize_are_in_mpi_finalize() {
    check("finalize_recv.c");
}

#[test]
fn a_handler_that_never_returns_is_where_the_rank_is() {
    check("signal_stall.c");
}

#[test]
fn a_wait_on_a_receive_is_a_completion_call() {
    check("irecv_wait.c");
}

#[test]
fn two_collectives_that_do_not_match() {
    check("collective_mismatch.c");
}

#[test]
fn a_rank_missing_from_a_collective_on_a_sub_communicator() {
    check("split_missing.c");
}

#[test]
fn a_probe_from_any_source_that_nobody_answers() {
    check("probe_any.c");
}

#[test]
fn a_one_sided_fence_that_one_rank_skips() {
    check("rma_fence.c");
}

#[test]
fn at_o2_the_call_site_is_the_inlined_functions_line() {
    check("inlined_o2.c");
}

#[test]
fn with_threads_a_rank_is_its_thread_inside_mpi() {
    check("thread_recv.c");
}

#[test]
fn cpp_at_o2_through_an_inlined_template_member() {
    check("cpp_o2.cpp");
}

#[test]
fn sendrecv_with_tags_that_do_not_match() {
    check("sendrecv_tags.c");
}

#[test]
fn a_waitall_on_a_receive_whose_sender_finished() {
    check("waitall_finalized.c");
}

#[test]
fn a_ring_exchange_one_rank_skips_is_a_guess_without_the_library() {
    check("exchange_unsent.c");
}

#[test]
fn a_synchronous_send_to_a_finished_rank_waited_on_by_request() {
    check("issend_finalized.c");
}

#[test]
fn a_synchronous_send_nobody_receives() {
    check("ssend_unreceived.c");
}

#[test]
fn fortran_calls_are_named_by_their_c_names() {
    check("fortran_cycle.f90");
}

#[test]
fn a_job_that_computes_and_communicates_is_seen_moving() {
    check("not_hung.c");
}

#[test]
fn a_slow_rank_is_seen_moving_while_the_others_wait() {
    check("slow_rank.c");
}

/// Every program of the corpus has a test above and states what it expects.
#[test]
fn a_ring_through_a_communicator_parameter() {
    check("comm_param.c");
}

#[test]
fn peers_the_graph_cannot_read_leave_the_least_progressed_rank() {
    check("neighbour_array.c");
}

#[test]
fn at_o2_the_peers_come_from_the_calls_dwarf() {
    check("ring_o2.c");
}

#[test]
fn a_broadcast_against_a_reduction() {
    check("bcast_reduce.c");
}

#[test]
fn every_program_of_the_corpus_is_checked() {
    let this = std::fs::read_to_string(repo_root().join("tests/verdict_cli.rs")).unwrap();
    for entry in std::fs::read_dir(hangs_dir()).unwrap() {
        let path = entry.unwrap().path();
        let file = path.file_name().unwrap().to_str().unwrap();
        if ![".c", ".cpp", ".f90"].iter().any(|ext| file.ends_with(ext)) {
            continue;
        }
        assert!(
            this.contains(&format!("check(\"{file}\")")),
            "{file} has no test"
        );
        let (_, expected) = expectations(&std::fs::read_to_string(&path).unwrap());
        assert!(!expected.is_empty(), "{file} states no expectation");
    }
}
