//! Member discovery, the file size limit and the front end's share on a synthetic workspace.

use std::path::Path;
use strata_architecture::check::{frontend_share, module_cycles, oversized_files};
use strata_architecture::workspace::Workspace;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dirs");
    std::fs::write(path, text).expect("write");
}

fn manifest(name: &str) -> String {
    format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n")
}

/// Root lists `app` and `crates/*`; `crates/` holds `model` and `view`; `skipped` is not a
/// member. `app` has a library and a binary with a declared path.
fn workspace(app_lines: usize, model_lines: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path();
    write(
        root,
        "Cargo.toml",
        "[workspace]\n# a comment\nmembers = [\n  \"app\",\n  \"crates/*\",\n]\nexclude = [\"crates/view\"]\n",
    );
    write(
        root,
        "app/Cargo.toml",
        &(manifest("app") + "\n[[bin]]\nname = \"tool\"\npath = \"src/tool.rs\"\n"),
    );
    write(root, "app/src/lib.rs", &"// line\n".repeat(app_lines));
    write(root, "app/src/tool.rs", "fn main() {}\n");
    write(root, "crates/model/Cargo.toml", &manifest("model"));
    write(root, "crates/model/src/lib.rs", "mod a;\nmod b;\n");
    write(
        root,
        "crates/model/src/a.rs",
        "pub fn fa() {\n    crate::b::fb()\n}\n",
    );
    let b = format!(
        "pub fn fb() {{\n    crate::a::fa()\n}}\n{}",
        "\n".repeat(model_lines)
    );
    write(root, "crates/model/src/b.rs", &b);
    write(root, "crates/view/Cargo.toml", &manifest("view"));
    write(root, "crates/view/src/lib.rs", "");
    write(root, "skipped/Cargo.toml", &manifest("skipped"));
    write(root, "skipped/src/lib.rs", &"\n".repeat(5000));
    dir
}

#[test]
fn members_come_from_the_root_manifest() {
    let dir = workspace(1, 0);
    let ws = Workspace::discover(&dir.path().join("crates/model/src")).expect("workspace");
    let packages: Vec<&str> = ws.members.iter().map(|m| m.package.as_str()).collect();
    assert_eq!(packages, ["app", "model"]);
    let app: Vec<&str> = ws.members[0]
        .crates
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(app, ["app", "tool (bin of app)"]);
    let report = module_cycles(&ws);
    assert!(report.contains("crate model: 1 module cycle"), "{report}");
    assert!(report.contains("cycle 1: a -> b -> a"), "{report}");
}

#[test]
fn files_over_the_limit_are_listed_longest_first() {
    let dir = workspace(1300, 1250);
    let ws = Workspace::load(dir.path()).expect("workspace");
    let report = oversized_files(&ws, 1200).expect("counted");
    let expected = "2 source files over 1200 lines:\n    1300 app/src/lib.rs\n    1253 crates/model/src/b.rs\n";
    assert_eq!(report, expected);
    assert_eq!(oversized_files(&ws, 1300).expect("counted"), "");
}

#[test]
fn the_front_end_share_counts_every_member_but_the_excluded() {
    // app: 300 + 1 (tool.rs); model: 2 + 3 + 3 + 100 = 108.
    let dir = workspace(300, 100);
    let ws = Workspace::load(dir.path()).expect("workspace");
    let report = frontend_share(&ws, "app", &[], 25).expect("counted");
    assert!(
        report.starts_with("app has 301 of 409 source lines (73.6%), not under 25%:\n"),
        "{report}"
    );
    assert!(report.contains("  model"), "{report}");
    assert_eq!(frontend_share(&ws, "app", &[], 74).expect("counted"), "");
    let without_app = frontend_share(&ws, "model", &["app"], 25).expect("counted");
    assert!(
        without_app.contains("model has 108 of 108"),
        "{without_app}"
    );
}
