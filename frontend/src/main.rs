//! The `strata` binary: one executable for every role, so the front end and the daemons
//! it launches can never differ in version.

use clap::Parser;
use std::process::ExitCode;
use strata_frontend::cli::Cli;
use strata_frontend::commands::run;

/// Names `ulimit -v` when an allocation fails under it (see `address_space`).
#[global_allocator]
static ALLOCATOR: strata_frontend::address_space::NamesTheLimit =
    strata_frontend::address_space::NamesTheLimit;

fn main() -> ExitCode {
    // Before any thread exists: under `ulimit -v`, one malloc arena for all threads.
    if let Err(failure) = strata_frontend::address_space::fit() {
        eprintln!("strata: error: {}", failure.message);
        return ExitCode::from(failure.exit.code());
    }
    // Before anything else: on a node whose cores spinning ranks take, a strata process at
    // the normal policy can wait seconds for a core (see `strata_launcher::priority`).
    strata_launcher::priority::raise_current_thread();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            match strata_frontend::failure::usage_failure(&e, std::env::args().nth(1).as_deref()) {
                // Help and version, as clap prints them.
                None => e.exit(),
                Some(failure) => {
                    eprintln!("strata: error: {}", failure.message);
                    return ExitCode::from(failure.exit.code());
                }
            }
        }
    };
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
