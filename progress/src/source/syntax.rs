//! Lines and children of syntax nodes, the vocabulary of every walk over a tree.
//!
//! tree-sitter rows are 0-based; a node that ends at column 0 ends with the previous line's
//! newline, and that next line is not part of it.

use tree_sitter::{Node, Point};

fn row_to_line(row: usize) -> u32 {
    u32::try_from(row).unwrap_or(u32::MAX - 1).saturating_add(1)
}

pub(crate) fn first_line(node: Node) -> u32 {
    row_to_line(node.start_position().row)
}

pub(super) fn last_line(node: Node) -> u32 {
    let (start, end) = (node.start_position(), node.end_position());
    if end.column == 0 && end.row > start.row {
        row_to_line(end.row - 1)
    } else {
        row_to_line(end.row)
    }
}

pub(super) fn spans(node: Node, line: u32) -> bool {
    first_line(node) <= line && line <= last_line(node)
}

pub(crate) fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// The children of `node` whose lines include `line`. The searches below go down one path
/// of a tree whose nodes can have thousands of children (a big `switch`, a generated
/// table): the cursor skips to the first child that reaches the line, and the scan stops at
/// the first child that starts after it.
pub(crate) fn children_spanning(node: Node, line: u32) -> Vec<Node> {
    let mut found = Vec::new();
    let Some(row) = line
        .checked_sub(1)
        .and_then(|row| usize::try_from(row).ok())
    else {
        return found;
    };
    let mut cursor = node.walk();
    if cursor
        .goto_first_child_for_point(Point { row, column: 0 })
        .is_none()
    {
        return found;
    }
    loop {
        let child = cursor.node();
        if first_line(child) > line {
            break;
        }
        if spans(child, line) {
            found.push(child);
        }
        if !cursor.goto_next_sibling() {
            break;
        }
    }
    found
}

/// Tokens that are only structure: a line holding nothing else holds no code (no call can
/// be there), so it does not pull the line into the part they belong to.
const STRUCTURAL_TOKENS: &[&str] = &[
    "{", "}", "(", ")", "[", "]", ";", ",", ":", "else", "then", "comment",
];

/// Whether `node` has a token of real code on `line`. Iterative: expression trees can be
/// deeper than a thread's stack.
pub(super) fn has_code_on(node: Node, line: u32, source: &[u8]) -> bool {
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        if !spans(node, line) || node.is_extra() {
            continue;
        }
        if node.child_count() == 0 {
            let blank = node
                .utf8_text(source)
                .map(|text| text.trim().is_empty())
                .unwrap_or(true);
            if !node.is_missing() && !blank && !STRUCTURAL_TOKENS.contains(&node.kind()) {
                return true;
            }
        } else {
            pending.extend(children_spanning(node, line));
        }
    }
    false
}
