//! Reading `Cargo.toml` files: the root's `[workspace] members` and a member's crate roots.
//! TOML is parsed by toml_edit, never by hand, so comments, multi-line arrays and inline
//! tables in the manifests cannot fool the check.

use crate::error::Error;
use std::path::{Path, PathBuf};
use toml_edit::{DocumentMut, Item};

/// A parsed manifest and where it came from (for error messages).
#[derive(Debug)]
pub struct Manifest {
    pub path: PathBuf,
    doc: DocumentMut,
}

/// A binary target declared by `[[bin]]`: its name and, if given, its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclaredBin {
    pub name: String,
    pub path: Option<String>,
}

impl Manifest {
    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Manifest, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let doc = text.parse::<DocumentMut>().map_err(|e| Error::Manifest {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(Manifest {
            path: path.to_path_buf(),
            doc,
        })
    }

    /// Whether this manifest declares a `[workspace]`.
    pub fn is_workspace(&self) -> bool {
        self.doc.get("workspace").is_some()
    }

    /// `[workspace] members` (or `exclude` with `key = "exclude"`), as written.
    pub fn workspace_list(&self, key: &str) -> Result<Vec<String>, Error> {
        match self.doc.get("workspace").and_then(|w| w.get(key)) {
            None => Ok(Vec::new()),
            Some(item) => self.strings(item, &format!("workspace.{key}")),
        }
    }

    /// `package.name`.
    pub fn package_name(&self) -> Result<String, Error> {
        self.doc
            .get("package")
            .and_then(|p| p.get("name"))
            .and_then(Item::as_str)
            .map(str::to_string)
            .ok_or_else(|| self.problem("no package.name"))
    }

    /// `[lib] name` and `[lib] path`, each if given.
    pub fn lib(&self) -> (Option<String>, Option<String>) {
        let field = |key: &str| {
            self.doc
                .get("lib")
                .and_then(|l| l.get(key))
                .and_then(Item::as_str)
                .map(str::to_string)
        };
        (field("name"), field("path"))
    }

    /// The `[[bin]]` tables.
    pub fn bins(&self) -> Vec<DeclaredBin> {
        let Some(tables) = self.doc.get("bin").and_then(Item::as_array_of_tables) else {
            return Vec::new();
        };
        tables
            .iter()
            .filter_map(|t| {
                let name = t.get("name").and_then(Item::as_str)?.to_string();
                let path = t.get("path").and_then(Item::as_str).map(str::to_string);
                Some(DeclaredBin { name, path })
            })
            .collect()
    }

    /// `package.autobins`, true unless set to false.
    pub fn autobins(&self) -> bool {
        self.doc
            .get("package")
            .and_then(|p| p.get("autobins"))
            .and_then(Item::as_bool)
            .unwrap_or(true)
    }

    fn strings(&self, item: &Item, what: &str) -> Result<Vec<String>, Error> {
        let array = item
            .as_array()
            .ok_or_else(|| self.problem(&format!("{what} is not an array")))?;
        array
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| self.problem(&format!("{what} holds a non-string")))
            })
            .collect()
    }

    fn problem(&self, message: &str) -> Error {
        Error::Manifest {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }
}
