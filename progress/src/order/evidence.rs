//! How two groups at a branching point compare, and on what evidence: their program points,
//! the iteration values of the loops both are in, line numbers when the source is missing,
//! or why they cannot be compared.

use super::groups::Group;
use crate::loops::Loops;
use crate::lov::{Candidate, Direction};
use crate::point::{ProgramPoint, Relation, Step, compare};
use strata_filters::Frame;

/// How two groups at one branching point compare, and on what evidence.
#[derive(Clone, Debug, PartialEq)]
pub enum Evidence {
    /// From the structure of the source ([`crate::point::compare`]).
    Source(Relation),
    /// The source could not be read: the line numbers of one function decide (straight-line
    /// code assumed; loops and branches unseen).
    LineNumbers(std::cmp::Ordering),
    /// No comparison can be made, and why.
    Unordered(String),
    /// Loop-order variables decided, or helped: the loops both groups are in were compared
    /// by their iteration values, outer first. When the last fact's values differ it decides
    /// (by the variable's direction); when all are equal, `then` is how the rest of the
    /// points compares (or `None` at a node where only the iterations differ).
    Iterations {
        facts: Vec<IterationFact>,
        then: Option<Relation>,
    },
}

/// Two groups' values of one loop's loop-order variable.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationFact {
    pub file: String,
    pub line: u32,
    pub kind: &'static str,
    pub variable: String,
    pub direction: Direction,
    /// The values at the start of each group's current iteration: a rank past the
    /// variable's update (a statement in the loop body) has it one step further, and that
    /// step is taken back (`adjusted`).
    pub values: (i64, i64),
    pub adjusted: bool,
}

impl IterationFact {
    /// The order the values give, when they differ and the direction is known.
    fn order(&self) -> Option<std::cmp::Ordering> {
        let (a, b) = self.values;
        match self.direction {
            _ if a == b => Some(std::cmp::Ordering::Equal),
            Direction::Increasing => Some(a.cmp(&b)),
            Direction::Decreasing => Some(b.cmp(&a)),
            Direction::Unknown => None,
        }
    }
}

impl Evidence {
    /// True when the first group is strictly less progressed than the second.
    pub fn is_before(&self) -> bool {
        match self {
            Evidence::Source(Relation::Before)
            | Evidence::LineNumbers(std::cmp::Ordering::Less) => true,
            Evidence::Iterations { facts, then } => match facts.last().map(IterationFact::order) {
                Some(Some(std::cmp::Ordering::Equal)) | None => then == &Some(Relation::Before),
                Some(Some(o)) => o == std::cmp::Ordering::Less,
                Some(None) => false,
            },
            _ => false,
        }
    }

    pub fn reversed(&self) -> Evidence {
        match self {
            Evidence::Source(r) => Evidence::Source(r.reversed()),
            Evidence::LineNumbers(o) => Evidence::LineNumbers(o.reverse()),
            Evidence::Unordered(w) => Evidence::Unordered(w.clone()),
            Evidence::Iterations { facts, then } => Evidence::Iterations {
                facts: facts
                    .iter()
                    .map(|f| IterationFact {
                        values: (f.values.1, f.values.0),
                        ..f.clone()
                    })
                    .collect(),
                then: then.as_ref().map(Relation::reversed),
            },
        }
    }
}

/// How group `a` compares with group `b` below the frame `parent`.
pub(super) fn evidence(a: &Group, b: &Group, parent: Option<&Frame>, loops: &Loops) -> Evidence {
    let (Some(fa), Some(fb)) = (&a.frame, &b.frame) else {
        return Evidence::Unordered("the outermost frames differ".into());
    };
    let (Some(ca), Some(cb)) = (fa.code(), fb.code()) else {
        let special = if fa.code().is_none() { fa } else { fb };
        return Evidence::Unordered(format!(
            "{} is not a code location: nothing to compare",
            special.name()
        ));
    };
    if a.node.is_none() || b.node.is_none() {
        // Tasks executing in the parent frame itself against tasks in a callee called
        // from the same line: the same statement.
        return Evidence::Unordered(format!(
            "one group executes in {} itself, the other in a function it calls from the same line",
            fa.name()
        ));
    }
    if ca.function != cb.function || ca.file != cb.file {
        let at = parent.map_or("the root".to_string(), strata_result::render::frame_text);
        return Evidence::Unordered(format!(
            "different functions ({} and {}) called from {at}: their order is not in the source",
            fa.name(),
            fb.name()
        ));
    }
    match (&a.point, &b.point) {
        (Ok(pa), Ok(pb)) => compare_with_iterations(pa, &a.iterations, pb, &b.iterations, loops),
        _ => match (ca.line, cb.line) {
            (Some(la), Some(lb)) => Evidence::LineNumbers(la.cmp(&lb)),
            _ => Evidence::Unordered(format!(
                "no line information for {}",
                if ca.line.is_none() {
                    fa.name()
                } else {
                    fb.name()
                }
            )),
        },
    }
}

/// [`compare`], with the loops' iteration values where both points are in a loop: the
/// first difference decides, an offset or an arm as in the paper's Definition 3.4, an
/// iteration placeholder by the loop-order variable's values when both are known.
fn compare_with_iterations(
    pa: &ProgramPoint,
    ia: &[Option<i64>],
    pb: &ProgramPoint,
    ib: &[Option<i64>],
    loops: &Loops,
) -> Evidence {
    let suffix = |p: &ProgramPoint, i: usize| ProgramPoint {
        steps: p.steps[i..].to_vec(),
        ..p.clone()
    };
    let wrap = |facts: Vec<IterationFact>, r: Relation| match (facts.is_empty(), r) {
        (true, Relation::Unrelated(why)) => Evidence::Unordered(why),
        (true, r) => Evidence::Source(r),
        (false, r) => Evidence::Iterations {
            facts,
            then: Some(r),
        },
    };
    let mut facts = Vec::new();
    let mut k = 0;
    let same_function = pa.file == pb.file && pa.function_lines == pb.function_lines;
    for (i, (sa, sb)) in pa.steps.iter().zip(&pb.steps).enumerate() {
        match (sa, sb) {
            (Step::Iteration { line, kind }, Step::Iteration { line: lb, .. })
                if same_function && line == lb =>
            {
                let counter = loops.get(&pa.file, *line);
                let raw = (ia.get(k).copied().flatten(), ib.get(k).copied().flatten());
                k += 1;
                let lov = counter.and_then(|c| c.lov.as_ref().ok());
                // A rank past a body update reads the next iteration's value: count from
                // the start of each rank's iteration.
                let past = |p: &ProgramPoint, c: &Candidate| c.line != *line && p.line > c.line;
                let start = |v: Option<i64>, p: &ProgramPoint, c: &Candidate| match (v, past(p, c))
                {
                    (Some(v), false) => Some(v),
                    (Some(v), true) => c.step.map(|s| v - s),
                    (None, _) => None,
                };
                let values =
                    lov.map_or((None, None), |c| (start(raw.0, pa, c), start(raw.1, pb, c)));
                match (values, lov) {
                    ((Some(x), Some(y)), Some(lov)) => {
                        facts.push(IterationFact {
                            file: pa.file.clone(),
                            line: *line,
                            kind,
                            variable: lov.variable.clone(),
                            direction: lov.direction,
                            values: (x, y),
                            adjusted: past(pa, lov) != past(pb, lov),
                        });
                        if x != y {
                            return Evidence::Iterations { facts, then: None };
                        }
                    }
                    // Not known: the plain comparison says what the count would decide.
                    _ => return wrap(facts, compare(&suffix(pa, i), &suffix(pb, i))),
                }
            }
            _ if sa == sb => {}
            _ => return wrap(facts, compare(&suffix(pa, i), &suffix(pb, i))),
        }
    }
    wrap(facts, compare(pa, pb))
}
