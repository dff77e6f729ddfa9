//! Program points (the paper's lexicographic tuples) and their partial order.
//!
//! A [`ProgramPoint`] places one source line inside its function as a list of [`Step`]s,
//! outermost first: a line offset to the next enclosing construct, then what that construct
//! is (a loop, whose iteration count decides first, or one arm of a conditional), then the
//! offset from the construct's or arm's first line, and so on down to the target line. The
//! steps always alternate: `Offset`, then `Iteration` or `Arm`, then `Offset`, ..., ending
//! with the `Offset` of the target line.
//!
//! [`compare`] is Definitions 3.2-3.4 of Ahn et al., "Scalable Temporal Order Analysis for
//! Large Scale Debugging" (SC 2009), made precise for this representation: the first step
//! where two points differ decides, an iteration placeholder means "it depends on the loop
//! counts" ([`Relation::NeedsIteration`]), and two distinct arms of one conditional are never
//! ordered ([`Relation::Incomparable`]).
//!
//! # Display
//!
//! `function@<steps>`, steps separated by commas: an offset is its number, a loop is
//! `it(KIND@LINE)` and an arm is `br(KIND@LINE:ARM)` (arm 0 is the condition). The Poisson
//! solver's line 17 (the else arm of the `if` at 14, inside the `while` at 4) reads
//! `poisson@<3,it(while@4),10,br(if@14:2),1>`. A point with no function name shows
//! `<anonymous>`. File and target line are not shown (they are in the struct).

use serde::Serialize;
use std::fmt;

/// One step of a program point, outermost first.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Step {
    /// Lines from the base line of the enclosing scope (the function's first line, a loop's
    /// first line, or an arm's first line) to the first line of the next construct, or to the
    /// target line for the last step.
    Offset(u32),
    /// The target lies in the loop that starts at `line` (header lines included): the loop's
    /// iteration count goes here (a placeholder; a later stage fills it from a loop-order
    /// variable). `kind`: "for", "while", "do-while", "range-for", "do" (Fortran),
    /// "do concurrent", "forall".
    Iteration { line: u32, kind: &'static str },
    /// The target lies in arm `arm` of the conditional that starts at `line`: 0 is its
    /// condition (evaluated before any arm: comparable with every arm and before it), 1.. are
    /// the arms in source order (then = 1, else = 2; else-if chains nest as C's grammar does;
    /// switch / select-case cases are arms; a C++ try block is arm 1 and each catch clause a
    /// further arm). `kind`: "if", "if constexpr", "switch", "try", "select case",
    /// "select type".
    Arm {
        line: u32,
        arm: u32,
        kind: &'static str,
    },
}

/// Where one source line sits inside its function: the paper's program point, with the
/// iteration counts still placeholders.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProgramPoint {
    pub file: String,
    /// The innermost enclosing function's name as written in the source (C: `get_norm`;
    /// C++: `Solver::step` or `step`, whatever the declarator says; Fortran: the
    /// subroutine / function / program name); None for a lambda or when no name can be read.
    pub function: Option<String>,
    /// First and last line of that function definition (1-based).
    pub function_lines: (u32, u32),
    /// The target line (1-based).
    pub line: u32,
    pub steps: Vec<Step>,
}

/// How two program points of one function are ordered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum Relation {
    /// The first point comes before the second: a task there is less progressed.
    Before,
    After,
    /// The same program point (ties: same line).
    Same,
    /// Points in distinct arms of the conditional at `line`: never ordered.
    Incomparable {
        line: u32,
        kind: &'static str,
        arms: (u32, u32),
    },
    /// The order depends on the iteration counts of the loop at `line`; `if_same_iteration`
    /// is the relation when both are in the same iteration (then the rest of the points
    /// decides).
    NeedsIteration {
        line: u32,
        kind: &'static str,
        if_same_iteration: Box<Relation>,
    },
    /// The two points do not come from one function or their shapes disagree (says why).
    Unrelated(String),
}

impl Relation {
    /// The relation seen from the other side: `compare(b, a) == compare(a, b).reversed()`.
    pub fn reversed(&self) -> Relation {
        match self {
            Relation::Before => Relation::After,
            Relation::After => Relation::Before,
            Relation::Same => Relation::Same,
            Relation::Incomparable {
                line,
                kind,
                arms: (first, second),
            } => Relation::Incomparable {
                line: *line,
                kind,
                arms: (*second, *first),
            },
            Relation::NeedsIteration {
                line,
                kind,
                if_same_iteration,
            } => Relation::NeedsIteration {
                line: *line,
                kind,
                if_same_iteration: Box::new(if_same_iteration.reversed()),
            },
            Relation::Unrelated(why) => Relation::Unrelated(why.clone()),
        }
    }
}

/// Compares two points of the same function (same file and `function_lines`; anything else
/// is [`Relation::Unrelated`]).
pub fn compare(a: &ProgramPoint, b: &ProgramPoint) -> Relation {
    if a.file != b.file || a.function_lines != b.function_lines {
        // In a fixed order, so that the relation reverses exactly (see `disagreement`).
        let (a, b) = (function_description(a), function_description(b));
        let (first, second) = if a <= b { (a, b) } else { (b, a) };
        return Relation::Unrelated(format!("different functions: {first} and {second}"));
    }
    compare_steps(&a.steps, &b.steps)
}

fn function_description(point: &ProgramPoint) -> String {
    format!(
        "{} (lines {}-{} of {})",
        point.function.as_deref().unwrap_or("<anonymous>"),
        point.function_lines.0,
        point.function_lines.1,
        point.file
    )
}

/// The lexicographic walk: the first step that differs decides. Recursion happens only at
/// loops (the rest of the points is needed for `if_same_iteration`), so it is as deep as the
/// loop nest.
fn compare_steps(a: &[Step], b: &[Step]) -> Relation {
    for (index, (step_a, step_b)) in a.iter().zip(b).enumerate() {
        match (step_a, step_b) {
            (Step::Offset(x), Step::Offset(y)) => match x.cmp(y) {
                std::cmp::Ordering::Less => return Relation::Before,
                std::cmp::Ordering::Greater => return Relation::After,
                std::cmp::Ordering::Equal => {}
            },
            (
                Step::Iteration {
                    line: line_a,
                    kind: kind_a,
                },
                Step::Iteration {
                    line: line_b,
                    kind: kind_b,
                },
            ) => {
                if line_a != line_b || kind_a != kind_b {
                    return disagreement(index, step_a, step_b);
                }
                // Both are in the same loop: the iteration counts would decide first. If the
                // rest is the same line, the counts cannot make the points differ (a task
                // further along is simply at the same place later): same class.
                return match compare_steps(&a[index + 1..], &b[index + 1..]) {
                    Relation::Same => Relation::Same,
                    unrelated @ Relation::Unrelated(_) => unrelated,
                    rest => Relation::NeedsIteration {
                        line: *line_a,
                        kind: kind_a,
                        if_same_iteration: Box::new(rest),
                    },
                };
            }
            (
                Step::Arm {
                    line: line_a,
                    arm: arm_a,
                    kind: kind_a,
                },
                Step::Arm {
                    line: line_b,
                    arm: arm_b,
                    kind: kind_b,
                },
            ) => {
                if line_a != line_b || kind_a != kind_b {
                    return disagreement(index, step_a, step_b);
                }
                match (arm_a, arm_b) {
                    _ if arm_a == arm_b => {}
                    // The condition is evaluated before whichever arm runs.
                    (0, _) => return Relation::Before,
                    (_, 0) => return Relation::After,
                    _ => {
                        return Relation::Incomparable {
                            line: *line_a,
                            kind: kind_a,
                            arms: (*arm_a, *arm_b),
                        };
                    }
                }
            }
            _ => return disagreement(index, step_a, step_b),
        }
    }
    // Equal, or one a prefix of the other: nothing orders them.
    Relation::Same
}

/// The message names the two steps in a fixed order, so that `compare(b, a)` is exactly
/// `compare(a, b).reversed()` for unrelated points too.
fn disagreement(index: usize, a: &Step, b: &Step) -> Relation {
    let (a, b) = (a.to_string(), b.to_string());
    let (first, second) = if a <= b { (a, b) } else { (b, a) };
    Relation::Unrelated(format!(
        "the points disagree at step {index}: {first} and {second} (two constructs on one line, \
         or points from different versions of the source)"
    ))
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Offset(offset) => write!(f, "{offset}"),
            Step::Iteration { line, kind } => write!(f, "it({kind}@{line})"),
            Step::Arm { line, arm, kind } => write!(f, "br({kind}@{line}:{arm})"),
        }
    }
}

impl fmt::Display for ProgramPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@<", self.function.as_deref().unwrap_or("<anonymous>"))?;
        for (index, step) in self.steps.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{step}")?;
        }
        f.write_str(">")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn point(steps: Vec<Step>) -> ProgramPoint {
        ProgramPoint {
            file: "poisson.c".to_owned(),
            function: Some("poisson".to_owned()),
            function_lines: (1, 22),
            line: 0,
            steps,
        }
    }

    fn off(offset: u32) -> Step {
        Step::Offset(offset)
    }

    fn it(line: u32) -> Step {
        Step::Iteration {
            line,
            kind: "while",
        }
    }

    fn arm(line: u32, arm: u32) -> Step {
        Step::Arm {
            line,
            arm,
            kind: "if",
        }
    }

    #[test]
    fn offsets_order_lexicographically() {
        let a = point(vec![off(3)]);
        let b = point(vec![off(5)]);
        assert_eq!(compare(&a, &b), Relation::Before);
        assert_eq!(compare(&b, &a), Relation::After);
        assert_eq!(compare(&a, &a), Relation::Same);
    }

    #[test]
    fn same_loop_needs_the_iteration_counts() {
        let a = point(vec![off(3), it(4), off(1)]);
        let b = point(vec![off(3), it(4), off(2)]);
        let expected = Relation::NeedsIteration {
            line: 4,
            kind: "while",
            if_same_iteration: Box::new(Relation::Before),
        };
        assert_eq!(compare(&a, &b), expected);
        assert_eq!(compare(&b, &a), expected.reversed());
        // The same line in the loop is the same point whatever the counts.
        assert_eq!(compare(&a, &a.clone()), Relation::Same);
    }

    #[test]
    fn nested_loops_nest_the_dependency() {
        let a = point(vec![off(3), it(4), off(2), it(6), off(1)]);
        let b = point(vec![off(3), it(4), off(2), it(6), off(3)]);
        let inner = Relation::NeedsIteration {
            line: 6,
            kind: "while",
            if_same_iteration: Box::new(Relation::Before),
        };
        assert_eq!(
            compare(&a, &b),
            Relation::NeedsIteration {
                line: 4,
                kind: "while",
                if_same_iteration: Box::new(inner)
            }
        );
    }

    #[test]
    fn arms_are_incomparable_and_the_condition_comes_first() {
        let condition = point(vec![off(3), arm(4, 0), off(0)]);
        let then = point(vec![off(3), arm(4, 1), off(1)]);
        let other = point(vec![off(3), arm(4, 2), off(1)]);
        assert_eq!(
            compare(&then, &other),
            Relation::Incomparable {
                line: 4,
                kind: "if",
                arms: (1, 2)
            }
        );
        assert_eq!(
            compare(&other, &then),
            Relation::Incomparable {
                line: 4,
                kind: "if",
                arms: (2, 1)
            }
        );
        assert_eq!(compare(&condition, &then), Relation::Before);
        assert_eq!(compare(&other, &condition), Relation::After);
        // Within one arm the offsets decide.
        let later_in_then = point(vec![off(3), arm(4, 1), off(2)]);
        assert_eq!(compare(&then, &later_in_then), Relation::Before);
    }

    #[test]
    fn a_prefix_is_the_same_point() {
        let a = point(vec![off(3)]);
        let b = point(vec![off(3), it(4), off(1)]);
        assert_eq!(compare(&a, &b), Relation::Same);
        assert_eq!(compare(&b, &a), Relation::Same);
    }

    #[test]
    fn shapes_that_disagree_are_unrelated() {
        let a = point(vec![off(3), it(4), off(1)]);
        let b = point(vec![off(3), arm(4, 1), off(1)]);
        let Relation::Unrelated(why) = compare(&a, &b) else {
            panic!("expected Unrelated, got {:?}", compare(&a, &b));
        };
        assert!(why.contains("step 1"), "{why}");
        let c = point(vec![off(3), it(5), off(1)]);
        assert!(matches!(compare(&a, &c), Relation::Unrelated(_)));
        // A disagreement inside a loop is not hidden behind NeedsIteration.
        let d = point(vec![off(3), it(4), off(1), it(5), off(0)]);
        let e = point(vec![off(3), it(4), off(1), arm(5, 1), off(0)]);
        assert!(matches!(compare(&d, &e), Relation::Unrelated(_)));
    }

    #[test]
    fn different_functions_are_unrelated() {
        let a = point(vec![off(3)]);
        let mut b = point(vec![off(3)]);
        b.function_lines = (30, 40);
        b.function = None;
        let Relation::Unrelated(why) = compare(&a, &b) else {
            panic!("expected Unrelated");
        };
        assert!(
            why.contains("poisson") && why.contains("<anonymous>"),
            "{why}"
        );
        let mut c = point(vec![off(3)]);
        c.file = "other.c".to_owned();
        assert!(matches!(compare(&a, &c), Relation::Unrelated(_)));
    }

    #[test]
    fn display_is_compact() {
        let p = point(vec![off(3), it(4), off(10), arm(14, 2), off(1)]);
        assert_eq!(p.to_string(), "poisson@<3,it(while@4),10,br(if@14:2),1>");
        let anonymous = ProgramPoint {
            function: None,
            ..point(vec![off(0)])
        };
        assert_eq!(anonymous.to_string(), "<anonymous>@<0>");
    }

    /// Well-formed step lists over a small alphabet, so that random pairs often share
    /// prefixes and meet every branch of the comparison.
    fn steps_strategy() -> impl Strategy<Value = Vec<Step>> {
        let construct = prop_oneof![
            (1u32..3).prop_map(|line| Step::Iteration { line, kind: "for" }),
            (1u32..3, 0u32..3).prop_map(|(line, arm)| Step::Arm {
                line,
                arm,
                kind: "if"
            }),
        ];
        (
            proptest::collection::vec((0u32..3, construct), 0..4),
            0u32..3,
        )
            .prop_map(|(levels, last)| {
                let mut steps = Vec::new();
                for (offset, construct) in levels {
                    steps.push(Step::Offset(offset));
                    steps.push(construct);
                }
                steps.push(Step::Offset(last));
                steps
            })
    }

    proptest! {
        #[test]
        fn compare_is_antisymmetric_and_reflexive(a in steps_strategy(), b in steps_strategy()) {
            let (a, b) = (point(a), point(b));
            prop_assert_eq!(compare(&a, &a), Relation::Same);
            prop_assert_eq!(compare(&b, &a), compare(&a, &b).reversed());
        }

        #[test]
        fn before_is_transitive(
            a in steps_strategy(),
            b in steps_strategy(),
            c in steps_strategy(),
        ) {
            let (a, b, c) = (point(a), point(b), point(c));
            if compare(&a, &b) == Relation::Before && compare(&b, &c) == Relation::Before {
                prop_assert_eq!(compare(&a, &c), Relation::Before);
            }
        }
    }
}
