//! The names each module holds: the items it defines, its imports and its glob imports.
//! Resolution (crate::resolve) walks these tables; nothing here follows a path.

use crate::modtree::{ModId, ModuleTree};
use crate::usetree::{UseLeaf, flatten};
use std::collections::{BTreeMap, BTreeSet};
use syn::visit::Visit;

/// A `use a::b::*;`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob {
    pub path: Vec<String>,
    /// `pub use` (any `pub(...)` too): a re-export of everything the glob reaches.
    pub public: bool,
    pub line: usize,
}

/// One module's names.
#[derive(Debug, Default)]
pub struct Scope {
    /// fn, struct, enum, union, trait, type, const, static and foreign items defined here.
    pub items: BTreeSet<String>,
    /// `macro_rules!` nameable here (`#[macro_export]` ones live at the crate root).
    pub macros: BTreeSet<String>,
    /// Each enum's variants, so `use Enum::*` and `Enum::Variant` land on the enum.
    pub enums: BTreeMap<String, BTreeSet<String>>,
    /// Module-level `use`: alias to path.
    pub imports: BTreeMap<String, Vec<String>>,
    pub globs: Vec<Glob>,
    /// `use` inside function bodies and other blocks: seen only by this module's own code.
    pub block_imports: BTreeMap<String, Vec<String>>,
    pub block_globs: Vec<Vec<String>>,
}

/// Every module's scope, plus the crate's `macro_rules!` by name (for macros invoked by bare
/// name through textual scoping) mapped to the module that owns them.
#[derive(Debug)]
pub struct Scopes {
    pub scopes: Vec<Scope>,
    pub textual_macros: BTreeMap<String, ModId>,
}

impl Scopes {
    pub fn build(tree: &ModuleTree) -> Scopes {
        let mut scopes: Vec<Scope> = tree.modules.iter().map(|_| Scope::default()).collect();
        let mut textual_macros = BTreeMap::new();
        for (id, module) in tree.modules.iter().enumerate() {
            for item in &module.items {
                if let Some((name, exported)) = macro_rules_name(item) {
                    let owner = if exported { 0 } else { id };
                    scopes[owner].macros.insert(name.clone());
                    textual_macros.entry(name).or_insert(owner);
                    continue;
                }
                add_item(&mut scopes[id], item);
            }
        }
        Scopes {
            scopes,
            textual_macros,
        }
    }
}

/// `macro_rules! name` and whether it carries `#[macro_export]`.
fn macro_rules_name(item: &syn::Item) -> Option<(String, bool)> {
    let syn::Item::Macro(m) = item else {
        return None;
    };
    let name = m.ident.as_ref()?.to_string();
    let exported = m.attrs.iter().any(|a| a.path().is_ident("macro_export"));
    Some((name, exported))
}

fn add_item(scope: &mut Scope, item: &syn::Item) {
    let name = match item {
        syn::Item::Const(i) => i.ident.to_string(),
        syn::Item::Fn(i) => i.sig.ident.to_string(),
        syn::Item::Static(i) => i.ident.to_string(),
        syn::Item::Struct(i) => i.ident.to_string(),
        syn::Item::Union(i) => i.ident.to_string(),
        syn::Item::Trait(i) => i.ident.to_string(),
        syn::Item::TraitAlias(i) => i.ident.to_string(),
        syn::Item::Type(i) => i.ident.to_string(),
        syn::Item::Enum(i) => {
            let variants = i.variants.iter().map(|v| v.ident.to_string()).collect();
            scope.enums.insert(i.ident.to_string(), variants);
            i.ident.to_string()
        }
        syn::Item::ForeignMod(f) => {
            scope.items.extend(f.items.iter().filter_map(foreign_name));
            return;
        }
        syn::Item::Use(u) => {
            let public = !matches!(u.vis, syn::Visibility::Inherited);
            for leaf in flatten(&u.tree, u.leading_colon.is_some()) {
                match leaf {
                    UseLeaf::Name { alias, path, .. } => {
                        if alias != "_" {
                            scope.imports.insert(alias, path);
                        }
                    }
                    UseLeaf::Glob { path, line } => scope.globs.push(Glob { path, public, line }),
                }
            }
            return;
        }
        // Child modules are in the tree; impls define no names; the rest name nothing here.
        _ => {
            let mut nested = BlockUses { scope };
            nested.visit_item(item);
            return;
        }
    };
    scope.items.insert(name);
    let mut nested = BlockUses { scope };
    nested.visit_item(item);
}

fn foreign_name(item: &syn::ForeignItem) -> Option<String> {
    match item {
        syn::ForeignItem::Fn(f) => Some(f.sig.ident.to_string()),
        syn::ForeignItem::Static(s) => Some(s.ident.to_string()),
        syn::ForeignItem::Type(t) => Some(t.ident.to_string()),
        _ => None,
    }
}

/// Collects `use` declarations nested in an item's blocks (function bodies, consts).
struct BlockUses<'a> {
    scope: &'a mut Scope,
}

impl<'ast> Visit<'ast> for BlockUses<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        for leaf in flatten(&u.tree, u.leading_colon.is_some()) {
            match leaf {
                UseLeaf::Name { alias, path, .. } => {
                    if alias != "_" {
                        self.scope.block_imports.insert(alias, path);
                    }
                }
                UseLeaf::Glob { path, .. } => self.scope.block_globs.push(path),
            }
        }
    }

    // A nested module is a module of its own (and is not in the tree if it sits in a block).
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}
}
