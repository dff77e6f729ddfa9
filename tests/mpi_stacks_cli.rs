//! strata on every MPI stack a user has: Debian's Open MPI 4 and MPICH 4 (apt), Open MPI
//! 5, MPICH 5 and Intel MPI (PyPI wheels, installed by `tests/mpi/stacks.sh` under
//! `target/mpi-stacks/`; Intel MPI runs the program MPICH 5 built).
//!
//! On each, `daemon/tests/fixtures/mpi_matrix.c` hangs with rank 0 in `MPI_Recv`, rank 1
//! in `MPI_Waitall`, rank 2 in `MPI_Barrier` and rank 3 in `MPI_Finalize`, and `strata
//! attach --launcher-pid` (Open MPI 5's `prterun`, hydra's `mpiexec`) must give four
//! classes, each ending at its MPI call (cut below MPI, whatever the library does inside:
//! MPICH 5's and Intel MPI's stripped libraries jump from the entry into unnamed internals,
//! Open MPI's `PMPI_Finalize` into `ompi_mpi_finalize`), the verdict's states naming each
//! rank's call, and every rank free afterwards. The views name each call by its C name at
//! function and line granularity; with `--threads`, the MPI runtime's own threads are
//! recognised and left out. Fortran on the stacks whose packages ship a Fortran wrapper
//! (Debian's).
//!
//! A stack that is not installed fails its test, naming the command that installs it.

#[path = "support/mpi.rs"]
mod mpi;
#[path = "support/stacks.rs"]
mod stacks;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::MpiJob;
use serde_json::Value;
use stacks::Stack;
use std::path::PathBuf;
use support::{parts, strata};

/// `mpi_matrix` in `language` built for `stack`.
fn build(stack: Stack, language: &str) -> PathBuf {
    let (source, name) = match language {
        "fortran" => ("mpi_matrix.f90", format!("mpi_matrix_f_{}", stack.name())),
        _ => ("mpi_matrix.c", format!("mpi_matrix_{}", stack.name())),
    };
    stack.build(language, source, &name)
}

use stacks::MATRIX_CALLS as CALLS;

fn attach_and_check(stack: Stack, language: &str) {
    let exe = build(stack, language);
    let job = MpiJob::launch_with(stack.launcher(), &exe, 4);
    let dir = tempfile::tempdir().unwrap();
    let launcher = job.mpirun.id().to_string();
    let out = strata(&[
        "attach",
        "--launcher-pid",
        &launcher,
        "-n",
        "5",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    let (code, text, err) = parts(&out);
    let context = format!("{stack:?} {language}: exit {code}\n{text}\n{err}");
    assert!(text.contains("4 of 4 ranks"), "{context}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
    let result: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("result.json")).expect("result.json"),
    )
    .unwrap();
    // Four classes, each ending at an MPI entry (the file keeps the library's names, Open
    // MPI's `ompi_mpi_finalize` among them): cut below MPI applied on every stack.
    let classes = result["classes"].as_array().expect("classes");
    assert_eq!(classes.len(), 4, "{context}");
    for class in classes {
        for path in class["paths"].as_array().unwrap() {
            let last = path.as_array().unwrap().last().unwrap().as_str().unwrap();
            assert!(
                strata_filters::mpi::call_named(last).is_some(),
                "a class ends at {last}, not an MPI call: {context}"
            );
        }
    }
    // The verdict reads each rank's call by its C name.
    let states = result["verdict"]["states"].as_array().expect("states");
    for (rank, call) in CALLS.iter().enumerate() {
        let state = states
            .iter()
            .find(|s| s["ranks"].as_str().and_then(|r| r.parse::<usize>().ok()) == Some(rank))
            .unwrap_or_else(|| panic!("no state of rank {rank} alone: {context}"));
        assert_eq!(state["state"], "in_mpi", "rank {rank}: {context}");
        assert_eq!(state["call"]["name"], *call, "rank {rank}: {context}");
    }
    // The views name each call by its C name, whatever the library spells, at function
    // and at line granularity (the same call from the same call site is one class, without
    // the library's own lines), and the file keeps the library's frames with the C name.
    assert_eq!(class_ends(&text), CALLS, "{context}");
    let saved = dir.path().join("result.json");
    let (code, lines, err) = parts(&strata(&[
        "view",
        saved.to_str().unwrap(),
        "-g",
        "line",
        "--print",
        "--no-verdict",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        class_ends(&lines),
        CALLS,
        "line granularity: {context}\n{lines}"
    );
    let named: Vec<&str> = result["trees"]["3d"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["frame"]["mpi_call"].as_str())
        .collect();
    for call in CALLS {
        assert!(named.contains(&call), "no frame says {call}: {context}");
    }
    threads_of_the_runtime_are_recognised(stack, language, &launcher, &job);
}

/// The last frame of each class of a text tree, in the order printed (smallest classes
/// first, ties by lowest rank: here rank order).
fn class_ends(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.contains("equivalence classes"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.rsplit(" > ").next().unwrap().trim())
        .collect()
}

/// With every thread sampled, the MPI runtime's own threads (Open MPI's and PMIx's progress
/// engines, UCX's event thread; Intel MPI starts none here) are recognised and left out of
/// the classes: `mpi_matrix` starts no thread of its own, so every thread but the ranks'
/// main threads is the runtime's. `--runtime-threads` shows them.
fn threads_of_the_runtime_are_recognised(
    stack: Stack,
    language: &str,
    launcher: &str,
    job: &MpiJob,
) {
    let dir = tempfile::tempdir().unwrap();
    let out = strata(&[
        "attach",
        "--launcher-pid",
        launcher,
        "--threads",
        "-n",
        "2",
        "-o",
        dir.path().to_str().unwrap(),
    ]);
    let (code, text, err) = parts(&out);
    let context = format!("{stack:?} {language} --threads: exit {code}\n{text}\n{err}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
    assert_eq!(class_ends(&text), CALLS, "{context}");
    // One path per class: the main thread's (a class of several threads joins their paths
    // with ` | `).
    assert!(!text.contains(" | "), "{context}");
    let saved = dir.path().join("result.json");
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).expect("result.json")).unwrap();
    let threads = result["threads"].as_array().expect("threads");
    let pids: Vec<u64> = result["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["pid"].as_u64())
        .collect();
    let (runtime, program): (Vec<&Value>, Vec<&Value>) =
        threads.iter().partition(|t| t["runtime"] == true);
    assert!(
        program
            .iter()
            .all(|t| pids.contains(&t["tid"].as_u64().unwrap())),
        "a thread besides the main threads is not the runtime's: {context}"
    );
    let header = text.lines().find(|l| l.starts_with("job ")).unwrap();
    if runtime.is_empty() {
        assert!(!header.contains("runtime"), "{context}");
        return;
    }
    assert!(
        header.contains(&format!("{} MPI runtime threads hidden", runtime.len())),
        "{context}"
    );
    let (code, shown, err) = parts(&strata(&[
        "view",
        saved.to_str().unwrap(),
        "--runtime-threads",
        "--print",
        "--no-verdict",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(
        !shown.contains("runtime threads hidden") && shown.contains(" | "),
        "--runtime-threads shows them: {context}\n{shown}"
    );
}

/// The verdict's reads on `stack`: `tests/hangs/comm_param.c`, a ring of four whose
/// communicator and neighbours are a function's parameters, read from the calling frame
/// and decoded by the library's ABI (Open MPI's pointer to `ompi_mpi_comm_world`, MPICH's
/// and Intel MPI's handle `0x44000000`): a deadlock cycle of all four.
fn verdict_reads_a_communicator_parameter(stack: Stack) {
    let compiler = stack.compiler("c").unwrap();
    let exe = target::compile_with(
        compiler.to_str().unwrap(),
        "../../../tests/hangs/comm_param.c",
        &format!("comm_param_{}", stack.name()),
        &["-O0", "-g"],
    );
    let job = MpiJob::launch_with(stack.launcher(), &exe, 4);
    let launcher = job.mpirun.id().to_string();
    let out = strata(&[
        "attach",
        "--launcher-pid",
        &launcher,
        "-n",
        "3",
        "--json",
        "--no-files",
    ]);
    let (code, text, err) = parts(&out);
    let result: Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{stack:?}: exit {code}, {e}\n{text}\n{err}"));
    let verdict = &result["verdict"];
    assert_eq!(verdict["kind"], "deadlock_cycle", "{stack:?}: {verdict:#}");
    assert_eq!(verdict["ranks"], "0-3", "{stack:?}: {verdict:#}");
    for edge in verdict["wait_for"]["edges"].as_array().unwrap() {
        assert_eq!(
            edge["communicator"], "MPI_COMM_WORLD",
            "{stack:?}: {verdict:#}"
        );
    }
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

#[test]
fn the_verdict_decodes_each_abi() {
    for stack in [
        Stack::OpenMpi4,
        Stack::Mpich4,
        Stack::OpenMpi5,
        Stack::Mpich5,
        Stack::IntelMpi,
    ] {
        verdict_reads_a_communicator_parameter(stack);
    }
}

#[test]
fn debian_open_mpi_4() {
    attach_and_check(Stack::OpenMpi4, "c");
}

#[test]
fn debian_open_mpi_4_fortran() {
    attach_and_check(Stack::OpenMpi4, "fortran");
}

#[test]
fn debian_mpich_4() {
    attach_and_check(Stack::Mpich4, "c");
}

#[test]
fn debian_mpich_4_fortran() {
    attach_and_check(Stack::Mpich4, "fortran");
}

#[test]
fn open_mpi_5_under_prterun() {
    attach_and_check(Stack::OpenMpi5, "c");
}

#[test]
fn mpich_5_stripped() {
    attach_and_check(Stack::Mpich5, "c");
}

#[test]
fn intel_mpi_runs_the_mpich_binary() {
    attach_and_check(Stack::IntelMpi, "c");
}
