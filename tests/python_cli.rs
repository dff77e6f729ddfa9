//! Python ranks: strata reads CPython's own frames (function, file, line) out of a running
//! interpreter, on every CPython the machine has, and puts them among the native frames.
//! Checked against the interpreter's headers (the layouts) and against py-spy (the frames
//! of every thread), on real processes, the interpreter itself or embedded in a C program;
//! `--progress` orders Python ranks by their place in the `.py` source.

#[path = "support/python.rs"]
mod python;
mod support;
#[path = "support/target.rs"]
mod target;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use python::{Python, interpreters, py_spy_dump, py_spy_frames, py_spy_locals};
use serde_json::Value;
use strata_daemon::python::layout::Layout;
use support::{parts, repo_root, strata};
use target::{Target, assert_free};

fn hang_script() -> String {
    repo_root()
        .join("tests/python/hang.py")
        .display()
        .to_string()
}

/// `hang.py WHERE` under `python`, once its threads are in place.
fn start(python: &Python, where_: &str) -> Target {
    let t = Target::start_ready(&python.exe, &[&hang_script(), where_], 1);
    t.wait_all_sleeping(2);
    t
}

#[test]
fn layouts_match_the_headers_of_every_cpython_installed() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = Vec::new();
    for py in interpreters() {
        let exe = dir.path().join(format!("offsets-{}", py.version.1));
        let out = Command::new("cc")
            .arg("-I")
            .arg(py.include_dir())
            .arg("-o")
            .arg(&exe)
            .arg(repo_root().join("tests/python/offsets.c"))
            .output()
            .expect("cc");
        assert!(
            out.status.success(),
            "{}: {}",
            py.label(),
            String::from_utf8_lossy(&out.stderr)
        );
        let printed = Command::new(&exe).output().expect("offsets");
        let headers: BTreeMap<String, u64> = String::from_utf8_lossy(&printed.stdout)
            .lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((k.to_string(), v.parse().ok()?))
            })
            .filter(|(k, _)| k != "version_hex")
            .collect();
        let layout = Layout::for_minor(py.version.1)
            .unwrap_or_else(|| panic!("no layout for {}", py.label()));
        let table: BTreeMap<String, u64> = layout
            .named_offsets()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        assert_eq!(
            table,
            headers,
            "{}: strata's layout and the headers differ",
            py.label()
        );
        checked.push(py.label());
    }
    eprintln!("layouts verified against: {}", checked.join(", "));
}

/// Each thread's Python frames in `strata dump`'s text: tid -> (function, file, line).
fn strata_python_frames(dump: &str) -> BTreeMap<i64, Vec<(String, String, Option<u32>)>> {
    let mut out: BTreeMap<i64, Vec<_>> = BTreeMap::new();
    let mut tid = 0;
    for line in dump.lines() {
        if let Some(rest) = line.trim_start().strip_prefix("Thread ") {
            tid = rest.split_whitespace().next().unwrap().parse().unwrap();
            out.entry(tid).or_default();
        } else if let Some((_, frame)) = line.split_once("(python)") {
            let frame = frame.trim();
            let (name, place) = frame
                .split_once(" at ")
                .or_else(|| frame.split_once(" in "))
                .unwrap_or_else(|| panic!("odd Python frame line: {line}"));
            let (file, line_no) = match place.rsplit_once(':') {
                Some((f, l)) if l.parse::<u32>().is_ok() => (f, l.parse().ok()),
                _ => (place, None),
            };
            out.entry(tid)
                .or_default()
                .push((name.to_string(), file.to_string(), line_no));
        }
    }
    out
}

#[test]
fn dump_shows_the_python_frames_py_spy_shows_on_every_cpython() {
    let mut checked = Vec::new();
    for py in interpreters() {
        let t = start(&py, "sleep");
        let (code, dump, err) = parts(&strata(&["dump", &t.pid().to_string()]));
        assert_eq!(code, 0, "{}: {err}", py.label());
        let ours = strata_python_frames(&dump);
        let theirs = py_spy_frames(t.pid());
        assert_eq!(theirs.len(), 2, "{}: {theirs:?}", py.label());
        // Before 3.11 the image does not say its micro version: only its name's `3.X`.
        let (a, b, c) = py.version;
        let version = if b >= 11 {
            format!("{a}.{b}.{c}")
        } else {
            format!("{a}.{b}")
        };
        assert!(
            dump.contains(&format!("\n  Python {version}, frames read in ")),
            "{dump}"
        );
        for (tid, frames) in &theirs {
            assert_eq!(
                ours.get(tid),
                Some(frames),
                "{}: thread {tid} differs from py-spy's\n{dump}",
                py.label()
            );
        }
        // The main thread as the script has it, innermost first.
        let main = &ours[&(t.pid() as i64)];
        let names: Vec<&str> = main.iter().map(|f| f.0.as_str()).collect();
        let step = if py.version.1 >= 11 {
            "Solver.step"
        } else {
            "step"
        };
        assert_eq!(
            names,
            [step, step, step, "main", "<module>"],
            "{}",
            py.label()
        );
        assert!(Path::new(&main[0].1).ends_with("hang.py"));
        // Python frames go inside the evaluator's C frames: the innermost one follows the
        // native call that sleeps.
        let sleep_at = dump
            .find("time_sleep")
            .or_else(|| dump.find("clock_nanosleep"));
        let step_at = dump.find(&format!("(python)           {step}"));
        assert!(
            sleep_at < step_at && step_at.is_some(),
            "{}: {dump}",
            py.label()
        );
        assert_free(t.pid());
        checked.push(py.label());
    }
    eprintln!(
        "Python frames compared with py-spy on: {}",
        checked.join(", ")
    );
}

#[test]
fn attach_splits_python_ranks_by_their_python_call_sites() {
    let py = &interpreters()[0];
    let targets = [start(py, "sleep"), start(py, "wait"), start(py, "sleep")];
    let pids: Vec<String> = targets.iter().map(|t| t.pid().to_string()).collect();
    let pids = pids.join(",");
    let (code, text, err) = parts(&strata(&[
        "attach",
        "--pids",
        &pids,
        "-n",
        "2",
        "--no-files",
    ]));
    assert_eq!(code, 0, "{err}");
    // The evaluator's C frames are hidden: the tree reads as the program does.
    assert!(
        text.contains("Solver.step") && text.contains("<module>"),
        "{text}"
    );
    assert!(!text.contains("_PyEval_EvalFrameDefault"), "{text}");
    assert!(text.contains("2 equivalence classes"), "{text}");
    // The class of the two sleeping ranks ends in Python frames, then the C sleep.
    let sleeping = text
        .lines()
        .find(|l| l.trim_start().starts_with("2:[0,2]") && l.contains(" > "))
        .unwrap_or("");
    assert!(
        sleeping.contains("Solver.step > __GI___clock_nanosleep"),
        "{text}"
    );
    assert!(
        text.contains("1:[1]") && text.contains("Event.wait"),
        "{text}"
    );

    // Full stacks show them; the JSON result says which frames are Python's.
    let (code, full, err) = parts(&strata(&[
        "attach",
        "--pids",
        &pids,
        "-n",
        "1",
        "--no-files",
        "--full-stacks",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(full.contains("_PyEval_EvalFrameDefault"), "{full}");
    let (code, json, err) = parts(&strata(&[
        "attach",
        "--pids",
        &pids,
        "-n",
        "1",
        "--json",
        "--no-files",
    ]));
    assert_eq!(code, 0, "{err}");
    let result: Value = serde_json::from_str(&json).unwrap();
    let frames: Vec<&Value> = result["trees"]["3d"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| &n["frame"])
        .collect();
    let step = frames
        .iter()
        .find(|f| f["function"] == "Solver.step")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(step["kind"], "python");
    assert!(
        step["file"]
            .as_str()
            .unwrap()
            .ends_with("tests/python/hang.py")
    );
    assert!(frames.iter().any(|f| f["kind"] == "interpreter"));
    for t in &targets {
        assert_free(t.pid());
    }
}

/// The line of `tests/python/progress.py` marked `# @NAME`.
fn progress_line(name: &str) -> u32 {
    let text = std::fs::read_to_string(repo_root().join("tests/python/progress.py")).unwrap();
    let tag = format!("# @{name}");
    let i = text
        .lines()
        .position(|l| l.trim_end().ends_with(&tag))
        .unwrap_or_else(|| panic!("no {tag} in progress.py"));
    i as u32 + 1
}

/// `strata attach --progress` on these processes as ranks 0, 1, ...: its text.
fn attach_progress(targets: &[Target]) -> String {
    let pids: Vec<String> = targets.iter().map(|t| t.pid().to_string()).collect();
    let (code, text, err) = parts(&strata(&[
        "attach",
        "--pids",
        &pids.join(","),
        "-n",
        "1",
        "--no-files",
        "--progress",
    ]));
    assert_eq!(code, 0, "{err}");
    text
}

#[test]
fn progress_orders_python_ranks_by_code_order() {
    let py = &interpreters()[0];
    let script = repo_root().join("tests/python/progress.py");
    let script = script.to_str().unwrap();
    // Ranks 0, 1, 2: after the loop, before it, inside it.
    let targets: Vec<Target> = ["after", "before", "inside"]
        .iter()
        .map(|w| {
            let t = Target::start_ready(&py.exe, &[script, w], 1);
            t.wait_all_sleeping(1);
            t
        })
        .collect();
    let text = attach_progress(&targets);
    // The source was parsed (no line-number fallback), and the ranks are in code order.
    assert!(!text.contains("by line number only"), "{text}");
    let order: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Progress order"))
        .skip(1)
        .take(3)
        .collect();
    for (i, (rank, line)) in [(1, "before"), (2, "inside"), (0, "after")]
        .into_iter()
        .enumerate()
    {
        let row = order.get(i).unwrap_or_else(|| panic!("{text}"));
        let expected = format!(
            "T{}  1:[{rank}]  solve @ progress.py:{}",
            i + 1,
            progress_line(line)
        );
        assert!(
            row.trim_start().starts_with(&expected),
            "{expected}\n{text}"
        );
    }
    assert!(text.contains("Least progressed: T1 (1 rank [1])"), "{text}");
    for t in &targets {
        assert_free(t.pid());
    }
}

#[test]
fn an_embedded_interpreter_is_read_between_the_programs_c_frames() {
    // Debian's libpython3.11, linked into a C program as `python3.11-config --embed` says.
    let config = |what: &str| {
        let out = Command::new("python3.11-config")
            .args(["--embed", what])
            .output()
            .expect("python3.11-config (python3-dev; tests/run-all.sh installs it)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("embed");
    let out = Command::new("cc")
        .args(["-g", "-O1", "-o"])
        .arg(&exe)
        .arg(repo_root().join("tests/python/embed.c"))
        .args(config("--cflags").split_whitespace())
        .args(config("--ldflags").split_whitespace())
        .output()
        .expect("cc");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = Target::start_ready(&exe, &[&hang_script(), "sleep"], 1);
    t.wait_all_sleeping(2);
    let (code, dump, err) = parts(&strata(&["dump", &t.pid().to_string()]));
    assert_eq!(code, 0, "{err}");
    let ours = strata_python_frames(&dump);
    let theirs = py_spy_frames(t.pid());
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    for (tid, frames) in &theirs {
        assert_eq!(ours.get(tid), Some(frames), "thread {tid}\n{dump}");
    }
    // The program's own C frames are outside the Python frames it runs.
    let main_thread = dump.split("  Thread ").nth(1).unwrap_or("");
    let module_at = main_thread.find("(python)           <module>");
    let run_script_at = main_thread.find("run_script at");
    assert!(module_at.is_some() && module_at < run_script_at, "{dump}");
    assert_free(t.pid());
}

#[test]
fn the_gil_holder_is_the_one_py_spy_names_on_every_cpython() {
    let mut checked = Vec::new();
    for py in interpreters() {
        let t = Target::start_ready(&py.exe, &[&hang_script(), "spin"], 1);
        // The waiter sleeps; the main thread spins in Python, keeping the GIL.
        std::thread::sleep(std::time::Duration::from_millis(300));
        let (code, dump, err) = parts(&strata(&["dump", &t.pid().to_string()]));
        assert_eq!(code, 0, "{}: {err}", py.label());
        let ours: BTreeMap<i64, bool> = dump
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("Thread "))
            .map(|rest| {
                let tid = rest.split_whitespace().next().unwrap().parse().unwrap();
                (tid, rest.contains("(holds the GIL)"))
            })
            .collect();
        let theirs: BTreeMap<i64, bool> = py_spy_dump(t.pid())
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let owns = t["owns_gil"].as_bool().expect("py-spy's owns_gil");
                (t["os_thread_id"].as_i64().unwrap(), owns)
            })
            .collect();
        assert_eq!(ours, theirs, "{}\n{dump}", py.label());
        assert_eq!(ours.get(&(t.pid() as i64)), Some(&true), "{dump}");
        assert_free(t.pid());
        checked.push(py.label());
    }
    eprintln!("GIL holder compared with py-spy on: {}", checked.join(", "));
}

fn loops_script() -> String {
    repo_root()
        .join("tests/python/loops.py")
        .display()
        .to_string()
}

fn loops_line(name: &str) -> u32 {
    let text = std::fs::read_to_string(loops_script()).unwrap();
    let tag = format!("# @{name}");
    let i = text
        .lines()
        .position(|l| l.trim_end().ends_with(&tag))
        .unwrap_or_else(|| panic!("no {tag} in loops.py"));
    i as u32 + 1
}

/// `loops.py ARGS...` under `python`, once it waits.
fn start_loops(python: &Python, args: &[&str]) -> Target {
    let script = loops_script();
    let mut all = vec![script.as_str()];
    all.extend_from_slice(args);
    let t = Target::start_ready(&python.exe, &all, 1);
    t.wait_all_sleeping(1);
    t
}

/// The `--var` values of `name` in strata's text: (value or reason, `N:[RANKS]`), one per
/// distinct value (lines read `VALUE  N:[RANKS]  FUNCTION @ FILE:LINE`).
fn var_values(out: &str, name: &str) -> Vec<(String, String)> {
    var_block(out, name)
        .iter()
        .map(|l| {
            let mut parts = l.split("  ").map(str::trim);
            let value = parts.next().unwrap_or("").to_string();
            let ranks = parts.next().unwrap_or("").to_string();
            (value, ranks)
        })
        .collect()
}

/// The lines of `name`'s values in strata's `Variables` text.
fn var_block(out: &str, name: &str) -> Vec<String> {
    let vars = &out[out.find("Variables").unwrap_or_else(|| panic!("{out}"))..];
    let start = vars
        .find(&format!("  {name}\n"))
        .unwrap_or_else(|| panic!("no {name} in {vars}"));
    vars[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(|l| l.trim().to_string())
        .collect()
}

/// `--var` on Python ranks, on every CPython: each local py-spy shows an int, bool, float,
/// str or None for has the same value in strata; the ones py-spy does not show (a
/// closure's cells, a 70-bit int, a module's global) have the values the script's
/// arguments give them; a list, a missing name and an unknown function are refused with
/// why.
#[test]
fn var_reads_python_variables_as_py_spy_does_on_every_cpython() {
    let mut checked = Vec::new();
    for py in interpreters() {
        let ranks = [
            start_loops(&py, &["function", "3", "a"]),
            start_loops(&py, &["function", "5", "b"]),
        ];
        let theirs = py_spy_locals(ranks[0].pid(), "solve");
        let pids = format!("{},{}", ranks[0].pid(), ranks[1].pid());
        let mut args = vec!["attach", "--pids", &pids, "-n", "1", "--no-files"];
        let names = [
            "it", "stop_at", "label", "name", "flag", "nothing", "total", "big", "items", "nosuch",
        ];
        let asked: Vec<String> = names.iter().map(|n| format!("solve:{n}")).collect();
        for a in &asked {
            args.extend(["--var", a.as_str()]);
        }
        args.extend(["--var", "<module>:stop_at", "--var", "nowhere:x"]);
        let (code, out, err) = parts(&strata(&args));
        assert_eq!(code, 0, "{}: {err}", py.label());
        let value_of_rank_0 = |name: &str| -> String {
            let values = var_values(&out, &format!("solve:{name}"));
            values
                .iter()
                .find(|(_, ranks)| ranks == "1:[0]" || ranks == "2:[0-1]")
                .unwrap_or_else(|| panic!("{}: {name}: {values:?}", py.label()))
                .0
                .clone()
        };
        // What py-spy shows of the simple values: the same (its strs are double-quoted).
        let mut compared = 0;
        for (name, repr) in &theirs {
            if repr.starts_with('<') || repr.contains("bigint") {
                continue;
            }
            let repr = match repr.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                Some(inner) => format!("'{inner}'"),
                None => repr.clone(),
            };
            assert_eq!(value_of_rank_0(name), repr, "{}: {name}\n{out}", py.label());
            compared += 1;
        }
        assert!(
            compared >= 6,
            "{}: py-spy showed too little: {theirs:?}",
            py.label()
        );
        // Both ranks, with values that follow from their arguments.
        for (name, zero, one) in [
            ("it", "3", "5"),
            ("total", "1.25", "1.75"),
            ("name", "'phase-a'", "'phase-b'"),
            ("big", "-1180591620717411303427", "-1180591620717411303429"),
        ] {
            let values = var_values(&out, &format!("solve:{name}"));
            assert!(
                values.contains(&(zero.to_string(), "1:[0]".to_string()))
                    && values.contains(&(one.to_string(), "1:[1]".to_string())),
                "{}: {name}: {values:?}",
                py.label()
            );
        }
        let flag = var_values(&out, "solve:flag");
        assert_eq!(
            flag,
            [("True".to_string(), "2:[0-1]".to_string())],
            "{flag:?}"
        );
        let global = var_values(&out, "<module>:stop_at");
        assert!(
            global.contains(&("3".to_string(), "1:[0]".to_string())),
            "{global:?}"
        );
        let list = var_block(&out, "solve:items");
        assert!(list.iter().all(|l| l.contains("a list object")), "{list:?}");
        let missing = var_block(&out, "solve:nosuch");
        assert!(
            missing
                .iter()
                .all(|l| l.contains("solve has no local or global named nosuch")),
            "{missing:?}"
        );
        let nowhere = var_block(&out, "nowhere:x");
        assert!(
            nowhere
                .iter()
                .all(|l| l.contains("no frame of nowhere") && l.contains("Python: ")),
            "{nowhere:?}"
        );
        for t in &ranks {
            assert_free(t.pid());
        }
        checked.push(py.label());
    }
    eprintln!("Python variables read on: {}", checked.join(", "));
}

/// Python ranks stopped in one loop at different iterations are ordered by the loop's
/// counter, read as a loop-order variable: `for it in range(10)` in a function, and a
/// `count += 1` while loop at a script's top level (a global).
#[test]
fn progress_orders_python_ranks_in_one_loop_by_its_counter() {
    let py = &interpreters()[0];
    for (args, variable, kind, marker) in [
        (
            ["function", "function", "function"],
            "it",
            "for",
            "function",
        ),
        (["module", "module", "module"], "count", "while", "module"),
    ] {
        // Ranks 0 and 2 at iteration 2, rank 1 at iteration 5.
        let targets: Vec<Target> = args
            .iter()
            .zip(["2", "5", "2"])
            .map(|(w, n)| start_loops(py, &[w, n, "x"]))
            .collect();
        let text = attach_progress(&targets);
        assert!(
            text.contains("Least progressed: T1 (2 ranks [0,2])"),
            "{text}"
        );
        let header = loops_line(marker) - 2;
        assert!(
            text.contains(&format!(
                "an earlier iteration: {variable} = 2 and 5 in the {kind} loop at loops.py:{header}, and {variable} counts up"
            )),
            "{text}"
        );
        for t in &targets {
            assert_free(t.pid());
        }
    }
}

/// Each thread's `threading` name in `strata dump` is py-spy's `thread_name`, on every
/// CPython: named at creation, renamed after start, one whose attributes went through
/// `__dict__`, the main thread; a thread `threading` does not know has none in either.
#[test]
fn python_threads_are_named_as_py_spy_names_them_on_every_cpython() {
    let script = repo_root().join("tests/python/threads.py");
    let mut checked = Vec::new();
    for py in interpreters() {
        let t = Target::start_ready(&py.exe, &[script.to_str().unwrap()], 1);
        t.wait_all_sleeping(5);
        let (code, dump, err) = parts(&strata(&["dump", &t.pid().to_string()]));
        assert_eq!(code, 0, "{}: {err}", py.label());
        let ours: BTreeMap<i64, Option<String>> = dump
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("Thread "))
            .map(|rest| {
                let tid = rest.split_whitespace().next().unwrap().parse().unwrap();
                let name = rest
                    .split_once("(Python \"")
                    .and_then(|(_, n)| n.split_once("\")"))
                    .map(|(n, _)| n.to_string());
                (tid, name)
            })
            .collect();
        let theirs: BTreeMap<i64, Option<String>> = py_spy_dump(t.pid())
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let name = t["thread_name"].as_str().map(str::to_string);
                (t["os_thread_id"].as_i64().unwrap(), name)
            })
            .collect();
        assert_eq!(ours, theirs, "{}\n{dump}", py.label());
        let names: Vec<&str> = ours.values().flatten().map(String::as_str).collect();
        for expected in ["MainThread", "waiter", "renamed", "with-dict"] {
            assert!(
                names.contains(&expected),
                "{}: {names:?}\n{dump}",
                py.label()
            );
        }
        assert_eq!(ours.values().filter(|n| n.is_none()).count(), 1, "{dump}");
        assert_free(t.pid());
        checked.push(py.label());
    }
    eprintln!(
        "thread names compared with py-spy on: {}",
        checked.join(", ")
    );
}
