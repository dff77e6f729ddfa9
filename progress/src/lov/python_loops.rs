//! Python's share of the loop-order analysis: a `for` loop's own counter (`for i in
//! range(a, b, s)`, `for i, x in enumerate(xs)`), its updates (`k += 1`, `k = k - 2`),
//! where they run (`if`/`elif`/`else`, `try`, `match`, `and`/`or`, inner loops), the jumps
//! that cut an iteration short (`continue`, `break`, `return`, `raise`), and module-level
//! constants used as steps (`STEP = 2`).
//!
//! Python has no declarations: a candidate's type is checked when the daemon reads it (an
//! `int`, or it says what it found). Functions, classes, lambdas and comprehensions defined
//! in the loop have variables of their own and are not searched.

use super::analysis::Analysis;
use super::declarations::{Declared, TypeClass};
use super::definitions::{Definition, Form, NotEveryIteration, Place};
use super::jumps::{Jump, JumpEffect};
use super::step::StepExpression;
use crate::source::syntax::{children, first_line};
use tree_sitter::Node;

/// The note a candidate gets in place of a declaration.
pub(super) const TYPE_NOTE: &str = "Python: its type is checked when read";

impl<'tree> Analysis<'_, 'tree> {
    /// The analysed `for` loop's own target: a counter when it iterates a `range` or an
    /// `enumerate`, else the element of an iterable (no counter).
    pub(super) fn python_header(
        &self,
        the_loop: Node<'tree>,
        definitions: &mut Vec<Definition<'tree>>,
    ) {
        if the_loop.kind() != "for_statement" {
            return;
        }
        let (Some(target), Some(iterable)) = (
            the_loop.child_by_field_name("left"),
            the_loop.child_by_field_name("right"),
        ) else {
            return;
        };
        let text = format!("{} in {}", self.written(target), self.written(iterable));
        let mut push = |variable: String, node: Node<'tree>, place: Place, form: Form| {
            definitions.push(Definition {
                variable,
                node,
                line: self.loop_line,
                text: text.clone(),
                place,
                form,
                context: None,
            });
        };
        match self.counting_call(iterable) {
            Some(("range", arguments)) if (1..=3).contains(&arguments.len()) => {
                if let Some(name) = self.plain_name(target) {
                    let step = match arguments.get(2) {
                        Some(step) => self.step_expression(*step),
                        None => StepExpression::Literal(1),
                    };
                    let form = Form::Step {
                        step,
                        sign: 1,
                        evaluated_once: true,
                    };
                    push(name, target, Place::Induction, form);
                    return;
                }
            }
            Some(("enumerate", _)) => {
                let mut names = self.target_names(target).into_iter();
                if matches!(target.kind(), "pattern_list" | "tuple_pattern")
                    && let Some((counter, node)) = names.next()
                {
                    let form = Form::Step {
                        step: StepExpression::Literal(1),
                        sign: 1,
                        evaluated_once: true,
                    };
                    push(counter, node, Place::Induction, form);
                    for (name, node) in names {
                        push(name, node, Place::RangeElement, Form::Fresh);
                    }
                    return;
                }
            }
            _ => {}
        }
        for (name, node) in self.target_names(target) {
            push(name, node, Place::RangeElement, Form::Fresh);
        }
    }

    /// `range(...)` or `enumerate(...)` called by its plain name, with its positional
    /// arguments.
    fn counting_call(&self, iterable: Node<'tree>) -> Option<(&'static str, Vec<Node<'tree>>)> {
        let iterable = self.unparenthesize(iterable);
        if iterable.kind() != "call" {
            return None;
        }
        let name = match self
            .plain_name(iterable.child_by_field_name("function")?)?
            .as_str()
        {
            "range" => "range",
            "enumerate" => "enumerate",
            _ => return None,
        };
        let arguments = iterable.child_by_field_name("arguments")?;
        let mut cursor = arguments.walk();
        let positional: Vec<Node> = arguments
            .named_children(&mut cursor)
            .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment"))
            .collect();
        // `range(*bounds)` says nothing about the step.
        if positional
            .iter()
            .any(|a| matches!(a.kind(), "list_splat" | "dictionary_splat"))
        {
            return None;
        }
        Some((name, positional))
    }

    /// The plain names a `for` target binds (`i`, `i, x`, `(i, (a, b))`), with their nodes.
    fn target_names(&self, target: Node<'tree>) -> Vec<(String, Node<'tree>)> {
        let mut out = Vec::new();
        let mut pending = vec![target];
        while let Some(node) = pending.pop() {
            match node.kind() {
                "identifier" => out.push((self.text(node).to_owned(), node)),
                "pattern_list" | "tuple_pattern" | "list_pattern" | "parenthesized_expression" => {
                    let mut named = children(node);
                    named.retain(|c| c.is_named());
                    pending.extend(named.into_iter().rev());
                }
                _ => {}
            }
        }
        out
    }

    /// The definitions a Python statement makes: `x += c`, `x = x + c`, `x = ...`, and the
    /// targets of an inner `for` (its induction variable).
    pub(super) fn python_definitions_at(
        &self,
        node: Node<'tree>,
        definitions: &mut Vec<Definition<'tree>>,
    ) {
        let mut define = |variable: String, at: Node<'tree>, form: Form| {
            let (place, context) = self.context(at);
            definitions.push(Definition {
                variable,
                node: at,
                line: first_line(at),
                text: self.written(node),
                place,
                form,
                context,
            });
        };
        match node.kind() {
            "augmented_assignment" => {
                if let Some((variable, form)) = self.update_form(node) {
                    define(variable, node, form);
                }
            }
            "assignment" => {
                let (Some(left), Some(right)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    return;
                };
                match self.plain_name(left) {
                    // `a = b = 0`: the inner assignment defines `b` itself.
                    Some(variable) => {
                        let form = self.assignment_form(&variable, node, right);
                        define(variable, node, form);
                    }
                    None => {
                        for (variable, _) in self.target_names(left) {
                            let form = Form::NotMonotonic(format!(
                                "{} sets it from other values, not by a step from its own",
                                self.written(node)
                            ));
                            define(variable, node, form);
                        }
                    }
                }
            }
            "named_expression" => {
                if let (Some(name), Some(value)) = (
                    node.child_by_field_name("name")
                        .and_then(|n| self.plain_name(n)),
                    node.child_by_field_name("value"),
                ) {
                    let form = self.assignment_form(&name, node, value);
                    define(name, node, form);
                }
            }
            "for_statement" => {
                // An inner loop's target: rejected through its context (the inner loop).
                if let Some(target) = node.child_by_field_name("left") {
                    for (variable, at) in self.target_names(target) {
                        let (place, context) = self.context(at);
                        definitions.push(Definition {
                            variable,
                            node: at,
                            line: first_line(at),
                            text: self.written(target),
                            place,
                            form: Form::Fresh,
                            context,
                        });
                    }
                }
            }
            _ => {}
        }
    }

    /// Why a definition reached through `child` of `ancestor` may not run once per
    /// iteration (Python's constructs), or None for straight-line code.
    pub(super) fn python_construct_reason(
        &self,
        ancestor: Node,
        child: Node,
        kind: Option<&str>,
    ) -> Option<NotEveryIteration> {
        let line = first_line(ancestor);
        let is_field = |name| ancestor.child_by_field_name(name) == Some(child);
        let other = |why: String| Some(NotEveryIteration::Other(why));
        let branch =
            |what: &str| other(format!("assigned only in a branch ({what} at line {line})"));
        if let Some(kind) = kind {
            return if is_field("left") {
                Some(NotEveryIteration::InnerInduction(format!(
                    "the induction variable of the inner {kind} at line {line}"
                )))
            } else if is_field("right") {
                // The iterable is evaluated once each time the inner loop starts.
                None
            } else if is_field("alternative") {
                other(format!(
                    "assigned in the else clause of the inner {kind} at line {line}, which a \
                     break skips"
                ))
            } else {
                other(format!(
                    "assigned only inside the inner {kind} at line {line}, which may run any \
                     number of times per iteration"
                ))
            };
        }
        match ancestor.kind() {
            "if_statement" if !is_field("condition") => branch("if"),
            "match_statement" if !is_field("subject") => branch("match"),
            "boolean_operator" if is_field("right") => {
                let operator = ancestor
                    .child_by_field_name("operator")
                    .map_or("and/or", |o| o.kind());
                branch(operator)
            }
            // `a if condition else b`: only the condition always runs.
            "conditional_expression" if ancestor.named_child(1) != Some(child) => {
                branch("if-else expression")
            }
            "try_statement" if is_field("body") => other(format!(
                "assigned only in a try block (line {line}): an exception may skip it"
            )),
            "except_clause" | "except_group_clause" => branch("except"),
            "else_clause"
                if ancestor
                    .parent()
                    .is_some_and(|p| p.kind() == "try_statement") =>
            {
                other(format!(
                    "assigned in a try's else clause (line {line}), which an exception skips"
                ))
            }
            _ => None,
        }
    }

    /// A Python jump statement's effect on the analysed loop.
    pub(super) fn python_jump_at(&self, node: Node) -> Option<Jump> {
        let jump = |word: &str, effect| Jump {
            word: word.to_owned(),
            line: first_line(node),
            start_byte: node.start_byte(),
            effect,
        };
        match node.kind() {
            "continue_statement" => {
                (!self.inner_target(node, false)).then(|| jump("continue", JumpEffect::Skips))
            }
            "break_statement" => {
                (!self.inner_target(node, false)).then(|| jump("break", JumpEffect::Leaves))
            }
            "return_statement" => Some(jump("return", JumpEffect::Leaves)),
            "raise_statement" => Some(jump("raise", JumpEffect::Leaves)),
            _ => None,
        }
    }

    /// A module-level constant (`STEP = 2` at the top level, the file's only assignment
    /// to the name) as a step's value; None for any other name (its type is checked when
    /// read).
    pub(super) fn python_declaration(&self, name: &str) -> Option<Declared> {
        let mut assignments = 0;
        let mut constant = None;
        let mut pending = vec![self.root];
        while let Some(node) = pending.pop() {
            let assigned = match node.kind() {
                "assignment" | "augmented_assignment" => node.child_by_field_name("left"),
                "named_expression" => node.child_by_field_name("name"),
                "for_statement" | "for_in_clause" => node.child_by_field_name("left"),
                // `global NAME` in a function: someone else may assign it.
                "global_statement" | "nonlocal_statement" => Some(node),
                _ => None,
            };
            if let Some(assigned) = assigned {
                let names = match node.kind() {
                    "global_statement" | "nonlocal_statement" => children(node)
                        .into_iter()
                        .filter(|c| c.kind() == "identifier")
                        .map(|c| (self.text(c).to_owned(), c))
                        .collect(),
                    _ => self.target_names(assigned),
                };
                if names.iter().any(|(n, _)| n == name) {
                    assignments += 1;
                    let top_level = node.kind() == "assignment"
                        && node.parent().is_some_and(|p| {
                            p.kind() == "expression_statement" && p.parent() == Some(self.root)
                        });
                    constant = node
                        .child_by_field_name("right")
                        .filter(|_| top_level && assigned.kind() == "identifier")
                        .and_then(|right| self.literal_value(right))
                        .map(|value| (first_line(node), value));
                }
            }
            pending.extend(children(node));
        }
        let (line, value) = constant.filter(|_| assignments == 1)?;
        Some(Declared {
            line,
            class: TypeClass::Integer,
            constant: Some(value),
            in_loop: false,
        })
    }
}
