//! The assembled result of a strata run and everything that reads or writes it: the model
//! ([`StrataResult`]: the 2D and 3D prefix trees in rank order, with the job, ranks, threads,
//! missing ranks, variable reads and the PMPI library's records ([`pmpi`])), its JSON file (`result.json`, strictly validated on
//! read), the renderings (terminal text, STAT-compatible DOT, folded stacks, JSON), the
//! result directory, and the interface analyses use to draw on them ([`annotation`]).
//!
//! Design constraints: pure code over data. No ptrace, no network, no terminal handling
//! (renderers take a width and a colour flag; they never ask the terminal), no analysis
//! (analyses depend on this crate and draw through [`annotation::Annotation`], never the
//! reverse). The only I/O is reading and writing result files, in [`model`] and
//! [`directory`].

pub mod annotation;
pub mod directory;
pub mod example;
pub mod model;
pub mod pmpi;
pub mod render;
pub mod siblings;
pub mod variables;

pub use model::*;
