//! Line counts of source files (`wc -l` semantics: the number of `\n` bytes), for the file
//! size limit and the front end's share of the workspace.

use crate::error::Error;
use crate::workspace::Member;
use std::path::{Path, PathBuf};

/// A source file and its line count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileLines {
    pub path: PathBuf,
    pub lines: usize,
}

/// `wc -l` of one file.
pub fn count_lines(path: &Path) -> Result<usize, Error> {
    let bytes = std::fs::read(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(bytes.iter().filter(|&&b| b == b'\n').count())
}

/// Every `.rs` file under `member`'s `src/`, sorted by path, with its line count.
pub fn member_sources(member: &Member) -> Result<Vec<FileLines>, Error> {
    let mut files = Vec::new();
    rust_files(&member.dir.join("src"), &mut files)?;
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let lines = count_lines(&path)?;
            Ok(FileLines { path, lines })
        })
        .collect()
}

fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), Error> {
    if !dir.is_dir() {
        return Ok(());
    }
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for entry in entries {
        let path = entry
            .map_err(|source| Error::Io {
                path: dir.to_path_buf(),
                source,
            })?
            .path();
        if path.is_dir() {
            rust_files(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
    Ok(())
}
