//! Python frames: which Python function, file and line each thread of a CPython rank is
//! in, read from its memory without running code in it (py-spy's and pystack's way), and
//! put among the thread's native frames where the interpreter runs them.
//!
//! - [`runtime`]: finding the interpreter (`_PyRuntime`) and its version; refusing one
//!   whose layout is not verified.
//! - [`layout`]: the offsets of each CPython minor version (3.9-3.13), checked against the
//!   headers by a test.
//! - [`threads`]: the walk over interpreters, thread states, frames and the GIL.
//! - [`linetable`]: instruction offset to line, in the three table formats.
//! - [`cython`]: Cython's C names back to Python names (`Comm.Barrier` of mpi4py).
//! - [`interleave`]: where each Python frame goes among the native frames.
//! - [`values`] and [`locals`]: a frame's variables (`--var`), decoded when they are ints,
//!   bools, floats, strs or None; [`dicts`]: namespaces and instance attributes.
//! - [`names`]: each thread's `threading` name.
//!
//! A Python thread's frames are read right after its native stack was copied, while its
//! process runs again: for a rank that waits (the ranks a hang is about) they are the
//! same; for one that runs Python code they may be a moment later than its native stack,
//! and [`interleave`] places them by the evaluator's C frames so that they never land
//! under a C frame that does not run them.

pub mod cython;
pub mod dicts;
pub mod frames;
pub mod interleave;
pub mod layout;
pub mod linetable;
pub mod locals;
pub mod names;
pub mod objects;
pub mod runtime;
pub mod threads;
pub mod values;

use crate::procfs::Pid;
pub use runtime::{Discovery, Interpreter};
pub use threads::{CodeCache, PyFrame, PyThread};

/// What was read of one process's Python.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessPython {
    pub interpreter: Interpreter,
    /// The thread states, or why they could not be read.
    pub threads: Result<Vec<PyThread>, String>,
    /// How long reading the thread states and their frames took (the interpreter is found
    /// once per address space, and not counted).
    pub read_in: std::time::Duration,
}

impl ProcessPython {
    /// What `strata dump` says of it: `Python 3.11.2, frames read in 85 us`, or why its
    /// frames could not be read.
    pub fn summary(&self) -> String {
        let version = self.interpreter.version_text();
        match &self.threads {
            Ok(_) => format!(
                "Python {version}, frames read in {} us",
                self.read_in.as_micros()
            ),
            Err(e) => format!("Python {version}, frames not read: {e}"),
        }
    }

    /// The thread state of the kernel thread `tid`, whose thread pointer is `fs_base`
    /// (3.9 and 3.10 know a thread by its `pthread_t`, which glibc makes its thread
    /// pointer; py-spy matches them the same way).
    pub fn thread(&self, tid: Pid, fs_base: u64) -> Option<&PyThread> {
        let threads = self.threads.as_ref().ok()?;
        threads
            .iter()
            .find(|t| t.native_tid == Some(tid))
            .or_else(|| {
                threads
                    .iter()
                    .find(|t| t.native_tid.is_none() && fs_base != 0 && t.pthread == fs_base)
            })
    }
}
