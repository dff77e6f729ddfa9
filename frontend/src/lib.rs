//! The strata front end: the `strata` command, the result file and its renderings.
//!
//! Sampling and the tree network arrive in later issues; today the front end reads saved
//! results (`strata view`) and renders them.

pub mod attach;
pub mod cli;
pub mod demo;
pub mod dump;
pub mod example;
pub mod exit;
pub mod interrupt;
pub mod output;
pub mod render;
pub mod result;
pub mod roles;
pub mod session;
