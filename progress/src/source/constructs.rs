//! What a syntax node is to the analyses: a loop (and which kind), a conditional, a nested
//! function whose lines are not the enclosing function's, or transparent code.
//!
//! Shared by the program points (the descent) and the loop-order variables (finding a loop
//! by its first line, telling inner loops and macro blocks apart).

use super::language::Language;
use super::syntax::children;
use tree_sitter::Node;

/// Whether a C/C++ "function definition" is really a macro followed by a block, as in
/// `FOR_EACH_RANK(r) { send(r); }` inside a function body: the grammar, seeing no macro
/// definitions, reads `FOR_EACH_RANK(r)` as a K&R declarator. A definition nested in a
/// function without a class body in between can only be that (or a GCC nested function,
/// rare enough to read as a block too); its lines are the enclosing function's.
pub(crate) fn is_macro_block(node: Node) -> bool {
    let mut ancestor = node.parent();
    while let Some(current) = ancestor {
        match current.kind() {
            "field_declaration_list" => return false,
            "function_definition" | "lambda_expression" => return true,
            _ => ancestor = current.parent(),
        }
    }
    false
}

/// What a node is to the descent of [`super::points`].
pub(super) enum Role {
    Loop(&'static str),
    Conditional,
    /// A nested function: its lines are not the current function's code.
    Opaque,
    Transparent,
}

pub(super) fn role(node: Node, language: Language) -> Role {
    match language {
        Language::C | Language::Cpp => match node.kind() {
            "for_statement" => Role::Loop("for"),
            "while_statement" => Role::Loop("while"),
            "do_statement" => Role::Loop("do-while"),
            "for_range_loop" => Role::Loop("range-for"),
            "if_statement" | "switch_statement" | "try_statement" => Role::Conditional,
            "function_definition" if is_macro_block(node) => Role::Transparent,
            "function_definition" | "lambda_expression" => Role::Opaque,
            _ => Role::Transparent,
        },
        Language::Fortran => match node.kind() {
            "do_loop" => Role::Loop(fortran_do_kind(node)),
            "forall_statement" => Role::Loop("forall"),
            "if_statement"
            | "select_case_statement"
            | "select_type_statement"
            | "select_rank_statement" => Role::Conditional,
            "subroutine" | "function" | "module_procedure" | "internal_procedures" => Role::Opaque,
            _ => Role::Transparent,
        },
        // A loop's `else` clause runs once, after the last iteration, but lies inside the
        // loop's node: its lines read as the loop's (a weakness the module docs list).
        // Comprehensions loop too, on one line or a few: transparent, as a C macro is.
        Language::Python => match node.kind() {
            "for_statement" => Role::Loop("for"),
            "while_statement" => Role::Loop("while"),
            "if_statement" | "try_statement" | "match_statement" => Role::Conditional,
            "function_definition" | "lambda" | "class_definition" => Role::Opaque,
            _ => Role::Transparent,
        },
    }
}

/// The kind of loop `node` is ("for", "while", "do-while", "range-for", "do", "do-while",
/// "do concurrent", "forall": the kinds of [`Step::Iteration`]), or None if it is no loop.
pub(crate) fn loop_kind(node: Node, language: Language) -> Option<&'static str> {
    match role(node, language) {
        Role::Loop(kind) => Some(kind),
        Role::Conditional | Role::Opaque | Role::Transparent => None,
    }
}

fn fortran_do_kind(do_loop: Node) -> &'static str {
    let header = children(do_loop)
        .into_iter()
        .find(|child| child.kind() == "do_statement");
    let control = header
        .into_iter()
        .flat_map(children)
        .map(|child| child.kind());
    for kind in control {
        match kind {
            "while_statement" => return "do-while",
            "concurrent_statement" => return "do concurrent",
            _ => {}
        }
    }
    "do"
}

/// Python constructs with a scope of their own: a variable assigned inside is not the
/// enclosing function's.
pub(crate) fn is_python_scope(node: Node) -> bool {
    matches!(
        node.kind(),
        "function_definition"
            | "class_definition"
            | "lambda"
            | "list_comprehension"
            | "set_comprehension"
            | "dictionary_comprehension"
            | "generator_expression"
    )
}
