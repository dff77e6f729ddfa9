//! Files and errors: languages by name, unreadable and unknown files, search folders, the cache.

use super::*;
use std::path::PathBuf;

#[test]
fn languages_by_extension() {
    assert_eq!(Language::from_path("/src/a.c"), Some(Language::C));
    assert_eq!(Language::from_path("a.h"), Some(Language::Cpp));
    assert_eq!(Language::from_path("a.C"), Some(Language::Cpp));
    assert_eq!(Language::from_path("dir.d/a.cxx"), Some(Language::Cpp));
    assert_eq!(Language::from_path("a.F90"), Some(Language::Fortran));
    assert_eq!(Language::from_path("a.f"), Some(Language::Fortran));
    assert_eq!(Language::from_path("a.py"), Some(Language::Python));
    assert_eq!(Language::from_path("a.rs"), None);
    assert_eq!(Language::from_path("Makefile"), None);
    assert_eq!(Language::from_path("a.c.orig"), None);
}

#[test]
fn an_unreadable_file_says_where_to_point() {
    let mut index = SourceIndex::new(Vec::new());
    let error = index.point("/nonexistent/strata/solver.c", 3).unwrap_err();
    assert!(matches!(error, SourceError::Unreadable { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with("cannot read /nonexistent/strata/solver.c: "),
        "{message}"
    );
    assert!(message.contains("--source-dir"), "{message}");
    assert!(!message.contains("os error"), "{message}");
    assert!(!message.contains('\n'), "{message}");
    assert_eq!(index.resolved("/nonexistent/strata/solver.c"), None);
    assert_eq!(index.line_text("/nonexistent/strata/solver.c", 1), None);
}

#[test]
fn a_folder_named_like_a_source_is_unreadable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("looks_like.c");
    std::fs::create_dir(&folder).expect("mkdir");
    let mut index = SourceIndex::new(vec![dir.path().to_owned()]);
    let error = index.point(folder.to_str().expect("utf-8"), 1).unwrap_err();
    assert!(error.to_string().contains("not a regular file"), "{error}");
}

#[test]
fn an_unknown_language_is_refused_by_name() {
    let mut index = SourceIndex::new(Vec::new());
    let error = index.point("/src/model.rs", 1).unwrap_err();
    assert_eq!(
        error,
        SourceError::UnknownLanguage {
            path: "/src/model.rs".to_owned()
        }
    );
    assert!(error.to_string().contains("/src/model.rs"));
}

#[test]
fn lines_outside_functions_and_past_the_end_are_errors() {
    let mut index = SourceIndex::new(Vec::new());
    let path = testdata("poisson.c");
    let comment = line_of(&read_testdata("poisson.c"), "The reduction");
    let error = index.point(&path, comment).unwrap_err();
    assert!(matches!(error, SourceError::NotInFunction { line, .. } if line == comment));
    assert!(error.to_string().contains("poisson.c"), "{error}");
    let error = index.point(&path, 34).unwrap_err();
    assert!(
        matches!(
            error,
            SourceError::LineOutOfRange {
                line: 34,
                lines: 33,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("33 lines"), "{error}");
    assert!(matches!(
        index.point(&path, 0),
        Err(SourceError::LineOutOfRange { .. })
    ));
    // A module's specification part is not in a procedure.
    let fortran = testdata("solver.f90");
    assert!(matches!(
        index.point(&fortran, 2),
        Err(SourceError::NotInFunction { .. })
    ));
}

#[test]
fn search_dirs_find_the_longest_trailing_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nested = dir.path().join("proj/src");
    std::fs::create_dir_all(&nested).expect("mkdir");
    std::fs::copy(testdata("poisson.c"), nested.join("poisson.c")).expect("copy");
    // A shorter suffix matches too, with other content: the longer one must win.
    std::fs::write(
        dir.path().join("poisson.c"),
        "int other(void) {\n  return 0;\n}\n",
    )
    .expect("write");
    let mut index = SourceIndex::new(vec![PathBuf::from("/nonexistent"), dir.path().into()]);
    let dwarf_path = "/build/home/user/proj/src/poisson.c";
    let point = index
        .point(dwarf_path, 5)
        .expect("found under the search dir");
    assert_eq!(point.file, dwarf_path);
    assert_eq!(point.function.as_deref(), Some("poisson"));
    assert_eq!(
        index.resolved(dwarf_path),
        Some(nested.join("poisson.c").as_path())
    );
    assert_eq!(
        index.line_text(dwarf_path, 5).as_deref(),
        Some("        exchange_band(u, n, rank, size);")
    );
    assert_eq!(index.line_text(dwarf_path, 0), None);
    assert_eq!(index.line_text(dwarf_path, 999), None);
}

#[test]
fn a_failure_is_cached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("late.c");
    let file = path.to_str().expect("utf-8 temp path");
    let mut index = SourceIndex::new(Vec::new());
    assert!(matches!(
        index.point(file, 2),
        Err(SourceError::Unreadable { .. })
    ));
    std::fs::write(&path, "void late(void) {\n  work();\n}\n").expect("write");
    assert!(matches!(
        index.point(file, 2),
        Err(SourceError::Unreadable { .. })
    ));
    // A fresh index reads it.
    let point = SourceIndex::new(Vec::new())
        .point(file, 2)
        .expect("readable now");
    assert_eq!(point.function.as_deref(), Some("late"));
}
