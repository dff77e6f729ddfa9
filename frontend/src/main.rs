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
    match run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(failure) => {
            eprintln!("strata: error: {}", failure.message);
            ExitCode::from(failure.exit.code())
        }
    }
}
