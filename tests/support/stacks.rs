//! The MPI stacks the suite installs (`tests/mpi/stacks.sh`, `docs/MPI.md`): how to build
//! a program for each and launch it, with or without strata's PMPI library preloaded.
#![allow(dead_code)]

use crate::support::repo_root;

/// The MPI call each rank of `mpi_matrix` (`daemon/tests/fixtures/mpi_matrix.c` and its
/// Fortran twin) is in.
pub const MATRIX_CALLS: [&str; 4] = ["MPI_Recv", "MPI_Waitall", "MPI_Barrier", "MPI_Finalize"];
use std::path::{Path, PathBuf};
use std::process::Command;

/// One MPI stack: how to build for it and launch on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stack {
    OpenMpi4,
    Mpich4,
    OpenMpi5,
    Mpich5,
    IntelMpi,
}

impl Stack {
    pub fn name(self) -> &'static str {
        match self {
            Stack::OpenMpi4 => "openmpi4",
            Stack::Mpich4 => "mpich4",
            Stack::OpenMpi5 => "openmpi5",
            Stack::Mpich5 => "mpich5",
            Stack::IntelMpi => "impi",
        }
    }

    /// A program of a PyPI stack's virtual environment (`tests/mpi/stacks.sh`).
    pub fn venv(stack: &str, program: &str) -> PathBuf {
        let p = repo_root()
            .join("target/mpi-stacks")
            .join(stack)
            .join("bin")
            .join(program);
        assert!(
            p.exists(),
            "{} is missing: run `bash tests/mpi/stacks.sh` (tests/run-all.sh does)",
            p.display()
        );
        p
    }

    /// The compiler wrapper for `language` (`c`, `fortran`), if the stack ships one.
    pub fn compiler(self, language: &str) -> Option<PathBuf> {
        Some(match (self, language) {
            (Stack::OpenMpi4, "c") => PathBuf::from("mpicc.openmpi"),
            (Stack::OpenMpi4, "fortran") => PathBuf::from("mpif90.openmpi"),
            (Stack::Mpich4, "c") => PathBuf::from("mpicc.mpich"),
            (Stack::Mpich4, "fortran") => PathBuf::from("mpif90.mpich"),
            (Stack::OpenMpi5, "c") => Stack::venv("openmpi5", "mpicc"),
            // Intel MPI's runtime has no compiler: MPICH's ABI is Intel MPI's.
            (Stack::Mpich5 | Stack::IntelMpi, "c") => Stack::venv("mpich5", "mpicc"),
            _ => return None,
        })
    }

    /// The launcher, ready for `-n N PROGRAM`.
    pub fn launcher(self) -> Command {
        let (mut c, args): (Command, &[&str]) = match self {
            Stack::OpenMpi4 => (Command::new("mpirun.openmpi"), &["--oversubscribe"]),
            Stack::Mpich4 => (Command::new("mpiexec.mpich"), &[]),
            Stack::OpenMpi5 => (
                Command::new(Stack::venv("openmpi5", "mpirun")),
                &["--oversubscribe"],
            ),
            Stack::Mpich5 => (Command::new(Stack::venv("mpich5", "mpiexec")), &[]),
            Stack::IntelMpi => {
                let mut c = Command::new(Stack::venv("impi", "mpiexec"));
                let lib = repo_root().join("target/mpi-stacks/impi/lib");
                c.env("LD_LIBRARY_PATH", lib);
                (c, &[])
            }
        };
        c.args(args)
            // Root may run Open MPI 5 (PRRTE) only when told so, as Open MPI 4.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("PRTE_ALLOW_RUN_AS_ROOT", "1")
            .env("PRTE_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_mpi_yield_when_idle", "1");
        c
    }

    /// `source` (a fixture, in `language`) built for this stack with its compiler wrapper,
    /// at -O0 with debug information.
    pub fn build(self, language: &str, source: &str, name: &str) -> PathBuf {
        let compiler = self
            .compiler(language)
            .unwrap_or_else(|| panic!("{self:?} has no {language} compiler"));
        crate::target::compile_with(compiler.to_str().unwrap(), source, name, &["-O0", "-g"])
    }

    /// Every stack.
    pub const ALL: [Stack; 5] = [
        Stack::OpenMpi4,
        Stack::Mpich4,
        Stack::OpenMpi5,
        Stack::Mpich5,
        Stack::IntelMpi,
    ];

    /// [`Stack::launcher`] with `library` preloaded into every rank: hydra's `mpiexec`
    /// passes its environment on to the ranks; Open MPI's `mpirun` (and `prterun`) only
    /// what `-x` names. The launcher loads the library too, which then does nothing.
    pub fn launcher_with_library(self, library: &Path) -> Command {
        let mut c = self.launcher();
        let preload = library.display().to_string();
        if matches!(self, Stack::OpenMpi4 | Stack::OpenMpi5) {
            c.arg("-x").arg(format!("LD_PRELOAD={preload}"));
        } else {
            c.env("LD_PRELOAD", &preload);
        }
        c
    }
}
