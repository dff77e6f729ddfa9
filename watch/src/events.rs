//! What a watch saw and decided, as the report records it: each probe of the monitored
//! ranks, what started a verification, and what to do once a hang is reported.

use crate::detector::{Alarm, Status};
use crate::stall::Stall;
use serde::Serialize;

/// What to do once a hang is verified and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnHang {
    /// Detach and exit with code 3.
    Exit,
    /// Cancel the job (scancel; SIGTERM to the ranks of a local job), then exit 3.
    Cancel,
    /// Keep watching; report again only after the job has moved.
    Continue,
}

/// Uninformative samples in a row after which the job is verified anyway. ParaStack's test
/// can only alarm on S_out values that are rare for the job; a job hung before the watch
/// learned anything (or whose S_out never varies) gives nothing rare, only the same value
/// over and over, and would be watched forever. This check is strata's addition: 50 samples
/// (20 s at 400 ms) of no information, then the same verification an alarm gets.
pub const STILLNESS_SAMPLES: u32 = 50;

/// What started a verification.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The statistical test: a significant streak of suspicious samples.
    Alarm(Alarm),
    /// [`STILLNESS_SAMPLES`] uninformative samples in a row, all at this S_out or below
    /// the model's threshold.
    Stillness { samples: u32, s_out: f64 },
    /// Every monitored rank idle past its own longest time between two MPI transitions, as
    /// strata's PMPI library recorded them ([`crate::stall()`]).
    Stall(Stall),
}

/// One probe of the monitored ranks, for the report's timeline.
#[derive(Debug, Clone, Serialize)]
pub struct Probed {
    /// Since the watch started.
    pub ms: u64,
    pub s_out: f64,
    pub status: Status,
}
