//! Tests of the program points, by what they exercise; the helpers shared by them.

use super::files::{SourceError, SourceIndex, parse};
use super::language::Language;
use super::points::point_in_tree;
use crate::point::{ProgramPoint, Relation, Step, compare};
use crate::testing::{line_of, read_testdata, testdata};

mod conditionals;
mod cpp;
mod files;
mod fortran;
mod loops;
mod paper;
mod python;
mod robustness;

/// The point of the line holding `marker` in a fixture file, through a SourceIndex.
fn point_of(index: &mut SourceIndex, name: &str, marker: &str) -> ProgramPoint {
    let path = testdata(name);
    let line = line_of(&read_testdata(name), marker);
    index
        .point(&path, line)
        .unwrap_or_else(|error| panic!("{marker:?}: {error}"))
}

/// The point of the line holding `marker` in a snippet.
fn snippet_point(language: Language, text: &str, marker: &str) -> ProgramPoint {
    let tree = parse(text, language, "snippet").expect("parses");
    let line = line_of(text, marker);
    point_in_tree(&tree, text, language, "snippet", line)
        .unwrap_or_else(|| panic!("{marker:?} is not in a function"))
}

fn needs_iteration(line: u32, kind: &'static str, then: Relation) -> Relation {
    Relation::NeedsIteration {
        line,
        kind,
        if_same_iteration: Box::new(then),
    }
}

fn incomparable(line: u32, kind: &'static str, arms: (u32, u32)) -> Relation {
    Relation::Incomparable { line, kind, arms }
}
