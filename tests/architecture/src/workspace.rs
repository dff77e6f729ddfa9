//! The workspace as the checks see it: the members listed in the root `Cargo.toml` (never a
//! hard-coded list, so crates added later are checked too) and each member's crates.

use crate::error::Error;
use crate::manifest::Manifest;
use std::path::{Path, PathBuf};

/// The workspace: its root directory and its members, in `members` order.
#[derive(Debug)]
pub struct Workspace {
    pub root: PathBuf,
    pub members: Vec<Member>,
}

/// One member package.
#[derive(Debug)]
pub struct Member {
    /// `package.name`, e.g. `strata-frontend`.
    pub package: String,
    /// The member's directory (holding its `Cargo.toml`).
    pub dir: PathBuf,
    /// Its library and binaries: each is a crate with a module tree of its own.
    pub crates: Vec<CrateRoot>,
}

/// A crate's root file and how to call it in reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrateRoot {
    /// `strata_frontend` for a library, `strata (bin of strata-frontend)` for a binary.
    pub name: String,
    /// `src/lib.rs`, `src/main.rs` or a declared path.
    pub root_file: PathBuf,
}

impl Workspace {
    /// Finds the workspace holding `start` (the nearest ancestor whose `Cargo.toml` has a
    /// `[workspace]`) and loads it.
    pub fn discover(start: &Path) -> Result<Workspace, Error> {
        let mut dir = Some(start);
        while let Some(candidate) = dir {
            let manifest = candidate.join("Cargo.toml");
            if manifest.is_file() && Manifest::read(&manifest)?.is_workspace() {
                return Workspace::load(candidate);
            }
            dir = candidate.parent();
        }
        Err(Error::Manifest {
            path: start.to_path_buf(),
            message: "no Cargo.toml with [workspace] here or above".to_string(),
        })
    }

    /// Loads the workspace whose root manifest is `root/Cargo.toml`.
    pub fn load(root: &Path) -> Result<Workspace, Error> {
        let manifest = Manifest::read(&root.join("Cargo.toml"))?;
        let exclude = manifest.workspace_list("exclude")?;
        let mut members = Vec::new();
        for pattern in manifest.workspace_list("members")? {
            for dir in expand_member(root, &pattern, &manifest.path)? {
                let relative = dir.strip_prefix(root).unwrap_or(&dir);
                if exclude.iter().any(|e| Path::new(e) == relative) {
                    continue;
                }
                members.push(Member::load(&dir)?);
            }
        }
        Ok(Workspace {
            root: root.to_path_buf(),
            members,
        })
    }

    /// The member whose package is `package`, if any.
    pub fn member(&self, package: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.package == package)
    }
}

/// A `members` entry is a directory, or a directory pattern whose last component is `*`
/// (cargo accepts globs; `*` alone is what workspaces use in practice).
fn expand_member(root: &Path, pattern: &str, manifest: &Path) -> Result<Vec<PathBuf>, Error> {
    let Some(parent) = pattern.strip_suffix("/*") else {
        if pattern.contains(['*', '?', '[']) {
            return Err(Error::Manifest {
                path: manifest.to_path_buf(),
                message: format!("member pattern {pattern:?}: only a trailing /* is supported"),
            });
        }
        return Ok(vec![root.join(pattern)]);
    };
    let base = root.join(parent);
    let entries = std::fs::read_dir(&base).map_err(|source| Error::Io {
        path: base.clone(),
        source,
    })?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    Ok(dirs)
}

impl Member {
    /// Reads `dir/Cargo.toml` and finds the member's crates the way cargo does: `[lib]` and
    /// `[[bin]]` paths if declared, else `src/lib.rs`, `src/main.rs` and `src/bin/*.rs`.
    pub fn load(dir: &Path) -> Result<Member, Error> {
        let manifest = Manifest::read(&dir.join("Cargo.toml"))?;
        let package = manifest.package_name()?;
        let mut crates = Vec::new();
        let (lib_name, lib_path) = manifest.lib();
        let lib_file = dir.join(lib_path.as_deref().unwrap_or("src/lib.rs"));
        if lib_file.is_file() {
            crates.push(CrateRoot {
                name: lib_name.unwrap_or_else(|| package.replace('-', "_")),
                root_file: lib_file,
            });
        }
        let mut bins: Vec<(String, PathBuf)> = manifest
            .bins()
            .into_iter()
            .map(|b| {
                let path = match b.path {
                    Some(p) => dir.join(p),
                    None if b.name == package => dir.join("src/main.rs"),
                    None => dir.join("src/bin").join(format!("{}.rs", b.name)),
                };
                (b.name, path)
            })
            .collect();
        if manifest.autobins() {
            for (name, path) in auto_bins(dir, &package) {
                if !bins.iter().any(|(_, p)| *p == path) {
                    bins.push((name, path));
                }
            }
        }
        for (name, path) in bins {
            if path.is_file() {
                crates.push(CrateRoot {
                    name: format!("{name} (bin of {package})"),
                    root_file: path,
                });
            }
        }
        Ok(Member {
            package,
            dir: dir.to_path_buf(),
            crates,
        })
    }
}

/// Binaries cargo finds without a `[[bin]]`: `src/main.rs` and `src/bin/*.rs`.
fn auto_bins(dir: &Path, package: &str) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let main = dir.join("src/main.rs");
    if main.is_file() {
        found.push((package.to_string(), main));
    }
    let Ok(entries) = std::fs::read_dir(dir.join("src/bin")) else {
        return found;
    };
    let mut extra: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|p| {
            if p.extension().is_some_and(|e| e == "rs") {
                let stem = p.file_stem()?.to_string_lossy().into_owned();
                Some((stem, p))
            } else if p.join("main.rs").is_file() {
                let name = p.file_name()?.to_string_lossy().into_owned();
                Some((name, p.join("main.rs")))
            } else {
                None
            }
        })
        .collect();
    extra.sort();
    found.extend(extra);
    found
}
