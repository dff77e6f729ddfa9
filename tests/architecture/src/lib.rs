//! strata-architecture: the workspace's architecture rules, checked by its tests.
//!
//! It reads the members listed in the root `Cargo.toml` and their source files.
//!
//! It must never do more than read: it reads `Cargo.toml` and `.rs` files, runs nothing (no
//! cargo, no rustc, no build scripts), touches no network and writes nothing. Odd input is
//! reported by name, never a panic.

pub mod error;
pub mod lines;
pub mod manifest;
pub mod workspace;
