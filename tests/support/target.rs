//! Target processes for the tests that stop and unwind real programs: compiles the C/C++
//! fixtures of `daemon/tests/fixtures/` and runs them so that they are never left behind.
//! Shared by the daemon's tests and the end-to-end tests (`#[path]`-included by both).

#![allow(dead_code)] // each test file uses its own subset

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// `daemon/tests/fixtures`.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../daemon/tests/fixtures")
}

/// Compiles `fixtures/<source>` (C with `cc`, C++ with `c++` for `.cpp`) with `flags` into
/// a file called `name` (an executable, or whatever `flags` make of it: `-shared`), once per
/// test process. Panics with the compiler's message when it fails: a test that needs a
/// compiler must not pass without one.
pub fn compile(source: &str, name: &str, flags: &[&str]) -> PathBuf {
    compile_linked(source, name, flags, &[])
}

/// [`compile`] with `link` after the source on the command line, where the linker wants
/// libraries (`-lfoo`) to come.
pub fn compile_linked(source: &str, name: &str, flags: &[&str], link: &[&str]) -> PathBuf {
    let compiler = if source.ends_with(".cpp") {
        "c++"
    } else {
        "cc"
    };
    build(compiler, source, name, flags, link)
}

/// [`compile`] with another compiler driver (`mpicc`).
pub fn compile_with(compiler: &str, source: &str, name: &str, flags: &[&str]) -> PathBuf {
    build(compiler, source, name, flags, &[])
}

fn build(compiler: &str, source: &str, name: &str, flags: &[&str], link: &[&str]) -> PathBuf {
    let mut built = built().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return p.clone();
    }
    let out = build_dir().join(name);
    let result = Command::new(compiler)
        .args(flags)
        .arg("-pthread")
        .arg("-o")
        .arg(&out)
        .arg(fixtures_dir().join(source))
        .args(link)
        .output()
        .unwrap_or_else(|e| {
            panic!("running {compiler}: {e} (tests/run-all.sh installs the compilers)")
        });
    assert!(
        result.status.success(),
        "compiling {source}: {}",
        String::from_utf8_lossy(&result.stderr)
    );
    built.insert(name.to_string(), out.clone());
    out
}

/// The temporary directory the fixtures are built into (removed when the test process
/// ends); also where tests put files derived from them.
pub fn build_dir() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir"))
        .path()
}

fn built() -> &'static Mutex<HashMap<String, PathBuf>> {
    static BUILT: OnceLock<Mutex<HashMap<String, PathBuf>>> = OnceLock::new();
    BUILT.get_or_init(Default::default)
}

/// `strip ARGS... -o build_dir()/name input`, once per test process (like [`compile`]).
pub fn strip(input: &Path, name: &str, args: &[&str]) -> PathBuf {
    let mut built = built().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return p.clone();
    }
    let out = build_dir().join(name);
    let result = Command::new("strip")
        .args(args)
        .arg("-o")
        .arg(&out)
        .arg(input)
        .output()
        .expect("run strip");
    assert!(
        result.status.success(),
        "strip {}: {}",
        input.display(),
        String::from_utf8_lossy(&result.stderr)
    );
    built.insert(name.to_string(), out.clone());
    out
}

/// A running fixture, killed with its process group and reaped on Drop.
///
/// The fixture runs under an `sh` that waits for it, never as the test process's own
/// child: a tracer that is also the parent reaps its tracee's exit as the parent would,
/// which hides the very bugs (an exited tracee left unreaped, so that its real parent
/// hangs) that the tests look for. `parent` is that `sh`. Fixtures print `ready` once
/// they are in the state the test wants (once per thread, for some).
pub struct Target {
    parent: Child,
    pid: i32,
    /// Kept open so that a fixture writing after the test stopped reading does not die
    /// of SIGPIPE.
    _stdout: BufReader<ChildStdout>,
}

impl Target {
    pub fn start(exe: &Path, args: &[&str]) -> Target {
        Target::spawn(exe, args, None, 1)
    }

    /// Like [`Target::start`], run by `user` (via `runuser`) when given.
    pub fn start_as(exe: &Path, args: &[&str], user: Option<&str>) -> Target {
        Target::spawn(exe, args, user, 1)
    }

    /// Like [`Target::start`], for a fixture that prints `ready` `lines` times (say once
    /// per thread) before it is in the state the test wants.
    pub fn start_ready(exe: &Path, args: &[&str], lines: usize) -> Target {
        Target::spawn(exe, args, None, lines)
    }

    fn spawn(exe: &Path, args: &[&str], user: Option<&str>, lines: usize) -> Target {
        let mut cmd = match user {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--", "sh"]);
                c
            }
            None => Command::new("sh"),
        };
        let mut parent = cmd
            .arg("-c")
            .arg(r#""$@" & echo $!; wait $!"#)
            .arg("sh")
            .arg(exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn fixture");
        let mut out = BufReader::new(parent.stdout.take().expect("piped stdout"));
        // The fixture's "ready" lines and sh's pid line can come in any order.
        let (mut pid, mut ready) = (None, 0);
        while pid.is_none() || ready < lines {
            let mut line = String::new();
            let n = out.read_line(&mut line).expect("fixture output");
            match line.trim() {
                _ if n == 0 => break,
                "ready" => ready += 1,
                other => pid = other.parse().ok().or(pid),
            }
        }
        // Built before checking, so that Drop kills and reaps what did start.
        let target = Target {
            parent,
            pid: pid.unwrap_or(0),
            _stdout: out,
        };
        assert!(
            ready >= lines && target.pid > 0,
            "{} did not start ({ready} of {lines} ready lines)",
            exe.display()
        );
        target
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The fixture is dead and its parent has reaped it.
    pub fn reaped(&mut self) -> bool {
        self.parent.try_wait().expect("try_wait").is_some()
    }

    /// Waits until the process has `threads` threads, all sleeping (S).
    pub fn wait_all_sleeping(&self, threads: usize) {
        wait_for(Duration::from_secs(5), || {
            let tids = thread_ids(self.pid);
            tids.len() == threads && tids.iter().all(|&t| thread_state(self.pid, t) == Some('S'))
        });
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.parent.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        // runuser's group may differ: kill the fixture itself too (never pid 0 or -1,
        // which would signal our own group or everything).
        if self.pid > 0 {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.parent.wait();
    }
}

/// Polls `ok` every 5 ms; panics after `limit`.
pub fn wait_for(limit: Duration, mut ok: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < end, "condition not met within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

pub fn thread_ids(pid: i32) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// A thread's scheduler state letter (R, S, D, t, T, Z...).
pub fn thread_state(pid: i32, tid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// `TracerPid` of a thread.
pub fn tracer(pid: i32, tid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))?
        .trim()
        .parse()
        .ok()
}

/// [`assert_free`], for a target that live daemons may be capturing at this moment (for
/// microseconds, every interval): it must be seen free at least once within `limit`. A
/// thread a daemon holds stopped stays traced the whole time and still fails.
#[allow(dead_code)]
pub fn assert_free_within(pid: i32, limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    while std::time::Instant::now() < deadline {
        let free = thread_ids(pid).into_iter().all(|tid| {
            tracer(pid, tid).is_none_or(|t| t == 0)
                && !matches!(thread_state(pid, tid), Some('t' | 'T'))
        });
        if free {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_free(pid);
}

/// The target runs freely: no thread traced, none stopped (`t` is a ptrace stop, `T` a
/// job-control stop).
pub fn assert_free(pid: i32) {
    let tids = thread_ids(pid);
    assert!(!tids.is_empty(), "process {pid} is gone");
    for tid in tids {
        // A thread that ended since the listing has nothing left to check.
        let Some(tracer) = tracer(pid, tid) else {
            continue;
        };
        assert_eq!(tracer, 0, "thread {tid} of {pid} still traced");
        let state = thread_state(pid, tid);
        assert!(
            !matches!(state, Some('t' | 'T')),
            "thread {tid} of {pid} left stopped ({state:?})"
        );
    }
}
