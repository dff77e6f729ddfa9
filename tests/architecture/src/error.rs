//! What can go wrong while reading the workspace. Every problem names the file, so a failing
//! check says where to look; nothing here panics on odd input.

use std::path::PathBuf;

/// A problem met while reading a manifest or a source file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A Rust source file did not parse.
    #[error("{}:{line}: does not parse: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A `Cargo.toml` is not what the check expects.
    #[error("{}: {message}", path.display())]
    Manifest { path: PathBuf, message: String },
    /// A `mod name;` declaration whose file is in none of the places Rust looks.
    #[error("{}: `mod {name};` has no file (looked for {})", declared_in.display(), candidates.iter().map(|c| c.display().to_string()).collect::<Vec<_>>().join(", "))]
    MissingModule {
        declared_in: PathBuf,
        name: String,
        candidates: Vec<PathBuf>,
    },
}
