//! `strata view` as a user runs it: on the bundled example, in every format, and on bad
//! input (each must give one line naming the file and the problem, exit code 2, no panic).

use std::fs;
mod support;

use support::{parts, repo_root, strata};

fn example() -> String {
    repo_root()
        .join("docs/examples/ring-8.json")
        .display()
        .to_string()
}

#[test]
fn view_prints_the_three_ring_classes() {
    let (code, out, err) = parts(&strata(&["view", &example()]));
    assert_eq!(code, 0, "stderr: {err}");
    assert!(out.contains("3 equivalence classes"), "{out}");
    for label in ["1:[1]", "1:[2]", "6:[0,3-7]", "8:[0-7]"] {
        assert!(out.contains(label), "missing {label} in\n{out}");
    }
    assert!(out.contains("MPI_Barrier") && out.contains("MPI_Waitall") && out.contains("sleep"));
    // Cut below MPI by default: no progress-engine frames.
    assert!(!out.contains("opal_progress"), "{out}");
    assert!(!out.contains('\x1b'), "NO_COLOR must turn colours off");
}

/// Every tree used to start with the same start-up frames (`_start`,
/// `__libc_start_main_impl`, ...) on every rank. They are hidden by default, said in the
/// header; `--full-stacks` shows them and what lies below the MPI calls.
#[test]
fn start_up_frames_are_hidden_unless_full_stacks_are_asked_for() {
    let (code, out, _) = parts(&strata(&["view", &example()]));
    assert_eq!(code, 0);
    assert!(
        out.lines().next().unwrap().ends_with("start-up hidden"),
        "{out}"
    );
    assert_eq!(out.lines().nth(1), Some("8:[0-7]  main"), "{out}");
    assert!(!out.contains("_start"), "{out}");
    let (code, out, _) = parts(&strata(&["view", &example(), "--full-stacks"]));
    assert_eq!(code, 0);
    assert_eq!(out.lines().nth(1), Some("8:[0-7]  _start"), "{out}");
    assert!(out.contains("opal_progress"), "below MPI too:\n{out}");
    assert!(
        !out.lines().next().unwrap().contains("start-up hidden"),
        "{out}"
    );
}

#[test]
fn view_switches_granularity_and_cut_without_resampling() {
    let (code, out, _) = parts(&strata(&["view", &example(), "-g", "line", "--no-cut"]));
    assert_eq!(code, 0);
    assert!(out.contains("main @ ring.c:38"), "{out}");
    assert!(out.contains("opal_progress"), "{out}");
    let (code, out, _) = parts(&strata(&[
        "view",
        &example(),
        "-g",
        "module",
        "--tree",
        "2d",
    ]));
    assert_eq!(code, 0);
    assert!(out.contains("libmpi.so.40.30.5+0x7c1e9"), "{out}");
    assert!(out.contains("2D tree"), "{out}");
}

#[test]
fn view_formats_parse() {
    let (code, out, _) = parts(&strata(&["view", &example(), "--format", "json"]));
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(v["format"], "strata-result");
    assert_eq!(v["classes"].as_array().unwrap().len(), 3);
    let (code, out, _) = parts(&strata(&["view", &example(), "--format", "dot"]));
    assert_eq!(code, 0);
    assert!(
        out.lines().nth(1) == Some("digraph G {") && out.trim_end().ends_with('}'),
        "{out}"
    );
    assert!(out.contains("bv=\"[0,3-7]\""), "{out}");
    let (code, out, _) = parts(&strata(&["view", &example(), "--format", "folded"]));
    assert_eq!(code, 0);
    assert!(out.lines().any(|l| l.ends_with("MPI_Barrier 6")), "{out}");
}

/// The ring's library names its frames `PMPI_Barrier @ pbarrier.c:74`: the views show the
/// call the program made, `MPI_Barrier`, at every granularity but module, without the
/// library's line; `--full-stacks` shows the frames as sampled.
#[test]
fn views_name_mpi_calls_by_their_c_name() {
    for granularity in ["function", "line"] {
        let (code, out, _) = parts(&strata(&["view", &example(), "-g", granularity]));
        assert_eq!(code, 0);
        assert!(
            out.contains("6:[0,3-7]  MPI_Barrier\n"),
            "{granularity}:\n{out}"
        );
        assert!(!out.contains("PMPI_"), "{granularity}:\n{out}");
    }
    let (code, out, _) = parts(&strata(&[
        "view",
        &example(),
        "--full-stacks",
        "-g",
        "line",
    ]));
    assert_eq!(code, 0);
    assert!(out.contains("PMPI_Barrier @ pbarrier.c:74"), "{out}");
    assert!(!out.contains("  MPI_Barrier"), "{out}");
    // Cut or not, the call keeps its name; module granularity shows addresses.
    let (_, out, _) = parts(&strata(&["view", &example(), "--no-cut"]));
    assert!(
        out.contains("MPI_Barrier") && !out.contains("PMPI_"),
        "{out}"
    );
    let (_, out, _) = parts(&strata(&[
        "view",
        &example(),
        "-g",
        "module",
        "--no-verdict",
    ]));
    assert!(
        out.contains("libmpi.so.40.30.5+0x7c1e9") && !out.contains("MPI_Barrier"),
        "{out}"
    );
}

#[test]
fn view_writes_all_result_files() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let (code, _, err) = parts(&strata(&[
        "view",
        &example(),
        "-o",
        out_dir.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{err}");
    support::assert_result_files(&out_dir);
    // The written result reads back.
    let (code, out, _) = parts(&strata(&[
        "view",
        out_dir.join("result.json").to_str().unwrap(),
    ]));
    assert_eq!(code, 0);
    assert!(out.contains("6:[0,3-7]"));
}

/// Runs `strata view` on `content` and returns (code, stderr).
fn view_bad(content: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    fs::write(&p, content).unwrap();
    let (code, _, err) = parts(&strata(&["view", p.to_str().unwrap()]));
    (code, err, p.display().to_string())
}

fn assert_one_line_error(code: i32, err: &str, path: &str, needle: &str) {
    assert_eq!(code, 2, "exit code for bad input; stderr: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.contains(path), "names the file: {err}");
    assert!(err.contains(needle), "says '{needle}': {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn bad_files_give_one_line_and_exit_2() {
    let good = fs::read_to_string(example()).unwrap();
    let (c, e, p) = view_bad("{ not json");
    assert_one_line_error(c, &e, &p, "not valid JSON");
    let (c, e, p) = view_bad("{\"hello\": 1}");
    assert_one_line_error(c, &e, &p, "not a strata result file");
    let (c, e, p) = view_bad(&good[..good.len() / 2]);
    assert_one_line_error(c, &e, &p, "truncated");
    let (c, e, p) = view_bad(&good.replacen("\"format_version\": 1", "\"format_version\": 7", 1));
    assert_one_line_error(c, &e, &p, "upgrade strata");
    let (c, e, p) = view_bad(&good.replacen("\"strata-result\"", "\"something-else\"", 1));
    assert_one_line_error(c, &e, &p, "something-else");
    let (c, e, p) = view_bad(&good.replacen("\"ranks\": \"0-7\"", "\"ranks\": \"0-99\"", 1));
    assert_one_line_error(c, &e, &p, "exceed");
    let (c, e, p) = view_bad(&good.replacen("\"job_size\": 8", "\"job_size\": 4000000000", 1));
    assert_one_line_error(c, &e, &p, "exceeds strata's limit");
    let (c, e, p) = view_bad(&good.replacen("\"ranks\": \"0-7\"", "\"ranks\": \"zero\"", 1));
    assert_one_line_error(c, &e, &p, "not a rank number");
    let (c, e, p) = view_bad(&good.replacen("\"parent\": 0", "\"parent\": 5", 1));
    assert_one_line_error(c, &e, &p, "parent");
    let missing = "/nonexistent/strata/result.json";
    let (code, _, err) = parts(&strata(&["view", missing]));
    assert_one_line_error(code, &err, missing, "cannot read");
}

#[test]
fn bad_usage_exits_2_and_help_lists_exit_codes() {
    let (code, _, err) = parts(&strata(&["view", &example(), "--granularity", "bogus"]));
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = parts(&strata(&["--help"]));
    assert_eq!(code, 0);
    assert!(
        out.contains("Exit codes:") && out.contains("4  partial result"),
        "{out}"
    );
}

#[test]
fn partial_results_exit_4_and_name_the_missing_ranks() {
    let good = fs::read_to_string(example()).unwrap();
    let partial = good.replacen(
        "\"job_size\": 8,",
        "\"job_size\": 8,\n  \"missing\": [{\"ranks\": \"4-7\", \"reason\": \"daemon on node2 unreachable\"}],",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("partial.json");
    fs::write(&p, partial).unwrap();
    let (code, out, err) = parts(&strata(&["view", p.to_str().unwrap()]));
    assert_eq!(code, 4, "{err}");
    assert!(
        out.contains("missing ranks [4-7]: daemon on node2 unreachable"),
        "{out}"
    );
}

/// A result file whose trees contradict themselves used to be shown with exit 0 (a child
/// with ranks its parent lacks, "0 of 8 ranks"): refused with exit 2 and one line naming the
/// first inconsistency.
#[test]
fn inconsistent_result_files_are_refused_naming_the_first_inconsistency() {
    let good: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(example()).unwrap()).expect("the example parses");
    let with_node = |tree: &str, id: usize, ranks: &str, count: u64| {
        let mut v = good.clone();
        let node = &mut v["trees"][tree]["nodes"][id];
        node["ranks"] = ranks.into();
        node["count"] = count.into();
        v.to_string()
    };
    // Node 5 of the 3D tree (PMPI_Barrier, ranks 0,3-7) claims every rank; its parent
    // (main) has only 0,3-7.
    let (c, e, p) = view_bad(&with_node("3d", 5, "0-7", 8));
    assert_one_line_error(
        c,
        &e,
        &p,
        "3d tree node 5: ranks 1-2 are not in its parent's",
    );
    // A frame no rank took.
    let (c, e, p) = view_bad(&with_node("2d", 5, "", 0));
    assert_one_line_error(c, &e, &p, "2d tree node 5: no rank took this frame");
    // No rank at all in the trees, and none said to be missing: "0 of 8 ranks".
    let mut empty = good.clone();
    for tree in ["2d", "3d"] {
        let nodes = empty["trees"][tree]["nodes"].as_array_mut().unwrap();
        nodes.truncate(1);
        nodes[0]["ranks"] = "".into();
        nodes[0]["count"] = 0.into();
    }
    empty["classes"] = serde_json::json!([]);
    let (c, e, p) = view_bad(&empty.to_string());
    assert_one_line_error(c, &e, &p, "hold none of the job's 8 ranks");
}

/// A tree as deep as a runaway recursion (30,000 frames on one rank's path) is printed in
/// every format, and its classes shown: no algorithm on the tree recurses per level (the
/// text tree once did, and overflowed the stack).
#[test]
fn a_tree_thirty_thousand_frames_deep_renders_in_every_format() {
    const DEPTH: usize = 30_000;
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(example()).unwrap()).expect("the example parses");
    // Every rank on one path: main > r1 > r2 > ... > r30000.
    let mut nodes = vec![serde_json::json!(
        {"id": 0, "parent": null, "frame": null, "ranks": "0-7", "count": 8}
    )];
    for i in 1..=DEPTH {
        let name = if i == 1 {
            "main".to_string()
        } else {
            format!("r{i}")
        };
        nodes.push(serde_json::json!({
            "id": i, "parent": i - 1, "frame": {"function": name}, "ranks": "0-7", "count": 8
        }));
    }
    for tree in ["2d", "3d"] {
        v["trees"][tree] = serde_json::json!({"thread_space": 0, "nodes": nodes.clone()});
    }
    v["classes"] = serde_json::json!([]);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("deep.json");
    fs::write(&p, v.to_string()).unwrap();
    let path = p.to_str().unwrap();
    for format in ["text", "dot", "json", "folded"] {
        let (code, out, err) = parts(&strata(&["view", path, "-f", format]));
        assert_eq!(code, 0, "-f {format}: {err}");
        let last = format!("r{DEPTH}");
        assert!(
            out.contains(&last),
            "-f {format}: the deepest frame is missing"
        );
    }
    let (code, out, err) = parts(&strata(&["view", path, "--all", "--tree", "2d"]));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("1 equivalence class"), "{out:.300}");
}
