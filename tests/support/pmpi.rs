//! strata's PMPI library in the tests that preload it into real MPI jobs.

use crate::mpi::MpiJob;
use crate::stacks::Stack;
use crate::support::{parts, strata};
use serde_json::Value;
use std::path::PathBuf;

/// The library, built beside the `strata` binary by `cargo build --workspace`.
pub fn library() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_strata"));
    let lib = bin.parent().unwrap().join("libstrata_pmpi.so");
    assert!(
        lib.exists(),
        "{} is missing: run `cargo build -p strata-pmpi` (tests/run-all.sh builds it)",
        lib.display()
    );
    lib
}

/// `strata attach --json` on `job` with `samples` samples: the result.
pub fn attach_json(job: &MpiJob, samples: u32, stack: Stack) -> Value {
    attach_json_with(job, samples, stack, &[])
}

/// As [`attach_json`], with more options (`--daemons 4 --fanout 2`).
pub fn attach_json_with(job: &MpiJob, samples: u32, stack: Stack, more: &[&str]) -> Value {
    let launcher = job.mpirun.id().to_string();
    let samples = samples.to_string();
    let mut args = vec![
        "attach",
        "--launcher-pid",
        &launcher,
        "-n",
        &samples,
        "--json",
        "--no-files",
    ];
    args.extend_from_slice(more);
    let (code, text, err) = parts(&strata(&args));
    assert_eq!(code, 0, "{stack:?}: {err}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{stack:?}: {e}: {text}"))
}
