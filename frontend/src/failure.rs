//! How a command fails: one line for the user and the exit code a script branches on. The
//! libraries' typed errors become a [`Failure`] here, in one place, each with the exit code
//! that its kind of failure has in the table ([`crate::exit`]).

use crate::exit::Exit;

/// A failed command: the message (one line, says what to do) and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl From<strata_tui::TuiError> for Failure {
    fn from(e: strata_tui::TuiError) -> Self {
        Failure::new(Exit::Internal, e.to_string())
    }
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Failure {
            exit,
            message: message.into(),
        }
    }
}
