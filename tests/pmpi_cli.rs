//! strata's PMPI library, `libstrata_pmpi.so` (the `pmpi` crate), preloaded into real jobs
//! on every MPI stack the suite installs (Open MPI's `mpirun -x LD_PRELOAD=...`, hydra's
//! `mpiexec` passing its environment on): each rank's current MPI call and its arguments
//! are read from the rank's memory (`/proc/PID/mem`, the rank never stopped) and decoded as
//! `strata_pmpi_layout` lays them out; `strata attach` keeps them and its verdict uses them;
//! strata's classes of a job running with the library are those without it; a job that
//! completes prints the same with and without it.

#[path = "support/mpi.rs"]
mod mpi;
#[path = "support/pmpi.rs"]
mod pmpi_library;
#[path = "support/stacks.rs"]
mod stacks;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::MpiJob;
use pmpi_library::{attach_json, library};
use serde_json::Value;
use stacks::{MATRIX_CALLS, Stack};
use std::io::{Read, Seek, SeekFrom};
use std::process::Command;
use strata_pmpi_layout::{self as pmpi, CommWord, PeerWord, PmpiState};
use support::{parts, strata};

/// Where the state lies in `pid`: the library's load address (its first mapping, at file
/// offset 0) plus the symbol's value in its dynamic symbol table.
fn state_address(pid: i32) -> u64 {
    let lib = library();
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let base = maps
        .lines()
        .find(|l| l.ends_with(lib.to_str().unwrap()))
        .and_then(|l| l.split('-').next())
        .map(|a| u64::from_str_radix(a, 16).unwrap())
        .unwrap_or_else(|| panic!("rank {pid} has not loaded {}", lib.display()));
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .expect("nm (binutils)");
    let symbols = String::from_utf8_lossy(&nm.stdout);
    let value = symbols
        .lines()
        .find(|l| l.ends_with(&format!(" {}", pmpi::SYMBOL)))
        .and_then(|l| l.split_whitespace().next())
        .map(|v| u64::from_str_radix(v, 16).unwrap())
        .unwrap_or_else(|| panic!("{} does not export {}", lib.display(), pmpi::SYMBOL));
    base + value
}

/// The rank's state, read from its memory while it runs: a copy is whole when the sequence
/// word is even and unchanged after it (a torn copy is read again, a rank preempted while
/// writing given time to run).
fn read_state(pid: i32) -> PmpiState {
    let at = state_address(pid);
    let mut mem = std::fs::File::open(format!("/proc/{pid}/mem")).unwrap();
    for _ in 0..200 {
        let mut bytes = vec![0u8; pmpi::BYTES];
        mem.seek(SeekFrom::Start(at)).unwrap();
        mem.read_exact(&mut bytes).unwrap();
        let mut sequence = [0u8; 8];
        mem.seek(SeekFrom::Start(at + pmpi::word::SEQUENCE as u64 * 8))
            .unwrap();
        mem.read_exact(&mut sequence).unwrap();
        match pmpi::decode(&bytes) {
            Err(pmpi::LayoutError::Torn) => {}
            Ok(state) if state.sequence != u64::from_le_bytes(sequence) => {}
            other => return other.unwrap_or_else(|e| panic!("rank {pid}: {e}")),
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("rank {pid}: the state was torn 200 times in a row");
}

/// Fortran's bindings reach MPI through the `PMPI_` entries (Open MPI's `mpi_recv_` calls
/// `PMPI_Recv`) or the `MPI_` ones (MPICH's): the library wraps both, so a Fortran rank's
/// call is recorded as a C one is, on the stacks that ship a Fortran wrapper.
#[test]
fn fortran_ranks_are_recorded_through_either_entry() {
    for stack in [Stack::OpenMpi4, Stack::Mpich4] {
        let exe = stack.build(
            "fortran",
            "mpi_matrix.f90",
            &format!("mpi_matrix_f_{}", stack.name()),
        );
        let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
        let states: Vec<PmpiState> = job.ranks.iter().map(|&pid| read_state(pid)).collect();
        let calls: Vec<Option<&str>> = states.iter().map(|s| s.call).collect();
        assert_eq!(calls, MATRIX_CALLS.map(Some), "{stack:?}: {states:#?}");
        assert_eq!(states[0].peer, Some(PeerWord::Rank(3)), "{stack:?}");
        assert_eq!(states[0].communicator, Some(CommWord::World), "{stack:?}");
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

#[test]
fn each_ranks_call_and_its_arguments_are_read_from_its_memory() {
    for stack in Stack::ALL {
        calls_and_arguments_on(stack);
    }
}

fn calls_and_arguments_on(stack: Stack) {
    let exe = stack.build("c", "mpi_matrix.c", &format!("mpi_matrix_{}", stack.name()));
    let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
    let states: Vec<PmpiState> = job.ranks.iter().map(|&pid| read_state(pid)).collect();
    let context = format!("{stack:?}: {states:#?}");
    let calls: Vec<Option<&str>> = states.iter().map(|s| s.call).collect();
    assert_eq!(calls, MATRIX_CALLS.map(Some), "{context}");
    // Rank 0 receives from rank 3 with tag 0 on MPI_COMM_WORLD (Open MPI's handle is a
    // pointer to ompi_mpi_comm_world, at another address in each rank; MPICH's and Intel
    // MPI's the int 0x44000000: the library says which communicator it is).
    assert_eq!(
        (states[0].peer, states[0].tag),
        (Some(PeerWord::Rank(3)), Some(0)),
        "{context}"
    );
    for rank in [0, 2] {
        match stack {
            Stack::OpenMpi4 | Stack::OpenMpi5 => {
                assert!(states[rank].comm > 0xffff_ffff, "a pointer: {context}")
            }
            _ => assert_eq!(states[rank].comm, 0x4400_0000, "{context}"),
        }
        assert_eq!(
            states[rank].communicator,
            Some(CommWord::World),
            "{context}"
        );
    }
    for (rank, s) in states.iter().enumerate() {
        assert_eq!(s.world_rank, Some(rank as i64), "{context}");
    }
    assert_eq!((states[2].peer, states[2].tag), (None, None), "{context}");
    for s in &states {
        assert_eq!(s.entered, s.completed + 1, "one call open: {context}");
    }
    for &pid in &job.ranks {
        target::assert_free(pid);
    }

    // strata's view of the job is the one without the library: the wrappers' frames are
    // the calls' entries, named by their C names.
    let launcher = job.mpirun.id().to_string();
    let result = attach_json(&job, 3, stack);
    let records: Vec<&Value> = result["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["pmpi"])
        .collect();
    assert_eq!(records[0]["call"], "MPI_Recv", "{records:#?}");
    assert_eq!(records[0]["peer"]["rank"], 3, "{records:#?}");
    assert_eq!(records[0]["communicator"], "world", "{records:#?}");
    assert_eq!(records[2]["call"], "MPI_Barrier", "{records:#?}");
    let (code, text, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &launcher,
        "-n",
        "3",
        "--no-files",
        "--no-verdict",
    ]));
    assert_eq!(code, 0, "{stack:?}: {err}");
    let classes = mpi::class_lines(&text);
    let ends: Vec<&str> = classes
        .iter()
        .map(|l| l.rsplit(" > ").next().unwrap())
        .collect();
    assert_eq!(ends, MATRIX_CALLS, "{stack:?}: {text}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

#[test]
fn a_job_with_the_library_completes_with_the_same_output() {
    for stack in Stack::ALL {
        let exe = stack.build(
            "c",
            "pmpi_exchange.c",
            &format!("pmpi_exchange_{}", stack.name()),
        );
        let run = |mut c: Command| {
            let out = c
                .args(["-n", "3"])
                .arg(&exe)
                .output()
                .expect("the launcher (tests/run-all.sh installs every stack)");
            assert!(
                out.status.success(),
                "{stack:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let without = run(stack.launcher());
        let with = run(stack.launcher_with_library(&library()));
        assert!(without.starts_with("checksum "), "{stack:?}: {without}");
        assert_eq!(with, without, "{stack:?}");
    }
}

/// `tests/hangs/split_missing.c`: rank 0 waits in an allreduce on the half {0,2} that
/// `MPI_Comm_split` made, which rank 2 skipped for the barrier on the world where ranks 1
/// and 3 wait. Without the library the half's members are unknown and the verdict leaves it
/// undecided (the corpus checks that); with it, the members are known and the mismatch is
/// proved.
#[test]
fn a_sub_communicator_collective_missing_a_member_is_decided_with_the_library() {
    for stack in Stack::ALL {
        split_missing_on(stack);
    }
}

fn split_missing_on(stack: Stack) {
    let exe = stack.build(
        "c",
        "../../../tests/hangs/split_missing.c",
        &format!("split_missing_{}", stack.name()),
    );
    let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
    let result = attach_json(&job, 3, stack);
    let half = &result["ranks"][0]["pmpi"];
    assert_eq!(half["call"], "MPI_Allreduce", "{stack:?}: {half:#}");
    assert_eq!(
        half["communicator"]["members"],
        serde_json::json!([0, 2]),
        "{stack:?}: {half:#}"
    );
    let verdict = &result["verdict"];
    assert_eq!(
        verdict["kind"], "collective_mismatch",
        "{stack:?}: {verdict:#}"
    );
    assert_eq!(verdict["confidence"], "proved", "{stack:?}: {verdict:#}");
    // Every rank had its record: the verdict says so.
    assert_eq!(verdict["pmpi"]["exact"], "0-3", "{stack:?}: {verdict:#}");
    assert_eq!(verdict["pmpi"]["without"], "", "{stack:?}: {verdict:#}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

/// `tests/hangs/exchange_unsent.c`: a ring exchange rank 3 skips for the barrier. Ranks 0
/// and 2 wait in `MPI_Waitall` for rank 3's messages. Without the library the requests'
/// peers are unknown and the verdict only guesses by progress (the corpus checks that);
/// with it, each waitall's pending receive is from rank 3, which waits in the barrier for
/// them: proved.
#[test]
fn a_waitall_on_a_peer_that_never_sends_is_decided_with_the_library() {
    for stack in Stack::ALL {
        exchange_unsent_on(stack);
    }
}

fn exchange_unsent_on(stack: Stack) {
    let exe = stack.build(
        "c",
        "../../../tests/hangs/exchange_unsent.c",
        &format!("exchange_unsent_{}", stack.name()),
    );
    let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
    let result = attach_json(&job, 3, stack);
    let receives_from = |requests: &[Value], peer: u32| {
        requests
            .iter()
            .any(|r| r["started_by"] == "MPI_Irecv" && r["peer"]["rank"] == peer)
    };
    for rank in [0, 2] {
        let record = &result["ranks"][rank]["pmpi"];
        assert_eq!(record["call"], "MPI_Waitall", "{stack:?}: {record:#}");
        let requests = record["requests"]
            .as_array()
            .unwrap_or_else(|| panic!("{stack:?}: no requests in {record:#}"));
        assert!(receives_from(requests, 3), "{stack:?}: {record:#}");
        // Rank 1's message came: the library looked again, and its receive is not pending.
        assert!(!receives_from(requests, 1), "{stack:?}: {record:#}");
    }
    let verdict = &result["verdict"];
    assert_eq!(
        (&verdict["kind"], &verdict["confidence"], &verdict["ranks"]),
        (
            &Value::from("collective_mismatch"),
            &Value::from("proved"),
            &Value::from("0,2")
        ),
        "{stack:?}: {verdict:#}"
    );
    let summary = verdict["summary"].as_str().unwrap();
    assert!(
        summary.contains("MPI_Waitall on a receive from rank 3 (tag 1)"),
        "{stack:?}: {summary}"
    );
    assert_eq!(verdict["pmpi"]["exact"], "0-3", "{stack:?}: {verdict:#}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

/// `tests/hangs/issend_finalized.c`: rank 0 waits on an `MPI_Issend` to rank 3, which is
/// in `MPI_Finalize` with the others. Without the library it is the one rank left waiting
/// (likely, the corpus checks that); with it, the request is a send to a finished rank:
/// proved.
#[test]
fn a_send_to_a_rank_that_finalized_is_proved_with_the_library() {
    for stack in Stack::ALL {
        let exe = stack.build(
            "c",
            "../../../tests/hangs/issend_finalized.c",
            &format!("issend_finalized_{}", stack.name()),
        );
        let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
        let result = attach_json(&job, 3, stack);
        let record = &result["ranks"][0]["pmpi"];
        assert_eq!(record["call"], "MPI_Wait", "{stack:?}: {record:#}");
        assert_eq!(
            record["requests"],
            serde_json::json!([{
                "started_by": "MPI_Issend",
                "peer": {"rank": 3},
                "tag": 9,
                "communicator": "world"
            }]),
            "{stack:?}: {record:#}"
        );
        let verdict = &result["verdict"];
        assert_eq!(
            (&verdict["kind"], &verdict["confidence"], &verdict["ranks"]),
            (
                &Value::from("message_never_sent"),
                &Value::from("proved"),
                &Value::from("0")
            ),
            "{stack:?}: {verdict:#}"
        );
        let summary = verdict["summary"].as_str().unwrap();
        assert!(
            summary.contains("MPI_Wait on a synchronous send to rank 3 (tag 9)"),
            "{stack:?}: {summary}"
        );
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_poll.c`: rank 0 polls `MPI_Iprobe` for a message nobody sends, the others wait in
/// a barrier. Rank 0's calls keep being counted, as calls that found nothing: its count of
/// calls that got somewhere (what `strata watch` reads as progress) stands still, as the
/// others' does.
#[test]
fn a_polling_rank_is_counted_as_getting_nowhere() {
    for stack in Stack::ALL {
        let exe = stack.build("c", "pmpi_poll.c", &format!("pmpi_poll_{}", stack.name()));
        let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 3);
        let before: Vec<PmpiState> = job.ranks.iter().map(|&pid| read_state(pid)).collect();
        std::thread::sleep(std::time::Duration::from_millis(300));
        let after: Vec<PmpiState> = job.ranks.iter().map(|&pid| read_state(pid)).collect();
        let context = format!("{stack:?}: {before:#?} {after:#?}");
        // Between two of its calls, the rank is in its loop: in MPI_Iprobe or outside MPI.
        assert!(
            matches!(after[0].call, Some("MPI_Iprobe") | None),
            "{context}"
        );
        assert!(
            after[0].found_nothing > before[0].found_nothing + 10,
            "{context}"
        );
        for (b, a) in before.iter().zip(&after) {
            assert_eq!(b.progress(), a.progress(), "{context}");
            assert!(!a.thread_multiple, "{context}");
        }
        assert_eq!(after[1].call, Some("MPI_Barrier"), "{context}");
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_multiple.c`, given `MPI_THREAD_MULTIPLE`: several threads of a rank may be in MPI
/// at once and the library records the last to enter, so `strata attach` does not use the
/// records, and says why; the verdict stands on the stacks as without the library.
#[test]
fn records_of_a_job_with_thread_multiple_are_not_used() {
    for stack in Stack::ALL {
        let exe = stack.build(
            "c",
            "pmpi_multiple.c",
            &format!("pmpi_multiple_{}", stack.name()),
        );
        let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 3);
        assert!(read_state(job.ranks[0]).thread_multiple, "{stack:?}");
        let result = attach_json(&job, 3, stack);
        for rank in 0..3 {
            let record = &result["ranks"][rank]["pmpi"];
            let error = record["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("MPI_THREAD_MULTIPLE"),
                "{stack:?}: {record:#}"
            );
        }
        let verdict = &result["verdict"];
        assert_eq!(verdict["pmpi"]["exact"], "", "{stack:?}: {verdict:#}");
        assert_eq!(verdict["pmpi"]["without"], "0-2", "{stack:?}: {verdict:#}");
        assert_ne!(verdict["confidence"], "proved", "{stack:?}: {verdict:#}");
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_busy_allreduce.c`: every rank in `MPI_Allreduce` in a tight loop, which is in
/// `MPI_Allreduce` in every stack sample as a hung job would be. `strata watch` finds
/// nothing changing in its probes and verifies; with the library, the ranks' counts of
/// calls that got somewhere grow between the verification's samples, so every rank moved
/// and the watch goes on. (Without the library, the same job is reported hung within
/// seconds: nothing a stack sample sees moves.)
#[test]
fn watch_sees_a_busy_collective_move_through_the_librarys_counts() {
    let stack = Stack::OpenMpi4;
    let exe = stack.build(
        "c",
        "pmpi_busy_allreduce.c",
        &format!("pmpi_busy_allreduce_{}", stack.name()),
    );
    let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
    let launcher = job.mpirun.id().to_string();
    let (code, out, err) = parts(&strata(&[
        "watch",
        "--launcher-pid",
        &launcher,
        "--for",
        "30s",
        "--interval",
        "100ms",
    ]));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("not a hang: 4 rank(s) moved: [0-3]"), "{err}");
    assert!(err.contains("no hang in 30 s of watching"), "{err}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

/// A process whose `libstrata_pmpi` is of another layout version (another strata's): the
/// daemon says so in the rank's `pmpi.error` and samples it as without the library.
#[test]
fn a_library_of_another_layout_version_is_named_and_the_rank_still_sampled() {
    let lib = target::compile(
        "pmpi_other_layout.c",
        "libstrata_pmpi_v1.so",
        &["-shared", "-fPIC"],
    );
    let exe = target::compile_linked(
        "pmpi_other_layout_main.c",
        "pmpi_other_layout_main",
        &["-g"],
        &[lib.to_str().unwrap()],
    );
    let t = target::Target::start(&exe, &[]);
    let pid = t.pid().to_string();
    let (code, text, err) = parts(&strata(&[
        "attach",
        "--pids",
        &pid,
        "-n",
        "2",
        "--json",
        "--no-files",
    ]));
    assert_eq!(code, 0, "{err}");
    let result: Value = serde_json::from_str(&text).unwrap();
    let rank = &result["ranks"][0];
    let error = rank["pmpi"]["error"]
        .as_str()
        .unwrap_or_else(|| panic!("{rank:#}"));
    assert!(
        error.contains(&format!(
            "layout version 1, this strata reads version {}",
            pmpi::VERSION
        )),
        "{error}"
    );
    assert!(rank.get("error").is_none(), "sampled fully: {rank:#}");
    let classes = result["classes"].to_string();
    assert!(classes.contains("main"), "{classes}");
    target::assert_free(t.pid());
}

/// `strata run -- LAUNCHER ...` on every stack: the library it writes out (the one
/// embedded in strata) is preloaded in every rank, by `-x` for Open MPI's launchers and
/// through the environment for hydra's, and `strata attach` reads each rank's record.
#[test]
fn strata_run_preloads_the_embedded_library_under_every_launcher() {
    let dir = tempfile::tempdir().unwrap();
    for stack in Stack::ALL {
        let exe = stack.build("c", "mpi_matrix.c", &format!("mpi_matrix_{}", stack.name()));
        let launcher = stack.launcher();
        let mut run = Command::new(support::strata_bin());
        run.args(["run", "--library-dir"])
            .arg(dir.path())
            .arg("--")
            .arg(launcher.get_program())
            .args(launcher.get_args());
        for (key, value) in launcher.get_envs() {
            match value {
                Some(v) => run.env(key, v),
                None => run.env_remove(key),
            };
        }
        let mut dry = Command::new(support::strata_bin());
        dry.args(["run", "--dry-run", "--library-dir"])
            .arg(dir.path())
            .arg("--")
            .arg(launcher.get_program())
            .args(launcher.get_args())
            .envs(launcher.get_envs().filter_map(|(k, v)| Some((k, v?))));
        let (code, line, err) = parts(&dry.output().unwrap());
        assert_eq!(code, 0, "{stack:?}: {err}");
        let open_mpi = matches!(stack, Stack::OpenMpi4 | Stack::OpenMpi5);
        assert_eq!(
            line.contains(" -x LD_PRELOAD="),
            open_mpi,
            "{stack:?}: {line}"
        );
        assert_eq!(
            line.starts_with("LD_PRELOAD="),
            !open_mpi,
            "{stack:?}: {line}"
        );

        let job = MpiJob::launch_with(run, &exe, 4);
        let result = attach_json(&job, 2, stack);
        let calls: Vec<&Value> = result["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["pmpi"]["call"])
            .collect();
        assert_eq!(calls, MATRIX_CALLS, "{stack:?}");
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
    let written: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(written.len(), 1, "one library for every run");
}

/// The line of `pmpi_sites.c` marked `/* @NAME */`.
fn sites_line(name: &str) -> u64 {
    let source =
        std::fs::read_to_string(support::repo_root().join("daemon/tests/fixtures/pmpi_sites.c"))
            .unwrap();
    let marker = format!("/* @{name} */");
    source
        .lines()
        .position(|l| l.contains(&marker))
        .map(|i| i as u64 + 1)
        .unwrap_or_else(|| panic!("no {marker} in pmpi_sites.c"))
}

/// `pmpi_sites.c`: every rank's calls are counted at their call sites (named by function,
/// file and line), the transitions between the sites are counted and timed (the
/// computation between two barriers at `@SECOND` is the program's 20 ms), and the last
/// calls are there in order. The trampolines that pass the call site keep every unwinder
/// walking: the ranks' stacks still reach `main` at the right lines.
#[test]
fn calls_are_counted_at_their_sites_with_the_transitions_between_them() {
    let (first, second, hang, last) = (
        sites_line("FIRST"),
        sites_line("SECOND"),
        sites_line("HANG"),
        sites_line("LAST"),
    );
    for stack in Stack::ALL {
        let exe = stack.build("c", "pmpi_sites.c", &format!("pmpi_sites_{}", stack.name()));
        let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
        let result = attach_json(&job, 3, stack);
        for rank in 0..4usize {
            let record = &result["ranks"][rank]["pmpi"];
            let context = format!("{stack:?} rank {rank}: {record:#}");
            let h = &record["history"];
            let sites = h["sites"].as_array().unwrap_or_else(|| panic!("{context}"));
            let site = |line: u64| {
                sites
                    .iter()
                    .find(|s| {
                        s["line"] == line
                            && s["file"]
                                .as_str()
                                .is_some_and(|f| f.ends_with("pmpi_sites.c"))
                    })
                    .unwrap_or_else(|| panic!("no site at line {line}: {context}"))
            };
            let counts = |s: &Value| (s["entered"].as_u64(), s["completed"].as_u64());
            assert_eq!(site(first)["call"], "MPI_Barrier", "{context}");
            assert_eq!(site(first)["function"], "main", "{context}");
            assert_eq!(counts(site(first)), (Some(3), Some(3)), "{context}");
            assert_eq!(counts(site(second)), (Some(5), Some(5)), "{context}");
            let blocked = if rank == 0 { hang } else { last };
            assert_eq!(counts(site(blocked)), (Some(1), Some(0)), "{context}");
            assert!(
                h["in_call_ns"].as_u64().is_some_and(|ns| ns > 0),
                "{context}"
            );
            let index = |line| site(line)["index"].as_u64().unwrap();
            let (a, b) = (index(first), index(second));
            let transition = |from: Option<u64>, to: u64| {
                h["transitions"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["from"].as_u64() == from && t["to"].as_u64() == Some(to))
                    .unwrap_or_else(|| panic!("no transition {from:?} -> {to}: {context}"))
            };
            assert_eq!(transition(None, a)["count"], 1, "{context}");
            assert_eq!(transition(Some(a), a)["count"], 2, "{context}");
            assert_eq!(transition(Some(a), b)["count"], 1, "{context}");
            assert_eq!(transition(Some(b), b)["count"], 4, "{context}");
            assert_eq!(transition(Some(b), index(blocked))["count"], 1, "{context}");
            // The program computes for 20 ms between two barriers at @SECOND.
            let between = transition(Some(b), b)["between"]["mean_ns"]
                .as_u64()
                .unwrap_or_else(|| panic!("no times: {context}"));
            assert!(
                (15_000_000..1_000_000_000).contains(&between),
                "{between} ns between: {context}"
            );
            let events: Vec<u64> = h["events"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e["site"].as_u64().unwrap())
                .collect();
            assert_eq!(events, [a, a, a, b, b, b, b, b], "{context}");
            assert_eq!(h["calls"], 8, "{context}");
        }
        // The ranks' stacks walk through the trampolines to the lines they block at.
        let states = result["verdict"]["states"].as_array().unwrap();
        for (ranks, call, line) in [("0", "MPI_Recv", hang), ("1-3", "MPI_Barrier", last)] {
            let group = states
                .iter()
                .find(|g| g["ranks"] == ranks)
                .unwrap_or_else(|| panic!("{stack:?}: no group {ranks}: {states:#?}"));
            assert_eq!(group["call"]["name"], call, "{stack:?}: {group:#}");
            assert_eq!(group["call_site"]["line"], line, "{stack:?}: {group:#}");
        }
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_persistent.c` in `mode` on 3 ranks of `stack`, with the library.
fn persistent_job(stack: Stack, mode: &str) -> MpiJob {
    let exe = stack.build(
        "c",
        "pmpi_persistent.c",
        &format!("pmpi_persistent_{}", stack.name()),
    );
    MpiJob::launch_with_args(stack.launcher_with_library(&library()), &exe, 3, &[mode])
}

/// `pmpi_persistent.c`: a ring exchange on persistent requests (`MPI_Recv_init`,
/// `MPI_Send_init`, `MPI_Startall`) that rank 2 skips the eleventh time. Rank 0's waitall
/// has its receive from rank 2 pending, recorded at the request's making; rank 2 waits in
/// the barrier for rank 0: proved. `MPI_Startall` is counted at its site like any call.
#[test]
fn a_waitall_on_persistent_requests_is_decided_with_the_library() {
    for stack in Stack::ALL {
        let job = persistent_job(stack, "persistent");
        let result = attach_json(&job, 3, stack);
        let record = &result["ranks"][0]["pmpi"];
        assert_eq!(record["call"], "MPI_Waitall", "{stack:?}: {record:#}");
        let requests = record["requests"]
            .as_array()
            .unwrap_or_else(|| panic!("{stack:?}: no requests in {record:#}"));
        assert!(
            requests
                .iter()
                .any(|r| r["started_by"] == "MPI_Recv_init" && r["peer"]["rank"] == 2),
            "{stack:?}: {record:#}"
        );
        // Two sites: the loop's ten, the eleventh's one.
        let mut startalls: Vec<u64> = record["history"]["sites"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["call"] == "MPI_Startall")
            .map(|s| s["completed"].as_u64().unwrap())
            .collect();
        startalls.sort_unstable();
        assert_eq!(startalls, [1, 10], "{stack:?}: {record:#}");
        let verdict = &result["verdict"];
        assert_eq!(verdict["confidence"], "proved", "{stack:?}: {verdict:#}");
        assert_eq!(verdict["ranks"], "0", "{stack:?}: {verdict:#}");
        let summary = verdict["summary"].as_str().unwrap();
        assert!(
            summary.contains("a receive from rank 2 (tag 7)"),
            "{stack:?}: {summary}"
        );
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_persistent.c ibarrier`: ranks 0 and 1 wait on an `MPI_Ibarrier` rank 2 never
/// joins. Their records name the collective; who it waits for depends on which members
/// started it, which no record says, so the verdict does not blame anyone for it.
#[test]
fn a_wait_on_a_nonblocking_collective_is_named_and_left_undecided() {
    for stack in Stack::ALL {
        let job = persistent_job(stack, "ibarrier");
        let result = attach_json(&job, 3, stack);
        for rank in [0, 1] {
            let record = &result["ranks"][rank]["pmpi"];
            assert_eq!(record["call"], "MPI_Wait", "{stack:?}: {record:#}");
            assert_eq!(
                record["requests"][0]["started_by"], "MPI_Ibarrier",
                "{stack:?}: {record:#}"
            );
            assert_eq!(
                record["requests"][0]["communicator"], "world",
                "{stack:?}: {record:#}"
            );
        }
        let verdict = &result["verdict"];
        let text = verdict.to_string();
        assert!(
            text.contains("MPI_Ibarrier on MPI_COMM_WORLD"),
            "{stack:?}: {verdict:#}"
        );
        assert_ne!(verdict["confidence"], "proved", "{stack:?}: {verdict:#}");
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// `pmpi_sites.c` hangs after eight quick calls: too soon for the statistical test to have
/// learned anything (it verifies only after 50 uninformative probes). The ranks' MPI
/// histories say at once that none made a transition for over a second, far past the
/// longest any went between two (about 24 ms): the watch verifies and reports the hang.
#[test]
fn watch_verifies_at_once_when_no_rank_made_an_mpi_transition_for_long() {
    let stack = Stack::OpenMpi4;
    let exe = stack.build("c", "pmpi_sites.c", &format!("pmpi_sites_{}", stack.name()));
    let job = MpiJob::launch_with(stack.launcher_with_library(&library()), &exe, 4);
    let launcher = job.mpirun.id().to_string();
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let (code, out, err) = parts(&strata(&[
        "watch",
        "--launcher-pid",
        &launcher,
        "--for",
        "60s",
        "--interval",
        "100ms",
        "--report-dir",
        report.to_str().unwrap(),
    ]));
    assert_eq!(code, 3, "a hang:\n{out}\n{err}");
    assert!(
        err.contains("no monitored rank made an MPI transition for"),
        "{err}"
    );
    assert!(err.contains("hang verified"), "{err}");
    assert!(
        out.contains("none of the 4 monitored ranks had made an MPI transition"),
        "{out}"
    );
    assert!(
        out.contains(" s or more, by strata's PMPI library"),
        "{out}"
    );
    assert!(report.join("result.json").exists(), "{err}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}
