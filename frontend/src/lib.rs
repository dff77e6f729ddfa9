//! The `strata` command: a thin layer over the library crates.
//!
//! [`cli`] declares the command line (clap, nothing else); [`commands`] has one module per
//! subcommand, turning arguments into the libraries' requests; [`failure`] and [`exit`] are
//! how a run ends (one line and the documented exit code). The rest is the glue that only
//! a front end needs: [`job`] finds a job's ranks and opens the tree network on them
//! ([`session`]), [`live`] lets the terminal UI drive a live session, and [`interrupt`]
//! turns Ctrl-C into a clean detach.

pub mod cli;
pub mod commands;
pub mod exit;
pub mod failure;
pub mod interrupt;
pub mod job;
pub mod live;
pub mod session;
