//! The progress order (`--progress`, STAT's temporal order analysis) end to end: real Open
//! MPI jobs of `mpi_progress.c` that hang three ways, built at -O0 and -O2, attached through
//! the tree; then the saved result read again by `strata view --progress`, with the source
//! missing and found through `--source-dir`, and in the terminal UI.
//!
//! The lines the tests expect are read from the fixture by its `PROGRESS:` comments, so the
//! fixture can be edited without renumbering the tests.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;
#[path = "support/tmux.rs"]
mod tmux;

use mpi::MpiJob;
use std::path::{Path, PathBuf};
use std::time::Duration;
use support::{parts, strata};

/// The rank that stalls (not 0 or 1, so that rank order and progress order differ).
const STALL: usize = 3;
const RANKS: usize = 8;

/// The line of the fixture whose comment is `PROGRESS: <what>` (`LOV: <what>` in
/// mpi_lov.c).
fn line_of(source: &Path, what: &str) -> u32 {
    let text = std::fs::read_to_string(source).unwrap();
    let tag = format!(": {what} */");
    let i = text
        .lines()
        .position(|l| l.contains(&tag))
        .unwrap_or_else(|| panic!("no '{tag}' in {}", source.display()));
    i as u32 + 1
}

/// The first line at or above `line` that starts with `prefix` (trimmed): the loop or the
/// conditional a test expects to be named.
fn line_above(source: &Path, line: u32, prefix: &str) -> u32 {
    let text = std::fs::read_to_string(source).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    (1..=line)
        .rev()
        .find(|&l| lines[l as usize - 1].trim_start().starts_with(prefix))
        .unwrap_or_else(|| panic!("no '{prefix}' above line {line}"))
}

fn fixture() -> PathBuf {
    target::fixtures_dir().join("mpi_progress.c")
}

fn build(opt: &str) -> PathBuf {
    target::compile_with(
        "mpicc",
        "mpi_progress.c",
        &format!("mpi_progress_{opt}"),
        &[opt, "-g"],
    )
}

/// Starts the job and attaches with `--progress`, writing the result files into `dir`.
fn attach(exe: &Path, mode: &str, dir: &Path) -> String {
    let job = MpiJob::start_with_args(exe, RANKS, &[mode, &STALL.to_string()]);
    // The stalled rank stops at once; the others reach their waits within a moment.
    std::thread::sleep(Duration::from_millis(1500));
    let out = strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "-n",
        "2",
        "--progress",
        "-o",
        dir.to_str().unwrap(),
    ]);
    let (code, stdout, stderr) = parts(&out);
    assert_eq!(code, 0, "attach failed:\n{stdout}\n{stderr}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
    stdout
}

/// The exit code the terminal's shell wrote into `dir/code`, once written: the shell creates
/// the file before `echo` fills it, so an empty file is not an answer yet.
fn exit_code(dir: &Path) -> String {
    let read = || std::fs::read_to_string(dir.join("code")).unwrap_or_default();
    target::wait_for(Duration::from_secs(30), || read().ends_with('\n'));
    read().trim().to_string()
}

/// The progress section of a text rendering.
fn section(out: &str) -> String {
    let start = out
        .find("Progress order")
        .unwrap_or_else(|| panic!("no progress section:\n{out}"));
    out[start..].to_string()
}

/// The class line of the progress section that lists `ranks`.
fn class_line<'a>(section: &'a str, ranks: &str) -> &'a str {
    section
        .lines()
        .take_while(|l| !l.starts_with("Why"))
        .find(|l| l.contains(&format!(":[{ranks}]")))
        .unwrap_or_else(|| panic!("no class [{ranks}]:\n{section}"))
}

const OTHERS: &str = "0-2,4-7";

fn straight_line_stall_is_least_progressed(opt: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = attach(&build(opt), "straight", dir.path());
    let s = section(&out);
    let (stall, wait) = (
        line_of(&fixture(), "straight stall"),
        line_of(&fixture(), "straight wait"),
    );
    assert!(class_line(&s, "3").trim_start().starts_with("T1 "), "{s}");
    assert!(
        class_line(&s, "3").contains(&format!("get_norm @ mpi_progress.c:{stall}")),
        "{s}"
    );
    assert!(
        class_line(&s, OTHERS).trim_start().starts_with("T2 "),
        "{s}"
    );
    assert!(s.contains("Least progressed: T1 (1 rank [3])"), "{s}");
    assert!(
        s.contains(&format!(
            "T1 before T2: line {stall} comes before line {wait} in get_norm (mpi_progress.c)"
        )),
        "{s}"
    );
    assert!(
        !s.contains("by line number only"),
        "the source was read:\n{s}"
    );
    // Labels in the tree (function granularity) and in the DOT files.
    assert!(out.contains("stall_here@[T1]"), "{out}");
    assert!(out.contains("@[T2]"), "{out}");
    let dot = std::fs::read_to_string(dir.path().join("tree-2d.dot")).unwrap();
    assert!(
        dot.contains("stall_here@[T1]") && dot.contains("progress=\"T1\""),
        "{dot}"
    );
    // The JSON says the same.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("progress.json")).unwrap())
            .unwrap();
    assert_eq!(json["classes"][0]["label"], "T1");
    assert_eq!(json["classes"][0]["ranks"], "3");
    assert_eq!(json["branch_points"][0]["pairs"][0]["order"], "before");
    // And carries the verdict, the one result.json has.
    let result = dir.path().join("result.json");
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&result).unwrap()).unwrap();
    assert!(json["verdict"]["kind"].is_string(), "{json}");
    assert_eq!(json["verdict"], saved["verdict"]);
    // `strata view --progress` on the saved result finds the same order.
    let (code, view, err) = parts(&strata(&["view", result.to_str().unwrap(), "--progress"]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(section(&view), s);
}

#[test]
fn straight_line_stall_at_o0() {
    straight_line_stall_is_least_progressed("-O0");
}

#[test]
fn straight_line_stall_at_o2() {
    straight_line_stall_is_least_progressed("-O2");
}

fn branches_are_incomparable(opt: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = attach(&build(opt), "branch", dir.path());
    let s = section(&out);
    let stall = line_of(&fixture(), "branch stall");
    let cond = line_above(&fixture(), stall, "if (");
    // Both at level 1, told apart by letters (in rank order), neither behind the other.
    assert!(
        class_line(&s, OTHERS).trim_start().starts_with("T1a "),
        "{s}"
    );
    assert!(class_line(&s, "3").trim_start().starts_with("T1b "), "{s}");
    assert!(class_line(&s, "3").contains("(incomparable)"), "{s}");
    assert!(class_line(&s, OTHERS).contains("(incomparable)"), "{s}");
    assert!(
        s.contains(&format!(
            "T1a and T1b: incomparable: different branches of the if at mpi_progress.c:{cond}"
        )),
        "{s}"
    );
    assert!(
        s.contains("Least progressed: not decided by the code alone"),
        "{s}"
    );
}

#[test]
fn branches_are_incomparable_at_o0() {
    branches_are_incomparable("-O0");
}

#[test]
fn branches_are_incomparable_at_o2() {
    branches_are_incomparable("-O2");
}

/// Rank 3 stalls in relax() (line "loop stall") while the others wait further down the
/// same loop body ("loop wait"). Position alone cannot order them: the loop's counter `it`
/// decides. `--progress` reads it (the same iteration: rank 3 is behind); without it (the
/// saved result with its variables removed) the order is reported as needing it.
fn a_loop_needs_the_iteration_count(opt: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = attach(&build(opt), "loop", dir.path());
    let s = section(&out);
    let (stall, wait) = (
        line_of(&fixture(), "loop stall"),
        line_of(&fixture(), "loop wait"),
    );
    let header = line_above(&fixture(), stall, "for (");
    if s.contains("optimized out") {
        // -O2 may keep no location for `it` at these pcs: then it stays undecided.
        assert!(class_line(&s, "3").contains("(needs loop variable)"), "{s}");
        eprintln!("{opt}: it was optimized out, and the output says so");
    } else {
        assert!(class_line(&s, "3").trim_start().starts_with("T1 "), "{s}");
        assert!(
            class_line(&s, OTHERS).trim_start().starts_with("T2 "),
            "{s}"
        );
        assert!(
            s.contains(&format!(
                "T1 before T2: in the same iteration (it = 3 (for loop at mpi_progress.c:{header})): line {stall} comes before line {wait} in solve"
            )),
            "{s}"
        );
        assert!(s.contains("Least progressed: T1 (1 rank [3])"), "{s}");
    }
    // Without the values, the order needs the loop variable, and says so.
    let saved = dir.path().join("result.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let removed = json.as_object_mut().unwrap().remove("variables");
    assert!(
        removed.is_some(),
        "the result keeps the values it was ordered by"
    );
    let stripped = dir.path().join("stripped.json");
    std::fs::write(&stripped, json.to_string()).unwrap();
    let (code, view, err) = parts(&strata(&["view", stripped.to_str().unwrap(), "--progress"]));
    assert_eq!(code, 0, "{err}");
    let s = section(&view);
    assert!(class_line(&s, "3").trim_start().starts_with("T1b "), "{s}");
    assert!(class_line(&s, "3").contains("(needs loop variable)"), "{s}");
    assert!(
        class_line(&s, OTHERS).contains("(needs loop variable)"),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "needs a loop variable: both are in the for loop at mpi_progress.c:{header}"
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "in the same iteration line {stall} comes before line {wait} in solve"
        )),
        "{s}"
    );
    assert!(s.contains("was not read"), "{s}");
    assert!(
        s.contains("Least progressed: not decided by the code alone"),
        "{s}"
    );
}

#[test]
fn a_loop_needs_the_iteration_count_at_o0() {
    a_loop_needs_the_iteration_count("-O0");
}

#[test]
fn a_loop_needs_the_iteration_count_at_o2() {
    a_loop_needs_the_iteration_count("-O2");
}

/// A source that moved: the report says which file it could not read and falls back to
/// line numbers; `--source-dir` finds it again. The result is saved once and read back.
#[test]
fn a_missing_source_is_reported_and_found_with_source_dir() {
    let dir = tempfile::tempdir().unwrap();
    let src_dir = dir.path().join("src");
    std::fs::create_dir(&src_dir).unwrap();
    let src = src_dir.join("mpi_progress.c");
    std::fs::copy(fixture(), &src).unwrap();
    let exe = dir.path().join("mpi_progress_moved");
    let status = std::process::Command::new("mpicc")
        .args(["-O0", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(status.success());
    let res = dir.path().join("res");
    attach(&exe, "straight", &res);
    // The source moves away.
    let moved = dir.path().join("elsewhere");
    std::fs::create_dir(&moved).unwrap();
    std::fs::rename(&src, moved.join("mpi_progress.c")).unwrap();
    let result = res.join("result.json");
    let (code, out, err) = parts(&strata(&["view", result.to_str().unwrap(), "--progress"]));
    assert_eq!(code, 0, "{err}");
    let s = section(&out);
    assert!(s.contains(&format!("cannot read {}", src.display())), "{s}");
    assert!(s.contains("--source-dir"), "{s}");
    assert!(s.contains("by line number only"), "{s}");
    assert!(s.contains("Least progressed: T1 (1 rank [3])"), "{s}");
    let (code, out, err) = parts(&strata(&[
        "view",
        result.to_str().unwrap(),
        "--progress",
        "--source-dir",
        moved.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{err}");
    let s = section(&out);
    assert!(!s.contains("by line number only"), "{s}");
    assert!(!s.contains("cannot read"), "{s}");
    assert!(s.contains("Least progressed: T1 (1 rank [3])"), "{s}");
}

/// The terminal UI on a saved result: `p` labels the frames, puts the least progressed
/// branch first and walks to it; `P` shows the evidence.
#[test]
fn the_terminal_ui_orders_by_progress_and_walks_to_the_least_progressed() {
    let dir = tempfile::tempdir().unwrap();
    let res = dir.path().join("res");
    attach(&build("-O0"), "straight", &res);
    let command = format!(
        "NO_COLOR=1 {} view {} 2> {dir}/err; echo $? > {dir}/code; sleep 600",
        support::strata_bin().display(),
        res.join("result.json").display(),
        dir = dir.path().display()
    );
    let t = tmux::Tmux::start(&command, 120, 30, dir.path());
    t.wait_text("MPI_Allreduce", Duration::from_secs(30));
    t.keys(&["p"]);
    let screen = t.wait_text("Least progressed: T1", Duration::from_secs(20));
    assert!(screen.contains("stall_here@[T1]"), "{screen}");
    // Least progressed first: the T1 branch is drawn above the T2 branch.
    let t1 = screen.find("stall_here@[T1]").unwrap();
    let t2 = screen.find("MPI_Allreduce@[T2]").expect("T2 labelled");
    assert!(t1 < t2, "{screen}");
    t.keys(&["P"]);
    let screen = t.wait_text("T1 before T2", Duration::from_secs(20));
    assert!(screen.contains("progress order"), "{screen}");
    // Escape and q apart: sent together they read as Alt-q.
    t.keys(&["Escape"]);
    t.wait_for("the panel closed", Duration::from_secs(20), |s| {
        !s.contains("T1 before T2")
    });
    t.keys(&["q"]);
    assert_eq!(exit_code(dir.path()), "0");
}

// ----- Loop-order variables: mpi_lov.c, a token ring that loses a token -----

fn lov_fixture() -> PathBuf {
    target::fixtures_dir().join("mpi_lov.c")
}

fn build_lov(opt: &str) -> PathBuf {
    target::compile_with(
        "mpicc",
        "mpi_lov.c",
        &format!("mpi_lov_{opt}"),
        &[opt, "-g"],
    )
}

/// Runs `mpi_lov MODE 2` on 8 ranks and attaches with `extra` arguments; the ranks are
/// checked free afterwards. Returns stdout.
fn attach_lov(opt: &str, mode: &str, extra: &[&str]) -> String {
    let job = MpiJob::start_with_args(&build_lov(opt), RANKS, &[mode, "2"]);
    std::thread::sleep(Duration::from_millis(1500));
    let pid = job.mpirun.id().to_string();
    let mut args = vec!["attach", "--launcher-pid", &pid, "-n", "2", "--no-files"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = parts(&strata(&args));
    assert_eq!(code, 0, "attach failed:\n{stdout}\n{stderr}");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
    stdout
}

/// Rank 2 loses token 3: ranks 0 and 3-7 wait for token 3, ranks 1-2 for token 4, all in
/// the same MPI_Recv. Only `it` tells them apart; at -O2 it may be optimized away, and
/// then the output must say so instead of guessing.
fn same_stack_ranks_are_ordered_by_their_counter(opt: &str) {
    let out = attach_lov(opt, "flat", &["--progress"]);
    let s = section(&out);
    let header = line_of(&lov_fixture(), "flat loop");
    if s.contains("optimized out") {
        assert!(s.contains("flat:it = <optimized out>"), "{s}");
        assert!(s.contains("Least progressed: not decided"), "{s}");
        eprintln!("{opt}: it was optimized out, and the output says so");
        return;
    }
    assert!(
        class_line(&s, "0,3-7").trim_start().starts_with("T1 "),
        "{s}"
    );
    assert!(class_line(&s, "1-2").trim_start().starts_with("T2 "), "{s}");
    assert!(s.contains("Least progressed: T1 (6 ranks [0,3-7])"), "{s}");
    assert!(
        s.contains(&format!(
            "T1 before T2: an earlier iteration: it = 3 and 4 in the for loop at mpi_lov.c:{header}, and it counts up"
        )),
        "{s}"
    );
    // The values are in the output too, merged into rank sets.
    assert!(out.contains("  flat:it\n"), "{out}");
}

#[test]
fn same_stack_ranks_are_ordered_by_their_counter_at_o0() {
    same_stack_ranks_are_ordered_by_their_counter("-O0");
}

#[test]
fn same_stack_ranks_are_ordered_by_their_counter_at_o2() {
    same_stack_ranks_are_ordered_by_their_counter("-O2");
}

/// The lost token is step 1, sub 3: the behind ranks are at (1, 3), the others at (2, 0).
/// Comparing the inner counter first would get it backwards.
#[test]
fn nested_loops_compare_the_outer_counter_first() {
    let out = attach_lov("-O0", "nested", &["--progress"]);
    let s = section(&out);
    let outer = line_of(&lov_fixture(), "outer loop");
    assert!(
        class_line(&s, "0,3-7").trim_start().starts_with("T1 "),
        "{s}"
    );
    assert!(class_line(&s, "1-2").trim_start().starts_with("T2 "), "{s}");
    assert!(
        s.contains(&format!(
            "an earlier iteration: step = 1 and 2 in the for loop at mpi_lov.c:{outer}"
        )),
        "{s}"
    );
}

/// A loop whose only counter is a double: no loop-order variable, said so, nothing guessed.
#[test]
fn a_loop_without_a_loop_order_variable_is_reported_honestly() {
    let out = attach_lov("-O0", "nolov", &["--progress"]);
    let s = section(&out);
    let header = line_of(&lov_fixture(), "nolov loop");
    assert!(
        s.contains(&format!(
            "no loop-order variable for the while loop at mpi_lov.c:{header}"
        )),
        "{s}"
    );
    assert!(s.contains("Least progressed: not decided"), "{s}");
}

/// `--var` reads any variable across the ranks, through a tree with commnodes, and says
/// why where it cannot.
#[test]
fn var_reads_a_variable_across_ranks_through_the_tree() {
    let out = attach_lov(
        "-O0",
        "flat",
        &[
            "--daemons",
            "4",
            "--fanout",
            "2",
            "--var",
            "flat:it",
            "--var",
            "pass:tag",
            "--var",
            "flat:nosuch",
            "--var",
            "nosuchfunction:x",
        ],
    );
    let vars = &out[out.find("Variables").unwrap_or_else(|| panic!("{out}"))..];
    let block = |name: &str| {
        let start = vars
            .find(&format!("  {name}\n"))
            .unwrap_or_else(|| panic!("{vars}"));
        vars[start..]
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| l.trim().to_string())
            .collect::<Vec<_>>()
    };
    let it = block("flat:it");
    assert!(
        it.iter()
            .any(|l| l.starts_with("3 ") && l.contains("6:[0,3-7]")),
        "{it:?}"
    );
    assert!(
        it.iter()
            .any(|l| l.starts_with("4 ") && l.contains("2:[1-2]")),
        "{it:?}"
    );
    // A parameter of the innermost application frame.
    let tag = block("pass:tag");
    assert!(
        tag.iter()
            .any(|l| l.starts_with("3 ") && l.contains("6:[0,3-7]")),
        "{tag:?}"
    );
    let nosuch = block("flat:nosuch");
    assert!(
        nosuch.len() == 1 && nosuch[0].contains("no variable"),
        "{nosuch:?}"
    );
    // The reason names where each rank is, which differs between ranks caught at different
    // points of MPI's progress loop: one line per distinct reason, each saying "no frame".
    let nofn = block("nosuchfunction:x");
    assert!(
        !nofn.is_empty()
            && nofn
                .iter()
                .all(|l| l.contains("no frame of nosuchfunction")),
        "{nofn:?}"
    );
}

#[test]
fn a_bad_var_is_one_line_and_exit_2() {
    let (code, _, err) = parts(&strata(&["attach", "--pids", "1", "--var", "nocolon"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("FUNCTION:VARIABLE"), "{err}");
}

/// `strata attach -i` on the ring that lost a token: `p` reads the loop counters from the
/// live ranks and walks to the ranks that are behind; `v` reads a variable at a frame.
#[test]
fn the_live_ui_reads_loop_counters_for_the_progress_order() {
    let dir = tempfile::tempdir().unwrap();
    let job = MpiJob::start_with_args(&build_lov("-O0"), RANKS, &["flat", "2"]);
    std::thread::sleep(Duration::from_millis(1500));
    let command = format!(
        "NO_COLOR=1 {} attach --launcher-pid {} -i -n 1 --no-files 2> {dir}/err; echo $? > {dir}/code; sleep 600",
        support::strata_bin().display(),
        job.mpirun.id(),
        dir = dir.path().display()
    );
    let t = tmux::Tmux::start(&command, 120, 30, dir.path());
    t.wait_text("MPI_Recv", Duration::from_secs(60));
    t.keys(&["p"]);
    let screen = t.wait_text(
        "Least progressed: T1 (6 ranks [0,3-7])",
        Duration::from_secs(30),
    );
    assert!(screen.contains("attached"), "{screen}");
    t.keys(&["P"]);
    t.wait_text(
        "an earlier iteration: it = 3 and 4",
        Duration::from_secs(20),
    );
    t.keys(&["Escape"]);
    t.wait_for("the panel closed", Duration::from_secs(20), |s| {
        !s.contains("an earlier iteration")
    });
    // A variable read live in the selected node's ranks, its function named explicitly.
    t.keys(&["v"]);
    t.wait_text("read variable", Duration::from_secs(10));
    t.type_text("flat:it");
    t.keys(&["Enter"]);
    let screen = t.wait_text("flat:it (live)", Duration::from_secs(30));
    assert!(
        screen.contains("6:[0,3-7]") && screen.contains("2:[1-2]"),
        "{screen}"
    );
    t.keys(&["Escape"]);
    t.wait_for("the panel closed", Duration::from_secs(20), |s| {
        !s.contains("(live)")
    });
    t.keys(&["q"]);
    assert_eq!(exit_code(dir.path()), "0");
    for &pid in &job.ranks {
        target::assert_free(pid);
    }
}

/// A variable dead at the frame's pc: -O0 keeps it on the stack, -O2 keeps nothing, and the
/// output says "optimized out" rather than showing a stale or made-up value.
#[test]
fn an_optimized_out_variable_is_said_to_be() {
    for (opt, expect_values) in [("-O0", true), ("-O2", false)] {
        let out = attach_lov(opt, "flat", &["--var", "pass:noise"]);
        let vars = &out[out
            .find("  pass:noise\n")
            .unwrap_or_else(|| panic!("{out}"))..];
        let rows: Vec<&str> = vars
            .lines()
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .collect();
        if expect_values {
            // getpid() % 7 of each rank: integers, never "optimized out".
            assert!(
                rows.iter()
                    .all(|r| r.trim().chars().next().is_some_and(|c| c.is_ascii_digit())),
                "{opt}: {rows:?}"
            );
        } else {
            assert_eq!(rows.len(), 1, "{opt}: {rows:?}");
            assert!(
                rows[0].contains("<optimized out>") && rows[0].contains("8:[0-7]"),
                "{opt}: {rows:?}"
            );
        }
    }
}

/// `--json` stays the result for scripts with `--progress`: the result JSON, holding the
/// loop counters the order was computed with.
#[test]
fn json_with_progress_is_the_result_with_its_loop_counters() {
    let out = attach_lov("-O0", "flat", &["--json", "--progress"]);
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["format"], "strata-result", "{out}");
    let vars = v["variables"].as_array().expect("variables");
    assert!(
        vars.iter()
            .any(|r| r["function"] == "flat" && r["variable"] == "it"),
        "{out}"
    );
}
