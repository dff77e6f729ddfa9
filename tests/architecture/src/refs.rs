//! The paths one module's own code writes: `use` leaves, paths in types, expressions and
//! patterns, macro paths, and paths inside macro arguments. Child modules (`mod x { }`) are
//! skipped: they are modules of their own. Attributes and `pub(in path)` name nothing.

use crate::tokens::scan;
use crate::usetree::{EXTERN_ROOT, UseLeaf, flatten};
use std::collections::BTreeSet;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::visit::Visit;

/// How a path was written, which decides the names it may find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// A `use` leaf.
    Use,
    /// A path in code, or one found in macro tokens.
    Code,
    /// A macro invocation's own path (`foo!`).
    Macro,
}

/// One path written in a module, with its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub path: Vec<String>,
    pub line: usize,
    pub kind: RefKind,
}

/// Every path in `items` (one module's items), in source order.
pub fn collect(items: &[syn::Item]) -> Vec<Reference> {
    let mut collector = Collector::default();
    for item in items {
        collector.visit_item(item);
    }
    collector.refs
}

#[derive(Default)]
struct Collector {
    refs: Vec<Reference>,
    /// Names bound by the enclosing items and functions (generic parameters, `let` and
    /// parameter bindings): a one-segment path with such a name is the binding, not an item.
    locals: Vec<BTreeSet<String>>,
}

impl Collector {
    fn is_local(&self, name: &str) -> bool {
        self.locals.iter().any(|frame| frame.contains(name))
    }

    fn push(&mut self, path: Vec<String>, line: usize, kind: RefKind) {
        self.refs.push(Reference { path, line, kind });
    }

    fn with_locals(&mut self, frame: BTreeSet<String>, visit: impl FnOnce(&mut Self)) {
        self.locals.push(frame);
        visit(self);
        self.locals.pop();
    }

    /// A macro's arguments: as comma-separated expressions when they parse so (`format!`,
    /// `assert_eq!`, `vec![a, b]`), else a scan of their tokens for paths.
    fn macro_tokens(&mut self, tokens: &proc_macro2::TokenStream) {
        let parser = Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated;
        match parser.parse2(tokens.clone()) {
            Ok(exprs) => exprs.iter().for_each(|e| self.visit_expr(e)),
            Err(_) => self.scanned(tokens),
        }
    }

    /// Scanned paths: multi-segment ones, and single names that look like types, variants or
    /// constants (capitalised). A lone lowercase word in tokens is far more often a variable
    /// or keyword than an item, so it is not taken as a reference.
    fn scanned(&mut self, tokens: &proc_macro2::TokenStream) {
        for found in scan(tokens.clone()) {
            let single = found.segments.len() == 1;
            let name = &found.segments[0];
            if single && (!starts_uppercase(name) || self.is_local(name)) {
                continue;
            }
            self.push(found.segments, found.line, RefKind::Code);
        }
    }
}

fn starts_uppercase(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

fn path_segments(path: &syn::Path) -> Vec<String> {
    let mut segments = Vec::new();
    if path.leading_colon.is_some() {
        segments.push(EXTERN_ROOT.to_string());
    }
    segments.extend(path.segments.iter().map(|s| s.ident.to_string()));
    segments
}

fn path_line(path: &syn::Path) -> usize {
    path.segments
        .first()
        .map_or(0, |s| s.ident.span().start().line)
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let frame = match item {
            syn::Item::Fn(f) => fn_binders(&f.sig, Some(&f.block)),
            syn::Item::Impl(i) => generic_binders(&i.generics),
            syn::Item::Struct(s) => generic_binders(&s.generics),
            syn::Item::Enum(e) => generic_binders(&e.generics),
            syn::Item::Union(u) => generic_binders(&u.generics),
            syn::Item::Trait(t) => generic_binders(&t.generics),
            syn::Item::Type(t) => generic_binders(&t.generics),
            _ => BTreeSet::new(),
        };
        self.with_locals(frame, |v| syn::visit::visit_item(v, item));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let frame = fn_binders(&f.sig, Some(&f.block));
        self.with_locals(frame, |v| syn::visit::visit_impl_item_fn(v, f));
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        let frame = fn_binders(&f.sig, f.default.as_ref());
        self.with_locals(frame, |v| syn::visit::visit_trait_item_fn(v, f));
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for leaf in flatten(&u.tree, u.leading_colon.is_some()) {
            // Globs are resolved name by name where the names are used (see crate::graph).
            if let UseLeaf::Name { path, line, .. } = leaf {
                self.push(path, line, RefKind::Use);
            }
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments = path_segments(path);
        let local = segments.len() == 1 && self.is_local(&segments[0]);
        if !local {
            self.push(segments, path_line(path), RefKind::Code);
        }
        // Generic arguments hold paths of their own: `Vec<crate::a::B>`.
        syn::visit::visit_path(self, path);
    }

    fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
        // `Foo` in a pattern is a unit struct, variant or constant; `foo` is a new binding.
        let name = pat.ident.to_string();
        if starts_uppercase(&name) && !self.is_local(&name) {
            self.push(vec![name], pat.ident.span().start().line, RefKind::Code);
        }
        syn::visit::visit_pat_ident(self, pat);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.push(
            path_segments(&mac.path),
            path_line(&mac.path),
            RefKind::Macro,
        );
        self.macro_tokens(&mac.tokens);
    }

    fn visit_item_macro(&mut self, item: &'ast syn::ItemMacro) {
        if item.ident.is_some() {
            // A `macro_rules!` body is a template: only its paths are worth reading.
            self.scanned(&item.mac.tokens);
        } else {
            self.visit_macro(&item.mac);
        }
    }
}

/// Generic type and const parameter names.
fn generic_binders(generics: &syn::Generics) -> BTreeSet<String> {
    generics
        .params
        .iter()
        .filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            syn::GenericParam::Const(c) => Some(c.ident.to_string()),
            syn::GenericParam::Lifetime(_) => None,
        })
        .collect()
}

/// A function's generic parameters and every lowercase name its patterns bind (parameters,
/// `let`, closures, match arms). Coarse on purpose: scopes inside the body are not tracked.
fn fn_binders(sig: &syn::Signature, block: Option<&syn::Block>) -> BTreeSet<String> {
    let mut binders = Binders(generic_binders(&sig.generics));
    binders.visit_signature(sig);
    if let Some(block) = block {
        binders.visit_block(block);
    }
    binders.0
}

struct Binders(BTreeSet<String>);

impl<'ast> Visit<'ast> for Binders {
    fn visit_pat_ident(&mut self, pat: &'ast syn::PatIdent) {
        let name = pat.ident.to_string();
        if !starts_uppercase(&name) {
            self.0.insert(name);
        }
        syn::visit::visit_pat_ident(self, pat);
    }

    // Macro arguments are not parsed here: `let` inside a macro call is rare.
    fn visit_item(&mut self, _: &'ast syn::Item) {}
}
