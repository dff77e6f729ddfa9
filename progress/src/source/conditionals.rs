//! The parts of a conditional (its condition and arms, an if's else-if chain) and which
//! part holds a line: the arm tokens of a program point.

use super::language::Language;
use super::syntax::{children, first_line, has_code_on, spans};
use crate::point::Step;
use tree_sitter::Node;

/// One part of a conditional: its condition or one arm, as the sibling nodes that make it
/// up (a Fortran arm is a run of statements, not one node) and the line offsets inside it
/// are counted from.
pub(super) struct Part<'tree> {
    first_line: u32,
    pub(super) nodes: Vec<Node<'tree>>,
}

impl Part<'_> {
    fn spans(&self, line: u32) -> bool {
        self.nodes.iter().any(|node| spans(*node, line))
    }

    fn has_code_on(&self, line: u32, source: &[u8]) -> bool {
        self.nodes
            .iter()
            .any(|node| has_code_on(*node, line, source))
    }
}

/// `if (c) A else if (d) B else C`: one clause per condition, nested as C nests them.
pub(super) struct IfClause<'tree> {
    line: u32,
    condition: Part<'tree>,
    body: Part<'tree>,
}

pub(super) enum Shape<'tree> {
    /// An if with its else-if clauses (Fortran's are flat in the tree; C's hold one clause
    /// and nest the next `if` inside the else part) and its final else.
    IfChain {
        kind: &'static str,
        clauses: Vec<IfClause<'tree>>,
        otherwise: Option<Part<'tree>>,
    },
    /// switch, select case / type / rank, try: an optional condition (arm 0) and flat arms.
    Arms {
        kind: &'static str,
        line: u32,
        condition: Option<Part<'tree>>,
        arms: Vec<Part<'tree>>,
    },
}

/// Which part of a shape holds the target: for an `IfChain`, `Condition(k)` and `Body(k)`
/// are clause `k`'s, `Body(clauses.len())` is the else part; for `Arms`, `Condition(0)` is
/// the condition and `Body(i)` is arm `i + 1`.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    Condition(usize),
    Body(usize),
}

impl<'tree> Shape<'tree> {
    fn parts(&self) -> Vec<(Slot, &Part<'tree>)> {
        match self {
            Shape::IfChain {
                clauses, otherwise, ..
            } => {
                let mut parts = Vec::new();
                for (index, clause) in clauses.iter().enumerate() {
                    parts.push((Slot::Condition(index), &clause.condition));
                    parts.push((Slot::Body(index), &clause.body));
                }
                if let Some(otherwise) = otherwise {
                    parts.push((Slot::Body(clauses.len()), otherwise));
                }
                parts
            }
            Shape::Arms {
                condition, arms, ..
            } => {
                let mut parts: Vec<(Slot, &Part)> = condition
                    .iter()
                    .map(|part| (Slot::Condition(0), part))
                    .collect();
                parts.extend(
                    arms.iter()
                        .enumerate()
                        .map(|(index, arm)| (Slot::Body(index), arm)),
                );
                parts
            }
        }
    }

    /// The part that holds `line`: an arm with code on it, else the condition with code on
    /// it, else an arm or the condition whose lines span it (see the [`super`] module docs).
    pub(super) fn choose(&self, line: u32, source: &[u8]) -> Option<(Slot, &Part<'tree>)> {
        let mut parts = self.parts();
        parts.retain(|(_, part)| part.spans(line));
        // The code test walks down to the line: only pay for it when the line is shared.
        if parts.len() == 1 {
            return parts.first().copied();
        }
        // Arms before the condition, for one test of "holds the line".
        let find = |holds: &dyn Fn(&Part) -> bool| {
            let arm = parts
                .iter()
                .find(|(slot, part)| matches!(slot, Slot::Body(_)) && holds(part));
            arm.or_else(|| {
                parts
                    .iter()
                    .find(|(slot, part)| matches!(slot, Slot::Condition(_)) && holds(part))
            })
            .copied()
        };
        find(&|part| part.has_code_on(line, source)).or_else(|| find(&|_| true))
    }

    /// Emits the steps that lead into `slot` and moves `base` to that part's first line.
    pub(super) fn enter(&self, slot: Slot, base: &mut u32, steps: &mut Vec<Step>) {
        match self {
            Shape::Arms {
                kind,
                line,
                condition,
                arms,
            } => {
                let (arm, part) = match slot {
                    Slot::Condition(_) => (0, condition.as_ref()),
                    Slot::Body(index) => (
                        u32::try_from(index + 1).unwrap_or(u32::MAX),
                        arms.get(index),
                    ),
                };
                steps.push(Step::Offset(line.saturating_sub(*base)));
                steps.push(Step::Arm {
                    line: *line,
                    arm,
                    kind,
                });
                *base = part.map_or(*line, |part| part.first_line);
            }
            Shape::IfChain {
                kind,
                clauses,
                otherwise,
            } => {
                let (Slot::Condition(target) | Slot::Body(target)) = slot;
                // Every clause before the target was false: the target is in its else part
                // (arm 2), which starts where the next clause (or the final else) starts.
                for (index, clause) in clauses.iter().enumerate().take(target) {
                    steps.push(Step::Offset(clause.line.saturating_sub(*base)));
                    steps.push(Step::Arm {
                        line: clause.line,
                        arm: 2,
                        kind,
                    });
                    *base = match clauses.get(index + 1) {
                        Some(next) => next.line,
                        None => otherwise
                            .as_ref()
                            .map_or(clause.line, |part| part.first_line),
                    };
                }
                if let Some(clause) = clauses.get(target) {
                    let (arm, part) = match slot {
                        Slot::Condition(_) => (0, &clause.condition),
                        Slot::Body(_) => (1, &clause.body),
                    };
                    steps.push(Step::Offset(clause.line.saturating_sub(*base)));
                    steps.push(Step::Arm {
                        line: clause.line,
                        arm,
                        kind,
                    });
                    *base = part.first_line;
                }
            }
        }
    }
}

/// A conditional's parts. None when the node is not one this code knows the shape of.
pub(super) fn shape<'tree>(node: Node<'tree>, language: Language) -> Option<Shape<'tree>> {
    let line = first_line(node);
    let part = |node: Node<'tree>| Part {
        first_line: first_line(node),
        nodes: vec![node],
    };
    match (language, node.kind()) {
        (Language::C | Language::Cpp, "if_statement") => {
            let constexpr = children(node)
                .iter()
                .any(|child| child.kind() == "constexpr");
            let condition = node.child_by_field_name("condition")?;
            let consequence = node.child_by_field_name("consequence")?;
            Some(Shape::IfChain {
                kind: if constexpr { "if constexpr" } else { "if" },
                clauses: vec![IfClause {
                    line,
                    condition: part(condition),
                    body: part(consequence),
                }],
                otherwise: node.child_by_field_name("alternative").map(part),
            })
        }
        (Language::C | Language::Cpp, "switch_statement") => {
            let body = node.child_by_field_name("body")?;
            let arms = children(body)
                .into_iter()
                .filter(|child| child.kind() == "case_statement")
                .map(part)
                .collect();
            Some(Shape::Arms {
                kind: "switch",
                line,
                condition: node.child_by_field_name("condition").map(part),
                arms,
            })
        }
        (Language::Cpp, "try_statement") => {
            let body = node.child_by_field_name("body")?;
            let handlers = children(node)
                .into_iter()
                .filter(|child| child.kind() == "catch_clause");
            Some(Shape::Arms {
                kind: "try",
                line,
                condition: None,
                arms: std::iter::once(body).chain(handlers).map(part).collect(),
            })
        }
        (Language::Fortran, "if_statement") => fortran_if(node),
        (
            Language::Fortran,
            "select_case_statement" | "select_type_statement" | "select_rank_statement",
        ) => {
            let (kind, arm_kind) = match node.kind() {
                "select_case_statement" => ("select case", "case_statement"),
                "select_type_statement" => ("select type", "type_statement"),
                _ => ("select rank", "rank_statement"),
            };
            let parts = children(node);
            Some(Shape::Arms {
                kind,
                line,
                condition: parts
                    .iter()
                    .find(|child| child.kind() == "selector")
                    .copied()
                    .map(part),
                arms: parts
                    .into_iter()
                    .filter(|child| child.kind() == arm_kind)
                    .map(part)
                    .collect(),
            })
        }
        (Language::Python, "if_statement") => python_if(node),
        // The try block is arm 1, each except clause a further arm, then the else clause
        // (which runs after the block when nothing was raised) and the finally clause, each
        // an arm of their own: a task in one of them is not ordered against the block.
        (Language::Python, "try_statement") => {
            let body = node.child_by_field_name("body")?;
            let handlers = children(node).into_iter().filter(|child| {
                matches!(
                    child.kind(),
                    "except_clause" | "except_group_clause" | "else_clause" | "finally_clause"
                )
            });
            Some(Shape::Arms {
                kind: "try",
                line,
                condition: None,
                arms: std::iter::once(body).chain(handlers).map(part).collect(),
            })
        }
        (Language::Python, "match_statement") => {
            let body = node.child_by_field_name("body")?;
            Some(Shape::Arms {
                kind: "match",
                line,
                condition: node.child_by_field_name("subject").map(part),
                arms: children(body)
                    .into_iter()
                    .filter(|child| child.kind() == "case_clause")
                    .map(part)
                    .collect(),
            })
        }
        _ => None,
    }
}

/// A Python if: `if c: / body / elif d: / body / else: / body`, its `elif` clauses flat in
/// the tree as Fortran's are, given C's nesting.
fn python_if(node: Node) -> Option<Shape> {
    let mut clauses = vec![python_clause(node)?];
    let mut otherwise = None;
    let mut cursor = node.walk();
    for alternative in node.children_by_field_name("alternative", &mut cursor) {
        match alternative.kind() {
            "elif_clause" => clauses.push(python_clause(alternative)?),
            "else_clause" => {
                otherwise = Some(Part {
                    first_line: first_line(alternative),
                    nodes: vec![alternative],
                });
            }
            _ => {}
        }
    }
    Some(Shape::IfChain {
        kind: "if",
        clauses,
        otherwise,
    })
}

/// An `if` or `elif` clause: its condition and its block.
fn python_clause(node: Node) -> Option<IfClause> {
    let condition = node.child_by_field_name("condition")?;
    let body = node.child_by_field_name("consequence")?;
    Some(IfClause {
        line: first_line(node),
        condition: Part {
            first_line: first_line(condition),
            nodes: vec![condition],
        },
        body: Part {
            first_line: first_line(body),
            nodes: vec![body],
        },
    })
}

/// A Fortran if: `if (c) then / body / else if (d) then / body / else / body / end if`, or
/// the one-line logical `if (c) statement`. The tree holds the first clause's condition
/// and statements directly, then `elseif_clause`s and an `else_clause`.
fn fortran_if(node: Node) -> Option<Shape> {
    let mut clauses = vec![fortran_clause(node, first_line(node))?];
    let mut otherwise = None;
    for child in children(node) {
        match child.kind() {
            "elseif_clause" => clauses.push(fortran_clause(child, first_line(child))?),
            "else_clause" => {
                otherwise = Some(Part {
                    first_line: first_line(child),
                    nodes: vec![child],
                });
            }
            _ => {}
        }
    }
    Some(Shape::IfChain {
        kind: "if",
        clauses,
        otherwise,
    })
}

/// One condition and its statements: those that follow the condition up to the next clause
/// or `end if`. The arm starts on the `then` line, as a C arm starts at its `{`; a logical
/// if has no `then`, and its arm is its statement.
fn fortran_clause(node: Node, line: u32) -> Option<IfClause> {
    let parts = children(node);
    let at = parts
        .iter()
        .position(|child| child.kind() == "parenthesized_expression")?;
    let condition = parts[at];
    let then = parts[at..].iter().find(|child| child.kind() == "then");
    let statements: Vec<Node> = parts[at + 1..]
        .iter()
        .copied()
        .filter(|child| {
            child.is_named()
                && !matches!(
                    child.kind(),
                    "elseif_clause" | "else_clause" | "end_if_statement"
                )
        })
        .collect();
    let body_line = then
        .map(|then| first_line(*then))
        .or_else(|| statements.first().map(|statement| first_line(*statement)))
        .unwrap_or(line);
    Some(IfClause {
        line,
        condition: Part {
            first_line: first_line(condition),
            nodes: vec![condition],
        },
        body: Part {
            first_line: body_line,
            nodes: statements,
        },
    })
}
