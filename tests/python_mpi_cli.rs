//! Hung mpi4py jobs on real MPI stacks: `tests/python/mpi_hang.py` under Debian's Open MPI
//! 4 and MPICH 4, Open MPI 5, MPICH 5 and Intel MPI (mpi4py 4.1.2's wheel in the tools' virtual
//! environment; the PyPI stacks of `tests/mpi/stacks.sh` found by `LD_LIBRARY_PATH`).
//! Rank 0 waits in `comm.recv` for rank 1, which sleeps in a loop; rank 3 waits in
//! `comm.recv` for rank 2, which spins in a pure-Python loop; the others wait in
//! `comm.Barrier`. `strata attach --launcher-pid` must give five classes split by Python
//! call site, name the two ranks that hold the job up at their Python lines, place each
//! MPI call at the Python line that made it, and read, for every rank, the Python frames
//! py-spy reads (function, file and line).
//!
//! Debian's MPICH 4 too: mpi4py's wheel loads MPICH's ABI as `libmpi.so.12`, which Debian's
//! MPICH names `libmpich.so.12` (the same ABI), so the test gives it a directory where the
//! first name points to the second (`target/mpich4-abi`), and asks for MPICH's ABI
//! (`MPI4PY_MPIABI=mpich`) rather than the Open MPI that Debian also installs.

#[path = "support/mpi.rs"]
mod mpi;
#[path = "support/pmpi.rs"]
#[allow(dead_code)] // its library, which these jobs do not load
mod pmpi;
#[path = "support/python.rs"]
mod python;
#[path = "support/stacks.rs"]
mod stacks;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::MpiJob;
use python::{PyFrame, mpi4py_python, py_spy_frames};
use serde_json::Value;
use stacks::Stack;
use std::collections::BTreeMap;
use std::sync::Mutex;
use support::repo_root;

const RANKS: usize = 6;

fn script() -> String {
    repo_root()
        .join("tests/python/mpi_hang.py")
        .display()
        .to_string()
}

/// The line of the script marked `# @NAME`.
fn marked(name: &str) -> u64 {
    let text = std::fs::read_to_string(script()).unwrap();
    let tag = format!("@{name}");
    let lines: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.split_whitespace().any(|w| w == tag))
        .map(|(i, _)| i + 1)
        .collect();
    assert_eq!(lines.len(), 1, "marker {tag} on lines {lines:?}");
    lines[0] as u64
}

fn rank_list(text: &str) -> Vec<u32> {
    let mut ranks = Vec::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => ranks.extend(a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap()),
            None => ranks.push(part.parse().unwrap()),
        }
    }
    ranks
}

/// Each rank's Python frames in the 2D tree (its last sample), innermost first.
fn python_frames_by_rank(result: &Value) -> BTreeMap<u32, Vec<PyFrame>> {
    let nodes = result["trees"]["2d"]["nodes"].as_array().expect("2d nodes");
    let ranks: Vec<Vec<u32>> = nodes
        .iter()
        .map(|n| rank_list(n["ranks"].as_str().unwrap_or("")))
        .collect();
    let parent = |i: usize| nodes[i]["parent"].as_u64().map(|p| p as usize);
    let mut out = BTreeMap::new();
    for rank in 0..RANKS as u32 {
        // The deepest node of the rank: one of its nodes none of whose children has it.
        let leaf = (1..nodes.len())
            .filter(|&i| ranks[i].contains(&rank))
            .find(|&i| !(1..nodes.len()).any(|c| parent(c) == Some(i) && ranks[c].contains(&rank)))
            .unwrap_or_else(|| panic!("rank {rank} is in no node"));
        let mut frames = Vec::new();
        let mut at = Some(leaf);
        while let Some(i) = at.filter(|&i| i != 0) {
            let f = &nodes[i]["frame"];
            if f["kind"] == "python" {
                frames.push((
                    f["function"].as_str().unwrap().to_string(),
                    f["file"].as_str().unwrap().to_string(),
                    f["line"].as_u64().map(|l| l as u32),
                ));
            }
            at = parent(i);
        }
        out.insert(rank, frames);
    }
    out
}

/// A directory where `libmpi.so.12` is Debian's `libmpich.so.12` (under `target/`, made
/// on first use).
fn mpich4_abi_dir() -> std::path::PathBuf {
    let dir = repo_root().join("target/mpich4-abi");
    let link = dir.join("libmpi.so.12");
    if std::fs::read_link(&link).is_err() {
        std::fs::create_dir_all(&dir).unwrap();
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/usr/lib/x86_64-linux-gnu/libmpich.so.12", &link)
            .unwrap_or_else(|e| panic!("cannot link {}: {e}", link.display()));
    }
    dir
}

/// The job on `stack`'s launcher, its `libmpi` first on the library path (mpi4py loads
/// the one it finds).
fn start(stack: Stack) -> MpiJob {
    let mut launcher = stack.launcher();
    let lib = match stack {
        Stack::OpenMpi5 => Some("openmpi5"),
        Stack::Mpich5 => Some("mpich5"),
        Stack::IntelMpi => Some("impi"),
        Stack::OpenMpi4 | Stack::Mpich4 => None,
    };
    if stack == Stack::Mpich4 {
        launcher.env("LD_LIBRARY_PATH", mpich4_abi_dir());
        launcher.env("MPI4PY_MPIABI", "mpich");
    }
    if let Some(name) = lib {
        let dir = repo_root().join("target/mpi-stacks").join(name).join("lib");
        assert!(
            dir.exists(),
            "{} is missing: run `bash tests/mpi/stacks.sh`",
            dir.display()
        );
        launcher.env("LD_LIBRARY_PATH", dir);
    }
    MpiJob::launch_with_args(launcher, &mpi4py_python(), RANKS, &[&script()])
}

fn hung_mpi4py_job(stack: Stack) {
    // One job at a time: six ranks of each busy-poll, on two cores.
    static ONE_JOB: Mutex<()> = Mutex::new(());
    let _one = ONE_JOB.lock().unwrap_or_else(|e| e.into_inner());
    let job = start(stack);
    let result = pmpi::attach_json(&job, 3, stack);
    let context = format!("{stack:?}: {result:#}");

    // Five classes, split by Python call site (`result.json` keeps every frame: the
    // evaluator's are hidden by the views).
    let classes: BTreeMap<String, Vec<String>> = result["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let names = c["paths"][0]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap().to_string())
                .collect();
            (c["ranks"].as_str().unwrap().to_string(), names)
        })
        .collect();
    let expected: [(&str, &[&str]); 5] = [
        ("0", &["main", "gather_results", "Comm.recv"]),
        ("1", &["main", "wait_for_input"]),
        ("2", &["main", "compute"]),
        ("3", &["main", "exchange_halo", "Comm.recv"]),
        (
            "4-5",
            &["main", "synchronize", "Comm.Barrier", "MPI_Barrier"],
        ),
    ];
    assert_eq!(classes.len(), expected.len(), "{context}");
    for (ranks, names) in expected {
        let path = classes
            .get(ranks)
            .unwrap_or_else(|| panic!("no class of ranks {ranks}: {context}"));
        let mut rest = path.iter();
        for name in names {
            assert!(
                // The frame of an MPI call may be its profiling entry (`PMPI_Barrier`).
                rest.any(|n| n == name || n.strip_prefix('P') == Some(name)),
                "class {ranks} lacks {name} in order: {path:?}\n{context}"
            );
        }
    }

    // The verdict: ranks 1 and 2 hold the job up, named at their Python lines; every MPI
    // call is placed at the Python line that made it.
    let verdict = &result["verdict"];
    assert_eq!(verdict["kind"], "stuck_outside_mpi", "{context}");
    assert_eq!(verdict["ranks"], "1-2", "{context}");
    let culprit_lines: Vec<(String, u64)> = verdict["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["at"]["function"].as_str().unwrap().to_string(),
                c["at"]["line"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        culprit_lines,
        [
            ("wait_for_input".to_string(), marked("sleep")),
            ("compute".to_string(), marked("spin"))
        ],
        "{context}"
    );
    let states: BTreeMap<&str, &Value> = verdict["states"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["ranks"].as_str().unwrap(), s))
        .collect();
    for (ranks, function, line) in [
        ("0", "gather_results", "gather"),
        ("3", "exchange_halo", "halo"),
        ("4-5", "synchronize", "barrier"),
    ] {
        let state = states
            .get(ranks)
            .unwrap_or_else(|| panic!("no state of {ranks}: {context}"));
        assert_eq!(state["state"], "in_mpi", "{context}");
        assert_eq!(state["call_site"]["function"], function, "{context}");
        assert_eq!(state["call_site"]["line"], marked(line), "{context}");
        assert_eq!(state["motion"], "unchanged", "{context}");
    }
    for rank in result["ranks"].as_array().unwrap() {
        assert!(
            rank["python"].as_str().is_some_and(|v| v.starts_with("3.")),
            "{rank}: {context}"
        );
    }

    // Every rank's Python frames are py-spy's, and every rank is left free.
    let ours = python_frames_by_rank(&result);
    for (rank, &pid) in job.ranks.iter().enumerate() {
        let theirs = py_spy_frames(pid)
            .remove(&i64::from(pid))
            .unwrap_or_else(|| panic!("{stack:?}: py-spy saw no main thread of rank {rank}"));
        assert!(
            !theirs.is_empty(),
            "{stack:?}: py-spy saw no frames of rank {rank}"
        );
        assert_eq!(
            ours[&(rank as u32)],
            theirs,
            "{stack:?}: rank {rank}'s Python frames differ from py-spy's\n{context}"
        );
        target::assert_free(pid);
    }
}

#[test]
fn hung_mpi4py_job_on_open_mpi_4() {
    hung_mpi4py_job(Stack::OpenMpi4);
}

#[test]
fn hung_mpi4py_job_on_open_mpi_5() {
    hung_mpi4py_job(Stack::OpenMpi5);
}

#[test]
fn hung_mpi4py_job_on_mpich_4() {
    hung_mpi4py_job(Stack::Mpich4);
}

#[test]
fn hung_mpi4py_job_on_mpich_5() {
    hung_mpi4py_job(Stack::Mpich5);
}

#[test]
fn hung_mpi4py_job_on_intel_mpi() {
    hung_mpi4py_job(Stack::IntelMpi);
}
