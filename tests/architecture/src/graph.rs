//! A crate's module graph: an edge A -> B when A's own code names an item defined in B.
//!
//! Glob imports: a private glob (`use super::*`) is no edge by itself; each name the module
//! then uses is resolved through it to the module defining that item. A public glob
//! (`pub use x::*`) re-exports every item it reaches, so it is an edge to each module defining
//! one of them.

use crate::modtree::{ModId, ModuleTree};
use crate::refs::{RefKind, Reference, collect};
use crate::resolve::{Namespace, Resolver, Target};
use crate::scope::Scopes;
use std::collections::BTreeMap;

/// Where module A names an item of module B: the first place, in source order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Example {
    /// A's file, relative to the crate root's directory (`render/text.rs`).
    pub file: String,
    pub line: usize,
    /// The item, as `progress::order::Label`.
    pub item: String,
}

/// Modules (by id, named as in [`ModuleTree::name`]) and edges with one example each.
#[derive(Debug)]
pub struct ModuleGraph {
    pub names: Vec<String>,
    pub edges: BTreeMap<(ModId, ModId), Example>,
}

impl ModuleGraph {
    pub fn build(tree: &ModuleTree) -> ModuleGraph {
        let scopes = Scopes::build(tree);
        let resolver = Resolver::new(tree, &scopes);
        let mut graph = ModuleGraph {
            names: (0..tree.modules.len()).map(|id| tree.name(id)).collect(),
            edges: BTreeMap::new(),
        };
        for (id, module) in tree.modules.iter().enumerate() {
            let file = tree.file_name(id);
            for reference in collect(&module.items) {
                if let Some((target, item)) = target_of(&resolver, &scopes, id, &reference) {
                    graph.add(id, target, &file, reference.line, item);
                }
            }
            for glob in scopes.scopes[id].globs.iter().filter(|g| g.public) {
                for (target, item) in resolver.glob_items(id, &glob.path) {
                    graph.add(id, target, &file, glob.line, item);
                }
            }
        }
        graph
    }

    fn add(&mut self, from: ModId, to: ModId, file: &str, line: usize, item: String) {
        if from == to {
            return;
        }
        let item = if self.names[to] == "crate" {
            format!("crate::{item}")
        } else {
            format!("{}::{item}", self.names[to])
        };
        self.edges.entry((from, to)).or_insert_with(|| Example {
            file: file.to_string(),
            line,
            item,
        });
    }

    /// The modules `from` has an edge to.
    pub fn successors(&self, from: ModId) -> impl Iterator<Item = ModId> + '_ {
        self.edges
            .range((from, 0)..=(from, ModId::MAX))
            .map(|(&(_, to), _)| to)
    }
}

/// The module defining the item `reference` names, and the item's name.
fn target_of(
    resolver: &Resolver<'_>,
    scopes: &Scopes,
    origin: ModId,
    reference: &Reference,
) -> Option<(ModId, String)> {
    let target = match reference.kind {
        RefKind::Code => resolver.resolve(origin, &reference.path, Namespace::Other),
        RefKind::Use => resolver.resolve(origin, &reference.path, Namespace::Any),
        RefKind::Macro => match resolver.resolve(origin, &reference.path, Namespace::Macro) {
            // `foo!` by bare name with no import: a `macro_rules!` in textual scope.
            Target::Outside if reference.path.len() == 1 => scopes
                .textual_macros
                .get(&reference.path[0])
                .map_or(Target::Outside, |&module| Target::Item {
                    module,
                    name: reference.path[0].clone(),
                }),
            found => found,
        },
    };
    match target {
        Target::Item { module, name } => Some((module, name)),
        Target::Module(_) | Target::Outside => None,
    }
}
