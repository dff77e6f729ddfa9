//! The paper's rules applied to one variable's definitions: a candidate with its rank, a
//! rejection with why, or nothing worth a line.

use super::analysis::Analysis;
use super::candidates::{Candidate, Direction, Rejected};
use super::declarations::TypeClass;
use super::definitions::{Definition, Form, NotEveryIteration, Place};
use super::jumps::{Jump, JumpEffect};
use super::step::StepExpression;
use crate::source::language::Language;

/// The verdict on one variable; candidates carry their rank (lower first).
pub(super) enum Verdict {
    Candidate(Candidate, (u8, u8, u32)),
    Rejected(Rejected),
    /// Not integer-ish and not counter-like: not worth a line.
    Omitted,
}

impl<'tree> Analysis<'_, 'tree> {
    pub(super) fn verdict(
        &self,
        group: &[&Definition<'tree>],
        jumps: &[Jump],
        assigned: &std::collections::HashSet<&str>,
    ) -> Verdict {
        let Some(first) = group.first() else {
            return Verdict::Omitted;
        };
        let variable = first.variable.clone();
        let reject = |line: u32, why: String| {
            Verdict::Rejected(Rejected {
                variable: variable.clone(),
                line,
                why,
            })
        };
        let monotonic_shape = group
            .iter()
            .any(|definition| matches!(definition.form, Form::Step { .. }));

        if group
            .iter()
            .any(|definition| definition.place == Place::RangeElement)
        {
            let why = if self.language == Language::Python {
                "an element of what the for iterates: it counts no iterations \
                 (for i in range(n) or enumerate(...) does)"
            } else {
                "the range-for's element: a range-for has no induction variable"
            };
            return reject(self.loop_line, why.to_owned());
        }
        if let Some((definition, why)) =
            group
                .iter()
                .find_map(|definition| match &definition.context {
                    Some(NotEveryIteration::InnerInduction(why)) => Some((definition, why)),
                    _ => None,
                })
        {
            return reject(definition.line, why.clone());
        }

        let declared = self.declaration(&variable, first.node);
        if let Some(declared) = &declared {
            if declared.in_loop {
                return match &declared.class {
                    TypeClass::Not(_) if !monotonic_shape => Verdict::Omitted,
                    _ => reject(
                        declared.line,
                        format!(
                            "declared inside the loop (line {}): a new variable every iteration",
                            declared.line
                        ),
                    ),
                };
            }
            if let TypeClass::Not(why) = &declared.class {
                return if monotonic_shape {
                    reject(first.line, why.clone())
                } else {
                    Verdict::Omitted
                };
            }
        }

        // The shape of every definition, the step resolved.
        let mut direction = Direction::Unknown;
        let mut notes: Vec<String> = Vec::new();
        for definition in group {
            match self.resolve_step(definition, assigned) {
                Ok((found, note)) => {
                    direction = found;
                    notes.extend(note);
                }
                Err(why) => return reject(definition.line, why),
            }
        }

        // Once in every iteration.
        let reasons: Vec<Option<String>> = group
            .iter()
            .map(|definition| self.not_every_iteration(definition, jumps))
            .collect();
        if let [definition] = group {
            if let Some(Some(why)) = reasons.first() {
                return reject(definition.line, why.clone());
            }
        } else {
            let lines: Vec<u32> = group.iter().map(|definition| definition.line).collect();
            let listed = list_lines(&lines);
            let why = match group.iter().zip(&reasons).find_map(|(definition, reason)| {
                reason.as_ref().map(|reason| (definition.line, reason))
            }) {
                Some((line, reason)) => {
                    format!("assigned at lines {listed}; at line {line}: {reason}")
                }
                None => format!(
                    "assigned {} per iteration (lines {listed})",
                    times(group.len())
                ),
            };
            return reject(first.line, why);
        }

        // A candidate: one definition, every iteration, a constant step.
        match declared.as_ref().map(|declared| &declared.class) {
            Some(TypeClass::Assumed(note)) => notes.push(note.clone()),
            None if self.language == Language::Python => {
                notes.push(super::python_loops::TYPE_NOTE.to_owned());
            }
            None => notes.push("declaration not seen".to_owned()),
            Some(_) => {}
        }
        if first.place == Place::Body
            && let Some(jump) = jumps.iter().find(|jump| {
                jump.effect == JumpEffect::Leaves && jump.start_byte < first.node.start_byte()
            })
        {
            notes.push(format!(
                "a {} at line {} may end the last iteration before it",
                jump.word, jump.line
            ));
        }
        let how = self.how(first);
        let how = if notes.is_empty() {
            how
        } else {
            format!("{how} ({})", notes.join("; "))
        };
        let line = if first.place == Place::Induction {
            self.loop_line
        } else {
            first.line
        };
        let tier = match (first.place, direction) {
            (_, Direction::Unknown) => 2,
            (Place::Induction, _) => 0,
            _ => 1,
        };
        let rank = (tier, u8::from(first.place != Place::Induction), line);
        let step = match &first.form {
            Form::Step {
                step: StepExpression::Literal(v),
                sign,
                ..
            } => i64::try_from(v.saturating_mul(i128::from(*sign))).ok(),
            _ => None,
        };
        Verdict::Candidate(
            Candidate {
                variable,
                direction,
                how,
                line,
                step,
            },
            rank,
        )
    }

    /// Why one definition may not run exactly once per iteration: its construct, or a jump
    /// that may skip it.
    fn not_every_iteration(&self, definition: &Definition, jumps: &[Jump]) -> Option<String> {
        if let Some(context) = &definition.context {
            return Some(context.why().to_owned());
        }
        if definition.place != Place::Body {
            // The increment runs after a `continue`; the condition before the body.
            return None;
        }
        jumps.iter().find_map(|jump| match jump.effect {
            JumpEffect::Tangles => Some(format!(
                "a {} at line {} jumps inside the loop and may skip or repeat it",
                jump.word, jump.line
            )),
            JumpEffect::Skips if jump.start_byte < definition.node.start_byte() => Some(format!(
                "after the {} at line {}, which may skip it",
                jump.word, jump.line
            )),
            JumpEffect::Skips | JumpEffect::Leaves => None,
        })
    }
}

/// "once", "twice", "3 times".
fn times(count: usize) -> String {
    match count {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        _ => format!("{count} times"),
    }
}

/// "4", "4 and 6", "4, 6 and 9".
fn list_lines(lines: &[u32]) -> String {
    let shown: Vec<String> = lines.iter().map(u32::to_string).collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}
