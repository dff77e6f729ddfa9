//! Ctrl-C, `kill`, a closed terminal: turned into a message instead of a death, so that
//! strata detaches every target (re-injecting signals it intercepted) before it exits.
//! If strata dies anyway (`kill -9`), the kernel detaches its tracees; only the graceful
//! path can hand back a signal that arrived while a target was stopped.

use std::sync::mpsc;

use nix::sys::signal::{SigSet, Signal};

/// The signals that end strata gracefully.
const ENDING: [Signal; 3] = [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP];

/// Blocks the ending signals in this thread (and so in every thread it starts later:
/// call it before starting any) and returns a channel that receives them.
pub fn watch() -> std::io::Result<mpsc::Receiver<Signal>> {
    let mut set = SigSet::empty();
    for s in ENDING {
        set.add(s);
    }
    set.thread_block()?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("strata-signals".into())
        .spawn(move || {
            // Ctrl-C is seen at once even when spinning ranks take every core.
            strata_launcher::priority::raise_current_thread();
            while let Ok(sig) = set.wait() {
                if tx.send(sig).is_err() {
                    break;
                }
            }
        })?;
    Ok(rx)
}
