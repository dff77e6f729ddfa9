//! Finding, reading and parsing source files, each once: the one source-file lookup that
//! the program points ([`super::points`]) and the loop-order variables ([`crate::lov`])
//! share, and the errors both report.
//!
//! A file is looked up by the name DWARF gives it, then under the `--source-dir` folders;
//! it is read once (failures too, so an unreadable file is tried once) and parsed on the
//! first question that needs its syntax tree.

use super::language::Language;
use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use tree_sitter::{Parser, Tree};

/// Why a program point could not be made. Each message is one line naming the file.
///
/// `path` is the file as asked (the DWARF name) for `Unreadable` and `UnknownLanguage`, and
/// the file actually read (after the `--source-dir` search) for the others.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Neither the path as given nor any search folder has it; `why` is the error for the
    /// path as given.
    #[error("cannot read {path}: {why} (pass --source-dir DIR where the sources live)")]
    Unreadable { path: String, why: String },
    #[error(
        "{path}: not a C, C++, Fortran or Python source by its name (known endings: .c .h .cc \
         .cpp .cxx .C .hpp .f90 .F90 .f .py ...), so its program points are unknown"
    )]
    UnknownLanguage { path: String },
    #[error(
        "{path}:{line} is outside the file ({lines} lines): the source does not match the \
         binary's debug information"
    )]
    LineOutOfRange { path: String, line: u32, lines: u32 },
    #[error("{path}:{line} is not inside a function definition that the parser could read")]
    NotInFunction { path: String, line: u32 },
    #[error("cannot parse {path}: {why}")]
    Parse { path: String, why: String },
    /// A loop was asked for by its first line (an `Iteration` step's line), and no loop
    /// starts there.
    #[error(
        "{path}:{line} starts no loop (for, while, do-while, range-for, Fortran do) that the \
         parser could read: the source does not match the binary's debug information"
    )]
    NoLoopAt { path: String, line: u32 },
}

/// Parses each source file once (cache by path) and answers program points
/// ([`SourceIndex::point`]) and loop-order variables ([`SourceIndex::loop_variables`]).
#[derive(Debug)]
pub struct SourceIndex {
    search_dirs: Vec<PathBuf>,
    /// Keyed by the path as asked (the DWARF name); failures are kept too, so that an
    /// unreadable file is tried once.
    files: HashMap<String, Result<SourceFile, SourceError>>,
}

/// A parsed file, borrowed from the cache for one question.
pub(crate) struct Parsed<'index> {
    pub(crate) tree: &'index Tree,
    pub(crate) text: &'index str,
    pub(crate) language: Language,
    /// The path actually read, for error messages.
    pub(crate) shown: String,
}

/// One file as read, with its syntax tree once a point was asked of it.
struct SourceFile {
    path: PathBuf,
    text: String,
    lines: u32,
    tree: Option<Result<Tree, SourceError>>,
}

impl fmt::Debug for SourceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceFile")
            .field("path", &self.path)
            .field("lines", &self.lines)
            .field("parsed", &self.tree.as_ref().map(|tree| tree.is_ok()))
            .finish()
    }
}

impl SourceIndex {
    /// `search_dirs`: where to look when the DWARF path is not readable as is: try DIR joined
    /// with the path's trailing components, longest suffix first (like gdb's `directory`).
    pub fn new(search_dirs: Vec<PathBuf>) -> SourceIndex {
        SourceIndex {
            search_dirs,
            files: HashMap::new(),
        }
    }

    /// The syntax tree of `file`, parsed on the first question, for a question about `line`
    /// (which must be inside the file).
    pub(crate) fn parsed(&mut self, file: &str, line: u32) -> Result<Parsed<'_>, SourceError> {
        let language = Language::from_path(file).ok_or_else(|| SourceError::UnknownLanguage {
            path: file.to_owned(),
        })?;
        let source = self.load(file)?;
        let shown = source.path.display().to_string();
        if line == 0 || line > source.lines {
            return Err(SourceError::LineOutOfRange {
                path: shown,
                line,
                lines: source.lines,
            });
        }
        let SourceFile { text, tree, .. } = source;
        let tree = tree
            .get_or_insert_with(|| parse(text, language, &shown))
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(Parsed {
            tree,
            text,
            language,
            shown,
        })
    }

    /// The path actually read for `file` (after the search), if it was found.
    pub fn resolved(&self, file: &str) -> Option<&Path> {
        match self.files.get(file) {
            Some(Ok(source)) => Some(&source.path),
            _ => None,
        }
    }

    /// The text of one line (1-based), for evidence in reports; None if unreadable.
    pub fn line_text(&mut self, file: &str, line: u32) -> Option<String> {
        let index = usize::try_from(line.checked_sub(1)?).ok()?;
        let source = self.load(file).ok()?;
        source.text.lines().nth(index).map(str::to_owned)
    }

    /// The lines `line - context ..= line + context` of `file` (1-based, clipped to the
    /// file), with the number of the first; None if unreadable or `line` is not in it.
    pub fn lines_around(
        &mut self,
        file: &str,
        line: u32,
        context: u32,
    ) -> Option<(u32, Vec<String>)> {
        let source = self.load(file).ok()?;
        if line == 0 || line > source.lines {
            return None;
        }
        let first = line.saturating_sub(context).max(1);
        let lines = source
            .text
            .lines()
            .skip(first as usize - 1)
            .take((line + context - first + 1) as usize)
            .map(str::to_owned)
            .collect();
        Some((first, lines))
    }

    fn load(&mut self, file: &str) -> Result<&mut SourceFile, SourceError> {
        let search_dirs = &self.search_dirs;
        self.files
            .entry(file.to_owned())
            .or_insert_with(|| read_source(file, search_dirs))
            .as_mut()
            .map_err(|error| error.clone())
    }
}

/// Reads `file` as is, or else under each search folder with the longest trailing part of
/// its path that exists there. The error names the path as asked, with why it failed there.
fn read_source(file: &str, search_dirs: &[PathBuf]) -> Result<SourceFile, SourceError> {
    let as_is = PathBuf::from(file);
    let first_error = match read_regular_file(&as_is) {
        Ok(bytes) => return Ok(SourceFile::new(as_is, &bytes)),
        Err(error) => error,
    };
    let parts: Vec<&std::ffi::OsStr> = Path::new(file)
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    for dir in search_dirs {
        for start in 0..parts.len() {
            let candidate: PathBuf = std::iter::once(dir.as_os_str())
                .chain(parts[start..].iter().copied())
                .collect();
            if let Ok(bytes) = read_regular_file(&candidate) {
                return Ok(SourceFile::new(candidate, &bytes));
            }
        }
    }
    Err(SourceError::Unreadable {
        path: file.to_owned(),
        why: io_reason(&first_error),
    })
}

/// No source file is this large; a bigger "source" is a mistake (a data file, a device),
/// and reading it would only exhaust memory.
const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// The bytes of a plain file: a folder matching a path suffix, a FIFO or a device named like
/// a source is not one, and reading those would fail late or never end.
fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if metadata.len() > MAX_SOURCE_BYTES {
        return Err(std::io::Error::other(
            "larger than 256 MiB, not a source file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SOURCE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An I/O error's text without the "(os error N)" suffix, which says nothing to a user.
fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

impl SourceFile {
    fn new(path: PathBuf, bytes: &[u8]) -> SourceFile {
        // Sources with Latin-1 comments are common in old Fortran: decode lossily rather
        // than refuse them (only rows matter to the analysis).
        let text = String::from_utf8_lossy(bytes).into_owned();
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        SourceFile {
            path,
            text,
            lines,
            tree: None,
        }
    }
}

pub(crate) fn parse(text: &str, language: Language, shown: &str) -> Result<Tree, SourceError> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| SourceError::Parse {
            path: shown.to_owned(),
            why: format!("the {} grammar cannot be loaded: {error}", language.name()),
        })?;
    // ERROR nodes are fine: only the target's enclosing function has to be readable.
    parser.parse(text, None).ok_or_else(|| SourceError::Parse {
        path: shown.to_owned(),
        why: format!("the {} parser gave up", language.name()),
    })
}
