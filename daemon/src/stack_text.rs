//! Whole stacks of one process, every thread, the way `thread apply all bt`, `eu-stack` and
//! `py-spy dump` print them: `strata dump` and `strata attach --rank`.

use std::fmt::Write as _;

use crate::capture::{TaskCapture, ThreadError};
use crate::procfs::syscall_label;
use crate::sampler::ThreadFrames;
use crate::unwind::{FrameKind, WalkEnd};
use strata_filters::Frame;

/// `Process 25388 (ring) rank 1: 3 thread(s), stopped for 230 us`, then `python` (what
/// was read of its Python, when it runs Python), then each thread.
pub fn render_process(
    out: &mut String,
    capture: &TaskCapture,
    rank: Option<u32>,
    threads: &[Result<ThreadFrames, ThreadError>],
    python: Option<&str>,
) {
    let comm = capture
        .main_thread()
        .map_or("?", |t| t.info.comm.as_str())
        .to_string();
    let _ = write!(out, "Process {} ({comm})", capture.pid);
    if let Some(r) = rank {
        let _ = write!(out, " rank {r}");
    }
    let _ = writeln!(
        out,
        ": {} thread(s), stopped for {} us",
        capture.threads.len(),
        capture.stopped_for.as_micros()
    );
    if let Some(python) = python {
        let _ = writeln!(out, "  {python}");
    }
    for (t, frames) in capture.threads.iter().zip(threads) {
        let info = &t.info;
        let python_name = frames
            .as_ref()
            .ok()
            .and_then(|f| f.python_name.as_ref())
            .map(|name| format!(" (Python {name:?})"))
            .unwrap_or_default();
        let mut head = format!(
            "  Thread {} \"{}\"{python_name} state {}",
            info.tid, info.comm, info.state
        );
        if let Some(w) = &info.wchan {
            let _ = write!(head, " in {w}");
        }
        if let Some(nr) = info.syscall {
            let _ = write!(head, " ({})", syscall_label(nr));
        }
        if frames.as_ref().is_ok_and(|f| f.holds_gil) {
            head.push_str(" (holds the GIL)");
        }
        if let Ok(s) = &t.snapshot {
            if let Some(sig) = s.pending_signal {
                let _ = write!(head, " (signal {sig} pending, delivered after detach)");
            }
            if s.group_stopped {
                head.push_str(" (stopped by a signal before strata came; left stopped)");
            }
        }
        let _ = writeln!(out, "{head}");
        match frames {
            Err(e) => {
                let _ = writeln!(out, "    (no stack: {e})");
            }
            Ok(stack) => render_thread(out, stack),
        }
    }
    out.push('\n');
}

fn render_thread(out: &mut String, stack: &ThreadFrames) {
    let mut n = 0;
    for physical in &stack.frames {
        let count = physical.frames.len();
        // The physical frame is the last one but a call recovered after it.
        let own = physical
            .frames
            .iter()
            .rposition(|f| !f.code().is_some_and(|c| c.is_recovered_call()))
            .unwrap_or(count.saturating_sub(1));
        for (i, frame) in physical.frames.iter().enumerate() {
            // Inlined calls share the physical frame's pc: gdb shows it once.
            let pc = if frame.is_python() {
                // Run by the evaluator's C frame it is listed with, as py-spy shows it.
                format!("{:<18}", "(python)")
            } else if i == own {
                format!("{:#018x}", physical.pc)
            } else if i > own {
                format!("{:<18}", "(called)")
            } else {
                format!("{:<18}", "(inlined)")
            };
            let _ = write!(out, "    #{n:<3} {pc} {}", describe(frame));
            match physical.kind {
                FrameKind::SignalHandlerTrampoline if i == own => {
                    out.push_str("  <signal handler called>");
                }
                FrameKind::SignalInterrupted if i == own => {
                    out.push_str("  <interrupted by a signal>");
                }
                _ => {}
            }
            out.push('\n');
            n += 1;
        }
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

/// `level2 at nested.c:10 (nested)`.
fn describe(frame: &Frame) -> String {
    let Some(c) = frame.code() else {
        return frame.name();
    };
    let mut s = c
        .function
        .clone()
        .unwrap_or_else(|| match (&c.module, c.offset) {
            (Some(_), Some(off)) => format!("{off:#x}"),
            _ => "??".to_string(),
        });
    if let (Some(file), Some(line)) = (&c.file, c.line) {
        let _ = write!(s, " at {file}:{line}");
    }
    // A Python frame's module is its file, already shown.
    if let Some(m) = c.module.as_ref().filter(|_| !frame.is_python()) {
        let _ = write!(s, " ({})", m.basename());
    } else if frame.is_python() && c.line.is_none() {
        let _ = write!(s, " in {}", c.file.as_deref().unwrap_or("?"));
    }
    s
}
