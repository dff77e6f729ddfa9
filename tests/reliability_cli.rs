//! Reliability regressions, one test per defect, each named after what it guards
//! (docs/RELIABILITY.md lists them): no false result under load, no lost daemon, every bad
//! input refused cleanly. Real processes, real Open MPI; every target is checked to be
//! running and untraced afterwards.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::{MpiJob, class_lines};
use support::{parts, strata};
use target::assert_free;

/// What a clean attach never prints: a lost daemon, a rank strata could not attach to
/// (its own daemon's leftovers), or a kernel state it did not see.
const FALSE_OR_LOST: [&str; 6] = [
    "silent for",
    "did not answer",
    "unreachable",
    "not attached",
    "already traced",
    "uninterruptible",
];

fn assert_clean(out: &str, err: &str) {
    for bad in FALSE_OR_LOST {
        assert!(
            !out.contains(bad) && !err.contains(bad),
            "'{bad}' in a clean attach:\n{out}\n{err}"
        );
    }
}

/// Two ranks deadlocked in `MPI_Recv` while two wait in `MPI_Finalize`, all busy-polling on
/// a small machine: the ranks' spinning starved strata's daemon of CPU for tens of seconds
/// (the kernel's fair scheduler), so about one attach in three lost the daemon ("silent for
/// 10 s"), and others took up to 90 s. strata's threads now run at a real-time priority.
#[test]
fn finalize_beside_a_deadlock_loses_no_daemon() {
    let exe = target::compile_with(
        "mpicc",
        "mpi_finalize_cycle.c",
        "mpi_finalize_cycle",
        &["-O0", "-g"],
    );
    let job = MpiJob::start_in_own_session(&exe, 4);
    let launcher = job.mpirun.id().to_string();
    for round in 0..8 {
        let started = std::time::Instant::now();
        let (code, out, err) = parts(&strata(&[
            "attach",
            "--launcher-pid",
            &launcher,
            "--no-files",
        ]));
        eprintln!("attach {round}: {:?}", started.elapsed());
        assert_eq!(code, 0, "attach {round}:\n{out}\n{err}");
        assert!(out.contains("4 of 4 ranks"), "attach {round}:\n{out}");
        assert_clean(&out, &err);
        let classes = class_lines(&out);
        assert!(
            classes
                .iter()
                .any(|c| c.starts_with("2:[0-1] ") && c.contains("MPI_Recv")),
            "attach {round}: ranks 0-1 in MPI_Recv:\n{out}"
        );
        for &pid in &job.ranks {
            assert_free(pid);
        }
    }
}
