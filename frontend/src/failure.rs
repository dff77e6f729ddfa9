//! How a command fails: one line for the user and the exit code a script branches on.
//!
//! This is the one place where the libraries' typed errors meet the exit-code table
//! ([`crate::exit`]): each `From` below says which code a kind of failure has. A command
//! that finds a problem of its own (two options that contradict each other, a pid that is
//! not a number) builds its [`Failure`] directly, with [`Exit::BadInput`] for usage.

use crate::exit::Exit;
use strata_daemon::capture::CaptureError;
use strata_launcher::slurm::SlurmError;
use strata_launcher::topology::TopologyError;
use strata_proto::auth::AuthError;
use strata_proto::sampling::SamplingError;
use strata_result::ResultFileError;
use strata_session::AttachError;
use strata_tui::TuiError;

/// A failed command: the message (one line, says what to do) and its exit code.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub message: String,
}

impl Failure {
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Failure {
            exit,
            message: message.into(),
        }
    }

    /// A bug or an environment strata cannot work in (exit 1).
    pub fn internal(message: impl std::fmt::Display) -> Self {
        Failure::new(Exit::Internal, message.to_string())
    }
}

/// A launched role without its session key was started by hand: a usage error.
impl From<AuthError> for Failure {
    fn from(e: AuthError) -> Self {
        Failure::new(Exit::BadInput, e.to_string())
    }
}

/// A result file that cannot be read is bad input: the message names the file.
impl From<ResultFileError> for Failure {
    fn from(e: ResultFileError) -> Self {
        Failure::new(Exit::BadInput, e.to_string())
    }
}

/// Sampling settings out of their bounds are a usage error.
impl From<SamplingError> for Failure {
    fn from(e: SamplingError) -> Self {
        Failure::new(Exit::BadInput, e.to_string())
    }
}

/// A tree shape that cannot be built (`--fanout 1`) is a usage error.
impl From<TopologyError> for Failure {
    fn from(e: TopologyError) -> Self {
        Failure::new(Exit::BadInput, e.to_string())
    }
}

/// The terminal refused the UI.
impl From<TuiError> for Failure {
    fn from(e: TuiError) -> Self {
        Failure::internal(e)
    }
}

/// The tree network produced nothing.
impl From<strata_session::root::SessionError> for Failure {
    fn from(e: strata_session::root::SessionError) -> Self {
        Failure::internal(e.0)
    }
}

/// An attach that produced nothing: each kind of reason has its code.
impl From<AttachError> for Failure {
    fn from(e: AttachError) -> Self {
        match e {
            AttachError::Usage(m) => Failure::new(Exit::BadInput, m),
            AttachError::NotFound(m) => Failure::new(Exit::NotFound, m),
            AttachError::PermissionDenied(m) => Failure::new(Exit::PermissionDenied, m),
            AttachError::Slurm(e) => e.into(),
            AttachError::Sampling(e) => e.into(),
            AttachError::Topology(e) => e.into(),
            AttachError::Internal(m) => Failure::internal(m),
        }
    }
}

/// A Slurm job that is not there (or not running) is "not found", another user's job is
/// "permission denied", a step it does not have is bad input.
impl From<SlurmError> for Failure {
    fn from(e: SlurmError) -> Self {
        let exit = match &e {
            SlurmError::NotFound(_)
            | SlurmError::Finished(..)
            | SlurmError::Pending(..)
            | SlurmError::NotConfigured(_) => Exit::NotFound,
            SlurmError::OtherUser { .. } => Exit::PermissionDenied,
            SlurmError::NoSuchStep { .. } => Exit::BadInput,
            SlurmError::Failed(_) => Exit::Internal,
        };
        Failure::new(exit, e.to_string())
    }
}

/// The exit code a capture error stands for: a process that is gone is "not found", one
/// strata may not trace is "permission denied", a kernel thread is bad input.
pub fn capture_exit(e: &CaptureError) -> Exit {
    match e {
        CaptureError::NoSuchProcess(_)
        | CaptureError::Zombie(_)
        | CaptureError::ExitedDuringCapture { .. } => Exit::NotFound,
        CaptureError::KernelThread(_) => Exit::BadInput,
        CaptureError::AlreadyTraced { .. }
        | CaptureError::HeldByStrata { .. }
        | CaptureError::OtherUser { .. }
        | CaptureError::PtraceScope { .. }
        | CaptureError::PermissionDenied { .. } => Exit::PermissionDenied,
        _ => Exit::Internal,
    }
}
