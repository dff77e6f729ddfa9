//! Warning lines for stderr that never block the caller.
//!
//! A tree node writes its warnings (refused connections, lost children) from the tasks of
//! its async runtime. When stderr is a pipe nobody reads (a script that captures only
//! stdout, a full terminal buffer), a plain `eprintln!` blocks once the pipe is full, and
//! with it the runtime's worker: the node would stop answering its parent over its own
//! log. Here the lines go through a bounded queue to one writer thread; when the queue is
//! full, lines are dropped and counted, and the count is written once the writer catches
//! up.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};

/// Lines waiting for the writer, at most.
const QUEUE: usize = 256;

struct Writer {
    queue: SyncSender<String>,
    /// Lines queued and not yet written.
    pending: AtomicU64,
    /// Lines dropped since the writer last said so.
    dropped: AtomicU64,
}

static WRITER: OnceLock<Option<Writer>> = OnceLock::new();

/// The writer, started on first use (its thread raised like every strata thread: one at
/// the normal policy, starved by spinning ranks, would hold up the process's exit).
fn writer() -> Option<&'static Writer> {
    WRITER
        .get_or_init(|| {
            let (queue, lines) = sync_channel::<String>(QUEUE);
            strata_launcher::priority::spawn_raised("strata-stderr", move || {
                let mut err = std::io::stderr();
                for line in lines {
                    let Some(w) = WRITER.get().and_then(Option::as_ref) else {
                        return;
                    };
                    let lost = w.dropped.swap(0, Ordering::Relaxed);
                    if lost > 0 {
                        let _ = writeln!(err, "strata: {lost} warning line(s) dropped");
                    }
                    let _ = writeln!(err, "{line}");
                    w.pending.fetch_sub(1, Ordering::Relaxed);
                }
            })
            .ok()?;
            Some(Writer {
                queue,
                pending: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
            })
        })
        .as_ref()
}

/// Writes `line` to stderr without ever blocking: queued for the writer thread, or dropped
/// (and counted) when the queue is full.
pub fn line(line: String) {
    // No writer thread could be started: drop rather than block.
    let Some(w) = writer() else { return };
    w.pending.fetch_add(1, Ordering::Relaxed);
    if w.queue.try_send(line).is_err() {
        w.pending.fetch_sub(1, Ordering::Relaxed);
        w.dropped.fetch_add(1, Ordering::Relaxed);
    }
}

/// Waits up to `limit` for the queued lines to be written (before the process exits, so
/// that its last warnings are not lost with it).
pub fn flush(limit: std::time::Duration) {
    // A process that never warned has no writer, and none is started for this.
    let Some(w) = WRITER.get().and_then(Option::as_ref) else {
        return;
    };
    let end = std::time::Instant::now() + limit;
    while w.pending.load(Ordering::Relaxed) > 0 && std::time::Instant::now() < end {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
