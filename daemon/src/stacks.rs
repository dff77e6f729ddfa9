//! From a capture to unwound stacks: the glue between `capture` (ptrace), `images` (files)
//! and the pure `unwind`. Unwinding reads the stack copies taken during the stop, layered
//! over the live process for anything outside them (code bytes, the vdso): the task may
//! run again by then, and only its stacks need to be of the captured moment.

use std::sync::Arc;

use crate::capture::{TaskCapture, ThreadError, ThreadInfo};
use crate::images::{AddressSpace, ImageCache};
use crate::memory::{Layered, MemoryReader};
use crate::procfs::Pid;
use crate::unwind::{UnwoundStack, unwind};

/// Frames beyond this are cut (the walk ends as truncated): deeper stacks are recursion.
pub const DEFAULT_MAX_FRAMES: usize = 512;

/// One thread's unwound stack, or why it has none.
#[derive(Clone, Debug)]
pub struct ThreadStack {
    pub info: ThreadInfo,
    pub stack: Result<UnwoundStack, ThreadError>,
    /// The thread pointer at the capture (0 without registers): glibc's `pthread_t`.
    pub fs_base: u64,
}

/// Every thread of a captured task, unwound.
#[derive(Debug)]
pub struct TaskStacks {
    pub pid: Pid,
    /// The task's executable mappings and their images (to name frames); shared by the
    /// captures of a task whose mappings did not change.
    pub space: Arc<AddressSpace>,
    /// Main thread first.
    pub threads: Vec<ThreadStack>,
    /// The process's Python threads, read after the stacks (`None`: no Python in it, or
    /// not read).
    pub python: Option<crate::python::frames::PythonRead>,
}

impl TaskStacks {
    /// One line on the task's Python for whole-stack views (`Python 3.11.2, frames read in
    /// 85 us`, or why its frames were not read); `None` when it runs no Python.
    pub fn python_summary(&self) -> Option<String> {
        Some(match self.python.as_ref()? {
            Ok(p) => p.summary(),
            Err(why) => format!("Python frames not read: {why}"),
        })
    }
}

/// Unwinds every captured thread of `capture`. `live` reads the task's memory now (a
/// `ProcessMemory`); `cache` shares parsed binaries across tasks.
pub fn unwind_task(
    capture: &TaskCapture,
    cache: &ImageCache,
    live: &dyn MemoryReader,
    max_frames: usize,
) -> TaskStacks {
    let space = Arc::new(AddressSpace::load(capture.pid, &capture.maps, live, cache));
    unwind_threads(capture, space, live, max_frames, &|_| true)
}

/// Like [`unwind_task`] with the task's address space already loaded (a sampler reuses it
/// while the task's mappings stay the same: loading opens every mapped file), for the
/// threads `wanted` accepts only (sampling the main threads need not walk the others).
pub fn unwind_threads(
    capture: &TaskCapture,
    space: Arc<AddressSpace>,
    live: &dyn MemoryReader,
    max_frames: usize,
    wanted: &dyn Fn(&ThreadInfo) -> bool,
) -> TaskStacks {
    let threads = capture
        .threads
        .iter()
        .filter(|t| wanted(&t.info))
        .map(|t| ThreadStack {
            info: t.info.clone(),
            fs_base: t.snapshot.as_ref().map_or(0, |s| s.regs.fs_base),
            stack: t.snapshot.as_ref().map_err(Clone::clone).map(|snap| {
                let memory = Layered {
                    first: &snap.stack,
                    second: live,
                };
                unwind(&snap.regs, &memory, &space, max_frames)
            }),
        })
        .collect();
    TaskStacks {
        pid: capture.pid,
        space,
        threads,
        python: None,
    }
}
