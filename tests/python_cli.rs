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

use python::{Python, interpreters, py_spy_dump};
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

/// The same from `py-spy dump --json`.
fn py_spy_frames(pid: i32) -> BTreeMap<i64, Vec<(String, String, Option<u32>)>> {
    py_spy_dump(pid)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let frames = t["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    (
                        f["name"].as_str().unwrap().to_string(),
                        f["filename"].as_str().unwrap().to_string(),
                        f["line"].as_u64().filter(|&l| l > 0).map(|l| l as u32),
                    )
                })
                .collect();
            (t["os_thread_id"].as_i64().unwrap(), frames)
        })
        .collect()
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
