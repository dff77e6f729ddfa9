//! Support for strata's end-to-end tests: run the `strata` binary like a user would.
//!
//! The end-to-end tests live in the top-level `tests/` folder and are declared as test
//! targets of the `strata-frontend` package (see its Cargo.toml), so cargo always builds a
//! fresh `strata` binary for them and hands its path over in `CARGO_BIN_EXE_strata`.

#![allow(dead_code)] // each test file uses its own subset

use std::path::PathBuf;
use std::process::{Command, Output};

/// The `strata` binary of this build.
pub fn strata_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_strata"))
}

/// `strata ARGS...`, colours off, ready to be given more environment.
pub fn strata_command(args: &[&str]) -> Command {
    let mut c = Command::new(strata_bin());
    c.args(args).env("NO_COLOR", "1");
    c
}

/// Runs `strata ARGS...` to completion, colours off.
pub fn strata(args: &[&str]) -> Output {
    strata_command(args).output().expect("strata runs")
}

/// The repository root (for bundled files such as docs/examples).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Exit code, stdout and stderr of a finished command.
pub fn parts(out: &Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every file of a result directory is there and not empty (names in docs/FORMATS.md).
pub fn assert_result_files(dir: &std::path::Path) {
    for f in [
        "result.json",
        "tree.txt",
        "tree-3d.dot",
        "tree-2d.dot",
        "stacks.folded",
        "report.html",
    ] {
        let p = dir.join(f);
        assert!(
            p.metadata().map(|m| m.len() > 0).unwrap_or(false),
            "{f} missing or empty in {}",
            dir.display()
        );
    }
}

/// Copies of the strata binary and of `exe` in a fresh directory every user can read (the
/// target dir may be private): for tests that run them as another user. Returns the
/// directory (removed on drop), the strata copy and the `exe` copy.
pub fn public_copies(exe: &std::path::Path) -> (tempfile::TempDir, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("strata");
    copy_executable(&strata_bin(), &bin);
    let public_exe = dir.path().join(exe.file_name().unwrap());
    copy_executable(exe, &public_exe);
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, bin, public_exe)
}

/// Copies an executable in a child process (`cp`), never through a file descriptor of the
/// test's own: another test thread that forks while this process holds the copy open for
/// writing would carry that descriptor into its child until the child execs, and executing
/// the copy meanwhile fails with "Text file busy".
pub fn copy_executable(from: &std::path::Path, to: &std::path::Path) {
    let status = std::process::Command::new("cp")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// A process as tests see it in `/proc` (the host's view, nodes' namespaces included).
#[allow(dead_code)]
#[derive(Debug, Clone)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub comm: String,
    pub args: Vec<String>,
    pub env: std::collections::HashMap<String, String>,
}

#[allow(dead_code)]
impl Proc {
    /// The value after `flag` on its command line (`--index 3`).
    pub fn arg_after(&self, flag: &str) -> Option<&str> {
        let i = self.args.iter().position(|a| a == flag)?;
        self.args.get(i + 1).map(String::as_str)
    }

    pub fn env_is(&self, key: &str, value: &str) -> bool {
        self.env.get(key).is_some_and(|v| v == value)
    }
}

/// Every process that can be read now (those that vanish meanwhile are skipped).
#[allow(dead_code)]
pub fn processes() -> Vec<Proc> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let comm = stat[stat.find('(').map_or(0, |i| i + 1)..close].to_string();
        let ppid = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        let split = |bytes: Vec<u8>| -> Vec<String> {
            bytes
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        };
        let args = split(std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default());
        let env = split(std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default())
            .into_iter()
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k.to_string(), v.to_string()))
            })
            .collect();
        found.push(Proc {
            pid,
            ppid,
            comm,
            args,
            env,
        });
    }
    found
}

/// The TCP port `pid` listens on (from its socket inodes and /proc/net/tcp).
pub fn listening_port(pid: i32) -> Option<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .ok()?
        .flatten()
        .filter_map(|e| {
            let link = std::fs::read_link(e.path()).ok()?;
            let l = link.to_string_lossy();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // st 0A = LISTEN; field 9 = inode.
        (f.get(3) == Some(&"0A") && inodes.iter().any(|i| Some(&i.as_str()) == f.get(9)))
            .then(|| u16::from_str_radix(f[1].split(':').nth(1)?, 16).ok())?
    })
}
