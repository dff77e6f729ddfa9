//! What the analysis answers for one loop: its candidates, best first, and the variables
//! it rejected, with why.

use serde::Serialize;

/// Which way a candidate moves from one iteration to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Direction {
    Increasing,
    Decreasing,
    /// The step's sign is not known statically (a loop-invariant variable step).
    Unknown,
}

/// A loop-order variable: assigned once in every iteration, by a constant step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// As written (C and C++ identifiers keep their case; Fortran names are lower-cased).
    pub variable: String,
    pub direction: Direction,
    /// How it moves, as written: "for-loop induction (it++)", "do-loop index (step -1)",
    /// "n += 2", "k = k - 1", "--n in the loop condition", with notes in parentheses
    /// ("declaration not seen", the value of a named constant step, a `break` before it).
    pub how: String,
    /// The defining statement's line, or the loop's first line for its induction variable.
    /// A rank stopped after this line (in the same iteration) reads the variable one step
    /// further than a rank stopped before it.
    pub line: u32,
    /// The signed step when it is an integer literal (`it++`: 1, `k -= 2`: -2): what a rank
    /// past `line` has added in its current iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
}

/// A variable assigned in the loop that is not a loop-order variable, and why (one line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejected {
    pub variable: String,
    /// The definition (or declaration) the reason is about.
    pub line: u32,
    pub why: String,
}

/// The loop-order variables of one loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoopVariables {
    /// The file as asked (the DWARF name), as [`ProgramPoint::file`](crate::point::ProgramPoint).
    pub file: String,
    pub loop_line: u32,
    /// The loop's kind, as in [`Step::Iteration`](crate::point::Step::Iteration).
    pub kind: &'static str,
    /// Best first (see the module docs for the ranking).
    pub candidates: Vec<Candidate>,
    /// Every integer-ish variable assigned in the loop that is not a candidate, by line.
    pub rejected: Vec<Rejected>,
}

impl LoopVariables {
    /// The variable to read first, if any qualifies.
    pub fn best(&self) -> Option<&Candidate> {
        self.candidates.first()
    }
}
