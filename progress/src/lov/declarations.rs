//! What a name's declaration tells (rule 4: an integer scalar; a constant's value), looked
//! up by the language's rules: see `c_declarations` and `fortran_declarations`.

use super::analysis::Analysis;
use crate::source::language::Language;
use tree_sitter::Node;

/// What a variable's type is, as far as its declaration tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TypeClass {
    Integer,
    /// Probably an integer but not checked; the note goes into `how`.
    Assumed(String),
    /// Not an integer scalar; the reason, ready for [`Rejected::why`].
    Not(String),
}

/// A declaration found for a name.
#[derive(Clone, Debug)]
pub(super) struct Declared {
    pub(super) line: u32,
    pub(super) class: TypeClass,
    /// The value of a constant with a literal initializer (`const int s = 2`, a Fortran
    /// `parameter`).
    pub(super) constant: Option<i128>,
    /// Declared inside the analysed loop (not its own header): fresh every iteration.
    pub(super) in_loop: bool,
}

impl<'tree> Analysis<'_, 'tree> {
    /// The declaration of `name` visible at `at` (a node in the loop), searched outwards
    /// through the enclosing scopes; None when not seen. Fortran without `implicit none`
    /// gets its implicit type.
    pub(super) fn declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
        match self.language {
            Language::C | Language::Cpp => self.c_declaration(name, at),
            Language::Fortran => self.fortran_declaration(name, at),
            Language::Python => self.python_declaration(name),
        }
    }
}
