//! The program points of the tree's frames, each (file, line) looked up once, with the
//! notes on sources that are missing or disagree with the binary.

use crate::point::ProgramPoint;
use crate::source::SourceIndex;
use rustc_hash::FxHashMap;
use strata_filters::Frame;

/// Program points of frames, looked up once per (file, line).
pub(super) struct Points<'a> {
    pub(super) sources: &'a mut SourceIndex,
    pub(super) cache: FxHashMap<(String, u32), Result<ProgramPoint, String>>,
    pub(super) notes: Vec<String>,
}

impl Points<'_> {
    /// The point of `frame` if it was already placed (no new lookup, no note).
    pub(super) fn placed(&self, frame: Option<&Frame>) -> Option<ProgramPoint> {
        let code = frame?.code()?;
        let key = (code.file.clone()?, code.line?);
        self.cache.get(&key)?.as_ref().ok().cloned()
    }

    pub(super) fn of(&mut self, frame: Option<&Frame>) -> Result<ProgramPoint, String> {
        let Some(frame) = frame else {
            return Err("no frame".into());
        };
        let Some(code) = frame.code() else {
            return Err(format!("{} is not a code location", frame.name()));
        };
        let (Some(file), Some(line)) = (&code.file, code.line) else {
            return Err(format!(
                "{} has no line information (no debug info for it; build with -g)",
                frame.name()
            ));
        };
        if let Some(hit) = self.cache.get(&(file.clone(), line)) {
            return hit.clone();
        }
        let got = self.sources.point(file, line).map_err(|e| e.to_string());
        match &got {
            Err(e) => {
                if !self.notes.contains(e) {
                    self.notes.push(e.clone());
                }
            }
            Ok(p) => {
                // A Python frame is named by its qualified name (`Solver.step`), its
                // definition by its own (`step`).
                let python = code.kind == strata_filters::CodeKind::Python;
                let bin = code.function.as_deref().map(|f| {
                    if python {
                        f.rsplit('.').next().unwrap_or(f)
                    } else {
                        f
                    }
                });
                if let (Some(src), Some(bin)) = (&p.function, bin)
                    && !same_function_name(src, bin)
                {
                    let note = format!(
                        "{file}:{line} is in {src}() in the source but in {bin} in the binary: \
                         the source may have changed since the build"
                    );
                    if !self.notes.contains(&note) {
                        self.notes.push(note);
                    }
                }
            }
        }
        self.cache.insert((file.clone(), line), got.clone());
        got
    }
}

/// Whether a name read from the source and a (demangled) debug-info name are one function:
/// the last `::` component without parameters or template arguments, case-insensitively
/// (Fortran names are case-insensitive; DWARF has them in lower case).
fn same_function_name(source: &str, binary: &str) -> bool {
    fn base(n: &str) -> String {
        let n = n.split('(').next().unwrap_or(n);
        let n = n.split('<').next().unwrap_or(n);
        let n = n.rsplit("::").next().unwrap_or(n);
        n.trim().to_ascii_lowercase()
    }
    base(source) == base(binary)
}
