//! strata-architecture: the workspace's architecture rules, checked by its tests.
//!
//! It owns three checks over every member listed in the root `Cargo.toml`:
//! - **no module cycles**: per crate (a package's library and each binary are separate crates),
//!   the module graph has an edge A -> B when A's own code (not its child modules') names an
//!   item defined in B, following re-exports to the defining module. Any strongly connected
//!   component of 2+ modules is a cycle, reported with a `file:line` per edge;
//! - **no source file over a line limit** (`wc -l` of every `.rs` under a member's `src/`);
//! - **a thin front end**: `strata-frontend`'s share of the workspace's source lines.
//!
//! It must never do more than read: it reads `Cargo.toml` and `.rs` files, runs nothing (no
//! cargo, no rustc, no build scripts), touches no network and writes nothing. Odd input (a file
//! that does not parse, a `mod` without a file) is reported by name, never a panic.
//!
//! Known limits of the module graph (the check parses, it does not compile):
//! - `#[cfg]` is ignored: every `mod` and item counts, whatever the target or features;
//! - names produced by macros (items a macro generates, `macro_rules!` hygiene) are unseen;
//!   macro arguments are read as comma-separated expressions when they parse so, else scanned
//!   for `a::b` paths and capitalised names (a lone lowercase word in raw tokens is ignored);
//! - method calls (`x.f()`) name no path and are no edges: the type's or trait's import is;
//! - local variables are recognised per function, not per block: a glob-imported function
//!   called by the name of a local variable elsewhere in the same function is missed;
//! - a private glob (`use super::*`) is resolved name by name where names are used; a public
//!   glob (`pub use x::*`) is an edge to every module defining an item it re-exports;
//! - `#[macro_export]` macros belong to the crate root, as rustc places them.

pub mod check;
pub mod cycles;
pub mod error;
pub mod graph;
pub mod lines;
pub mod manifest;
pub mod modtree;
pub mod refs;
pub mod report;
pub mod resolve;
pub mod scope;
pub mod tokens;
pub mod usetree;
pub mod workspace;
