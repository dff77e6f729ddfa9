//! Fortran declarations: specification parts of the scoping units around a use, attributes
//! (`dimension`, `pointer`, `parameter`), implicit typing.

use super::analysis::Analysis;
use super::declarations::{Declared, TypeClass};
use crate::source::syntax::{children, first_line};
use tree_sitter::Node;

impl<'tree> Analysis<'_, 'tree> {
    /// Fortran declarations are scoped by program unit (and `block`), in any order within
    /// the specification part; a host's variables are seen by its internal procedures.
    pub(super) fn fortran_declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
        let mut in_loop = self.inside_loop(at);
        let mut implicit_none = false;
        let mut uses_modules = false;
        let mut current = at.parent();
        while let Some(scope) = current {
            if self.is_the_loop(scope) {
                in_loop = false;
            }
            if matches!(
                scope.kind(),
                "block_construct"
                    | "subroutine"
                    | "function"
                    | "program"
                    | "module"
                    | "submodule"
                    | "module_procedure"
            ) {
                for statement in fortran_specification(scope) {
                    match statement.kind() {
                        "variable_declaration" => {
                            if let Some(mut declared) = self.fortran_declares(statement, name) {
                                declared.in_loop = in_loop;
                                return Some(declared);
                            }
                        }
                        "implicit_statement" => {
                            implicit_none |= self.text(statement).to_lowercase().contains("none");
                        }
                        "use_statement" => uses_modules = true,
                        _ => {}
                    }
                }
            }
            current = scope.parent();
        }
        if implicit_none || uses_modules {
            return None;
        }
        // Implicit typing: names starting with i to n are integers, the rest reals.
        let integer = name
            .chars()
            .next()
            .is_some_and(|first| ('i'..='n').contains(&first));
        Some(Declared {
            line: first_line(at),
            class: if integer {
                TypeClass::Assumed("implicitly an integer".to_owned())
            } else {
                TypeClass::Not(
                    "implicitly a real (no declaration, and the name does not start with i-n)"
                        .to_owned(),
                )
            },
            constant: None,
            in_loop: false,
        })
    }

    fn fortran_declares(&self, declaration: Node, name: &str) -> Option<Declared> {
        let mut cursor = declaration.walk();
        let declarators: Vec<Node> = declaration
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        let attributes: Vec<String> = {
            let mut cursor = declaration.walk();
            declaration
                .children_by_field_name("attribute", &mut cursor)
                .map(|attribute| self.text(attribute).to_lowercase())
                .collect()
        };
        for declarator in declarators {
            let (declared_name, initializer, array) = match declarator.kind() {
                "identifier" => (Some(declarator), None, false),
                "init_declarator" => (
                    declarator.child_by_field_name("left"),
                    declarator.child_by_field_name("right"),
                    false,
                ),
                "sized_declarator" | "coarray_declarator" => {
                    (declarator.named_child(0), None, true)
                }
                _ => (None, None, false),
            };
            let Some(declared_name) = declared_name else {
                continue;
            };
            if self.normalize(self.text(declared_name)) != name {
                continue;
            }
            let type_text = declaration
                .child_by_field_name("type")
                .map(|type_node| self.fortran_type_word(type_node))
                .unwrap_or_default();
            let is_attribute = |word: &str| attributes.iter().any(|a| a.starts_with(word));
            let class = if array || is_attribute("dimension") {
                TypeClass::Not("an array, not an integer scalar".to_owned())
            } else if is_attribute("pointer") {
                TypeClass::Not("a pointer, not an integer".to_owned())
            } else if type_text == "integer" {
                TypeClass::Integer
            } else {
                TypeClass::Not(format!("a {type_text}, not an integer"))
            };
            let constant = if is_attribute("parameter") {
                initializer.and_then(|value| self.literal_value(value))
            } else {
                None
            };
            return Some(Declared {
                line: first_line(declaration),
                class,
                constant,
                in_loop: false,
            });
        }
        None
    }

    /// `integer`, `real`, `double precision`, `logical`, or `type(grid)` for derived types.
    fn fortran_type_word(&self, type_node: Node) -> String {
        if type_node.kind() == "intrinsic_type" {
            let words: Vec<String> = children(type_node)
                .into_iter()
                .filter(|child| !child.is_named())
                .map(|child| self.text(child).to_lowercase())
                .collect();
            words.join(" ")
        } else {
            self.written(type_node).to_lowercase()
        }
    }
}

/// The statements of a Fortran scoping unit's specification part (and its `#if` blocks).
fn fortran_specification(scope: Node) -> Vec<Node> {
    let mut statements = Vec::new();
    let mut pending = children(scope);
    pending.reverse();
    while let Some(node) = pending.pop() {
        if node.kind().starts_with("preproc_") {
            let mut inner = children(node);
            inner.reverse();
            pending.extend(inner);
        } else {
            statements.push(node);
        }
    }
    statements
}
