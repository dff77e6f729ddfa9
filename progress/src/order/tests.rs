//! Tests of the progress order: a C solver written to a temporary folder, results built
//! with chosen stacks, and the labels, relations and notes the walk gives them.

use super::*;
use crate::point::Relation;
use crate::source::SourceIndex;
use strata_filters::{CodeFrame, Frame, PrefixTree, RankSet, ViewOptions, view};
use strata_proto::overlay::VariableRequest;
use strata_result::annotation::{Label, Tag};
use strata_result::variables::{ReadClass, Reading, VariableReads};
use strata_result::{RankInfo, ResultMeta, StrataResult, ThreadInfo};

/// A solver in C; the tests point frames at its lines.
const SOLVER: &str = r#"#include <mpi.h>
static double get_norm(int rank) {
    double local = 1.0, global;
    if (rank == 3) stall();
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

static void finish(int rank) {
    if (rank == 3) {
        stall();
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

void solve(int rank) {
    setup(rank);
    for (int it = 0; it < 10; it++) {
        relax(rank);
        get_norm(rank);
    }
    finish(rank);
    report(rank);
}

void run(void) {
    int it = 0;
    while (1) {
        before(it);
        it++;
        after(it);
    }
}
"#;

fn code(function: &str, file: &str, line: u32) -> Frame {
    Frame::Code(CodeFrame {
        function: Some(function.to_string()),
        file: (!file.is_empty()).then(|| file.to_string()),
        line: (line > 0).then_some(line),
        ..CodeFrame::default()
    })
}

struct Fixture {
    dir: tempfile::TempDir,
    file: String,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("solver.c");
    std::fs::write(&path, SOLVER).unwrap();
    let file = path.to_str().unwrap().to_string();
    Fixture { dir, file }
}

/// A result whose 2D tree has `paths[i]` for the ranks `paths[i].0`.
fn result(paths: &[(&[u32], Vec<Frame>)]) -> StrataResult {
    let size = paths
        .iter()
        .flat_map(|p| p.0.iter())
        .max()
        .map_or(0, |m| m + 1);
    let mut tree: PrefixTree<RankSet> = PrefixTree::new(size, 0);
    for (ranks, path) in paths {
        for &r in *ranks {
            tree.add_trace(path, r, None);
        }
    }
    StrataResult {
        meta: ResultMeta {
            job_size: size,
            ranks: (0..size)
                .map(|rank| RankInfo {
                    rank,
                    ..RankInfo::default()
                })
                .collect(),
            ..ResultMeta::default()
        },
        tree_3d: tree.clone(),
        tree_2d: tree,
    }
}

fn path(f: &str, tail: &[Frame]) -> Vec<Frame> {
    let mut p = vec![Frame::function("main"), code("solve", f, 23)];
    p.extend_from_slice(tail);
    p
}

fn labels(o: &ProgressOrder) -> Vec<(String, Vec<u32>)> {
    o.classes
        .iter()
        .map(|c| (c.label.to_string(), c.tasks.iter().collect()))
        .collect()
}

fn analyze_in(fx: &Fixture, r: &StrataResult) -> ProgressOrder {
    let _ = &fx.dir;
    analyze(r, &mut SourceIndex::new(Vec::new()))
}

#[test]
fn a_stall_earlier_in_straight_line_code_is_least_progressed() {
    let fx = fixture();
    let f = fx.file.as_str();
    // In get_norm, rank 3 stalls at line 4 and the others wait at line 5.
    let r = result(&[
        (
            &[3],
            path(f, &[code("get_norm", f, 4), Frame::function("stall")]),
        ),
        (
            &[0, 1, 2, 4],
            path(
                f,
                &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
            ),
        ),
    ]);
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2, 4])]
    );
    assert!(o.notes.is_empty(), "{:?}", o.notes);
    assert_eq!(o.label_of(3).unwrap().to_string(), "T1");
    assert_eq!(o.label_of(9), None);
    let bp = &o.branch_points[0];
    assert!(bp.relations[0][1].is_before());
    assert!(!bp.relations[1][0].is_before());
    // Labels carry over to any view: the function view's nodes.
    let fv = view(&r.tree_2d, ViewOptions::default());
    let nl = o.node_labels(&fv);
    let by_name = |n: &str| {
        fv.node_ids()
            .find(|&id| fv.node_frame(id).is_some_and(|f| f.name() == n))
            .map(|id| nl[id.index()].clone().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(by_name("stall"), "T1");
    assert_eq!(by_name("MPI_Allreduce"), "T2");
    // Above the branching point the tasks are not ordered against each other.
    assert_eq!(by_name("get_norm"), "T");
}

#[test]
fn different_arms_are_incomparable_and_never_ordered() {
    let fx = fixture();
    let f = fx.file.as_str();
    let r = result(&[
        (
            &[3],
            path(f, &[code("finish", f, 11), Frame::function("stall")]),
        ),
        (
            &[0, 1, 2],
            path(f, &[code("finish", f, 13), Frame::function("MPI_Barrier")]),
        ),
    ]);
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1a".into(), vec![0, 1, 2]), ("T1b".into(), vec![3])]
    );
    let bp = &o.branch_points[0];
    assert!(matches!(
        bp.relations[0][1],
        Evidence::Source(Relation::Incomparable { line: 10, .. })
    ));
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("incomparable"), "{text}");
    assert!(text.contains("not decided by the code alone"), "{text}");
}

#[test]
fn lines_of_one_loop_need_the_iteration_count() {
    let fx = fixture();
    let f = fx.file.as_str();
    let r = result(&[
        (
            &[3],
            vec![
                Frame::function("main"),
                code("solve", f, 20),
                Frame::function("relax"),
            ],
        ),
        (
            &[0, 1, 2],
            vec![
                Frame::function("main"),
                code("solve", f, 21),
                code("get_norm", f, 5),
                Frame::function("MPI_Allreduce"),
            ],
        ),
    ]);
    let o = analyze_in(&fx, &r);
    let bp = &o.branch_points[0];
    let Evidence::Source(Relation::NeedsIteration {
        line,
        if_same_iteration,
        ..
    }) = &bp.relations[0][1]
    else {
        panic!("{:?}", bp.relations[0][1]);
    };
    assert_eq!(*line, 19);
    // Ranks 0-2 (line 21) come after rank 3 (line 20) in the same iteration.
    assert_eq!(**if_same_iteration, Relation::After);
    assert_eq!(o.classes[0].label.0[0].level, 1);
    assert_eq!(o.classes[1].label.0[0].level, 1);
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("(needs loop variable)"), "{text}");
    assert!(text.contains("for loop at solver.c:19"), "{text}");
}

#[test]
fn levels_follow_the_longest_chain_and_labels_nest() {
    let fx = fixture();
    let f = fx.file.as_str();
    // In solve: setup (18) < the loop (19-22) < finish (23) < report (24); inside the
    // loop branch, get_norm's two lines part the ranks again.
    let r = result(&[
        (
            &[5],
            vec![
                Frame::function("main"),
                code("solve", f, 24),
                Frame::function("report"),
            ],
        ),
        (
            &[4],
            vec![
                Frame::function("main"),
                code("solve", f, 18),
                Frame::function("setup"),
            ],
        ),
        (
            &[3],
            vec![
                Frame::function("main"),
                code("solve", f, 21),
                code("get_norm", f, 4),
                Frame::function("stall"),
            ],
        ),
        (
            &[0, 1, 2],
            vec![
                Frame::function("main"),
                code("solve", f, 21),
                code("get_norm", f, 5),
                Frame::function("MPI_Allreduce"),
            ],
        ),
    ]);
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![
            ("T1".into(), vec![4]),
            ("T2.1".into(), vec![3]),
            ("T2.2".into(), vec![0, 1, 2]),
            ("T3".into(), vec![5]),
        ]
    );
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("Least progressed: T1 (1 rank [4])"), "{text}");
}

#[test]
fn different_callees_of_one_line_and_special_frames_are_unordered() {
    let fx = fixture();
    let f = fx.file.as_str();
    let r = result(&[
        (&[0], path(f, &[Frame::function("alpha")])),
        (&[1], path(f, &[Frame::function("beta")])),
        (
            &[2],
            path(f, &[Frame::Special(strata_filters::Special::TaskExited)]),
        ),
    ]);
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![
            ("T1a".into(), vec![0]),
            ("T1b".into(), vec![1]),
            ("T1c".into(), vec![2])
        ]
    );
    let bp = &o.branch_points[0];
    let Evidence::Unordered(why) = &bp.relations[0][1] else {
        panic!()
    };
    assert!(why.contains("different functions"), "{why}");
    let Evidence::Unordered(why) = &bp.relations[0][2] else {
        panic!()
    };
    assert!(why.contains("not a code location"), "{why}");
}

#[test]
fn an_unreadable_source_falls_back_to_line_numbers_and_says_so() {
    let f = "/nonexistent/strata-test/solver.c";
    let r = result(&[
        (
            &[1],
            path(f, &[code("finish", f, 13), Frame::function("MPI_Barrier")]),
        ),
        (
            &[0],
            path(f, &[code("finish", f, 11), Frame::function("stall")]),
        ),
    ]);
    let o = analyze(&r, &mut SourceIndex::new(Vec::new()));
    // By line number only (the branch structure is not seen: that is the fallback).
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![0]), ("T2".into(), vec![1])]
    );
    assert!(matches!(
        o.branch_points[0].relations[0][1],
        Evidence::LineNumbers(std::cmp::Ordering::Less)
    ));
    assert_eq!(o.notes.len(), 1, "{:?}", o.notes);
    assert!(o.notes[0].contains("/nonexistent/strata-test/solver.c"));
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("by line number only"), "{text}");
}

#[test]
fn with_threads_only_the_main_thread_places_a_rank() {
    let fx = fixture();
    let f = fx.file.as_str();
    let mut tree: PrefixTree<RankSet> = PrefixTree::new(2, 4);
    // Rank 0: main thread (id 0) stalls; its helper (id 1) waits in MPI.
    tree.add_trace(
        &path(f, &[code("get_norm", f, 4), Frame::function("stall")]),
        0,
        Some(0),
    );
    tree.add_trace(
        &path(
            f,
            &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
        ),
        0,
        Some(1),
    );
    // Rank 1: main thread (id 2) in MPI, helper (id 3) too.
    tree.add_trace(
        &path(
            f,
            &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
        ),
        1,
        Some(2),
    );
    tree.add_trace(
        &path(
            f,
            &[code("get_norm", f, 5), Frame::function("MPI_Allreduce")],
        ),
        1,
        Some(3),
    );
    let thread = |id, rank, tid| ThreadInfo {
        id,
        rank,
        tid,
        name: None,
        runtime: false,
    };
    let r = StrataResult {
        meta: ResultMeta {
            job_size: 2,
            ranks: vec![
                RankInfo {
                    rank: 0,
                    pid: Some(100),
                    ..RankInfo::default()
                },
                RankInfo {
                    rank: 1,
                    pid: Some(200),
                    ..RankInfo::default()
                },
            ],
            threads: vec![
                thread(0, 0, 100),
                thread(1, 0, 101),
                thread(2, 1, 200),
                thread(3, 1, 201),
            ],
            ..ResultMeta::default()
        },
        tree_3d: tree.clone(),
        tree_2d: tree,
    };
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![0]), ("T2".into(), vec![1])]
    );
}

fn reads(function: &str, variable: &str, values: &[(i64, &str)]) -> VariableReads {
    VariableReads {
        for_verdict: false,
        function: function.into(),
        variable: variable.into(),
        classes: values
            .iter()
            .map(|&(v, ranks)| ReadClass {
                reading: Reading::Integer(v),
                ranks: ranks.into(),
                at: None,
            })
            .collect(),
    }
}

/// Every rank at the same line of the loop (one stack), rank 3 one iteration behind.
#[test]
fn one_stack_is_split_by_the_loop_counter_and_the_lowest_is_behind() {
    let fx = fixture();
    let f = fx.file.as_str();
    let stack = vec![
        Frame::function("main"),
        code("solve", f, 21),
        code("get_norm", f, 5),
        Frame::function("MPI_Allreduce"),
    ];
    let mut r = result(&[(&[0, 1, 2, 3, 4], stack)]);
    // Without values: one class, nothing to order.
    let o = analyze_in(&fx, &r);
    assert_eq!(labels(&o), vec![("T".into(), vec![0, 1, 2, 3, 4])]);
    assert_eq!(
        loop_requests(&r, &mut SourceIndex::new(Vec::new())),
        vec![VariableRequest {
            function: "solve".into(),
            variable: "it".into()
        }]
    );
    r.meta.variables = vec![reads("solve", "it", &[(3, "3"), (4, "0-2,4")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2, 4])]
    );
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("Least progressed: T1 (1 rank [3])"), "{text}");
    assert!(
        text.contains(
            "T1 before T2: an earlier iteration: it = 3 and 4 in the for loop at solver.c:19"
        ),
        "{text}"
    );
}

/// Ranks at two lines of one loop body: the iteration decides first, the line second.
#[test]
fn iteration_values_order_lines_of_one_loop() {
    let fx = fixture();
    let f = fx.file.as_str();
    let stall = vec![
        Frame::function("main"),
        code("solve", f, 20),
        Frame::function("relax"),
    ];
    let wait = vec![
        Frame::function("main"),
        code("solve", f, 21),
        code("get_norm", f, 5),
        Frame::function("MPI_Allreduce"),
    ];
    let mut r = result(&[(&[3], stall), (&[0, 1, 2], wait)]);
    // Rank 3 is at line 20 but one iteration ahead: the others are behind.
    r.meta.variables = vec![reads("solve", "it", &[(5, "3"), (4, "0-2")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![0, 1, 2]), ("T2".into(), vec![3])]
    );
    // The same iteration: line 20 comes first.
    r.meta.variables = vec![reads("solve", "it", &[(4, "0-3")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![3]), ("T2".into(), vec![0, 1, 2])]
    );
    let text = super::super::report::text(&o, 100);
    assert!(
            text.contains("in the same iteration (it = 4 (for loop at solver.c:19)): line 20 comes before line 21 in solve"),
            "{text}"
        );
    // A group whose ranks are in different iterations splits: T1.x inside one child.
    r.meta.variables = vec![reads("solve", "it", &[(4, "0-1,3"), (5, "2")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![
            ("T1".into(), vec![3]),
            ("T2".into(), vec![0, 1]),
            ("T3".into(), vec![2])
        ]
    );
}

/// `it++` in the middle of the body: a rank past it reads the next iteration's value.
#[test]
fn a_rank_past_the_update_is_counted_from_its_iterations_start() {
    let fx = fixture();
    let f = fx.file.as_str();
    let at = |line| {
        vec![
            Frame::function("main"),
            code("run", f, line),
            Frame::function("work"),
        ]
    };
    // Rank 0 before the update with it = 5 (iteration 5); rank 1 after it with it = 5
    // (iteration 4): rank 1 is behind although its line comes later.
    let mut r = result(&[(&[0], at(30)), (&[1], at(32))]);
    r.meta.variables = vec![reads("run", "it", &[(5, "0-1")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![1]), ("T2".into(), vec![0])]
    );
    let text = super::super::report::text(&o, 100);
    assert!(
        text.contains("it = 4 and 5 in the while loop at solver.c:29 (as each iteration began"),
        "{text}"
    );
    // it = 6 past the update is iteration 5, the same as rank 0's: the line decides.
    r.meta.variables = vec![reads("run", "it", &[(5, "0"), (6, "1")])];
    let o = analyze_in(&fx, &r);
    assert_eq!(
        labels(&o),
        vec![("T1".into(), vec![0]), ("T2".into(), vec![1])]
    );
}

#[test]
fn too_many_groups_are_left_unordered_with_a_note() {
    let names: Vec<String> = (0..=MAX_GROUPS).map(|i| format!("f{i}")).collect();
    let ranks: Vec<[u32; 1]> = (0..=MAX_GROUPS as u32).map(|r| [r]).collect();
    let paths: Vec<(&[u32], Vec<Frame>)> = ranks
        .iter()
        .zip(&names)
        .map(|(r, n)| (&r[..], vec![Frame::function("main"), Frame::function(n)]))
        .collect();
    let o = analyze(&result(&paths), &mut SourceIndex::new(Vec::new()));
    assert_eq!(o.classes.len(), MAX_GROUPS + 1);
    assert!(o.classes.iter().all(|c| c.label.0[0].level == 1));
    assert!(
        o.notes.iter().any(|n| n.contains("not compared pairwise")),
        "{:?}",
        o.notes
    );
    let text = super::super::report::text(&o, 100);
    assert!(text.contains("too many to compare pairwise"), "{text}");
}

#[test]
fn tags_and_labels_print_and_sort_least_progressed_first() {
    let t = |level, tie| Tag { level, tie };
    let a = Label(vec![t(1, 0)]);
    let b = Label(vec![t(1, 0), t(2, 0)]);
    let c = Label(vec![t(2, 1)]);
    let d = Label(vec![t(2, 2)]);
    assert_eq!(
        [&a, &b, &c, &d].map(|l| l.to_string()),
        ["T1", "T1.2", "T2a", "T2b"]
    );
    assert!(a < b && b < c && c < d);
    assert_eq!(b.common_prefix(&a), a);
    assert_eq!(c.common_prefix(&d).to_string(), "T");
    assert_eq!(t(3, 27).to_string(), "3_27");
}
