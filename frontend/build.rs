//! Builds strata's PMPI library (`pmpi/`, with its layout crate `pmpi-layout/`) for the
//! `strata` binary to embed, so that `strata run` writes out the very library this strata's
//! daemons read (`src/commands/run.rs`). Both crates have no dependencies, so rustc alone
//! builds them: no nested cargo, which would wait on the build directory's lock.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = manifest.parent().expect("frontend/ is in the workspace");
    let layout = root.join("pmpi-layout/src/lib.rs");
    let library = root.join("pmpi/src");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("pmpi");
    std::fs::create_dir_all(&out).expect("OUT_DIR is writable");
    for watched in [root.join("pmpi-layout/src"), library.clone()] {
        println!("cargo:rerun-if-changed={}", watched.display());
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    // Optimised and without debug information whatever the profile: it runs inside the
    // ranks, on every MPI call.
    let common = [
        "--edition=2024",
        "-C",
        "opt-level=3",
        "-C",
        "debuginfo=0",
        "-C",
        "strip=debuginfo",
    ];
    run(Command::new(&rustc)
        .args(common)
        .args(["--crate-type=rlib", "--crate-name=strata_pmpi_layout"])
        .arg(&layout)
        .arg("--out-dir")
        .arg(&out));
    run(Command::new(&rustc)
        .args(common)
        .args(["--crate-type=cdylib", "--crate-name=strata_pmpi"])
        .arg("--extern")
        .arg(format!(
            "strata_pmpi_layout={}",
            out.join("libstrata_pmpi_layout.rlib").display()
        ))
        .arg(library.join("lib.rs"))
        .arg("--out-dir")
        .arg(&out));
    assert!(
        Path::new(&out.join("libstrata_pmpi.so")).exists(),
        "rustc wrote no libstrata_pmpi.so"
    );
}

fn run(command: &mut Command) {
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(status.success(), "{command:?} failed");
}
