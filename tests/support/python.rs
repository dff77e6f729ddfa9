//! The CPython interpreters the Python tests run on, and py-spy to compare with.
//!
//! Debian 12's `/usr/bin/python3.11` is required (tests/run-all.sh installs it with its
//! headers); every pyenv interpreter of a version strata reads (`~/.pyenv/versions/3.X.Y`)
//! is tested too, and the tests print which ones they covered. py-spy comes from PyPI into
//! `target/python-tools` (kept between runs, outside the repository).

#![allow(dead_code)] // each test file uses its own subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The pinned py-spy the tests compare with.
pub const PY_SPY: &str = "py-spy==0.4.3";
/// The pinned mpi4py the MPI jobs run (its wheel holds builds for MPICH's ABI and Open
/// MPI's, and loads whichever `libmpi` the launcher's environment finds).
pub const MPI4PY: &str = "mpi4py==4.1.2";

/// A CPython to test on.
#[derive(Clone, Debug)]
pub struct Python {
    pub exe: PathBuf,
    /// (major, minor, micro)
    pub version: (u32, u32, u32),
}

impl Python {
    pub fn label(&self) -> String {
        let (a, b, c) = self.version;
        format!("{a}.{b}.{c} ({})", self.exe.display())
    }

    /// `sysconfig`'s include directory: where `Python.h` is.
    pub fn include_dir(&self) -> PathBuf {
        let out = Command::new(&self.exe)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_path('include'))",
            ])
            .output()
            .expect("run python");
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    }
}

fn version_of(exe: &Path) -> Option<(u32, u32, u32)> {
    let out = Command::new(exe)
        .args(["-c", "import sys; print(*sys.version_info[:3])"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<u32> = text
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    (v.len() == 3).then(|| (v[0], v[1], v[2]))
}

/// Every CPython 3.9-3.13 to test on, Debian's first. Panics without Debian's 3.11.
pub fn interpreters() -> Vec<Python> {
    let debian = PathBuf::from("/usr/bin/python3.11");
    let version = version_of(&debian)
        .unwrap_or_else(|| panic!("{} is missing: run tests/run-all.sh", debian.display()));
    let mut out = vec![Python {
        exe: debian,
        version,
    }];
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    if let Ok(dirs) = std::fs::read_dir(Path::new(&home).join(".pyenv/versions")) {
        let mut dirs: Vec<PathBuf> = dirs.flatten().map(|d| d.path()).collect();
        dirs.sort();
        for dir in dirs {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            let mut parts = name.split('.');
            let (Some("3"), Some(minor)) = (parts.next(), parts.next()) else {
                continue;
            };
            let exe = dir.join(format!("bin/python3.{minor}"));
            if let Some(version) = version_of(&exe).filter(|v| (9..=13).contains(&v.1)) {
                out.push(Python { exe, version });
            }
        }
    }
    out
}

/// py-spy's binary, installed from PyPI on first use.
pub fn py_spy() -> PathBuf {
    tools().join("bin/py-spy")
}

/// `py-spy dump --json --pid PID`: every thread of the process with its frames.
pub fn py_spy_dump(pid: i32) -> serde_json::Value {
    let out = Command::new(py_spy())
        .args(["dump", "--json", "--pid", &pid.to_string()])
        .output()
        .expect("py-spy");
    assert!(
        out.status.success(),
        "py-spy on {pid}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("py-spy's JSON")
}

/// A Python frame as the tests compare them: function, file, line (None: no line).
pub type PyFrame = (String, String, Option<u32>);

/// Each thread's Python frames as py-spy sees them, innermost first: os thread id ->
/// frames.
pub fn py_spy_frames(pid: i32) -> std::collections::BTreeMap<i64, Vec<PyFrame>> {
    py_spy_dump(pid)
        .as_array()
        .expect("py-spy's threads")
        .iter()
        .map(|t| {
            let frames = t["frames"]
                .as_array()
                .expect("py-spy's frames")
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

/// `py-spy dump --locals`: the locals py-spy shows in the innermost frame of `function` on
/// `pid`'s main thread, as (name, py-spy's repr).
pub fn py_spy_locals(pid: i32, function: &str) -> Vec<(String, String)> {
    let out = Command::new(py_spy())
        .args(["dump", "--json", "--locals", "--pid", &pid.to_string()])
        .output()
        .expect("py-spy");
    assert!(
        out.status.success(),
        "py-spy --locals on {pid}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let threads: serde_json::Value = serde_json::from_slice(&out.stdout).expect("py-spy's JSON");
    let main = threads
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["os_thread_id"].as_i64() == Some(i64::from(pid)))
        .unwrap_or_else(|| panic!("py-spy saw no main thread of {pid}: {threads}"));
    let frame = main["frames"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == function)
        .unwrap_or_else(|| panic!("py-spy saw no frame of {function} in {pid}: {main}"));
    frame["locals"]
        .as_array()
        .map(|locals| {
            locals
                .iter()
                .map(|l| {
                    (
                        l["name"].as_str().unwrap().to_string(),
                        l["repr"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The Python of the tools' virtual environment, which has mpi4py.
pub fn mpi4py_python() -> PathBuf {
    tools().join("bin/python")
}

/// The virtual environment of py-spy and mpi4py (`target/python-tools`, made with the
/// machine's `python3`), installed from PyPI on first use and again when a pin changes.
fn tools() -> PathBuf {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    let _guard = LOCK
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/python-tools");
    let marker = root.join(".installed");
    let pins = format!("{PY_SPY} {MPI4PY}");
    if std::fs::read_to_string(&marker).is_ok_and(|m| m == pins) {
        return root;
    }
    let _ = std::fs::remove_dir_all(&root);
    let ok = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&root)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "cannot make a venv at {}", root.display());
    let ok = Command::new(root.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            PY_SPY,
            MPI4PY,
        ])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "pip could not install {pins} (PyPI unreachable?)");
    std::fs::write(&marker, pins).unwrap();
    root
}
