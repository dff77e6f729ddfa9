//! The `strata` binary: one executable for every role, so the front end and the daemons
//! it launches can never differ in version.

use clap::Parser;
use std::process::ExitCode;
use strata_frontend::cli::Cli;
use strata_frontend::commands::run;

fn main() -> ExitCode {
    // Before anything else: on a node whose cores spinning ranks take, a strata process at
    // the normal policy can wait seconds for a core (see `strata_launcher::priority`).
    strata_launcher::priority::raise_current_thread();
    let cli = Cli::parse();
    let result = run(cli);
    // The tree's warnings go to stderr through a queue that never blocks (a pipe nobody
    // reads must not stall a session); the last of them are written before the error line.
    strata_commnode::stderr::flush(std::time::Duration::from_secs(1));
    match result {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(failure) => {
            eprintln!("strata: error: {}", failure.message);
            ExitCode::from(failure.exit.code())
        }
    }
}
