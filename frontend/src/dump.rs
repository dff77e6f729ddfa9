//! `strata dump PID...`: every thread's stack of running processes, like `eu-stack -p` or
//! `py-spy dump`, through strata's own capture and unwinder. It is the single-host,
//! no-merging base the sampling commands build on, and the tool to check strata's stacks
//! against other debuggers.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use strata_daemon::capture::{CaptureError, CaptureOptions, Capturer, TaskCapture};
use strata_daemon::images::ImageCache;
use strata_daemon::memory::ProcessMemory;
use strata_daemon::stacks::{self, DEFAULT_MAX_FRAMES, TaskStacks};
use strata_daemon::unwind::WalkEnd;

use crate::cli::{DumpArgs, Failure};
use crate::exit::Exit;
use crate::interrupt;

pub fn run(args: DumpArgs) -> Result<Exit, Failure> {
    let hold = match args.hold {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 24.0 * 3600.0 => {
            Some(Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(Failure::new(
                Exit::BadInput,
                format!("--hold {s}: give a number of seconds between 0 and 86400"),
            ));
        }
    };
    // Before any capture thread exists, so that they all inherit the blocked signals.
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let capturer = Capturer::with_default_threads();
    let options = CaptureOptions::default();
    let cache = ImageCache::new();
    let max_frames = args.max_frames.unwrap_or(DEFAULT_MAX_FRAMES);

    let (captures, held) = match hold {
        Some(d) => {
            let held = capturer.capture_and_hold_many(&args.pids, &options, d);
            let captures: Vec<Result<TaskCapture, CaptureError>> = held
                .iter()
                .map(|h| {
                    h.as_ref()
                        .map(|h| h.capture().clone())
                        .map_err(Clone::clone)
                })
                .collect();
            (captures, held.into_iter().filter_map(Result::ok).collect())
        }
        None => (capturer.capture(&args.pids, &options), Vec::new()),
    };

    let mut out = String::new();
    let mut errors: Vec<CaptureError> = Vec::new();
    for (pid, result) in args.pids.iter().zip(captures) {
        match result {
            Ok(capture) => {
                let live = ProcessMemory::new(*pid);
                let task = stacks::unwind_task(&capture, &cache, &live, max_frames);
                render(&mut out, &capture, &task);
            }
            Err(e) => {
                eprintln!("strata: pid {pid}: {e}");
                errors.push(e);
            }
        }
    }
    write_stdout(&out)?;

    let mut interrupted = None;
    if let Some(d) = hold
        && !held.is_empty()
    {
        eprintln!(
            "strata: holding {} process(es) stopped for {:.1} s; Ctrl-C releases them",
            held.len(),
            d.as_secs_f64()
        );
        match signals.recv_timeout(d) {
            Ok(sig) => interrupted = Some(sig),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
    } else if let Ok(sig) = signals.try_recv() {
        interrupted = Some(sig);
    }
    drop(held); // release
    drop(capturer);
    if let Some(sig) = interrupted {
        eprintln!("strata: {sig}: detached from every process");
        return Ok(Exit::Interrupted);
    }
    Ok(outcome(args.pids.len(), &errors))
}

/// All captured: complete; some: partial; none: the first error's kind.
fn outcome(asked: usize, errors: &[CaptureError]) -> Exit {
    match errors.first() {
        None => Exit::Complete,
        Some(_) if errors.len() < asked => Exit::Partial,
        Some(e) => match e {
            CaptureError::NoSuchProcess(_)
            | CaptureError::Zombie(_)
            | CaptureError::ExitedDuringCapture { .. } => Exit::NotFound,
            CaptureError::KernelThread(_) => Exit::BadInput,
            CaptureError::AlreadyTraced { .. }
            | CaptureError::OtherUser { .. }
            | CaptureError::PtraceScope { .. }
            | CaptureError::PermissionDenied { .. } => Exit::PermissionDenied,
            _ => Exit::Internal,
        },
    }
}

fn render(out: &mut String, capture: &TaskCapture, task: &TaskStacks) {
    let comm = capture
        .main_thread()
        .map_or("?", |t| t.info.comm.as_str())
        .to_string();
    let _ = writeln!(
        out,
        "Process {} ({comm}): {} thread(s), stopped for {} us",
        capture.pid,
        capture.threads.len(),
        capture.stopped_for.as_micros()
    );
    for (t, snap) in task.threads.iter().zip(&capture.threads) {
        let info = &t.info;
        let mut head = format!(
            "  Thread {} \"{}\" state {}",
            info.tid, info.comm, info.state
        );
        if let Some(w) = &info.wchan {
            let _ = write!(head, " in {w}");
        }
        if let Some(nr) = info.syscall {
            match strata_daemon::procfs::syscall_name(nr) {
                Some(name) => {
                    let _ = write!(head, " (system call {name})");
                }
                None => {
                    let _ = write!(head, " (system call {nr})");
                }
            }
        }
        if let Ok(s) = &snap.snapshot {
            if let Some(sig) = s.pending_signal {
                let _ = write!(head, " (signal {sig} pending, delivered after detach)");
            }
            if s.group_stopped {
                head.push_str(" (stopped by a signal before strata came; left stopped)");
            }
        }
        let _ = writeln!(out, "{head}");
        match &t.stack {
            Err(e) => {
                let _ = writeln!(out, "    (no stack: {e})");
            }
            Ok(stack) => {
                for (i, f) in stack.frames.iter().enumerate() {
                    let note = stacks::frame_note(f).map_or(String::new(), |n| format!("  {n}"));
                    let _ = writeln!(
                        out,
                        "    #{i:<3} {:#018x} {}{note}",
                        f.pc,
                        stacks::describe_frame(&task.space, f)
                    );
                }
                match &stack.end {
                    WalkEnd::Outermost => {}
                    WalkEnd::Truncated => {
                        let _ = writeln!(out, "    ... (more frames: raise --max-frames)");
                    }
                    WalkEnd::Error(e) => {
                        let _ = writeln!(out, "    (unwinding stopped: {e})");
                    }
                }
            }
        }
    }
    out.push('\n');
}

fn write_stdout(text: &str) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        // A closed pipe (`strata dump PID | head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Failure::new(
            Exit::Internal,
            format!("cannot write to standard output: {e}"),
        )),
    }
}
