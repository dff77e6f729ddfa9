//! The function definition a line is in, and its name: the first element of a program
//! point.

use super::constructs::is_macro_block;
use super::language::Language;
use super::syntax::{children, children_spanning, first_line, spans};
use tree_sitter::Node;

/// The innermost function definition spanning `line`. Definitions nest properly, so among
/// those that span the line the innermost is the one that starts last. A Python line in no
/// function is its module's code, which the interpreter runs as a function (`<module>`):
/// the whole file is that function.
pub(super) fn innermost_function(root: Node, line: u32, language: Language) -> Option<Node> {
    let best = innermost_definition(root, line, language);
    if best.is_none() && language == Language::Python && spans(root, line) {
        return Some(root);
    }
    best
}

fn innermost_definition(root: Node, line: u32, language: Language) -> Option<Node> {
    let mut best: Option<Node> = None;
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if !spans(node, line) {
            continue;
        }
        if is_function(node, language)
            && encloses(node, line)
            && best.is_none_or(|best| node.start_byte() >= best.start_byte())
        {
            best = Some(node);
        }
        pending.extend(children_spanning(node, line));
    }
    best
}

fn is_function(node: Node, language: Language) -> bool {
    match language {
        Language::C | Language::Cpp => match node.kind() {
            "function_definition" => !is_macro_block(node),
            "lambda_expression" => true,
            _ => false,
        },
        Language::Fortran => {
            matches!(
                node.kind(),
                "subroutine" | "function" | "program" | "module_procedure"
            )
        }
        Language::Python => matches!(node.kind(), "function_definition" | "lambda"),
    }
}

/// Whether `line` belongs to the function `node` spans: always, except a lambda's first
/// line, which is the enclosing function's (see the [`super`] module docs).
fn encloses(node: Node, line: u32) -> bool {
    node.kind() != "lambda_expression" || line > first_line(node)
}

pub(super) fn function_name(node: Node, language: Language, source: &[u8]) -> Option<String> {
    let name = match language {
        Language::C | Language::Cpp => declarator_name(node)?,
        Language::Fortran => {
            let statement = children(node).into_iter().find(|child| {
                matches!(
                    child.kind(),
                    "subroutine_statement"
                        | "function_statement"
                        | "program_statement"
                        | "module_procedure_statement"
                )
            })?;
            statement
                .child_by_field_name("name")
                .or_else(|| children(statement).into_iter().find(|c| c.kind() == "name"))?
        }
        // The name the interpreter gives a module's code.
        Language::Python if node.kind() == "module" => return Some("<module>".to_string()),
        // A method's frame is named by its qualified name (`Solver.step`), its definition
        // by its own: the comparison takes the last part of the frame's.
        Language::Python => node.child_by_field_name("name")?,
    };
    let text = name.utf8_text(source).ok()?;
    let words: Vec<&str> = text.split_whitespace().collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The name node of a C/C++ function definition: the `declarator` of its innermost
/// `function_declarator`, under any pointer, reference or parenthesized declarators
/// (`int *f(void)`, `T& Solver::at(int)`; in `int (*pick(int kind))(int)` the outer
/// function declarator is the returned pointer's type, the inner one is `pick`'s). None for
/// lambdas, which have no name.
fn declarator_name(function: Node) -> Option<Node> {
    if function.kind() != "function_definition" {
        return None;
    }
    innermost_function_declarator(function)?.child_by_field_name("declarator")
}

/// The innermost `function_declarator` under a C/C++ function definition's declarator: its
/// `declarator` is the function's name, its `parameters` the function's parameters (an
/// outer one, as in `int (*pick(int kind))(int)`, is the returned pointer's type).
pub(crate) fn innermost_function_declarator(function: Node) -> Option<Node> {
    let mut innermost = None;
    let mut declarator = function.child_by_field_name("declarator");
    // Declarators nest a handful deep; the bound only guards against a malformed tree.
    for _ in 0..32 {
        let Some(current) = declarator else { break };
        if current.kind() == "function_declarator" {
            innermost = Some(current);
        }
        declarator = match current.child_by_field_name("declarator") {
            Some(inner) => Some(inner),
            // C++'s reference_declarator and the parenthesized_declarator name no field:
            // their last named child is the inner declarator.
            None if current.kind().ends_with("_declarator") => current
                .named_child_count()
                .checked_sub(1)
                .and_then(|last| u32::try_from(last).ok())
                .and_then(|last| current.named_child(last)),
            None => None,
        };
    }
    innermost
}
