//! Flattening `use` trees (groups, renames, `self`, globs) into one path per imported name.

use syn::UseTree;

/// `::` as a first segment: a path that starts at the extern prelude, never in this crate.
pub const EXTERN_ROOT: &str = "::";

/// One name a `use` brings in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UseLeaf {
    /// `use a::b::C as D;`: alias `D`, path `[a, b, C]` (alias `_` imports nothing by name).
    Name {
        alias: String,
        path: Vec<String>,
        line: usize,
    },
    /// `use a::b::*;`: path `[a, b]`.
    Glob { path: Vec<String>, line: usize },
}

/// Every leaf of `use` tree `tree`.
pub fn flatten(tree: &UseTree, leading_colon: bool) -> Vec<UseLeaf> {
    let mut prefix = Vec::new();
    if leading_colon {
        prefix.push(EXTERN_ROOT.to_string());
    }
    let mut leaves = Vec::new();
    walk(tree, &mut prefix, &mut leaves);
    leaves
}

fn walk(tree: &UseTree, prefix: &mut Vec<String>, leaves: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            walk(&p.tree, prefix, leaves);
            prefix.pop();
        }
        UseTree::Name(n) => leaves.push(name_leaf(prefix, &n.ident, &n.ident)),
        UseTree::Rename(r) => leaves.push(name_leaf(prefix, &r.ident, &r.rename)),
        UseTree::Glob(g) => leaves.push(UseLeaf::Glob {
            path: prefix.clone(),
            line: g.star_token.span.start().line,
        }),
        UseTree::Group(g) => {
            for inner in &g.items {
                walk(inner, prefix, leaves);
            }
        }
    }
}

/// `self` in a group (`use a::b::{self}`) imports the prefix itself under its last name.
fn name_leaf(prefix: &[String], ident: &syn::Ident, alias: &syn::Ident) -> UseLeaf {
    let mut path = prefix.to_vec();
    let last = if ident == "self" {
        prefix.last().cloned().unwrap_or_default()
    } else {
        path.push(ident.to_string());
        ident.to_string()
    };
    let alias = if alias == "self" {
        last
    } else {
        alias.to_string()
    };
    UseLeaf::Name {
        alias,
        path,
        line: ident.span().start().line,
    }
}
