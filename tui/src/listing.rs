//! Source lines around a frame (`o`), when the source file can be read from here.
//!
//! Debug information records file names as the compiler saw them: absolute, or relative
//! to the compilation directory, which strata does not keep. A relative name is therefore
//! looked for in the current directory and then in the directories the caller suggests
//! (the module's and the executable's).

use std::path::{Path, PathBuf};

/// Lines of a source file around one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The file that was read.
    pub path: PathBuf,
    /// Number of the first line in `lines` (1-based).
    pub first: u32,
    pub lines: Vec<String>,
    /// The line asked for (1-based).
    pub marked: u32,
}

/// Reads `line` of `file` and `context` lines on each side. `dirs` are where a relative
/// `file` may live besides the current directory. The error says what was tried.
pub fn read_listing(
    file: &str,
    line: u32,
    context: u32,
    dirs: &[PathBuf],
) -> Result<Listing, String> {
    if line == 0 {
        return Err(format!("{file}: no line number"));
    }
    let mut candidates: Vec<PathBuf> = vec![PathBuf::from(file)];
    if Path::new(file).is_relative() {
        for d in dirs {
            let c = d.join(file);
            if !candidates.contains(&c) {
                candidates.push(c);
            }
        }
    }
    let mut last_error = None;
    for path in &candidates {
        match std::fs::read(path) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                let all: Vec<&str> = text.lines().collect();
                if line as usize > all.len() {
                    return Err(format!(
                        "{}: has {} lines, the frame is at line {line} (the file changed since \
                         the program was built?)",
                        path.display(),
                        all.len()
                    ));
                }
                let first = line.saturating_sub(context).max(1);
                let last = line.saturating_add(context).min(all.len() as u32);
                return Ok(Listing {
                    path: path.clone(),
                    first,
                    lines: all[first as usize - 1..last as usize]
                        .iter()
                        .map(|l| l.replace('\t', "    "))
                        .collect(),
                    marked: line,
                });
            }
            Err(e) => last_error = Some(e),
        }
    }
    let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    Err(format!(
        "cannot read the source of {file}:{line} (tried {}): {}",
        tried.join(", "),
        last_error.map_or_else(|| "no candidate".to_string(), |e| e.to_string())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_around_the_frame_with_the_line_marked() {
        let dir = tempfile::tempdir().unwrap();
        let body: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(dir.path().join("ring.c"), body).unwrap();
        let l = read_listing("ring.c", 10, 5, &[dir.path().to_path_buf()]).unwrap();
        assert_eq!(l.first, 5);
        assert_eq!(l.lines.len(), 11);
        assert_eq!(l.lines[5], "line 10");
        assert_eq!(l.marked, 10);
        // Near the start and the end the window is cut short.
        let l = read_listing("ring.c", 2, 5, &[dir.path().to_path_buf()]).unwrap();
        assert_eq!((l.first, l.lines.len()), (1, 7));
        let l = read_listing("ring.c", 20, 5, &[dir.path().to_path_buf()]).unwrap();
        assert_eq!((l.first, l.lines.last().unwrap().as_str()), (15, "line 20"));
    }

    #[test]
    fn unreadable_sources_say_what_was_tried() {
        let e = read_listing("nowhere.c", 3, 5, &[PathBuf::from("/nonexistent")]).unwrap_err();
        assert!(e.contains("tried nowhere.c, /nonexistent/nowhere.c"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("short.c"), "one\n").unwrap();
        let path = dir.path().join("short.c");
        let e = read_listing(path.to_str().unwrap(), 9, 5, &[]).unwrap_err();
        assert!(e.contains("has 1 lines"), "{e}");
        assert!(
            read_listing("x.c", 0, 5, &[])
                .unwrap_err()
                .contains("no line")
        );
    }
}
