//! Every assignment to a plain variable in the loop, per construct (C/C++ updates,
//! assignments and declarations, Fortran assignments and `do` headers), with its form and
//! where it runs: the candidate search and rule 1 (assigned in every iteration).

use super::analysis::Analysis;
use super::candidates::Rejected;
use super::step::StepExpression;
use crate::source::constructs::{is_macro_block, is_python_scope, loop_kind};
use crate::source::language::Language;
use crate::source::syntax::{children, first_line};
use tree_sitter::Node;

/// Where in the loop a definition sits, as far as "once per iteration" is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// The loop's own increment (`for (...; ...; i++)`) or a Fortran `do` index.
    Induction,
    /// The loop's condition, evaluated once per iteration (`while (--n > 0)`).
    Condition,
    Body,
    /// A declaration with an initializer inside the loop: a new variable every iteration.
    Declaration,
    /// The element of the loop's own range-for.
    RangeElement,
}

/// What a definition does to its variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Form {
    /// `x = x + sign * step`. `evaluated_once`: the step is computed once before the loop
    /// (a Fortran `do` step), so it need not be loop-invariant.
    Step {
        step: StepExpression,
        sign: i8,
        evaluated_once: bool,
    },
    /// Not a constant-step update; says why.
    NotMonotonic(String),
    /// A declaration's initializer or a range-for element: a fresh variable.
    Fresh,
}

/// Why a definition does not run exactly once in every iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum NotEveryIteration {
    /// It is the induction variable of an inner loop (the clearest thing to say).
    InnerInduction(String),
    Other(String),
}

impl NotEveryIteration {
    pub(super) fn why(&self) -> &str {
        match self {
            NotEveryIteration::InnerInduction(why) | NotEveryIteration::Other(why) => why,
        }
    }
}

/// One assignment to a plain variable inside the loop.
#[derive(Debug)]
pub(super) struct Definition<'tree> {
    pub(super) variable: String,
    pub(super) node: Node<'tree>,
    pub(super) line: u32,
    /// The defining expression as written, on one line, shortened.
    pub(super) text: String,
    pub(super) place: Place,
    pub(super) form: Form,
    pub(super) context: Option<NotEveryIteration>,
}

impl<'tree> Analysis<'_, 'tree> {
    /// Every definition of a plain variable in the loop (not its own initializer, which
    /// runs once before it), and the rejections that need no grouping (do concurrent
    /// indices).
    pub(super) fn definitions(&self) -> (Vec<Definition<'tree>>, Vec<Rejected>) {
        let mut definitions = Vec::new();
        let mut rejected = Vec::new();
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            if self.is_the_loop(node) {
                self.own_header(node, &mut definitions, &mut rejected);
                for child in children(node) {
                    if !self.is_evaluated_once(child) {
                        pending.push(child);
                    }
                }
                continue;
            }
            if self.language == Language::Python {
                if is_python_scope(node) {
                    continue;
                }
                self.python_definitions_at(node, &mut definitions);
            } else {
                self.definitions_at(node, &mut definitions);
            }
            pending.extend(children(node));
        }
        definitions.sort_by_key(|definition| definition.node.start_byte());
        (definitions, rejected)
    }

    /// Parts of the analysed loop's header that run once, before the first iteration: a
    /// `for` initializer, a range-for's range, a Fortran `do` header (handled by
    /// [`Analysis::own_header`]).
    fn is_evaluated_once(&self, child: Node) -> bool {
        let field = |name| self.the_loop.child_by_field_name(name) == Some(child);
        match self.language {
            Language::C | Language::Cpp => {
                field("initializer")
                    || (self.the_loop.kind() == "for_range_loop"
                        && (field("right") || field("declarator") || field("type")))
            }
            Language::Fortran => child.kind() == "do_statement",
            // A for's iterable runs once; a loop's else clause once, after the last
            // iteration.
            Language::Python => field("right") || field("alternative"),
        }
    }

    /// The definitions the loop's own header makes: a range-for's element, a Fortran `do`
    /// index (its step is evaluated once, when the loop starts), a `do concurrent`'s
    /// indices (rejected: no order).
    fn own_header(
        &self,
        the_loop: Node<'tree>,
        definitions: &mut Vec<Definition<'tree>>,
        rejected: &mut Vec<Rejected>,
    ) {
        match self.language {
            Language::C | Language::Cpp => {
                if the_loop.kind() != "for_range_loop" {
                    return;
                }
                let declarator = the_loop.child_by_field_name("declarator");
                if let Some((name, _)) = declarator.and_then(|d| self.declarator_name(d)) {
                    definitions.push(Definition {
                        variable: name,
                        node: the_loop,
                        line: self.loop_line,
                        text: self.written(declarator.unwrap_or(the_loop)),
                        place: Place::RangeElement,
                        form: Form::Fresh,
                        context: None,
                    });
                }
            }
            Language::Fortran => {
                let Some(header) = children(the_loop)
                    .into_iter()
                    .find(|child| child.kind() == "do_statement")
                else {
                    return;
                };
                for part in children(header) {
                    match part.kind() {
                        "loop_control_expression" => {
                            if let Some(definition) = self.do_index(part, Place::Induction, None) {
                                definitions.push(definition);
                            }
                        }
                        "concurrent_statement" => {
                            let mut pending = vec![part];
                            while let Some(node) = pending.pop() {
                                if node.kind() == "concurrent_control" {
                                    if let Some(index) =
                                        node.named_child(0).and_then(|index| self.plain_name(index))
                                    {
                                        rejected.push(Rejected {
                                            variable: index,
                                            line: self.loop_line,
                                            why: "the index of a do concurrent, whose \
                                                  iterations run in no fixed order"
                                                .to_owned(),
                                        });
                                    }
                                } else {
                                    pending.extend(children(node));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
            Language::Python => self.python_header(the_loop, definitions),
        }
    }

    /// A Fortran `do i = a, b[, s]` header as a definition of `i` by step `s` (1 if absent).
    fn do_index(
        &self,
        control: Node<'tree>,
        place: Place,
        context: Option<NotEveryIteration>,
    ) -> Option<Definition<'tree>> {
        let parts: Vec<Node> = {
            let mut cursor = control.walk();
            control.named_children(&mut cursor).collect()
        };
        let variable = self.plain_name(*parts.first()?)?;
        let step = match parts.get(3) {
            Some(step) => self.step_expression(*step),
            None => StepExpression::Literal(1),
        };
        Some(Definition {
            variable,
            node: control,
            line: first_line(control),
            text: self.written(control),
            place,
            form: Form::Step {
                step,
                sign: 1,
                evaluated_once: true,
            },
            context,
        })
    }

    /// The definitions `node` itself makes (its children are visited by the caller).
    fn definitions_at(&self, node: Node<'tree>, definitions: &mut Vec<Definition<'tree>>) {
        let mut define = |variable: String, form: Form, place: Option<Place>| {
            let (found_place, context) = self.context(node);
            definitions.push(Definition {
                variable,
                node,
                line: first_line(node),
                text: self.written(node),
                place: place.unwrap_or(found_place),
                form,
                context,
            });
        };
        match (self.language, node.kind()) {
            (Language::C | Language::Cpp, "update_expression") => {
                let Some(variable) = node
                    .child_by_field_name("argument")
                    .and_then(|argument| self.plain_name(argument))
                else {
                    return;
                };
                let operator = node
                    .child_by_field_name("operator")
                    .map_or("", |operator| operator.kind());
                let step = if operator == "--" { -1 } else { 1 };
                define(
                    variable,
                    Form::Step {
                        step: StepExpression::Literal(step),
                        sign: 1,
                        evaluated_once: false,
                    },
                    None,
                );
            }
            (Language::C | Language::Cpp, "assignment_expression") => {
                if let Some((variable, form)) = self.update_form(node) {
                    define(variable, form, None);
                }
            }
            // A declaration with an initializer inside the loop (the loop's own
            // initializer is never visited), or a C++ condition declaration.
            (Language::C | Language::Cpp, "init_declarator") => {
                if let Some((variable, _)) = self.declarator_name(node) {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::C | Language::Cpp, "declaration")
                if node.child_by_field_name("value").is_some() =>
            {
                if let Some((variable, _)) = node
                    .child_by_field_name("declarator")
                    .and_then(|declarator| self.declarator_name(declarator))
                {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::C | Language::Cpp, "for_range_loop") => {
                if let Some((variable, _)) = node
                    .child_by_field_name("declarator")
                    .and_then(|declarator| self.declarator_name(declarator))
                {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::Fortran, "assignment_statement") => {
                let (Some(left), Some(right)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    return;
                };
                let Some(variable) = self.plain_name(left) else {
                    return;
                };
                let form = self.assignment_form(&variable, node, right);
                define(variable, form, None);
            }
            (Language::Fortran, "loop_control_expression") => {
                // An inner do's index: `context` names the inner loop.
                let (place, context) = self.context(node);
                if let Some(definition) = self.do_index(node, place, context) {
                    definitions.push(definition);
                }
            }
            _ => {}
        }
    }

    /// An assignment to a plain variable (`x += c`, `x -= c`, `x = ...`; fields `left`,
    /// `operator`, `right` in C's grammar and Python's) as its variable and form.
    pub(super) fn update_form(&self, node: Node) -> Option<(String, Form)> {
        let (left, right, operator) = (
            node.child_by_field_name("left")?,
            node.child_by_field_name("right")?,
            node.child_by_field_name("operator")?,
        );
        let variable = self.plain_name(left)?;
        let form = match operator.kind() {
            "+=" => self.step_form(right, 1),
            "-=" => self.step_form(right, -1),
            "=" => self.assignment_form(&variable, node, right),
            _ => Form::NotMonotonic(format!(
                "{} is not monotonic by a constant step",
                self.written(node)
            )),
        };
        Some((variable, form))
    }

    /// `x += c` (sign 1) or `x -= c` (sign -1).
    pub(super) fn step_form(&self, step: Node, sign: i8) -> Form {
        Form::Step {
            step: self.step_expression(step),
            sign,
            evaluated_once: false,
        }
    }

    /// `x = x + c`, `x = c + x`, `x = x - c`, or why not.
    pub(super) fn assignment_form(&self, variable: &str, statement: Node, right: Node) -> Form {
        let right = self.unparenthesize(right);
        if matches!(
            right.kind(),
            "binary_expression" | "math_expression" | "binary_operator"
        ) {
            let operator = right
                .child_by_field_name("operator")
                .map_or("", |operator| operator.kind());
            let (left_operand, right_operand) = (
                right.child_by_field_name("left"),
                right.child_by_field_name("right"),
            );
            if let (Some(a), Some(b)) = (left_operand, right_operand) {
                let is_variable = |node: Node| self.plain_name(node).as_deref() == Some(variable);
                match operator {
                    "+" if is_variable(a) => return self.step_form(b, 1),
                    "+" if is_variable(b) => return self.step_form(a, 1),
                    "-" if is_variable(a) => return self.step_form(b, -1),
                    _ => {}
                }
            }
        }
        if self.mentions(right, variable) {
            Form::NotMonotonic(format!(
                "{} is not monotonic by a constant step",
                self.written(statement)
            ))
        } else {
            Form::NotMonotonic(format!(
                "{} sets it from other values, not by a step from its own",
                self.written(statement)
            ))
        }
    }

    /// Whether the expression reads `variable` anywhere.
    fn mentions(&self, expression: Node, variable: &str) -> bool {
        let mut pending = vec![expression];
        while let Some(node) = pending.pop() {
            if node.kind() == "identifier" && self.normalize(self.text(node)) == variable {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    // ---- Where a definition runs -----------------------------------------------------

    /// Where `node` (inside the loop) sits, and why it may not run exactly once per
    /// iteration: the outermost construct between it and the loop that is not straight-line
    /// code decides (an `if` around an inner loop is "in a branch").
    pub(super) fn context(&self, node: Node<'tree>) -> (Place, Option<NotEveryIteration>) {
        let mut reason = None;
        let mut child = node;
        let mut current = node.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return (self.place_in_loop(child), reason);
            }
            if let Some(found) = self.construct_reason(ancestor, child) {
                reason = Some(found);
            }
            child = ancestor;
            current = ancestor.parent();
        }
        // Not inside the loop: cannot happen for nodes found under it.
        (Place::Body, reason)
    }

    /// Which part of the analysed loop `child` (one of its children) is.
    fn place_in_loop(&self, child: Node) -> Place {
        let is_field = |name| self.the_loop.child_by_field_name(name) == Some(child);
        match self.language {
            Language::C | Language::Cpp => {
                if is_field("update") {
                    Place::Induction
                } else if is_field("condition") {
                    Place::Condition
                } else {
                    Place::Body
                }
            }
            Language::Python if is_field("condition") => Place::Condition,
            Language::Fortran | Language::Python => Place::Body,
        }
    }

    /// Why a definition reached through `child` of `ancestor` may not run once per iteration,
    /// or None when `ancestor` is straight-line code for it.
    fn construct_reason(&self, ancestor: Node, child: Node) -> Option<NotEveryIteration> {
        let line = first_line(ancestor);
        let is_field = |name| ancestor.child_by_field_name(name) == Some(child);
        let other = |why: String| Some(NotEveryIteration::Other(why));
        if let Some(kind) = loop_kind(ancestor, self.language) {
            return match self.language {
                Language::C | Language::Cpp => {
                    if is_field("initializer") || (kind == "range-for" && is_field("right")) {
                        // Runs once each time the inner loop starts: once per iteration.
                        None
                    } else if is_field("update") {
                        Some(NotEveryIteration::InnerInduction(format!(
                            "the induction variable of the inner {kind} at line {line}"
                        )))
                    } else {
                        other(format!(
                            "assigned only inside the inner {kind} at line {line}, which may \
                             run any number of times per iteration"
                        ))
                    }
                }
                Language::Fortran => {
                    if child.kind() == "do_statement" {
                        Some(NotEveryIteration::InnerInduction(format!(
                            "the induction variable of the inner {kind} at line {line}"
                        )))
                    } else {
                        other(format!(
                            "assigned only inside the inner {kind} at line {line}, which may \
                             run any number of times per iteration"
                        ))
                    }
                }
                Language::Python => self.python_construct_reason(ancestor, child, Some(kind)),
            };
        }
        if self.language == Language::Python {
            return self.python_construct_reason(ancestor, child, None);
        }
        let branch =
            |what: &str| other(format!("assigned only in a branch ({what} at line {line})"));
        match (self.language, ancestor.kind()) {
            (Language::C | Language::Cpp, "if_statement") if !is_field("condition") => branch("if"),
            (Language::C | Language::Cpp, "switch_statement") if !is_field("condition") => {
                branch("switch")
            }
            (Language::C | Language::Cpp, "conditional_expression") if !is_field("condition") => {
                branch("?:")
            }
            (Language::C | Language::Cpp, "binary_expression") if is_field("right") => {
                match ancestor.child_by_field_name("operator").map(|o| o.kind()) {
                    Some(operator @ ("&&" | "||")) => branch(operator),
                    _ => None,
                }
            }
            (Language::Cpp, "try_statement") if is_field("body") => other(format!(
                "assigned only in a try block (line {line}): an exception may skip it"
            )),
            (Language::Cpp, "catch_clause") => branch("catch"),
            (Language::Cpp, "lambda_expression") => other(format!(
                "assigned inside a lambda (line {line}), which the loop may call any number \
                 of times"
            )),
            (Language::C | Language::Cpp, "function_definition") if is_macro_block(ancestor) => {
                other(format!(
                    "assigned inside the block after a macro at line {line}, which may loop or \
                     not run"
                ))
            }
            (
                Language::C | Language::Cpp,
                "sizeof_expression" | "alignof_expression" | "decltype",
            ) => other(format!(
                "inside {} at line {line}, never evaluated",
                ancestor.kind().trim_end_matches("_expression")
            )),
            (Language::Fortran, "if_statement") if child.kind() != "parenthesized_expression" => {
                branch("if")
            }
            (Language::Fortran, "elseif_clause" | "else_clause") => None,
            (
                Language::Fortran,
                "select_case_statement" | "select_type_statement" | "select_rank_statement",
            ) if child.kind() != "selector" => branch("select"),
            (Language::Fortran, "where_statement") => branch("where"),
            _ => None,
        }
    }
}
