//! Reading variables in real processes under real ptrace: `tests/fixtures/loop_vars.c`,
//! stopped at a known iteration of its loop (given on its command line) and blocked in
//! `pause()` several frames below the loop, read through [`read_variables`], the function
//! the daemon's `ReadVariables` runs. Every expected value is computed from the stop
//! iteration the test chose (the fixture's header says how); gdb agrees with them on the
//! same binaries. At -O2 a value is right or `optimized_out`, never wrong. After every
//! read the target runs freely and is not traced.

use std::path::{Path, PathBuf};

use strata_daemon::capture::{CaptureOptions, Capturer};
use strata_daemon::procfs::Pid;
use strata_daemon::sampler::Sampler;
use strata_daemon::symbols::{SymbolOptions, Symbolizer};
use strata_daemon::variables::{RankRead, VariableCache, read_captured, read_variables};
use strata_proto::overlay::{VariableRequest, VariableValue};

#[path = "../../tests/support/target.rs"]
mod target;

use target::{Target, assert_free, compile, fixtures_dir, thread_state};

/// The fixture built with `flags` (`-g` added), under a name that says how.
fn fixture(name: &str, flags: &[&str]) -> PathBuf {
    let mut all = vec!["-g"];
    all.extend_from_slice(flags);
    compile("loop_vars.c", name, &all)
}

fn o0() -> PathBuf {
    fixture("loop_vars_O0", &["-O0"])
}

fn o2() -> PathBuf {
    fixture("loop_vars_O2", &["-O2"])
}

/// -O2 with DWARF 4: location lists in `.debug_loc` instead of DWARF 5's `.debug_loclists`.
fn o2_dwarf4() -> PathBuf {
    fixture("loop_vars_O2_dwarf4", &["-O2", "-gdwarf-4"])
}

/// The fixture stopped at iteration `stop`, blocked in pause().
fn stopped_at(exe: &Path, stop: i64) -> Target {
    let t = Target::start(exe, &[&stop.to_string()]);
    t.wait_all_sleeping(1);
    t
}

fn sampler() -> Sampler {
    Sampler::new(Symbolizer::new(SymbolOptions::default()))
}

fn request(function: &str, variable: &str) -> VariableRequest {
    VariableRequest {
        function: function.into(),
        variable: variable.into(),
    }
}

/// Reads `wanted` (function, variable) in one process; the process must be free after.
fn read_one(
    exe_target: &Target,
    sampler: &mut Sampler,
    wanted: &[(&str, &str)],
) -> Vec<VariableValue> {
    let requests: Vec<VariableRequest> = wanted.iter().map(|(f, v)| request(f, v)).collect();
    let capturer = Capturer::new(1);
    let plans = VariableCache::default();
    let mut reads = read_variables(&capturer, sampler, &plans, &[exe_target.pid()], &requests);
    assert_free(exe_target.pid());
    assert_eq!(reads.len(), 1);
    let RankRead {
        values,
        stopped_for,
    } = reads.pop().unwrap();
    let values = values.unwrap_or_else(|e| panic!("the read failed: {e}"));
    assert_eq!(values.len(), requests.len(), "one value per request");
    let stopped = stopped_for.expect("the rank was stopped for the read");
    eprintln!("{} reads, rank stopped for {stopped:?}", requests.len());
    values
}

/// The line of the fixture's source holding `marker` (1-based).
fn line_of(marker: &str) -> u32 {
    let text = std::fs::read_to_string(fixtures_dir().join("loop_vars.c")).unwrap();
    let i = text.lines().position(|l| l.contains(marker));
    i.expect("marker in the fixture") as u32 + 1
}

/// What the fixture's locals hold when stopped at iteration `s` (see its header).
fn expected_locals(s: i64) -> Vec<((&'static str, &'static str), i64)> {
    let cell = 100 * s + 12;
    vec![
        (("solve", "it"), s),
        (("solve", "step"), 3 * (s + 1)),
        (("solve", "i"), 1),
        (("solve", "j"), 2),
        (("solve", "converged"), 0),
        (("solve", "stop"), s),
        (("visit", "cell"), cell),
        (("visit", "visits"), 2 * cell),
        (("exchange", "round"), s),
        (("exchange", "weight"), s * 10),
        (("exchange", "step"), 3 * (s + 1)),
        // The innermost of descend's three frames.
        (("descend", "depth"), 0),
        (("main", "requested"), s),
    ]
}

/// `0.5^(s + 1)` as the reader prints a double.
fn expected_norm(s: i64) -> String {
    0.5f64.powi(s as i32 + 1).to_string()
}

fn show(v: &VariableValue) -> String {
    format!(
        "{:?} integer {:?} optimized_out {} error {:?} in {:?} at {:?}:{}",
        v.text, v.integer, v.optimized_out, v.error, v.function, v.file, v.line
    )
}

#[test]
fn loop_counters_parameters_and_locals_read_right_at_o0() {
    let s = 7;
    let target = stopped_at(&o0(), s);
    let mut sampler = sampler();
    let expected = expected_locals(s);
    let mut wanted: Vec<(&str, &str)> = expected.iter().map(|(w, _)| *w).collect();
    wanted.push(("solve", "norm"));
    wanted.push(("exchange", "norm"));
    let values = read_one(&target, &mut sampler, &wanted);
    for ((w, want), v) in expected.iter().zip(&values) {
        assert_eq!(v.error, None, "{w:?}: {}", show(v));
        assert_eq!(v.integer, Some(*want), "{w:?}: {}", show(v));
        assert!(!v.optimized_out, "{w:?}");
        assert_eq!(v.function.as_deref(), Some(w.0), "{w:?}: {}", show(v));
        assert!(
            v.file
                .as_deref()
                .is_some_and(|f| f.ends_with("loop_vars.c")),
            "{w:?}: {}",
            show(v)
        );
    }
    let by = |f: &str, var: &str| &values[wanted.iter().position(|w| *w == (f, var)).unwrap()];
    // Text as a user reads it: a bool, a double.
    assert_eq!(by("solve", "converged").text.as_deref(), Some("false"));
    assert_eq!(
        by("solve", "norm").text.as_deref(),
        Some(&*expected_norm(s))
    );
    assert_eq!(
        by("solve", "norm").integer,
        None,
        "a double is not an integer"
    );
    assert_eq!(
        by("exchange", "norm").text.as_deref(),
        Some(&*expected_norm(s))
    );
    // Where each was read: the call line in each frame (the inlined visit's frame too).
    assert_eq!(by("solve", "it").line, line_of("visit(100 * it"));
    assert_eq!(by("visit", "cell").line, line_of("exchange(cell / 100"));
    assert_eq!(by("exchange", "round").line, line_of("descend(2);"));
    assert_eq!(by("main", "requested").line, line_of("solve(requested);"));
}

#[test]
fn globals_file_statics_and_every_scalar_type() {
    let s = 10;
    let target = stopped_at(&o0(), s);
    let mut sampler = sampler();
    let wanted = [
        ("solve", "phase"),
        ("main", "calls"),
        ("solve", "stage"),
        ("solve", "width"),
        ("solve", "delta"),
        ("solve", "big"),
        ("solve", "letter"),
        ("solve", "label"),
        ("solve", "grid"),
        // A global seen from a frame that is not the loop's (any frame of the unit).
        ("wait_here", "phase"),
        ("solve", "in_grid"),
        ("solve", "at_grid"),
    ];
    let v = read_one(&target, &mut sampler, &wanted);
    let int = |i: usize| (v[i].integer, v[i].text.as_deref());
    assert_eq!(
        int(0),
        (Some(s % 4), Some(&*(s % 4).to_string())),
        "{}",
        show(&v[0])
    );
    assert_eq!(
        int(1),
        (Some(s + 1), Some(&*(s + 1).to_string())),
        "{}",
        show(&v[1])
    );
    assert_eq!(int(2), (Some(1), Some("SOLVE")), "{}", show(&v[2]));
    assert_eq!(int(3), (Some(65000), Some("65000")), "{}", show(&v[3]));
    assert_eq!(int(4), (Some(-5), Some("-5")), "{}", show(&v[4]));
    // 2^64 - 16 does not fit an sint64: text only.
    assert_eq!(
        int(5),
        (None, Some("18446744073709551600")),
        "{}",
        show(&v[5])
    );
    assert_eq!(int(6), (Some(76), Some("76 'L'")), "{}", show(&v[6]));
    let pointer = v[7]
        .text
        .as_deref()
        .unwrap_or_else(|| panic!("{}", show(&v[7])));
    assert!(
        pointer.starts_with("0x")
            && u64::from_str_radix(&pointer[2..], 16).is_ok_and(|p| p > 0x1000),
        "{}",
        show(&v[7])
    );
    assert_eq!(v[8].text, None);
    assert_eq!(
        v[8].error.as_deref(),
        Some("type struct grid is not a scalar"),
        "{}",
        show(&v[8])
    );
    assert_eq!(
        int(9),
        (Some(s % 4), Some(&*(s % 4).to_string())),
        "{}",
        show(&v[9])
    );
    assert_eq!(v[9].function.as_deref(), Some("wait_here"));
    // A pointer into a global is named after it, as gdb does; a string literal has no
    // name and its pointer stays a bare address (above).
    for (i, name) in [(10, "<grid+0x4>"), (11, "<grid>")] {
        let text = v[i]
            .text
            .as_deref()
            .unwrap_or_else(|| panic!("{}", show(&v[i])));
        assert!(
            text.starts_with("0x") && text.ends_with(&format!(" {name}")),
            "{}",
            show(&v[i])
        );
    }
}

/// The same requests at -O2: each value is the right one or reported optimized out. The
/// globals live in memory whatever the optimization, so they must be read; and at least
/// the loop counter must be, or the test would pass with a reader that gives up.
fn right_or_optimized_out(exe: &Path, s: i64) {
    let target = stopped_at(exe, s);
    let mut sampler = sampler();
    let expected = expected_locals(s);
    let mut wanted: Vec<(&str, &str)> = expected.iter().map(|(w, _)| *w).collect();
    wanted.extend([
        ("solve", "norm"),
        ("exchange", "norm"),
        ("solve", "phase"),
        ("solve", "calls"),
    ]);
    let values = read_one(&target, &mut sampler, &wanted);
    let mut read = 0;
    for ((w, want), v) in expected.iter().zip(&values) {
        eprintln!("{w:?}: {}", show(v));
        if v.optimized_out {
            assert!(v.error.is_some(), "optimized out says why: {w:?}");
            assert_eq!(v.integer, None, "{w:?}");
            continue;
        }
        assert_eq!(v.integer, Some(*want), "{w:?} is wrong: {}", show(v));
        read += 1;
    }
    for norm in &values[expected.len()..expected.len() + 2] {
        assert!(
            norm.optimized_out || norm.text.as_deref() == Some(&*expected_norm(s)),
            "norm is wrong: {}",
            show(norm)
        );
    }
    let globals = &values[expected.len() + 2..];
    assert_eq!(globals[0].integer, Some(s % 4), "{}", show(&globals[0]));
    assert_eq!(globals[1].integer, Some(s + 1), "{}", show(&globals[1]));
    let counter = &values[0];
    assert_eq!(
        counter.integer,
        Some(s),
        "the loop counter: {}",
        show(counter)
    );
    eprintln!(
        "{read} of {} locals read, the rest optimized out",
        expected.len()
    );
}

/// The arguments of the call a frame is making, from DWARF call-site parameters: what the
/// verdict reads of an MPI call at -O2. `exchange` calls `descend(2)`; `solve` (through
/// the inlined `visit`) calls `exchange(S, 3 * (S + 1), norm)`.
#[test]
fn at_o2_the_arguments_of_a_call_in_progress_come_from_call_site_parameters() {
    let s = 9;
    let wanted = [
        ("exchange", "@arg1"),
        ("solve", "@arg1"),
        ("solve", "@arg2"),
        ("exchange", "@arg7"),
    ];
    for exe in [o2(), o2_dwarf4()] {
        let target = stopped_at(&exe, s);
        let v = read_one(&target, &mut sampler(), &wanted);
        for (w, v) in wanted.iter().zip(&v) {
            eprintln!("{w:?}: {}", show(v));
        }
        // A constant argument is always described.
        assert_eq!(v[0].integer, Some(2), "{}", show(&v[0]));
        for (i, want) in [(1, s), (2, 3 * (s + 1))] {
            assert!(
                v[i].integer == Some(want) || (v[i].optimized_out && v[i].error.is_some()),
                "{:?}: {}",
                wanted[i],
                show(&v[i])
            );
        }
        // Past the six argument registers: an ordinary (missing) variable name.
        assert!(
            v[3].error
                .as_deref()
                .is_some_and(|e| e.contains("no variable '@arg7'")),
            "{}",
            show(&v[3])
        );
    }
    // -O0 describes no call sites: unknown, and said so.
    let target = stopped_at(&o0(), s);
    let v = read_one(&target, &mut sampler(), &wanted[..1]);
    assert!(v[0].optimized_out, "{}", show(&v[0]));
    assert!(
        v[0].error
            .as_deref()
            .is_some_and(|e| e.contains("no DWARF call-site value")),
        "{}",
        show(&v[0])
    );
}

#[test]
fn at_o2_a_value_is_right_or_optimized_out() {
    right_or_optimized_out(&o2(), 12);
}

#[test]
fn at_o2_with_dwarf4_location_lists_a_value_is_right_or_optimized_out() {
    right_or_optimized_out(&o2_dwarf4(), 9);
}

#[test]
fn missing_frames_variables_and_debug_information_are_one_line_errors() {
    let target = stopped_at(&o0(), 3);
    let mut sampler = sampler();
    let values = read_one(
        &target,
        &mut sampler,
        &[
            ("get_norm", "it"),
            ("solve", "no_such_variable"),
            // `it` exists, but not in wait_here.
            ("wait_here", "it"),
            ("", "it"),
            ("solve", ""),
        ],
    );
    let error = |i: usize| {
        values[i]
            .error
            .clone()
            .unwrap_or_else(|| panic!("no error: {}", show(&values[i])))
    };
    let e = error(0);
    assert!(
        e.starts_with("no frame of get_norm on the main thread's stack (it is in "),
        "{e}"
    );
    assert!(e.contains("wait_here < descend"), "{e}");
    assert_eq!(values[0].function, None);
    let line = line_of("visit(100 * it");
    assert_eq!(
        error(1),
        format!(
            "no variable 'no_such_variable' in solve at loop_vars.c:{line} (parameters and locals in scope, globals of its unit)"
        )
    );
    assert_eq!(values[1].function.as_deref(), Some("solve"));
    assert!(
        error(2).starts_with("no variable 'it' in wait_here at loop_vars.c:"),
        "{}",
        error(2)
    );
    assert!(
        error(3).contains("needs a function and a variable"),
        "{}",
        error(3)
    );
    assert!(
        error(4).contains("needs a function and a variable"),
        "{}",
        error(4)
    );
    for v in &values {
        assert!(
            !v.optimized_out && v.text.is_none() && v.integer.is_none(),
            "{}",
            show(v)
        );
        assert!(
            !v.error.as_deref().unwrap_or("").contains('\n'),
            "{}",
            show(v)
        );
    }
    drop(target);

    // The same binary without its debug information: frames are named from the symbol
    // table, variables cannot be found.
    let stripped = target::strip(&o0(), "loop_vars_O0_stripped", &["--strip-debug"]);
    let target = stopped_at(&stripped, 3);
    let values = read_one(&target, &mut sampler, &[("solve", "it")]);
    let e = values[0].error.clone().unwrap_or_default();
    assert_eq!(
        e,
        format!(
            "no debug information for {} (build with -g)",
            stripped.display()
        ),
        "{}",
        show(&values[0])
    );
    assert_eq!(values[0].function.as_deref(), Some("solve"));
}

#[test]
fn several_ranks_are_read_in_order_and_share_the_plans() {
    let stops = [4, 11, 6];
    let targets: Vec<Target> = stops.iter().map(|&s| stopped_at(&o2(), s)).collect();
    let pids: Vec<Pid> = targets.iter().map(Target::pid).collect();
    let mut sampler = sampler();
    let capturer = Capturer::new(2);
    let requests = [request("solve", "it"), request("solve", "phase")];
    let plans = VariableCache::default();
    let reads = read_variables(&capturer, &mut sampler, &plans, &pids, &requests);
    for &pid in &pids {
        assert_free(pid);
    }
    assert_eq!(reads.len(), stops.len());
    for (read, &s) in reads.iter().zip(&stops) {
        let values = read.values.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(values[0].integer, Some(s), "{}", show(&values[0]));
        assert_eq!(values[1].integer, Some(s % 4), "{}", show(&values[1]));
        eprintln!("rank stopped at {s}: stopped for {:?}", read.stopped_for);
    }
    // All three are stopped at the same address of one binary: one plan per variable.
    assert_eq!(plans.len(), requests.len());
}

#[test]
fn a_held_rank_is_read_from_its_hold_and_stays_held() {
    let s = 5;
    let target = stopped_at(&o0(), s);
    let pid = target.pid();
    let mut sampler = sampler();
    let capturer = Capturer::new(1);
    let held = capturer
        .capture_and_hold(
            pid,
            &CaptureOptions::default(),
            std::time::Duration::from_secs(60),
        )
        .expect("hold");
    let plans = VariableCache::default();
    let values = read_captured(
        &mut sampler,
        &plans,
        held.capture(),
        &[request("solve", "it")],
    )
    .unwrap();
    assert_eq!(values[0].integer, Some(s), "{}", show(&values[0]));
    // Still held: stopped, traced.
    assert_eq!(thread_state(pid, pid), Some('t'));
    // A second stop of a held rank is refused, not stacked on the hold.
    let again = read_variables(
        &capturer,
        &mut sampler,
        &plans,
        &[pid],
        &[request("solve", "it")],
    );
    let e = again[0].values.as_ref().unwrap_err();
    assert!(e.to_string().contains("already held"), "{e}");
    held.release().expect("still held");
    assert_free(pid);
}

#[test]
fn a_rank_that_exited_says_so() {
    let mut target = stopped_at(&o0(), 2);
    let pid = target.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    target::wait_for(std::time::Duration::from_secs(10), || target.reaped());
    let capturer = Capturer::new(1);
    let reads = read_variables(
        &capturer,
        &mut sampler(),
        &VariableCache::default(),
        &[pid],
        &[request("solve", "it")],
    );
    assert_eq!(
        reads[0].values.as_ref().unwrap_err().to_string(),
        "rank exited"
    );
    assert_eq!(reads[0].stopped_for, None);
}

/// A held rank is read only while its hold lasts, and `keep` makes the hold outlast the
/// read: a read from a capture whose task runs again could mix a stale stack with live
/// memory.
#[test]
fn a_hold_is_kept_for_a_read_only_while_it_lasts() {
    use std::time::Duration;
    let target = stopped_at(&o0(), 1);
    let pid = target.pid();
    let capturer = Capturer::new(1);
    let options = CaptureOptions::default();

    let held = capturer
        .capture_and_hold(pid, &options, Duration::from_millis(200))
        .expect("hold");
    assert!(held.keep(Duration::from_secs(30)), "held now");
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(
        thread_state(pid, pid),
        Some('t'),
        "kept past its first deadline"
    );
    held.release().expect("still held when released");
    assert_free(pid);

    let held = capturer
        .capture_and_hold(pid, &options, Duration::from_millis(50))
        .expect("hold");
    target::wait_for(Duration::from_secs(10), || {
        thread_state(pid, pid) != Some('t')
    });
    assert!(
        !held.keep(Duration::from_secs(30)),
        "its deadline let it go"
    );
    assert!(held.release().is_err());
    assert_free(pid);
}

/// C++ at -O2 (`templates.cpp`): a member function of a class template found by its
/// qualified name without parameters and by its bare name, its parameter right or
/// optimized out; the inlined lambda that blocked, whose `const T &v` reads as the value
/// it refers to (the lambda blocks when `v == block_at`, 3); a class-typed local refused
/// by its type.
#[test]
fn cpp_member_functions_match_by_qualified_or_bare_name() {
    let exe = compile("templates.cpp", "templates-O2-g", &["-O2", "-g"]);
    let target = Target::start(&exe, &[]);
    target.wait_all_sleeping(1);
    let mut sampler = sampler();
    let v = read_one(
        &target,
        &mut sampler,
        &[
            ("Sorter<int>::run", "block_at"),
            ("run", "block_at"),
            ("main", "s"),
            ("operator()", "v"),
        ],
    );
    for value in &v[..2] {
        assert_eq!(
            value.function.as_deref(),
            Some("Sorter<int>::run(int)"),
            "{}",
            show(value)
        );
        assert!(
            value.optimized_out || value.integer == Some(3),
            "block_at is wrong: {}",
            show(value)
        );
    }
    assert_eq!(v[0], v[1]);
    let lambda = &v[3];
    assert!(
        lambda
            .function
            .as_deref()
            .is_some_and(|f| f.contains("{lambda(int const&)#2}::operator()")),
        "{}",
        show(lambda)
    );
    assert!(
        lambda.optimized_out || lambda.integer == Some(3),
        "v is wrong: {}",
        show(lambda)
    );
    assert_eq!(
        v[2].error.as_deref(),
        Some("type class Sorter<int> is not a scalar"),
        "{}",
        show(&v[2])
    );
}
