//! Resolving a path, as written in one module, to the module that *defines* the item it names,
//! following `use` re-exports and glob imports the way rustc's 2018 path rules do.
//!
//! Namespaces are kept only where they matter for this check: a macro path finds only
//! `macro_rules!`, any other path finds every item but macros. Visibility is ignored: the code
//! compiles, so a path that resolves at all resolves to what rustc picked.

use crate::modtree::{ModId, ModuleTree};
use crate::scope::Scopes;
use crate::usetree::EXTERN_ROOT;
use std::cell::RefCell;
use std::collections::BTreeSet;

/// What a path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An item (or an enum variant / associated item of it) defined in `module`.
    Item { module: ModId, name: String },
    /// A module itself (`use crate::render;`): not an item, so not an edge by itself.
    Module(ModId),
    /// Another crate, a local variable, a prelude name, or something not understood.
    Outside,
}

/// Which names a path's last segment may find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    /// A macro invocation's path: only `macro_rules!`.
    Macro,
    /// Paths in code: items and modules, not macros.
    Other,
    /// A `use` leaf, which may import either.
    Any,
}

/// Resolves paths within one crate.
#[derive(Debug)]
pub struct Resolver<'a> {
    tree: &'a ModuleTree,
    scopes: &'a Scopes,
    /// `(module, name)` lookups in progress: a re-export loop (`a` re-exports `b::X`, `b`
    /// re-exports `a::X`, or two modules glob-importing each other) ends as `Outside`.
    active: RefCell<BTreeSet<(ModId, String)>>,
}

/// Deeper re-export chains than this are not followed (no real crate comes near).
const MAX_DEPTH: usize = 64;

impl<'a> Resolver<'a> {
    pub fn new(tree: &'a ModuleTree, scopes: &'a Scopes) -> Resolver<'a> {
        Resolver {
            tree,
            scopes,
            active: RefCell::new(BTreeSet::new()),
        }
    }

    /// Resolves `path` written in the code of module `origin`.
    pub fn resolve(&self, origin: ModId, path: &[String], ns: Namespace) -> Target {
        self.resolve_from(origin, path, ns, true)
    }

    /// `origin`: the path is written in `from`'s own code, so its block-level imports count.
    fn resolve_from(&self, from: ModId, path: &[String], ns: Namespace, origin: bool) -> Target {
        let Some((first, rest)) = path.split_first() else {
            return Target::Outside;
        };
        let first_ns = if rest.is_empty() {
            ns
        } else {
            Namespace::Other
        };
        let mut current = match first.as_str() {
            "crate" | "$crate" => Target::Module(0),
            "self" => Target::Module(from),
            "super" => self.parent(from),
            "Self" | EXTERN_ROOT => return Target::Outside,
            name => self.lookup(from, name, first_ns, origin),
        };
        for (index, segment) in rest.iter().enumerate() {
            let Target::Module(module) = current else {
                // An item: what follows is a variant or an associated item, owned by it.
                return current;
            };
            let segment_ns = if index + 1 == rest.len() {
                ns
            } else {
                Namespace::Other
            };
            current = match segment.as_str() {
                "super" => self.parent(module),
                "self" => Target::Module(module),
                name => self.lookup(module, name, segment_ns, false),
            };
        }
        current
    }

    fn parent(&self, module: ModId) -> Target {
        self.tree.modules[module]
            .parent
            .map_or(Target::Outside, Target::Module)
    }

    /// The name `name` as seen in module `module`: its items and child modules first, then
    /// its imports, then (being shadowed by all of those) its glob imports.
    fn lookup(&self, module: ModId, name: &str, ns: Namespace, origin: bool) -> Target {
        let key = (module, name.to_string());
        {
            let mut active = self.active.borrow_mut();
            if active.len() >= MAX_DEPTH || !active.insert(key.clone()) {
                return Target::Outside;
            }
        }
        let found = self.lookup_uncached(module, name, ns, origin);
        self.active.borrow_mut().remove(&key);
        found
    }

    fn lookup_uncached(&self, module: ModId, name: &str, ns: Namespace, origin: bool) -> Target {
        let scope = &self.scopes.scopes[module];
        let item = || Target::Item {
            module,
            name: name.to_string(),
        };
        if ns != Namespace::Macro && scope.items.contains(name) {
            return item();
        }
        if ns != Namespace::Other && scope.macros.contains(name) {
            return item();
        }
        if ns != Namespace::Macro
            && let Some(&child) = self.tree.modules[module].children.get(name)
        {
            return Target::Module(child);
        }
        if let Some(path) = scope.imports.get(name) {
            return self.resolve_from(module, path, ns, false);
        }
        if origin && let Some(path) = scope.block_imports.get(name) {
            return self.resolve_from(module, path, ns, false);
        }
        let block_globs = if origin { &scope.block_globs[..] } else { &[] };
        let globs = scope.globs.iter().map(|g| &g.path).chain(block_globs);
        for glob in globs {
            let found = self.through_glob(module, glob, name, ns);
            if found != Target::Outside {
                return found;
            }
        }
        Target::Outside
    }

    /// `name` as brought in by `use glob::*` written in `module`.
    fn through_glob(&self, module: ModId, glob: &[String], name: &str, ns: Namespace) -> Target {
        match self.resolve_from(module, glob, Namespace::Other, false) {
            Target::Module(source) => self.lookup(source, name, ns, false),
            // `use Enum::*`: the variants, which belong to the enum's module.
            Target::Item {
                module,
                name: owner,
            } => {
                let has_variant = self.scopes.scopes[module]
                    .enums
                    .get(&owner)
                    .is_some_and(|variants| variants.contains(name));
                if has_variant && ns != Namespace::Macro {
                    Target::Item {
                        module,
                        name: owner,
                    }
                } else {
                    Target::Outside
                }
            }
            Target::Outside => Target::Outside,
        }
    }

    /// Every item a glob import written in `module` makes visible (for `pub use x::*`, which
    /// re-exports them all), as `(defining module, item)`.
    pub fn glob_items(&self, module: ModId, glob: &[String]) -> BTreeSet<(ModId, String)> {
        let mut names = BTreeSet::new();
        let mut visited = BTreeSet::new();
        if let Target::Module(source) = self.resolve_from(module, glob, Namespace::Other, false) {
            self.visible_names(source, &mut names, &mut visited);
        }
        let mut items = BTreeSet::new();
        for name in names {
            if let Target::Item { module, name } =
                self.through_glob(module, glob, &name, Namespace::Any)
            {
                items.insert((module, name));
            }
        }
        items
    }

    /// The names module `source` holds, its own glob imports included.
    fn visible_names(
        &self,
        source: ModId,
        names: &mut BTreeSet<String>,
        visited: &mut BTreeSet<ModId>,
    ) {
        if !visited.insert(source) {
            return;
        }
        let scope = &self.scopes.scopes[source];
        names.extend(scope.items.iter().cloned());
        names.extend(scope.macros.iter().cloned());
        names.extend(scope.imports.keys().cloned());
        for glob in &scope.globs {
            if let Target::Module(next) =
                self.resolve_from(source, &glob.path, Namespace::Other, false)
            {
                self.visible_names(next, names, visited);
            }
        }
    }
}
