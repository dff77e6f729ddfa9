//! Tests of the loop-order variables, by language and concern; the helpers shared by them.

use super::candidates::{Candidate, Direction, LoopVariables, Rejected};
use super::find::loop_variables_in_tree;
use crate::source::files::{SourceError, SourceIndex, parse};
use crate::source::language::Language;
use crate::testing::{line_of, testdata};

mod answers;
mod c;
mod cpp;
mod fortran;
mod index;
mod python;
mod robustness;

/// The loop variables of the loop on the line holding `loop_marker`.
fn analyse(language: Language, text: &str, loop_marker: &str) -> LoopVariables {
    let tree = parse(text, language, "snippet").expect("parses");
    let line = line_of(text, loop_marker);
    loop_variables_in_tree(&tree, text, language, "snippet", line)
        .unwrap_or_else(|| panic!("no loop at {loop_marker:?}"))
}

fn c(text: &str, loop_marker: &str) -> LoopVariables {
    analyse(Language::C, text, loop_marker)
}

fn cpp(text: &str, loop_marker: &str) -> LoopVariables {
    analyse(Language::Cpp, text, loop_marker)
}

fn fortran(text: &str, loop_marker: &str) -> LoopVariables {
    analyse(Language::Fortran, text, loop_marker)
}

fn candidate(variable: &str, direction: Direction, how: &str, line: u32) -> Candidate {
    Candidate {
        variable: variable.to_owned(),
        direction,
        how: how.to_owned(),
        line,
        step: None,
    }
}

/// The candidates without their steps (most tests check the rest; the steps have a
/// test of their own).
fn no_steps(found: &[Candidate]) -> Vec<Candidate> {
    found
        .iter()
        .map(|c| Candidate {
            step: None,
            ..c.clone()
        })
        .collect()
}

fn rejected(variable: &str, line: u32, why: &str) -> Rejected {
    Rejected {
        variable: variable.to_owned(),
        line,
        why: why.to_owned(),
    }
}

fn candidate_names(found: &LoopVariables) -> Vec<&str> {
    found
        .candidates
        .iter()
        .map(|candidate| candidate.variable.as_str())
        .collect()
}

/// The rejection of `variable`, which must be listed exactly once.
fn rejection<'a>(found: &'a LoopVariables, variable: &str) -> &'a Rejected {
    let matching: Vec<&Rejected> = found
        .rejected
        .iter()
        .filter(|rejected| rejected.variable == variable)
        .collect();
    assert_eq!(matching.len(), 1, "{variable} in {:#?}", found.rejected);
    matching[0]
}
