//! How to sample a job: the one home of every sampling setting's default and bounds.
//!
//! The front end builds a [`Sampling`] from the command line (whose defaults and ranges are
//! these constants), validates it and sends it as a [`Sample`] command; a daemon reads the
//! command back with [`Sampling::from_command`], which bounds every field the same way,
//! since a command from the network is never trusted.

use crate::overlay::Sample;
use std::time::Duration;

/// Sampling settings, as the user asked for them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Samples of every rank.
    pub samples: u32,
    /// The mean time between two samples.
    pub interval: Duration,
    /// Each gap is drawn uniformly from `interval * [1 - jitter, 1 + jitter]`, so that the
    /// samples do not lock onto a period of the program.
    pub jitter: f64,
    /// Every thread, else the main thread of each rank.
    pub threads: bool,
    /// Deepest stack walked; 0: the daemon's default.
    pub max_frames: u32,
}

/// A sampling setting out of its bounds.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SamplingError {
    #[error(
        "{0} samples is out of range (1 to {max})",
        max = Sampling::MAX_SAMPLES
    )]
    Samples(u32),
    #[error(
        "a sampling interval of {0:?} is out of range (at most {max} s)",
        max = Sampling::MAX_INTERVAL.as_secs()
    )]
    Interval(Duration),
    #[error("a jitter of {0} is out of range (0 to 1)")]
    Jitter(f64),
    #[error(
        "{0} frames is out of range (at most {max})",
        max = Sampling::MAX_FRAMES
    )]
    Frames(u32),
}

impl Sampling {
    /// `-n` by default: enough to tell a rank that moves from one that does not.
    pub const DEFAULT_SAMPLES: u32 = 10;
    /// The most samples one command may ask for.
    pub const MAX_SAMPLES: u32 = 10_000;
    /// `--interval` by default, as text for the command line.
    pub const DEFAULT_INTERVAL_TEXT: &'static str = "100ms";
    /// `--interval` by default.
    pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(100);
    /// The longest interval one command may ask for.
    pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
    /// Gaps vary by up to 20% at random.
    pub const DEFAULT_JITTER: f64 = 0.2;
    /// The deepest stack a command may ask for.
    pub const MAX_FRAMES: u32 = 100_000;

    /// Checks every setting against its bounds.
    pub fn validate(&self) -> Result<(), SamplingError> {
        if !(1..=Self::MAX_SAMPLES).contains(&self.samples) {
            return Err(SamplingError::Samples(self.samples));
        }
        if self.interval > Self::MAX_INTERVAL {
            return Err(SamplingError::Interval(self.interval));
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return Err(SamplingError::Jitter(self.jitter));
        }
        if self.max_frames > Self::MAX_FRAMES {
            return Err(SamplingError::Frames(self.max_frames));
        }
        Ok(())
    }

    /// The command the daemons receive.
    pub fn to_command(&self) -> Sample {
        Sample {
            samples: self.samples,
            interval_us: self.interval.as_micros().min(u64::MAX as u128) as u64,
            jitter: self.jitter,
            threads: self.threads,
            max_frames: self.max_frames,
            dense: false,
        }
    }

    /// A command as a daemon reads it: every field brought into its bounds (a number out of
    /// range is clamped, a jitter that is not a number is the default), never refused, so
    /// that a front end of a slightly different build still gets its samples.
    pub fn from_command(s: &Sample) -> Sampling {
        Sampling {
            samples: s.samples.clamp(1, Self::MAX_SAMPLES),
            interval: Duration::from_micros(s.interval_us).min(Self::MAX_INTERVAL),
            jitter: if s.jitter.is_finite() {
                s.jitter.clamp(0.0, 1.0)
            } else {
                Self::DEFAULT_JITTER
            },
            threads: s.threads,
            max_frames: s.max_frames.min(Self::MAX_FRAMES),
        }
    }
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            samples: Self::DEFAULT_SAMPLES,
            interval: Self::DEFAULT_INTERVAL,
            jitter: Self::DEFAULT_JITTER,
            threads: false,
            max_frames: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_valid_and_round_trips() {
        let s = Sampling::default();
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(Sampling::from_command(&s.to_command()), s);
    }

    #[test]
    fn validate_names_the_setting_out_of_bounds() {
        let d = Sampling::default();
        let bad = [
            Sampling { samples: 0, ..d },
            Sampling {
                samples: Sampling::MAX_SAMPLES + 1,
                ..d
            },
            Sampling {
                interval: Sampling::MAX_INTERVAL + Duration::from_secs(1),
                ..d
            },
            Sampling { jitter: 1.5, ..d },
            Sampling {
                jitter: f64::NAN,
                ..d
            },
            Sampling {
                max_frames: Sampling::MAX_FRAMES + 1,
                ..d
            },
        ];
        for s in bad {
            assert!(s.validate().is_err(), "{s:?} passed");
        }
        assert_eq!(
            Sampling { samples: 0, ..d }
                .validate()
                .unwrap_err()
                .to_string(),
            "0 samples is out of range (1 to 10000)"
        );
    }

    #[test]
    fn a_hostile_command_is_bounded_not_refused() {
        let s = Sampling::from_command(&Sample {
            samples: u32::MAX,
            interval_us: u64::MAX,
            jitter: f64::INFINITY,
            threads: true,
            max_frames: u32::MAX,
            dense: false,
        });
        assert_eq!(s.validate(), Ok(()));
        assert_eq!(s.samples, Sampling::MAX_SAMPLES);
        assert_eq!(s.interval, Sampling::MAX_INTERVAL);
        assert_eq!(s.jitter, Sampling::DEFAULT_JITTER);
        assert_eq!(s.max_frames, Sampling::MAX_FRAMES);
        let zero = Sampling::from_command(&Sample::default());
        assert_eq!(zero.samples, 1);
    }
}
