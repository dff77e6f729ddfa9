//! Finding paths in raw macro tokens that do not parse as expressions (`vec![x; n]`,
//! `matches!(v, P if g)`, `macro_rules!` bodies): every `a::b::c` run of identifiers, with
//! `$crate` read as `crate`. Method and field names (after `.`), lifetimes, metavariables
//! (`$x`) and paths starting with `::` are skipped.

use crate::usetree::EXTERN_ROOT;
use proc_macro2::{Spacing, TokenStream, TokenTree};

/// A path found in tokens, and the line of its first segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedPath {
    pub segments: Vec<String>,
    pub line: usize,
}

/// All paths in `tokens`, nested groups included.
pub fn scan(tokens: TokenStream) -> Vec<ScannedPath> {
    let mut found = Vec::new();
    scan_into(tokens, &mut found);
    found
}

fn scan_into(tokens: TokenStream, found: &mut Vec<ScannedPath>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        match &trees[i] {
            TokenTree::Group(g) => {
                scan_into(g.stream(), found);
                i += 1;
            }
            TokenTree::Punct(p) if p.as_char() == '$' => match trees.get(i + 1) {
                Some(TokenTree::Ident(id)) if id == "crate" => {
                    i = read_path(&trees, i + 1, "crate", found);
                }
                // `$name`: a metavariable, not a path.
                Some(TokenTree::Ident(_)) => i += 2,
                _ => i += 1,
            },
            TokenTree::Punct(p) if matches!(p.as_char(), '.' | '\'') => {
                // `.method`, `.field`, `'lifetime`: the next identifier is not a path.
                i += if matches!(trees.get(i + 1), Some(TokenTree::Ident(_))) {
                    2
                } else {
                    1
                };
            }
            TokenTree::Ident(id) => {
                let first = if follows_path_separator(&trees, i) {
                    EXTERN_ROOT.to_string()
                } else {
                    id.to_string()
                };
                i = read_path(&trees, i, &first, found);
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => i += 1,
        }
    }
}

/// Reads `first (:: ident)*` starting at index `start` (the first identifier), records it and
/// returns the index after it.
fn read_path(
    trees: &[TokenTree],
    start: usize,
    first: &str,
    found: &mut Vec<ScannedPath>,
) -> usize {
    let line = trees[start].span().start().line;
    let mut segments = Vec::new();
    if first == EXTERN_ROOT {
        segments.push(EXTERN_ROOT.to_string());
        segments.push(trees[start].to_string());
    } else {
        segments.push(first.to_string());
    }
    let mut i = start + 1;
    while is_path_separator(trees, i) {
        let Some(TokenTree::Ident(next)) = trees.get(i + 2) else {
            break;
        };
        segments.push(next.to_string());
        i += 3;
    }
    found.push(ScannedPath { segments, line });
    i
}

/// `::` at index `i`: a joint `:` followed by a `:`.
fn is_path_separator(trees: &[TokenTree], i: usize) -> bool {
    matches!(
        (trees.get(i), trees.get(i + 1)),
        (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
            if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
    )
}

/// Whether the identifier at `i` comes right after `::` (a path from the extern prelude).
fn follows_path_separator(trees: &[TokenTree], i: usize) -> bool {
    i >= 2 && is_path_separator(trees, i - 2)
}
