//! Snapshot tests of the renderings, and the JSON round trip.
//! Review changed snapshots with `cargo insta review` (or INSTA_UPDATE=always, then git diff).

use proptest::prelude::*;
use strata_filters::synth::{Placement, SynthJob, SynthParams};
use strata_filters::{
    ConcatMerge, Frame, Granularity, IndexMap, PrefixTree, RankSet, Special, ViewOptions, remap,
};
use strata_result::example::ring_result;
use strata_result::render::{dot, folded, text};
use strata_result::{
    JobInfo, MissingRanks, RankInfo, ResultMeta, SamplingInfo, StrataResult, ThreadInfo, TreeKind,
};

fn meta(job_size: u32, samples: u32, threads: bool) -> ResultMeta {
    ResultMeta {
        strata_version: "test".into(),
        created: "2026-11-22T00:00:00Z".into(),
        job: JobInfo {
            id: "4242".into(),
            resource_manager: "slurm".into(),
            step: Some("0".into()),
            launcher_pid: None,
        },
        sampling: SamplingInfo {
            samples,
            interval_ms: 100,
            threads,
            started: "2026-11-22T00:00:00Z".into(),
            finished: "2026-11-22T00:00:01Z".into(),
        },
        job_size,
        ranks: (0..job_size)
            .map(|r| RankInfo {
                rank: r,
                host: Some(format!("n{}", r / 4)),
                pid: Some(100 + r),
                ..Default::default()
            })
            .collect(),
        threads: Vec::new(),
        missing: Vec::new(),
        variables: Vec::new(),
    }
}

/// A synthetic job pushed through the real merge and remap.
fn synth_result(params: SynthParams) -> StrataResult {
    let job = SynthJob::new(params.clone());
    let t = params.threads_per_task;
    let build = |from: u32| {
        let mut m = ConcatMerge::new();
        let (mut ranks, mut threads) = (Vec::new(), Vec::new());
        for d in 0..params.daemons {
            m.push(&job.daemon_tree(d, from));
            ranks.extend(job.rank_map(d));
            threads.extend(job.daemon_threads(d));
        }
        let rmap = IndexMap::new(ranks, job.ranks(), "rank").unwrap();
        let tmap = IndexMap::new(threads, job.ranks() * t, "thread").unwrap();
        remap(&m.finish(), &rmap, (t > 0).then_some(&tmap)).unwrap()
    };
    let mut meta = meta(job.ranks(), params.samples, t > 0);
    if t > 0 {
        meta.threads = (0..job.ranks() * t)
            .map(|id| ThreadInfo {
                id,
                rank: id / t,
                tid: 1000 + id,
                name: Some("synth".into()),
                runtime: false,
            })
            .collect();
    }
    StrataResult {
        meta,
        tree_2d: build(params.samples - 1),
        tree_3d: build(0),
    }
}

/// Ranks that could not be sampled normally: special frames and a missing daemon.
fn troubled_result() -> StrataResult {
    let f = |n: &str| Frame::function(n);
    let mut t: PrefixTree<RankSet> = PrefixTree::new(8, 0);
    t.add_trace(
        &[
            f("_start"),
            f("main"),
            f("PMPI_Allreduce"),
            f("opal_progress"),
        ],
        0,
        None,
    );
    t.add_trace(&[f("_start"), f("main"), f("PMPI_Allreduce")], 1, None);
    t.add_trace(
        &[
            f("_start"),
            f("main"),
            f("compute<double, 3>"),
            Frame::Special(Special::UnwindError),
        ],
        2,
        None,
    );
    t.add_trace(&[Frame::Special(Special::TaskExited)], 3, None);
    t.add_trace(&[Frame::Special(Special::DaemonUnreachable)], 4, None);
    t.add_trace(&[Frame::Special(Special::DaemonUnreachable)], 5, None);
    let mut meta = meta(8, 1, false);
    meta.missing = vec![
        MissingRanks {
            ranks: "4-5".into(),
            reason: "daemon on n1 did not answer within 10 s".into(),
        },
        MissingRanks {
            ranks: "6-7".into(),
            reason: "not found on n1".into(),
        },
    ];
    meta.ranks[3].error = Some("process exited during the sample".into());
    StrataResult {
        meta,
        tree_2d: t.clone(),
        tree_3d: t,
    }
}

fn plain() -> text::TextOptions {
    text::TextOptions::default()
}

#[test]
fn ring_text() {
    let r = ring_result();
    insta::assert_snapshot!(
        "ring_text_default",
        text::render(&r, TreeKind::ThreeD, ViewOptions::default(), plain())
    );
    let line = ViewOptions {
        granularity: Granularity::Line,
        cut_below_mpi: false,
        hide_start_up: false,
        hide_interpreter: false,
        mpi_call_names: false,
        hide_runtime_threads: false,
    };
    insta::assert_snapshot!(
        "ring_text_line_uncut_2d",
        text::render(&r, TreeKind::TwoD, line, plain())
    );
    let coloured = text::render(
        &r,
        TreeKind::ThreeD,
        ViewOptions::default(),
        text::TextOptions {
            color: true,
            width: Some(80),
            ..Default::default()
        },
    );
    insta::assert_snapshot!("ring_text_colour", coloured.replace('\x1b', "<ESC>"));
}

#[test]
fn ring_dot_and_folded() {
    let r = ring_result();
    insta::assert_snapshot!(
        "ring_dot_3d",
        dot::render(&r, TreeKind::ThreeD, ViewOptions::default())
    );
    let flame = ViewOptions::full(Granularity::Function);
    insta::assert_snapshot!(
        "ring_folded_2d_uncut",
        folded::render(&r, TreeKind::TwoD, flame)
    );
}

#[test]
fn threads_noise_and_narrow_terminals() {
    let r = synth_result(SynthParams {
        daemons: 3,
        tasks_per_daemon: 4,
        classes: 3,
        depth: 6,
        noise: 0.1,
        samples: 2,
        threads_per_task: 2,
        placement: Placement::Cyclic,
        seed: 7,
    });
    insta::assert_snapshot!(
        "synth_threads_text",
        text::render(&r, TreeKind::ThreeD, ViewOptions::default(), plain())
    );
    insta::assert_snapshot!(
        "synth_threads_dot",
        dot::render(&r, TreeKind::TwoD, ViewOptions::default())
    );
    let many = synth_result(SynthParams {
        daemons: 16,
        tasks_per_daemon: 16,
        noise: 0.15,
        placement: Placement::Cyclic,
        ..SynthParams::default()
    });
    let narrow = text::render(
        &many,
        TreeKind::ThreeD,
        ViewOptions::default(),
        text::TextOptions::terminal(false, Some(60)),
    );
    insta::assert_snapshot!("synth_narrow_text", narrow);
}

#[test]
fn special_frames_and_missing_ranks() {
    let r = troubled_result();
    insta::assert_snapshot!(
        "troubled_text",
        text::render(&r, TreeKind::ThreeD, ViewOptions::default(), plain())
    );
    insta::assert_snapshot!(
        "troubled_dot",
        dot::render(&r, TreeKind::ThreeD, ViewOptions::default())
    );
    let back = StrataResult::from_json(&r.to_json(), "t.json").unwrap();
    assert_eq!(back.meta, r.meta);
    assert_eq!(back.tree_3d.canonical(), r.tree_3d.canonical());
}

/// Every node and edge line carries the attributes STAT's viewer indexes, in STAT's order.
#[test]
fn dot_has_stats_attributes() {
    for r in [ring_result(), troubled_result()] {
        for opts in [
            ViewOptions::default(),
            ViewOptions::full(Granularity::Module),
        ] {
            let d = dot::render(&r, TreeKind::ThreeD, opts);
            let mut nodes = 0;
            let mut edges = 0;
            for line in d.lines().map(str::trim) {
                let Some(first) = line.split_whitespace().next() else {
                    continue;
                };
                if !first.chars().all(|c| c.is_ascii_digit()) {
                    continue;
                }
                let keys: Vec<&str> = line
                    .split(", ")
                    .filter_map(|kv| {
                        kv.split_once('=')
                            .map(|(k, _)| k.rsplit(['[', ' ']).next().unwrap())
                    })
                    .collect();
                let want: &[&str] = if line.contains("->") {
                    edges += 1;
                    &[
                        "label", "bv", "count", "rep", "sum", "tbv", "tcount", "tbvsum",
                    ]
                } else {
                    nodes += 1;
                    if first == "0" {
                        assert!(
                            line.contains("label=\"/\"") && line.contains("function=\"/\""),
                            "{line}"
                        );
                    }
                    &[
                        "label",
                        "fillcolor",
                        "fontcolor",
                        "function",
                        "source",
                        "line",
                        "module",
                        "offset",
                        "vars",
                        "pc",
                    ]
                };
                assert_eq!(&keys[..want.len()], want, "{line}");
            }
            assert!(
                nodes > 3 && edges == nodes - 1,
                "{nodes} nodes, {edges} edges"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// JSON round-trips: the trees, the metadata, and the text of the file itself.
    #[test]
    fn json_round_trips(daemons in 1u32..5, tasks in 1u32..7, classes in 1u32..5, depth in 4u32..9,
                        noise in 0.0f64..0.3, samples in 1u32..4, threads in 0u32..3, cyclic in any::<bool>(),
                        seed in any::<u64>()) {
        let r = synth_result(SynthParams {
            daemons, tasks_per_daemon: tasks, classes, depth, noise, samples, threads_per_task: threads,
            placement: if cyclic { Placement::Cyclic } else { Placement::Block }, seed,
        });
        let json = r.to_json();
        let back = StrataResult::from_json(&json, "r.json").unwrap();
        prop_assert_eq!(&back.meta, &r.meta);
        prop_assert_eq!(back.tree_2d.canonical(), r.tree_2d.canonical());
        prop_assert_eq!(back.tree_3d.canonical(), r.tree_3d.canonical());
        prop_assert_eq!(back.tree_3d.thread_space(), r.tree_3d.thread_space());
        prop_assert_eq!(back.to_json(), json);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A damaged result file is refused or read, never a panic: random bytes overwritten,
    /// and the file cut at a random point.
    #[test]
    fn damaged_result_files_never_panic(edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
                                        cut in any::<prop::sample::Index>()) {
        let good = ring_result().to_json().into_bytes();
        let mut bad = good.clone();
        for (at, byte) in edits {
            let i = at.index(bad.len());
            bad[i] = byte;
        }
        let text = String::from_utf8_lossy(&bad);
        let _ = StrataResult::from_json(&text, "bad.json");
        // Cut before the closing brace: the file ends "}\n", and a cut between the two
        // leaves a whole document (this test failed now and then on exactly that cut).
        let cut_text = String::from_utf8_lossy(&good[..cut.index(good.len() - 2)]);
        prop_assert!(StrataResult::from_json(&cut_text, "cut.json").is_err());
    }
}
