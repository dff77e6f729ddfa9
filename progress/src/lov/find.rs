//! The entry point: the loop that starts at a line, its analysis, and the verdicts ranked
//! into [`LoopVariables`].

use super::analysis::Analysis;
use super::candidates::{Candidate, LoopVariables, Rejected};
use super::definitions::Definition;
use super::verdict::Verdict;
use crate::source::constructs::loop_kind;
use crate::source::files::{SourceError, SourceIndex};
use crate::source::language::Language;
use crate::source::syntax::{children_spanning, first_line};
use std::cell::OnceCell;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

impl SourceIndex {
    /// The loop-order variables of the loop whose first line is `loop_line` in `file` (an
    /// [`Step::Iteration`](crate::point::Step::Iteration) step's line): see the
    /// [`crate::lov`] module docs. Errors as [`SourceIndex::point`], and
    /// [`SourceError::NoLoopAt`] when no loop starts on that line.
    pub fn loop_variables(
        &mut self,
        file: &str,
        loop_line: u32,
    ) -> Result<LoopVariables, SourceError> {
        let parsed = self.parsed(file, loop_line)?;
        loop_variables_in_tree(parsed.tree, parsed.text, parsed.language, file, loop_line).ok_or(
            SourceError::NoLoopAt {
                path: parsed.shown,
                line: loop_line,
            },
        )
    }
}

/// The loop-order variables of the loop starting at `loop_line` in a parsed file, or None
/// when no loop starts there.
pub(super) fn loop_variables_in_tree(
    tree: &Tree,
    text: &str,
    language: Language,
    file: &str,
    loop_line: u32,
) -> Option<LoopVariables> {
    let root = tree.root_node();
    let (the_loop, kind) = find_loop(root, loop_line, language)?;
    let analysis = Analysis {
        language,
        source: text.as_bytes(),
        root,
        the_loop,
        loop_line,
        facts: OnceCell::new(),
    };
    let (candidates, rejected) = analysis.run();
    Some(LoopVariables {
        file: file.to_owned(),
        loop_line,
        kind,
        candidates,
        rejected,
    })
}

/// The outermost loop whose first line is `line`: the walk goes down the nodes that span the
/// line, parents before children, so an enclosing loop is met before a loop inside it.
fn find_loop(root: Node, line: u32, language: Language) -> Option<(Node, &'static str)> {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Some(kind) = loop_kind(node, language)
            && first_line(node) == line
        {
            return Some((node, kind));
        }
        // Reversed, so that the leftmost child is searched first.
        pending.extend(children_spanning(node, line).into_iter().rev());
    }
    None
}

impl<'tree> Analysis<'_, 'tree> {
    fn run(&self) -> (Vec<Candidate>, Vec<Rejected>) {
        let (definitions, mut rejected) = self.definitions();
        let jumps = self.jumps();
        let assigned: std::collections::HashSet<&str> = definitions
            .iter()
            .map(|definition| definition.variable.as_str())
            .collect();

        // Group by variable, in order of first definition.
        let mut order: Vec<&str> = Vec::new();
        let mut groups: HashMap<&str, Vec<&Definition>> = HashMap::new();
        for definition in &definitions {
            let group = groups.entry(&definition.variable).or_default();
            if group.is_empty() {
                order.push(&definition.variable);
            }
            group.push(definition);
        }

        let mut candidates = Vec::new();
        for variable in order {
            let Some(group) = groups.get(variable) else {
                continue;
            };
            match self.verdict(group, &jumps, &assigned) {
                Verdict::Candidate(candidate, rank) => candidates.push((rank, candidate)),
                Verdict::Rejected(reason) => rejected.push(reason),
                Verdict::Omitted => {}
            }
        }
        candidates.sort_by(|(a, x), (b, y)| a.cmp(b).then(x.variable.cmp(&y.variable)));
        rejected.sort_by(|a, b| a.line.cmp(&b.line).then(a.variable.cmp(&b.variable)));
        let parse_note = self.the_loop.has_error();
        let candidates = candidates
            .into_iter()
            .map(|(_, mut candidate)| {
                if parse_note {
                    candidate
                        .how
                        .push_str(" (the parser could not read all of the loop)");
                }
                candidate
            })
            .collect();
        (candidates, rejected)
    }
}
