//! The `strata` binary: one executable for every role, so the front end and the daemons
//! it launches can never differ in version.

use clap::Parser;
use std::process::ExitCode;
use strata_frontend::cli::Cli;
use strata_frontend::commands::run;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(exit) => ExitCode::from(exit.code()),
        Err(failure) => {
            eprintln!("strata: error: {}", failure.message);
            ExitCode::from(failure.exit.code())
        }
    }
}
