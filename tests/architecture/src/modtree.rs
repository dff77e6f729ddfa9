//! A crate's module tree, read from its `mod` declarations the way rustc finds module files
//! (Rust 2018 rules): `mod foo;` is `foo.rs` or `foo/mod.rs` in the parent's directory,
//! `#[path = "..."]` overrides that, and inline `mod foo { ... }` (including
//! `#[cfg(test)] mod tests { ... }`) is a module of its own inside its parent's file.
//!
//! Every `mod` is followed whatever its `#[cfg]`: the check is about the source as written.

use crate::error::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Index of a module in [`ModuleTree::modules`]; the crate root is 0.
pub type ModId = usize;

/// One module: its own items (child modules appear only as their `mod` items).
pub struct Module {
    /// Path from the crate root: empty for the root, `["render", "text"]` for `render::text`.
    pub path: Vec<String>,
    pub parent: Option<ModId>,
    /// The file holding the module's items (its parent's file for an inline module).
    pub file: PathBuf,
    pub items: Vec<syn::Item>,
    pub children: BTreeMap<String, ModId>,
}

// By hand: syn's Debug impls need its heavy `extra-traits` feature, and the items are noise.
impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("path", &self.path)
            .field("file", &self.file)
            .field("items", &self.items.len())
            .field("children", &self.children)
            .finish_non_exhaustive()
    }
}

/// All modules of one crate, and the files that could not be read or parsed.
#[derive(Debug)]
pub struct ModuleTree {
    pub modules: Vec<Module>,
    /// The root file's directory: reports show files relative to it (`render/text.rs`).
    pub base: PathBuf,
    pub problems: Vec<Error>,
}

/// Where the `mod` declarations being read live.
struct Context<'a> {
    file: &'a Path,
    /// Where `mod foo;` looks for `foo.rs` / `foo/mod.rs`.
    child_dir: PathBuf,
    /// Inside an inline `mod { }`: `#[path]` is then relative to `child_dir`, not the file's
    /// directory (the Rust reference's rule).
    inline: bool,
}

impl ModuleTree {
    /// Reads the crate whose root file is `root_file`. Files that fail to read or parse are
    /// recorded in `problems` (their module is kept, empty) rather than aborting.
    pub fn load(root_file: &Path) -> ModuleTree {
        let base = root_file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut tree = ModuleTree {
            modules: Vec::new(),
            base,
            problems: Vec::new(),
        };
        tree.load_file(None, None, root_file, true);
        tree
    }

    /// `crate` for the root, else `render::text`.
    pub fn name(&self, id: ModId) -> String {
        let path = &self.modules[id].path;
        if path.is_empty() {
            "crate".to_string()
        } else {
            path.join("::")
        }
    }

    /// The module's file relative to the root file's directory.
    pub fn file_name(&self, id: ModId) -> String {
        let file = &self.modules[id].file;
        file.strip_prefix(&self.base)
            .unwrap_or(file)
            .display()
            .to_string()
    }

    /// Reads one file as a module. `mod_rs`: a root, `mod.rs` or `#[path]` file, whose child
    /// modules live in its own directory rather than in a directory named after it.
    fn load_file(
        &mut self,
        parent: Option<ModId>,
        name: Option<&str>,
        file: &Path,
        mod_rs: bool,
    ) -> ModId {
        let items = match read_items(file) {
            Ok(items) => items,
            Err(problem) => {
                self.problems.push(problem);
                Vec::new()
            }
        };
        let id = self.push(parent, name, file);
        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let child_dir = match (mod_rs, file.file_stem()) {
            (false, Some(stem)) => dir.join(stem),
            _ => dir,
        };
        let context = Context {
            file,
            child_dir,
            inline: false,
        };
        self.declare_children(id, &items, &context);
        self.modules[id].items = items;
        id
    }

    fn push(&mut self, parent: Option<ModId>, name: Option<&str>, file: &Path) -> ModId {
        let id = self.modules.len();
        let mut path = parent.map_or_else(Vec::new, |p| self.modules[p].path.clone());
        if let (Some(p), Some(name)) = (parent, name) {
            path.push(name.to_string());
            self.modules[p].children.insert(name.to_string(), id);
        }
        self.modules.push(Module {
            path,
            parent,
            file: file.to_path_buf(),
            items: Vec::new(),
            children: BTreeMap::new(),
        });
        id
    }

    fn declare_children(&mut self, id: ModId, items: &[syn::Item], context: &Context<'_>) {
        for item in items {
            let syn::Item::Mod(decl) = item else { continue };
            let name = decl.ident.to_string();
            match &decl.content {
                Some((_, inner)) => {
                    let child = self.push(Some(id), Some(&name), context.file);
                    let inner_context = Context {
                        file: context.file,
                        child_dir: context.child_dir.join(&name),
                        inline: true,
                    };
                    self.declare_children(child, inner, &inner_context);
                    self.modules[child].items = inner.clone();
                }
                None => self.declare_file_child(id, &name, decl, context),
            }
        }
    }

    fn declare_file_child(
        &mut self,
        id: ModId,
        name: &str,
        decl: &syn::ItemMod,
        context: &Context<'_>,
    ) {
        if let Some(path) = path_attribute(&decl.attrs) {
            let dir = if context.inline {
                context.child_dir.clone()
            } else {
                context
                    .file
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default()
            };
            self.load_file(Some(id), Some(name), &dir.join(path), true);
            return;
        }
        let flat = context.child_dir.join(format!("{name}.rs"));
        let nested = context.child_dir.join(name).join("mod.rs");
        if flat.is_file() {
            self.load_file(Some(id), Some(name), &flat, false);
        } else if nested.is_file() {
            self.load_file(Some(id), Some(name), &nested, true);
        } else {
            self.problems.push(Error::MissingModule {
                declared_in: context.file.to_path_buf(),
                name: name.to_string(),
                candidates: vec![flat, nested],
            });
            self.push(Some(id), Some(name), context.file);
        }
    }
}

/// The string of a `#[path = "..."]` attribute, if any.
fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Reads and parses one source file.
pub fn read_items(file: &Path) -> Result<Vec<syn::Item>, Error> {
    let text = std::fs::read_to_string(file).map_err(|source| Error::Io {
        path: file.to_path_buf(),
        source,
    })?;
    syn::parse_file(&text)
        .map(|parsed| parsed.items)
        .map_err(|e| Error::Parse {
            path: file.to_path_buf(),
            line: e.span().start().line,
            message: e.to_string(),
        })
}
