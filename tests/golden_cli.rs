//! Golden tests of what a user reads: every subcommand's `--help` and every rendering of the
//! bundled saved result, byte for byte. They pin the command line and the outputs while the
//! code underneath is reorganised: a change here is a change users see, and must be
//! deliberate (review with `cargo insta review`, or INSTA_UPDATE=always then `git diff`).
//! No root, MPI or Slurm needed: part of the fast tier.

mod support;

use support::{parts, repo_root, strata};

fn example() -> String {
    repo_root()
        .join("docs/examples/ring-8.json")
        .display()
        .to_string()
}

/// stdout of a run that must succeed.
fn stdout_of(args: &[&str]) -> String {
    let (code, out, err) = parts(&strata(args));
    assert_eq!(code, 0, "strata {args:?} failed: {err}");
    out
}

#[test]
fn help_of_every_subcommand() {
    // The hidden roles are included: their options are the contract between a front end and
    // the daemons and commnodes it starts.
    for sub in [
        None,
        Some("view"),
        Some("attach"),
        Some("demo"),
        Some("watch"),
        Some("dump"),
        Some("run"),
        Some("bench"),
        Some("daemon"),
        Some("commnode"),
        Some("demo-rank"),
        Some("bench-daemons"),
    ] {
        let args: Vec<&str> = sub.into_iter().chain(["--help"]).collect();
        let name = format!("help_{}", sub.unwrap_or("strata").replace('-', "_"));
        insta::assert_snapshot!(name, stdout_of(&args));
    }
}

#[test]
fn view_renders_the_example_in_every_format() {
    let ex = example();
    for (name, extra) in [
        ("view_text", &[][..]),
        (
            "view_text_line_2d_uncut",
            &["-g", "line", "--tree", "2d", "--no-cut"][..],
        ),
        ("view_text_module", &["-g", "module"][..]),
        ("view_text_progress", &["--progress"][..]),
        ("view_dot", &["--format", "dot"][..]),
        (
            "view_dot_2d_progress",
            &["--format", "dot", "--tree", "2d", "--progress"][..],
        ),
        ("view_json", &["--format", "json"][..]),
        ("view_folded", &["--format", "folded"][..]),
        (
            "view_progress_json",
            &["--progress", "--format", "json"][..],
        ),
    ] {
        let mut args = vec!["view", ex.as_str(), "--print"];
        args.extend_from_slice(extra);
        insta::assert_snapshot!(name, stdout_of(&args));
    }
}

#[test]
fn view_writes_the_same_result_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r");
    let ex = example();
    let (code, _, err) = parts(&strata(&[
        "view",
        &ex,
        "--print",
        "--progress",
        "-o",
        out.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{err}");
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    insta::assert_snapshot!("result_dir_files", names.join("\n"));
    for name in &names {
        let text = std::fs::read_to_string(out.join(name)).unwrap();
        insta::assert_snapshot!(
            format!("result_dir_{}", name.replace(['.', '-'], "_")),
            text
        );
    }
}
