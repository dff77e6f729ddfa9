//! Rule 2, a constant step: the direction a definition moves its variable (the step's sign,
//! a named constant's value, or unknown for a loop-invariant variable), and how the move
//! reads in a candidate.

use super::analysis::Analysis;
use super::candidates::Direction;
use super::definitions::{Definition, Form, Place};
use super::step::StepExpression;

impl<'tree> Analysis<'_, 'tree> {
    /// The direction of a constant-step definition, with a note for a named constant's
    /// value, or why it is no constant step.
    pub(super) fn resolve_step(
        &self,
        definition: &Definition<'tree>,
        assigned: &std::collections::HashSet<&str>,
    ) -> Result<(Direction, Option<String>), String> {
        let Form::Step {
            step,
            sign,
            evaluated_once,
        } = &definition.form
        else {
            return match &definition.form {
                Form::NotMonotonic(why) => Err(why.clone()),
                // A fresh variable is caught before (declared in the loop); a declaration
                // whose declarator the lookup could not read lands here.
                _ => Err(format!(
                    "declared inside the loop (line {}): a new variable every iteration",
                    definition.line
                )),
            };
        };
        let text = &definition.text;
        let signed = |value: i128| value.saturating_mul(i128::from(*sign));
        let direction = |value: i128| {
            if value > 0 {
                Direction::Increasing
            } else {
                Direction::Decreasing
            }
        };
        match step {
            StepExpression::Literal(0) => Err(format!("{text} does not change it (step 0)")),
            StepExpression::Literal(value) => Ok((direction(signed(*value)), None)),
            StepExpression::NotInteger(literal) => {
                Err(format!("{text}: the step {literal} is not an integer"))
            }
            StepExpression::Other(_) if *evaluated_once => Ok((Direction::Unknown, None)),
            StepExpression::Other(expression) => Err(format!(
                "{text}: the step {expression} is neither an integer literal nor a single \
                 variable"
            )),
            StepExpression::Name { name, negated } => {
                if *name == definition.variable {
                    return Err(format!("{text} is not monotonic by a constant step"));
                }
                if !evaluated_once && assigned.contains(name.as_str()) {
                    return Err(format!("the step {name} is assigned in the loop"));
                }
                let constant = self
                    .declaration(name, definition.node)
                    .and_then(|declared| declared.constant)
                    .or_else(|| self.define(name));
                match constant {
                    Some(0) => Err(format!("the step {name} is 0")),
                    Some(value) => {
                        let value = if *negated {
                            value.saturating_neg()
                        } else {
                            value
                        };
                        Ok((direction(signed(value)), Some(format!("{name} = {value}"))))
                    }
                    None => Ok((Direction::Unknown, None)),
                }
            }
        }
    }

    pub(super) fn how(&self, definition: &Definition) -> String {
        match (definition.place, self.is_fortran()) {
            (Place::Induction, true) => {
                let step = match &definition.form {
                    Form::Step { step, .. } => match step {
                        StepExpression::Literal(value) => value.to_string(),
                        StepExpression::Name { name, negated } => {
                            format!("{}{name}", if *negated { "-" } else { "" })
                        }
                        StepExpression::NotInteger(text) | StepExpression::Other(text) => {
                            text.clone()
                        }
                    },
                    _ => String::new(),
                };
                format!("do-loop index (step {step})")
            }
            (Place::Induction, false) => format!("for-loop induction ({})", definition.text),
            (Place::Condition, _) => format!("{} in the loop condition", definition.text),
            _ => definition.text.clone(),
        }
    }
}
