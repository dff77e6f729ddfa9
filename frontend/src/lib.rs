//! The `strata` command: a thin layer over the library crates.
//!
//! [`cli`] declares the command line (clap, nothing else); [`commands`] has one module per
//! subcommand, each turning its arguments into what a library takes (an
//! [`AttachRequest`](strata_session::AttachRequest) for attach, demo and watch) and showing
//! what comes back; [`failure`] and [`exit`] are how a run ends (one line and the documented
//! exit code; library errors meet the exit codes in [`failure`] only). [`live`] lets the
//! terminal UI drive a live session, and [`interrupt`] turns Ctrl-C into a clean detach.
//! [`address_space`] fits the allocator to a `ulimit -v` before anything else runs.

pub mod address_space;
pub mod cli;
pub mod commands;
pub mod exit;
pub mod failure;
pub mod interrupt;
pub mod live;
