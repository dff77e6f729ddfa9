//! The result directory: every rendering of one result, under stable file names
//! (documented in `docs/FORMATS.md`).

use crate::annotation::Annotation;
use crate::model::{StrataResult, TreeKind};
use crate::render::{dot, folded, text};
use std::io;
use std::path::{Path, PathBuf};
use strata_filters::{Granularity, ViewOptions};

/// The whole result, JSON (the file other tools and later strata commands read).
pub const JSON_FILE: &str = "result.json";
/// The default view as terminal text, without colour or shortened rank lists.
pub const TEXT_FILE: &str = "tree.txt";
/// The 3D tree, default view, STAT-compatible DOT.
pub const DOT_3D_FILE: &str = "tree-3d.dot";
/// The 2D tree (last sample), default view, STAT-compatible DOT.
pub const DOT_2D_FILE: &str = "tree-2d.dot";
/// The 2D tree at function granularity, uncut, as folded stacks for flame graphs.
pub const FOLDED_FILE: &str = "stacks.folded";

/// `./strata-results/<job>-<UTC timestamp>/`, the default for `-o`.
pub fn default_dir(result: &StrataResult) -> PathBuf {
    PathBuf::from("strata-results").join(format!("{}-{}", result.file_stem(), timestamp_for_path()))
}

/// Now, UTC, as a file-name-safe stamp (`20261123T040506Z`).
pub fn timestamp_for_path() -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        now.year(),
        u8::from(now.month()),
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

/// Writes every rendering into `dir` (created if needed); returns the paths written. With an
/// annotation (the progress order, the verdict) the tree files carry its labels, its files
/// are added and `result.json` carries its fields.
pub fn write_all(
    result: &StrataResult,
    dir: &Path,
    annotation: Option<&dyn Annotation>,
) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    // The files keep every frame a sample saw: start-up and interpreter frames are hidden
    // only on screen.
    let default = ViewOptions {
        hide_start_up: false,
        hide_interpreter: false,
        ..ViewOptions::default()
    };
    let flame = ViewOptions::full(Granularity::Function);
    let mut files: Vec<(&str, String)> = vec![
        (JSON_FILE, result.to_json_with(annotation)),
        (
            TEXT_FILE,
            text::render_annotated(
                result,
                TreeKind::ThreeD,
                default,
                text::TextOptions::default(),
                annotation,
            ),
        ),
        (
            DOT_3D_FILE,
            dot::render_annotated(result, TreeKind::ThreeD, default, annotation),
        ),
        (
            DOT_2D_FILE,
            dot::render_annotated(result, TreeKind::TwoD, default, annotation),
        ),
        (FOLDED_FILE, folded::render(result, TreeKind::TwoD, flame)),
    ];
    let extra = annotation.map(|a| a.files()).unwrap_or_default();
    files.extend(extra);
    let mut written = Vec::new();
    for (name, body) in files {
        let path = dir.join(name);
        std::fs::write(&path, body)?;
        written.push(path);
    }
    Ok(written)
}
