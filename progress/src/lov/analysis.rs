//! What the analysis of one loop knows (the file, the loop, facts about the file gathered
//! on first need) and how it reads the source text of a node.

use crate::source::language::Language;
use std::cell::OnceCell;
use std::collections::HashMap;
use tree_sitter::Node;

/// Facts about the whole file, gathered once on first need: typedefs, `#define`s of
/// literals and class bodies (for members used in out-of-line methods).
#[derive(Default)]
pub(super) struct FileFacts<'tree> {
    /// `typedef T name;` and `using name = T;`: the node to classify.
    pub(super) typedefs: HashMap<String, Node<'tree>>,
    pub(super) defines: HashMap<String, i128>,
    /// Class or struct name to its member list.
    pub(super) classes: HashMap<String, Node<'tree>>,
}

/// The analysis of one loop: the parsed file it is in, and the loop itself.
pub(super) struct Analysis<'a, 'tree> {
    pub(super) language: Language,
    pub(super) source: &'a [u8],
    pub(super) root: Node<'tree>,
    pub(super) the_loop: Node<'tree>,
    pub(super) loop_line: u32,
    pub(super) facts: OnceCell<FileFacts<'tree>>,
}

/// The most characters of source shown in one reason or `how`.
const SHOWN_CHARS: usize = 60;

impl<'tree> Analysis<'_, 'tree> {
    pub(super) fn is_fortran(&self) -> bool {
        self.language == Language::Fortran
    }

    pub(super) fn text(&self, node: Node) -> &str {
        node.utf8_text(self.source).unwrap_or("")
    }

    /// Source text on one line, shortened for a message.
    pub(super) fn written(&self, node: Node) -> String {
        let words: Vec<&str> = self.text(node).split_whitespace().collect();
        let joined = words.join(" ");
        if joined.chars().count() <= SHOWN_CHARS {
            joined
        } else {
            let mut short: String = joined.chars().take(SHOWN_CHARS - 3).collect();
            short.push_str("...");
            short
        }
    }

    /// A variable's name as compared: Fortran is case-insensitive.
    pub(super) fn normalize(&self, name: &str) -> String {
        if self.is_fortran() {
            name.to_lowercase()
        } else {
            name.to_owned()
        }
    }

    /// The name of a plain variable reference, or None for anything else (an element, a
    /// field, a dereference).
    pub(super) fn plain_name(&self, node: Node) -> Option<String> {
        let node = self.unparenthesize(node);
        (node.kind() == "identifier").then(|| self.normalize(self.text(node)))
    }

    pub(super) fn unparenthesize<'n>(&self, mut node: Node<'n>) -> Node<'n> {
        // Parentheses nest a handful deep; the bound guards against a malformed tree.
        for _ in 0..64 {
            if node.kind() != "parenthesized_expression" || node.named_child_count() != 1 {
                break;
            }
            match node.named_child(0) {
                Some(inner) => node = inner,
                None => break,
            }
        }
        node
    }

    pub(super) fn is_the_loop(&self, node: Node) -> bool {
        node == self.the_loop
    }

    /// Whether `node` is inside the analysed loop (the loop itself excluded).
    pub(super) fn inside_loop(&self, node: Node) -> bool {
        let mut current = node.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return true;
            }
            current = ancestor.parent();
        }
        false
    }
}
