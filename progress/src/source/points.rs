//! The descent from a function's first line to a target line, through the loops and
//! conditionals that contain it: the program point of `file:line` (see the [`super`]
//! module docs for the rules).

use super::conditionals::shape;
use super::constructs::{Role, role};
use super::files::{SourceError, SourceIndex};
use super::functions::{function_name, innermost_function};
use super::language::Language;
use super::syntax::{children_spanning, first_line, has_code_on, last_line, spans};
use crate::point::{ProgramPoint, Step};
use tree_sitter::{Node, Tree};

impl SourceIndex {
    /// The program point of `file:line` (1-based).
    pub fn point(&mut self, file: &str, line: u32) -> Result<ProgramPoint, SourceError> {
        let parsed = self.parsed(file, line)?;
        point_in_tree(parsed.tree, parsed.text, parsed.language, file, line).ok_or(
            SourceError::NotInFunction {
                path: parsed.shown,
                line,
            },
        )
    }
}

/// The program point of `line` in a parsed file, or None when no function spans it.
pub(super) fn point_in_tree(
    tree: &Tree,
    text: &str,
    language: Language,
    file: &str,
    line: u32,
) -> Option<ProgramPoint> {
    let source = text.as_bytes();
    let function = innermost_function(tree.root_node(), line, language)?;
    Some(ProgramPoint {
        file: file.to_owned(),
        function: function_name(function, language, source),
        function_lines: (first_line(function), last_line(function)),
        line,
        steps: steps_to(function, line, language, source),
    })
}

/// Among sibling nodes, the one that holds `line`: the first that has code on it, else the
/// first that spans it (a line may end one statement and start the next).
fn pick<'tree>(nodes: &[Node<'tree>], line: u32, source: &[u8]) -> Option<Node<'tree>> {
    let spanning: Vec<Node> = nodes
        .iter()
        .copied()
        .filter(|node| spans(*node, line))
        .collect();
    // The code test walks down to the line: only pay for it when the line is shared.
    if spanning.len() == 1 {
        return spanning.first().copied();
    }
    spanning
        .iter()
        .copied()
        .find(|node| has_code_on(*node, line, source))
        .or_else(|| spanning.first().copied())
}

/// The steps from `function`'s first line down to `line`. A loop, not recursion: the path
/// runs through every expression node around the target, and those can nest deeply.
fn steps_to(function: Node, line: u32, language: Language, source: &[u8]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut base = first_line(function);
    let mut nodes = children_spanning(function, line);
    while let Some(node) = pick(&nodes, line, source) {
        match role(node, language) {
            Role::Opaque => break,
            Role::Transparent => nodes = children_spanning(node, line),
            Role::Loop(kind) => {
                let start = first_line(node);
                steps.push(Step::Offset(start.saturating_sub(base)));
                steps.push(Step::Iteration { line: start, kind });
                base = start;
                nodes = children_spanning(node, line);
            }
            Role::Conditional => {
                let shape = shape(node, language);
                let chosen = shape
                    .as_ref()
                    .and_then(|shape| Some((shape, shape.choose(line, source)?)));
                match chosen {
                    Some((shape, (slot, part))) => {
                        shape.enter(slot, &mut base, &mut steps);
                        nodes = part.nodes.clone();
                    }
                    // In the construct but in none of its parts (`end if`, a switch's
                    // braces), or a shape this code cannot read: the line's own offset.
                    None => break,
                }
            }
        }
    }
    steps.push(Step::Offset(line.saturating_sub(base)));
    steps
}
