//! The strata front end: the `strata` command, the result file and its renderings.
//!
//! `cli` parses; `attach` runs an attach (`session`: the front end as the tree network's
//! root, launching commnodes and daemons and driving their commands); `roles` are the
//! `strata daemon` / `strata commnode` entry points; `result`, `render` and `output` are the
//! result file and its renderings; `demo` and `dump` the other subcommands; `watch` is the
//! statistical core of `strata watch` (hang detection and verification, no I/O); `progress`
//! is the temporal order analysis (program points from the sources, and their order).

pub mod attach;
pub mod bench;
pub mod cli;
pub mod commands;
pub mod demo;
pub mod dump;
pub mod exit;
pub mod interrupt;
pub mod live;
pub mod roles;
pub mod session;
