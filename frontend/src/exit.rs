//! The exit-code table of the whole tool. Every subcommand maps its outcome onto it, so a
//! script can branch on `$?` the same way whatever it ran.

use std::fmt;

/// How a strata run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The result is complete.
    Complete = 0,
    /// A bug in strata.
    Internal = 1,
    /// Bad usage or bad input (options, files).
    BadInput = 2,
    /// `strata watch` detected a hang.
    HangDetected = 3,
    /// A result was produced but some ranks are missing from it.
    Partial = 4,
    /// The job or process does not exist or is not running.
    NotFound = 5,
    /// The operating system or resource manager refused access.
    PermissionDenied = 6,
    /// Ctrl-C or a termination signal: strata detached from every target and stopped.
    Interrupted = 130,
}

impl Exit {
    pub const ALL: [Exit; 8] = [
        Exit::Complete,
        Exit::Internal,
        Exit::BadInput,
        Exit::HangDetected,
        Exit::Partial,
        Exit::NotFound,
        Exit::PermissionDenied,
        Exit::Interrupted,
    ];

    /// How a run that produced `result` ended: complete, or partial when ranks are missing.
    pub fn of_result(result: &strata_result::StrataResult) -> Exit {
        if result.meta.missing.is_empty() {
            Exit::Complete
        } else {
            Exit::Partial
        }
    }

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Complete => "complete result",
            Exit::Internal => "internal error (a bug: please report it)",
            Exit::BadInput => "bad usage or bad input",
            Exit::HangDetected => "hang detected (strata watch)",
            Exit::Partial => "partial result: some ranks are missing (named in the output)",
            Exit::NotFound => "job or process not found or not running",
            Exit::PermissionDenied => "permission denied",
            Exit::Interrupted => "interrupted (Ctrl-C, SIGTERM, SIGHUP): every target was detached",
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.code(), self.meaning())
    }
}

/// The table as `strata --help` prints it.
pub fn table() -> String {
    let mut s = String::from("Exit codes:\n");
    for e in Exit::ALL {
        s.push_str(&format!("  {}  {}\n", e.code(), e.meaning()));
    }
    s
}
