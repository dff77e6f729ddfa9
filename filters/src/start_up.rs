//! Start-up frames: the runtime's code above a thread's own first function.
//!
//! Every stack of a C program starts `_start > __libc_start_main_impl >
//! __libc_start_call_main > main`, every thread's `clone3 > start_thread > worker`, and a Rust
//! program adds about fifteen frames of `std::rt::lang_start` between the C `main` and its
//! own. They are the same on every rank, so they tell nothing apart, and they push what does
//! below the first screen. Views hide the run of start-up frames at the top of each path
//! (never a path's last frame); `--full-stacks` shows them, and result files keep them.
//!
//! Names are matched as the symbolizer gives them (glibc's internal aliases, Rust's v0 and
//! legacy demanglings). Only the top of a path is ever hidden: the same names further down
//! (a thread creating another calls `clone3`) stay.

use crate::frame::Frame;

/// Functions that only ever start a process or a thread.
const EXACT: [&str; 18] = [
    "_start",
    "__libc_start_main",
    "__libc_start_main_impl",
    "__libc_start_main_alias_2",
    "__libc_start_call_main",
    "_dl_start",
    "_dl_start_user",
    "_dl_start_final",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "__GI___clone",
    "__GI___clone3",
    "__clone_internal",
    "__start_context",
    "thread_start",
];

/// Prefixes of the Rust runtime's start-up functions (process and thread).
const PREFIXES: [&str; 15] = [
    "std::rt::",
    "std::panic::catch_unwind",
    "std::panicking::",
    "std::sys::backtrace::__rust_begin_short_backtrace",
    "__rust_begin_short_backtrace",
    "core::ops::function::FnOnce::call_once",
    "core::ops::function::impls::",
    "<&dyn core::ops::function::Fn",
    "<alloc::boxed::Box<F,A> as core::ops::function::FnOnce",
    "<alloc::boxed::Box<F, A> as core::ops::function::FnOnce",
    "std::sys::pal::unix::thread::Thread::new::thread_start",
    "std::sys::thread::unix::Thread::new::thread_start",
    "std::thread::Builder::spawn_unchecked_",
    "std::thread::lifecycle::",
    "{closure#0}<std::process::ExitCode>",
];

/// Whether a function of this name only starts a process or thread.
pub fn is_start_up_name(name: &str) -> bool {
    EXACT.contains(&name)
        || PREFIXES.iter().any(|p| name.starts_with(p))
        // Rust's inlined start-up shim, as DWARF names it without its path.
        || name.starts_with("call_once<fn() -> ")
}

/// Whether the C `main` is a start-up frame on a path where `next` follows it: in a Rust
/// program it only calls the runtime (`std::rt::lang_start`), which calls the program's own
/// `main`.
pub fn is_runtime_main(frame: &Frame, next: &Frame) -> bool {
    is_c_main(frame) && function(next).is_some_and(|n| n.starts_with("std::rt::"))
}

/// Whether `frame` is a function named `main`: a start-up frame or the program's own,
/// depending on what follows it ([`is_runtime_main`]).
pub fn is_c_main(frame: &Frame) -> bool {
    function(frame) == Some("main")
}

/// Whether `frame` is a start-up frame by its name alone (see [`is_runtime_main`] for
/// `main`).
pub fn is_start_up(frame: &Frame) -> bool {
    function(frame).is_some_and(is_start_up_name)
}

fn function(frame: &Frame) -> Option<&str> {
    frame.code().and_then(|c| c.function.as_deref())
}

/// The number of start-up frames at the top of `path` (outermost first) that a view hides:
/// the run of start-up frames, `main` included where the runtime follows it, never the
/// path's last frame. What [`crate::view()`] does to each path of a tree.
pub fn hidden_prefix(path: &[Frame]) -> usize {
    let mut n = 0;
    while n + 1 < path.len() && (is_start_up(&path[n]) || is_runtime_main(&path[n], &path[n + 1])) {
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(names: &[&str]) -> Vec<Frame> {
        names.iter().map(|n| Frame::function(n)).collect()
    }

    #[test]
    fn the_c_start_up_is_hidden_down_to_main() {
        let p = path(&[
            "_start",
            "__libc_start_main_impl",
            "__libc_start_call_main",
            "main",
            "MPI_Barrier",
        ]);
        assert_eq!(hidden_prefix(&p), 3);
        let t = path(&["clone3", "start_thread", "worker", "clone3"]);
        assert_eq!(hidden_prefix(&t), 2, "a clone3 further down stays");
    }

    #[test]
    fn the_rust_runtime_is_hidden_down_to_the_programs_main() {
        let p = path(&[
            "_start",
            "__libc_start_main_impl",
            "__libc_start_call_main",
            "main",
            "std::rt::lang_start_internal",
            "std::panic::catch_unwind::<std::rt::lang_start_internal::{closure#0}, isize>",
            "{closure#0}<std::process::ExitCode>",
            "__rust_begin_short_backtrace<fn() -> std::process::ExitCode, std::process::ExitCode>",
            "call_once<fn() -> std::process::ExitCode, ()>",
            "strata::main",
            "std::thread::sleep",
        ]);
        assert_eq!(hidden_prefix(&p), 9);
    }

    #[test]
    fn a_path_of_start_up_frames_keeps_its_last() {
        assert_eq!(hidden_prefix(&path(&["clone3"])), 0);
        assert_eq!(hidden_prefix(&path(&["clone3", "start_thread"])), 1);
        assert_eq!(hidden_prefix(&path(&["main"])), 0);
        assert_eq!(hidden_prefix(&path(&[])), 0);
    }
}
