//! Recording never takes the program down: every recording step runs under
//! [`catch_unwind`](std::panic::catch_unwind), and a step that panics (a bug of this
//! library) stops the recording for good. The wrappers forward every call to the MPI
//! library all the same, the state says the library stopped (`strata_pmpi_layout::word::STOPPED`) so that
//! no reader trusts a stale call, and no panic ever unwinds into the program's C frames.

use crate::state::strata_pmpi_state;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, Ordering};

static STOPPED: AtomicBool = AtomicBool::new(false);

/// Runs `record` unless recording stopped; stops it if `record` panics.
pub(crate) fn guarded(record: impl FnOnce()) {
    if STOPPED.load(Ordering::Relaxed) {
        return;
    }
    if std::panic::catch_unwind(AssertUnwindSafe(record)).is_err() {
        STOPPED.store(true, Ordering::Relaxed);
        strata_pmpi_state.stop();
    }
}

/// Whether recording stopped after a panic.
#[cfg(test)]
pub(crate) fn stopped() -> bool {
    STOPPED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_pmpi_layout::{self as pmpi, LayoutError};

    #[test]
    fn a_panicking_step_stops_the_recording_and_says_so() {
        let mut ran = false;
        guarded(|| ran = true);
        assert!(ran && !stopped());
        guarded(|| strata_pmpi_state.publish(|_| panic!("a bug while writing")));
        assert!(stopped());
        let mut again = false;
        guarded(|| again = true);
        assert!(!again, "nothing is recorded after a stop");
        assert_eq!(
            pmpi::decode(&strata_pmpi_state.bytes()),
            Err(LayoutError::Stopped)
        );
    }
}
