//! The module-graph check on small synthetic crates written to a temporary directory: each
//! test states one rule of the check and fails if the checker breaks it.

use strata_architecture::check::{CrateCycles, crate_cycles};
use strata_architecture::workspace::CrateRoot;

/// Writes `files` (paths relative to `src/`) and checks the crate rooted at `src/lib.rs`.
fn check(files: &[(&str, &str)]) -> CrateCycles {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (path, text) in files {
        let path = dir.path().join("src").join(path);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("create dirs");
        std::fs::write(&path, text).expect("write a source file");
    }
    crate_cycles(&CrateRoot {
        name: "demo".to_string(),
        root_file: dir.path().join("src/lib.rs"),
    })
}

/// The cycles as sorted module names.
fn cycles(checked: &CrateCycles) -> Vec<Vec<String>> {
    checked
        .cycles
        .iter()
        .map(|c| {
            let mut names: Vec<String> = c
                .modules
                .iter()
                .map(|&m| checked.graph.names[m].clone())
                .collect();
            names.sort();
            names
        })
        .collect()
}

fn edge(checked: &CrateCycles, from: &str, to: &str) -> Option<String> {
    let id = |name: &str| checked.graph.names.iter().position(|n| n == name);
    let (from, to) = (id(from)?, id(to)?);
    checked
        .graph
        .edges
        .get(&(from, to))
        .map(|e| format!("{}:{} names {}", e.file, e.line, e.item))
}

fn assert_clean(checked: &CrateCycles) {
    assert!(checked.report().is_empty(), "{}", checked.report());
}

#[test]
fn a_cycle_through_use_declarations() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "use crate::b::B;\npub struct A(pub B);\n"),
        (
            "b.rs",
            "use crate::a::{self, A};\npub struct B;\npub fn f(_: a::A) {}\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["a", "b"]]);
    let report = checked.report();
    assert!(report.contains("crate demo: 1 module cycle\n"), "{report}");
    assert!(report.contains("cycle 1: a -> b -> a"), "{report}");
    assert!(report.contains("a -> b: a.rs:1 names b::B"), "{report}");
    assert!(report.contains("b -> a: b.rs:1 names a::A"), "{report}");
}

#[test]
fn a_cycle_only_through_paths_in_function_bodies() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        ("a.rs", "pub fn fa() -> u32 {\n    crate::b::fb()\n}\n"),
        (
            "b.rs",
            "pub fn fb() -> u32 {\n    1\n}\npub fn g() {\n    super::a::fa();\n}\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["a", "b"]]);
    assert_eq!(
        edge(&checked, "a", "b").as_deref(),
        Some("a.rs:2 names b::fb")
    );
    assert_eq!(
        edge(&checked, "b", "a").as_deref(),
        Some("b.rs:5 names a::fa")
    );
}

#[test]
fn a_cycle_through_macro_arguments() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub const ONE: u32 = 1;\npub fn fa() -> String {\n    format!(\"{}\", crate::b::fb())\n}\n",
        ),
        // `vec![x; n]` is not a list of expressions: its tokens are scanned instead.
        (
            "b.rs",
            "pub fn fb() -> u32 {\n    vec![crate::a::ONE; 2][0]\n}\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["a", "b"]]);
    assert_eq!(
        edge(&checked, "a", "b").as_deref(),
        Some("a.rs:3 names b::fb")
    );
    assert_eq!(
        edge(&checked, "b", "a").as_deref(),
        Some("b.rs:2 names a::ONE")
    );
}

#[test]
fn re_exports_resolve_to_the_defining_module() {
    let checked = check(&[
        ("lib.rs", "mod order;\nmod result;\n"),
        (
            "result/mod.rs",
            "mod model;\nmod tree;\npub use model::StrataResult;\n",
        ),
        ("result/model.rs", "pub struct StrataResult;\n"),
        (
            "result/tree.rs",
            "use super::StrataResult;\npub fn f(_: &StrataResult) {}\n",
        ),
        (
            "order.rs",
            "use crate::result::StrataResult;\npub fn g(_: StrataResult) {}\n",
        ),
    ]);
    assert_clean(&checked);
    assert!(edge(&checked, "result::tree", "result").is_none());
    assert_eq!(
        edge(&checked, "result::tree", "result::model").as_deref(),
        Some("result/tree.rs:1 names result::model::StrataResult")
    );
    assert!(edge(&checked, "order", "result").is_none());
    assert!(edge(&checked, "order", "result::model").is_some());
    assert!(edge(&checked, "result", "result::model").is_some());
}

#[test]
fn a_module_path_resolves_through_to_the_item() {
    let checked = check(&[
        ("lib.rs", "mod render;\nmod report;\n"),
        ("render/mod.rs", "pub mod text;\n"),
        (
            "render/text.rs",
            "pub fn f() {}\npub fn g() {\n    crate::report::h();\n}\n",
        ),
        (
            "report.rs",
            "use crate::render;\npub fn h() {}\npub fn k() {\n    render::text::f();\n}\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["render::text", "report"]]);
    assert!(edge(&checked, "report", "render").is_none());
}

#[test]
fn a_parent_and_child_naming_each_other_are_a_cycle() {
    let checked = check(&[
        ("lib.rs", "mod tui;\n"),
        (
            "tui/mod.rs",
            "mod app;\npub use app::App;\npub struct Source;\n",
        ),
        (
            "tui/app.rs",
            "use super::Source;\npub struct App(Source);\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["tui", "tui::app"]]);
}

#[test]
fn an_inline_test_module_is_not_its_parent() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "pub fn fa() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::b::fb;\n    #[test]\n    fn t() {\n        fa();\n        fb();\n    }\n}\n",
        ),
        ("b.rs", "pub fn fb() {\n    crate::a::fa()\n}\n"),
    ]);
    assert_clean(&checked);
    assert!(edge(&checked, "a", "b").is_none());
    assert_eq!(
        edge(&checked, "a::tests", "b").as_deref(),
        Some("a.rs:5 names b::fb")
    );
    assert!(edge(&checked, "a::tests", "a").is_some());
}

#[test]
fn path_attributes_are_followed() {
    let checked = check(&[
        ("lib.rs", "#[path = \"odd/place.rs\"]\nmod a;\nmod b;\n"),
        // A #[path] file owns its directory like a mod.rs: `inner` is odd/inner.rs.
        (
            "odd/place.rs",
            "mod inner;\npub fn fa() {\n    inner::deep()\n}\n",
        ),
        ("odd/inner.rs", "pub fn deep() {\n    crate::b::fb()\n}\n"),
        ("b.rs", "pub fn fb() {\n    crate::a::fa()\n}\n"),
    ]);
    assert!(checked.problems.is_empty(), "{}", checked.report());
    assert_eq!(cycles(&checked), vec![vec!["a", "a::inner", "b"]]);
}

#[test]
fn children_of_a_non_mod_rs_file_live_in_its_directory() {
    let checked = check(&[
        ("lib.rs", "mod tui;\n"),
        ("tui.rs", "mod app;\n"),
        ("tui/app.rs", "mod find;\npub struct App;\n"),
        ("tui/app/find.rs", "use super::App;\npub fn f(_: App) {}\n"),
    ]);
    assert_clean(&checked);
    assert!(edge(&checked, "tui::app::find", "tui::app").is_some());
}

#[test]
fn glob_imports_resolve_each_name_used() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use crate::b::*;\npub fn fa() -> Bee {\n    make()\n}\n",
        ),
        (
            "b.rs",
            "pub struct Bee;\npub fn make() -> Bee {\n    Bee\n}\npub fn other() {\n    crate::a::fa();\n}\n",
        ),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["a", "b"]]);
    assert_eq!(
        edge(&checked, "a", "b").as_deref(),
        Some("a.rs:2 names b::Bee")
    );
}

#[test]
fn a_glob_whose_names_are_unused_or_shadowed_is_no_edge() {
    let checked = check(&[
        ("lib.rs", "mod a;\nmod b;\n"),
        (
            "a.rs",
            "use crate::b::*;\npub fn fa() -> u32 {\n    let make = 1;\n    make\n}\n",
        ),
        (
            "b.rs",
            "pub fn make() {}\npub fn other() {\n    crate::a::fa();\n}\n",
        ),
    ]);
    assert_clean(&checked);
    assert!(edge(&checked, "a", "b").is_none());
}

#[test]
fn a_public_glob_re_exports_every_item_it_reaches() {
    let checked = check(&[
        ("lib.rs", "mod view;\n"),
        (
            "view/mod.rs",
            "mod parts;\npub use parts::*;\npub struct Frame;\n",
        ),
        ("view/parts.rs", "pub struct Part(pub super::Frame);\n"),
    ]);
    assert_eq!(cycles(&checked), vec![vec!["view", "view::parts"]]);
    assert_eq!(
        edge(&checked, "view", "view::parts").as_deref(),
        Some("view/mod.rs:2 names view::parts::Part")
    );
}

#[test]
fn enum_variants_and_exported_macros_resolve_to_their_owners() {
    let checked = check(&[
        (
            "lib.rs",
            "mod kinds;\nmod user;\n#[macro_export]\nmacro_rules! shout {\n    () => {};\n}\n",
        ),
        ("kinds.rs", "pub enum Kind {\n    One,\n    Two,\n}\n"),
        (
            "user.rs",
            "use crate::kinds::Kind::*;\npub fn f(k: crate::kinds::Kind) -> bool {\n    crate::shout!();\n    matches!(k, One)\n}\n",
        ),
    ]);
    assert_clean(&checked);
    assert_eq!(
        edge(&checked, "user", "kinds").as_deref(),
        Some("user.rs:2 names kinds::Kind")
    );
    assert_eq!(
        edge(&checked, "user", "crate").as_deref(),
        Some("user.rs:3 names crate::shout")
    );
}

#[test]
fn an_acyclic_crate_passes() {
    let checked = check(&[
        (
            "lib.rs",
            "pub mod model;\npub mod render;\npub mod cli;\npub use model::Tree;\n",
        ),
        (
            "model.rs",
            "pub struct Tree;\nimpl Tree {\n    pub fn new() -> Self {\n        Tree\n    }\n}\n",
        ),
        ("render/mod.rs", "mod text;\npub use text::render;\n"),
        (
            "render/text.rs",
            "use crate::model::Tree;\npub fn render(t: &Tree) -> String {\n    format!(\"{}\", size(t))\n}\nfn size(_: &Tree) -> usize {\n    0\n}\n",
        ),
        (
            "cli.rs",
            "use crate::render;\npub fn run() -> String {\n    render::render(&crate::Tree::new())\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    #[test]\n    fn runs() {\n        assert_eq!(run(), \"0\");\n    }\n}\n",
        ),
    ]);
    assert_clean(&checked);
    assert!(edge(&checked, "cli", "render::text").is_some());
    assert!(edge(&checked, "cli", "model").is_some());
}

#[test]
fn unreadable_files_are_reported_by_name_not_a_panic() {
    let checked = check(&[
        ("lib.rs", "mod broken;\nmod gone;\n"),
        ("broken.rs", "pub fn f( {\n"),
    ]);
    let report = checked.report();
    assert!(report.contains("broken.rs:1: does not parse"), "{report}");
    assert!(report.contains("`mod gone;` has no file"), "{report}");
}
