//! The source lines around the program's frames, for the details pane and the rank
//! stacks: read where the debug information says the file is, else under the source
//! directories (as `--source-dir` does for the progress order). Frames whose file is not
//! found (a system library's build tree) get none; the page says the source was not found.

use rustc_hash::FxHashMap;
use serde::Serialize;
use std::path::PathBuf;
use strata_filters::Frame;
use strata_progress::source::SourceIndex;

use crate::escape::cut;

/// Lines shown before and after a frame's line.
pub const CONTEXT: u32 = 4;
/// Most snippets in one report: a tree of thousands of distinct lines keeps the page small
/// (the first ones, in the views' display order, are the ones a reader opens first).
pub const MAX_SNIPPETS: usize = 2_000;
/// Longest line kept, in characters (a minified or generated line would swamp the page).
const MAX_LINE: usize = 240;

/// Every snippet of a report, indexed by the views' `snippet` column.
#[derive(Debug, Serialize)]
pub struct Snippets {
    list: Vec<Snippet>,
    #[serde(skip)]
    ids: FxHashMap<(String, u32), Option<u32>>,
    #[serde(skip)]
    sources: Option<SourceIndex>,
}

/// The lines around one frame's line.
#[derive(Debug, Serialize)]
pub struct Snippet {
    /// The path read.
    pub file: String,
    /// The frame's line, and the number of the first line shown.
    pub line: u32,
    pub first: u32,
    pub lines: Vec<String>,
}

impl Snippets {
    /// Snippets read under `source_dirs`; none at all when `enabled` is false (`--redact`).
    pub fn new(source_dirs: &[PathBuf], enabled: bool) -> Snippets {
        Snippets {
            list: Vec::new(),
            ids: FxHashMap::default(),
            sources: enabled.then(|| SourceIndex::new(source_dirs.to_vec())),
        }
    }

    /// The snippet of `frame`'s line, read the first time it is asked for.
    pub fn of(&mut self, frame: &Frame) -> Option<u32> {
        let c = frame.code()?;
        let (file, line) = (c.file.as_ref()?, c.line?);
        let sources = self.sources.as_mut()?;
        let key = (file.clone(), line);
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        let id = (self.list.len() < MAX_SNIPPETS)
            .then(|| sources.lines_around(file, line, CONTEXT))
            .flatten()
            .map(|(first, lines)| {
                let shown = sources
                    .resolved(file)
                    .map_or_else(|| file.clone(), |p| p.display().to_string());
                self.list.push(Snippet {
                    file: shown,
                    line,
                    first,
                    lines: lines.iter().map(|l| cut(l, MAX_LINE)).collect(),
                });
                (self.list.len() - 1) as u32
            });
        self.ids.insert(key, id);
        id
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}
