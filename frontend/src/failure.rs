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

/// A command-line error from clap as one failure line: clap's message (with any tip, which
/// names a similar option) and where the options are listed, instead of clap's four to six
/// lines of usage. Help and version requests are not failures: `None`.
/// `subcommand`: the first argument, when it names one (clap's usage line, which names it
/// too, is missing from some errors).
pub fn usage_failure(e: &clap::Error, subcommand: Option<&str>) -> Option<Failure> {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    let known = subcommand.filter(|s| {
        <crate::cli::Cli as clap::CommandFactory>::command()
            .get_subcommands()
            .any(|c| c.get_name() == *s)
    });
    let command = known.map_or_else(|| "strata".to_string(), |s| format!("strata {s}"));
    Some(Failure::new(
        Exit::BadInput,
        one_line(&e.render().to_string(), &command),
    ))
}

/// clap's rendered error text, one line: `MESSAGE[ DETAIL...][; tip: ...]; see 'CMD --help'`
/// (`command` unless clap's usage line names one).
fn one_line(rendered: &str, command: &str) -> String {
    let mut message = String::new();
    let mut tips = Vec::new();
    let mut command = command.to_string();
    for line in rendered.lines() {
        let line = line.trim();
        if let Some(m) = line.strip_prefix("error: ") {
            message = m.trim_end_matches(':').to_string();
        } else if let Some(t) = line.strip_prefix("tip: ") {
            tips.push(t.to_string());
        } else if let Some(u) = line.strip_prefix("Usage: ") {
            command = u
                .split_whitespace()
                .take_while(|w| !w.starts_with(['<', '[', '-']))
                .collect::<Vec<_>>()
                .join(" ");
        } else if !line.is_empty() && !line.starts_with("For more information") {
            // The details of the message: the missing arguments, one per line.
            message.push_str(if message.ends_with(':') { " " } else { ": " });
            message.push_str(line);
        }
    }
    for t in tips {
        message.push_str("; ");
        message.push_str(&t);
    }
    format!("{message}; see '{command} --help'")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_errors_become_one_line_naming_the_help() {
        let missing = "error: the following required arguments were not provided:\n  \
                       <RESULT>\n\nUsage: strata view <RESULT>\n\nFor more information, try \
                       '--help'.\n";
        assert_eq!(
            one_line(missing, "strata"),
            "the following required arguments were not provided: <RESULT>; see 'strata view \
             --help'"
        );
        let unknown = "error: unexpected argument '--colour' found\n\n  tip: a similar \
                       argument exists: '--color'\n\nUsage: strata view --color <COLOR> \
                       <RESULT>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(unknown, "strata"),
            "unexpected argument '--colour' found; a similar argument exists: '--color'; \
             see 'strata view --help'"
        );
        let invalid = "error: invalid value 'abc' for '--pids <PID,...>': not a process id\n\n\
                       For more information, try '--help'.\n";
        assert_eq!(
            one_line(invalid, "strata attach"),
            "invalid value 'abc' for '--pids <PID,...>': not a process id; see 'strata \
             attach --help'"
        );
    }
}
