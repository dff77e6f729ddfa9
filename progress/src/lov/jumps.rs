//! Jumps that cut an iteration short: a `continue` or `cycle` that may skip a definition, a
//! `break`, `return` or `exit` that ends the loop, a `goto` that tangles it.

use super::analysis::Analysis;
use crate::source::constructs::{is_macro_block, is_python_scope, loop_kind};
use crate::source::language::Language;
use crate::source::syntax::{children, first_line};
use tree_sitter::Node;

/// What a jump statement does to the rest of the current iteration of the analysed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum JumpEffect {
    /// Goes on with the next iteration (`continue`, `cycle`): what follows it is skipped.
    Skips,
    /// Leaves the loop (`break`, `return`, `exit`, `goto` out of the loop).
    Leaves,
    /// A `goto` to a label inside the loop: it may skip or repeat anything.
    Tangles,
}

#[derive(Debug)]
pub(super) struct Jump {
    pub(super) word: String,
    pub(super) line: u32,
    pub(super) start_byte: usize,
    pub(super) effect: JumpEffect,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FortranTarget {
    This,
    Inner,
    Outer,
}

impl<'tree> Analysis<'_, 'tree> {
    /// Every jump in the loop that can cut an iteration of the analysed loop short.
    pub(super) fn jumps(&self) -> Vec<Jump> {
        let mut jumps = Vec::new();
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            // Jumps in a lambda or a nested function leave that, not the loop.
            if !self.is_the_loop(node)
                && ((matches!(node.kind(), "lambda_expression" | "function_definition")
                    && !is_macro_block(node))
                    || (self.language == Language::Python && is_python_scope(node)))
            {
                continue;
            }
            if let Some(jump) = self.jump_at(node) {
                jumps.push(jump);
            }
            pending.extend(children(node));
        }
        jumps
    }

    fn jump_at(&self, node: Node) -> Option<Jump> {
        let jump = |word: &str, effect| Jump {
            word: word.to_owned(),
            line: first_line(node),
            start_byte: node.start_byte(),
            effect,
        };
        match self.language {
            Language::C | Language::Cpp => match node.kind() {
                "continue_statement" => {
                    (!self.inner_target(node, false)).then(|| jump("continue", JumpEffect::Skips))
                }
                "break_statement" => {
                    (!self.inner_target(node, true)).then(|| jump("break", JumpEffect::Leaves))
                }
                "return_statement" | "co_return_statement" => {
                    Some(jump("return", JumpEffect::Leaves))
                }
                "throw_statement" => Some(jump("throw", JumpEffect::Leaves)),
                "goto_statement" => {
                    let label = node
                        .child_by_field_name("label")
                        .map(|label| self.text(label).to_owned())
                        .unwrap_or_default();
                    let effect = if self.c_label_in_loop(&label) {
                        JumpEffect::Tangles
                    } else {
                        JumpEffect::Leaves
                    };
                    Some(jump("goto", effect))
                }
                _ => None,
            },
            Language::Fortran => match node.kind() {
                "keyword_statement" => {
                    let word = node.child(0)?.kind().to_lowercase();
                    match word.as_str() {
                        "cycle" | "exit" => match (word.as_str(), self.fortran_target(node)) {
                            (_, FortranTarget::Inner) => None,
                            ("cycle", FortranTarget::This) => {
                                Some(jump("cycle", JumpEffect::Skips))
                            }
                            _ => Some(jump(&word, JumpEffect::Leaves)),
                        },
                        "return" => Some(jump("return", JumpEffect::Leaves)),
                        "go" | "goto" => {
                            let label = children(node)
                                .into_iter()
                                .find(|child| child.kind() == "statement_label_reference")
                                .map(|label| self.text(label).trim().to_owned())
                                .unwrap_or_default();
                            let effect = if self.fortran_label_in_loop(&label) {
                                JumpEffect::Tangles
                            } else {
                                JumpEffect::Leaves
                            };
                            Some(jump("go to", effect))
                        }
                        _ => None,
                    }
                }
                "stop_statement" | "error_stop_statement" => Some(jump("stop", JumpEffect::Leaves)),
                _ => None,
            },
            Language::Python => self.python_jump_at(node),
        }
    }

    /// Whether a C `continue` (or `break`, with `switch_too`) belongs to a construct inside
    /// the analysed loop rather than to the loop itself.
    pub(super) fn inner_target(&self, jump: Node, switch_too: bool) -> bool {
        let mut current = jump.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return false;
            }
            if loop_kind(ancestor, self.language).is_some()
                || (switch_too && ancestor.kind() == "switch_statement")
            {
                return true;
            }
            current = ancestor.parent();
        }
        false
    }

    fn c_label_in_loop(&self, label: &str) -> bool {
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            if node.kind() == "labeled_statement"
                && node
                    .child_by_field_name("label")
                    .is_some_and(|found| self.text(found) == label)
            {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    fn fortran_label_in_loop(&self, label: &str) -> bool {
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            // A reference (`go to 10`) holds an unnamed token of the same kind.
            if node.kind() == "statement_label"
                && node.is_named()
                && self.text(node).trim() == label
            {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    /// The loop a Fortran `cycle`/`exit` acts on: the innermost enclosing `do`, or the one
    /// with its label.
    fn fortran_target(&self, jump: Node) -> FortranTarget {
        let label = children(jump)
            .into_iter()
            .find(|child| child.kind() == "identifier")
            .map(|name| self.text(name).to_lowercase());
        let mut current = jump.parent();
        while let Some(ancestor) = current {
            if ancestor.kind() == "do_loop" {
                let matches = match &label {
                    None => true,
                    Some(label) => self.fortran_loop_label(ancestor).as_ref() == Some(label),
                };
                if matches {
                    return if self.is_the_loop(ancestor) {
                        FortranTarget::This
                    } else if self.inside_loop(ancestor) {
                        FortranTarget::Inner
                    } else {
                        FortranTarget::Outer
                    };
                }
            }
            current = ancestor.parent();
        }
        // A label naming no enclosing loop (a named block): it leaves the loop.
        FortranTarget::Outer
    }

    fn fortran_loop_label(&self, do_loop: Node) -> Option<String> {
        children(do_loop)
            .into_iter()
            .find(|child| child.kind() == "block_label_start_expression")
            .map(|label| {
                self.text(label)
                    .trim()
                    .trim_end_matches(':')
                    .trim()
                    .to_lowercase()
            })
    }
}
