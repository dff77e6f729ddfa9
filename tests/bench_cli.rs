//! `strata bench` as a correctness test: emulated daemons answer the real protocol, real
//! commnodes (separate processes) merge over gRPC, the front end remaps; the result must
//! equal the trees built directly from the synthetic traces (`--check`), for block and
//! cyclic rank placement, noise, and trees of one, two and three levels.

mod support;

use support::{parts, strata};

fn bench(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["bench", "--check", "--emulators", "2"];
    all.extend_from_slice(args);
    let (code, out, err) = parts(&strata(&all));
    assert_eq!(code, 0, "{args:?}:\n{err}");
    assert!(err.contains("check passed"), "{err}");
    serde_json::from_str(&out).expect("the measurements as JSON")
}

#[test]
fn merged_trees_equal_the_direct_ones_through_every_tree_shape() {
    // Two levels: 16 daemons under 4 commnodes, block placement.
    let v = bench(&[
        "--daemons",
        "16",
        "--tasks-per-daemon",
        "8",
        "--fanout",
        "4",
    ]);
    assert_eq!(v["tasks"], 128);
    assert_eq!(v["topology"], serde_json::json!([1, 4, 16]));
    // Every node reported its cost, and the commnodes received what the daemons sent.
    let levels = v["levels"].as_array().unwrap();
    assert_eq!(levels[0]["reported"], 4);
    assert_eq!(levels[1]["reported"], 16);
    let sent = levels[1]["bytes_out_total"].as_u64().unwrap();
    let received = levels[0]["bytes_in_total"].as_u64().unwrap();
    assert!(sent > 0 && received >= sent, "{levels:?}");

    // Three levels, cyclic placement (rank sets are strided), 5% rank-specific leaves.
    let v = bench(&[
        "--daemons",
        "27",
        "--tasks-per-daemon",
        "5",
        "--depth",
        "3",
        "--placement",
        "cyclic",
        "--noise",
        "0.05",
        "--samples",
        "4",
    ]);
    assert_eq!(v["topology"], serde_json::json!([1, 3, 9, 27]));
    assert!(
        v["classes"].as_u64().unwrap() > 3,
        "noise makes more classes: {v}"
    );

    // No commnodes: the front end merges the daemons itself.
    let v = bench(&["--daemons", "5", "--tasks-per-daemon", "3", "--depth", "1"]);
    assert_eq!(v["topology"], serde_json::json!([1, 5]));
}

#[test]
fn dense_bit_vectors_merge_to_the_same_trees_and_grow_with_the_job() {
    // The pre-208K-paper baseline: job-wide bit vectors of global ranks on every edge,
    // or-ed together by the commnodes. Same trees, cyclic placement, three levels, noise.
    let run = |daemons: &'static str, dense: bool| {
        let mut args = vec![
            "--daemons",
            daemons,
            "--tasks-per-daemon",
            "32",
            "--depth",
            "3",
            "--placement",
            "cyclic",
            "--noise",
            "0.02",
        ];
        if dense {
            args.push("--dense");
        }
        let v = bench(&args);
        assert_eq!(v["task_sets"], if dense { "dense" } else { "runs" });
        // What one daemon sends.
        let levels = v["levels"].as_array().unwrap();
        levels.last().unwrap()["bytes_out_max"].as_u64().unwrap()
    };
    // 16 times the tasks: a daemon's dense message grows with the job, its task runs do not.
    let (dense_small, dense_large) = (run("8", true), run("128", true));
    let (runs_small, runs_large) = (run("8", false), run("128", false));
    assert!(
        dense_large > 2 * dense_small,
        "dense: {dense_small} -> {dense_large} bytes"
    );
    assert!(
        runs_large * 10 < runs_small * 13,
        "runs: {runs_small} -> {runs_large} bytes"
    );
}
