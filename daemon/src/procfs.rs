//! Small, exact readers of `/proc`: everything the daemon learns about a process without
//! ptrace. Every reader returns an error (never panics) when the process has gone, because
//! processes exit at any moment.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A process or thread id.
pub type Pid = i32;

fn proc_path(pid: Pid) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}"))
}

fn bad(what: &str, pid: Pid) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("unexpected /proc/{pid}/{what} format"),
    )
}

/// The fields of `/proc/PID/stat` (or `/proc/PID/task/TID/stat`) the daemon uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    pub pid: Pid,
    /// `comm`, without the parentheses (may contain spaces and parentheses itself).
    pub comm: String,
    /// R, S, D, T, t, Z, X, I, ...
    pub state: char,
    pub ppid: Pid,
    /// Start time in clock ticks after boot: with the pid, identifies a process across
    /// pid reuse.
    pub start_time: u64,
    /// Virtual memory size in bytes (0 when the kernel shows none, as for a zombie).
    pub vsize: u64,
}

fn parse_stat(text: &str, pid: Pid) -> io::Result<Stat> {
    // comm is the text between the first '(' and the *last* ')'.
    let open = text.find('(').ok_or_else(|| bad("stat", pid))?;
    let close = text.rfind(')').ok_or_else(|| bad("stat", pid))?;
    let id = text[..open].trim().parse().map_err(|_| bad("stat", pid))?;
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let field = |n: usize| rest.get(n - 3).copied().ok_or_else(|| bad("stat", pid));
    Ok(Stat {
        pid: id,
        comm,
        state: field(3)?.chars().next().ok_or_else(|| bad("stat", pid))?,
        ppid: field(4)?.parse().map_err(|_| bad("stat", pid))?,
        start_time: field(22)?.parse().map_err(|_| bad("stat", pid))?,
        vsize: field(23).ok().and_then(|f| f.parse().ok()).unwrap_or(0),
    })
}

/// `/proc/PID/stat`.
pub fn stat(pid: Pid) -> io::Result<Stat> {
    parse_stat(&fs::read_to_string(proc_path(pid).join("stat"))?, pid)
}

/// `/proc/PID/task/TID/stat`.
pub fn thread_stat(pid: Pid, tid: Pid) -> io::Result<Stat> {
    parse_stat(
        &fs::read_to_string(proc_path(pid).join(format!("task/{tid}/stat")))?,
        tid,
    )
}

/// `/proc/PID/task/TID/wchan`: the kernel function a sleeping thread waits in, if any.
pub fn wchan(pid: Pid, tid: Pid) -> Option<String> {
    let w = fs::read_to_string(proc_path(pid).join(format!("task/{tid}/wchan"))).ok()?;
    let w = w.trim();
    (!w.is_empty() && w != "0").then(|| w.to_string())
}

/// `/proc/PID/task/TID/syscall`: the number of the system call a blocked thread is in;
/// `None` when it runs, is blocked outside a system call, or the file cannot be read.
pub fn blocked_syscall(pid: Pid, tid: Pid) -> Option<u64> {
    let s = fs::read_to_string(proc_path(pid).join(format!("task/{tid}/syscall"))).ok()?;
    let first = s.split_whitespace().next()?;
    // "running", or "-1 sp pc" for a thread blocked outside a system call.
    first
        .parse::<i64>()
        .ok()
        .and_then(|n| u64::try_from(n).ok())
}

/// `system call epoll_wait`, or `system call 123` for a number without a name here.
pub fn syscall_label(nr: u64) -> String {
    match syscall_name(nr) {
        Some(name) => format!("system call {name}"),
        None => format!("system call {nr}"),
    }
}

/// The x86-64 name of the system calls a hung program is usually blocked in (the table is
/// not complete on purpose: an unknown number is shown as a number).
pub fn syscall_name(nr: u64) -> Option<&'static str> {
    Some(match nr {
        0 => "read",
        1 => "write",
        7 => "poll",
        17 => "pread64",
        18 => "pwrite64",
        19 => "readv",
        20 => "writev",
        23 => "select",
        24 => "sched_yield",
        34 => "pause",
        35 => "nanosleep",
        43 => "accept",
        44 => "sendto",
        45 => "recvfrom",
        46 => "sendmsg",
        47 => "recvmsg",
        61 => "wait4",
        72 => "fcntl",
        74 => "fsync",
        128 => "rt_sigtimedwait",
        130 => "rt_sigsuspend",
        202 => "futex",
        232 => "epoll_wait",
        219 => "restart_syscall",
        230 => "clock_nanosleep",
        247 => "waitid",
        257 => "openat",
        270 => "pselect6",
        271 => "ppoll",
        281 => "epoll_pwait",
        288 => "accept4",
        299 => "recvmmsg",
        441 => "epoll_pwait2",
        449 => "futex_waitv",
        _ => return None,
    })
}

/// The thread ids of a process, ascending (the main thread's tid equals the pid).
pub fn threads(pid: Pid) -> io::Result<Vec<Pid>> {
    let mut out: Vec<Pid> = fs::read_dir(proc_path(pid).join("task"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The environment the process was started with (`/proc/PID/environ`; later `setenv`
/// calls are not visible). Readable only by the process's owner (or root).
pub fn environ(pid: Pid) -> io::Result<HashMap<String, String>> {
    let bytes = fs::read(proc_path(pid).join("environ"))?;
    Ok(bytes
        .split(|&b| b == 0)
        .filter_map(|kv| {
            let kv = String::from_utf8_lossy(kv);
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect())
}

/// A line of `/proc/PID/status` by key (`TracerPid`, `Uid`, ...), value trimmed.
pub fn status_field(pid: Pid, key: &str) -> io::Result<Option<String>> {
    let text = fs::read_to_string(proc_path(pid).join("status"))?;
    Ok(text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k == key).then(|| v.trim().to_string())
    }))
}

/// The pid of the process tracing `pid`, or 0.
pub fn tracer_pid(pid: Pid) -> io::Result<Pid> {
    status_field(pid, "TracerPid")?
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("status", pid))
}

/// The real uid of the process.
pub fn uid(pid: Pid) -> io::Result<u32> {
    status_field(pid, "Uid")?
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| bad("status", pid))
}

/// The executable (`/proc/PID/exe`); ends in ` (deleted)` when the file was removed.
pub fn exe(pid: Pid) -> io::Result<PathBuf> {
    fs::read_link(proc_path(pid).join("exe"))
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// `r-xp` and the like.
    pub perms: String,
    /// Offset of the mapping in the file.
    pub offset: u64,
    /// The mapped file, `[stack]`, `[vdso]`, ... or empty for anonymous memory.
    pub path: String,
}

impl Mapping {
    pub fn is_executable(&self) -> bool {
        self.perms.as_bytes().get(2) == Some(&b'x')
    }
}

fn parse_maps(text: &str, pid: Pid) -> io::Result<Vec<Mapping>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut parts = line.splitn(6, ' ');
            let range = parts.next().ok_or_else(|| bad("maps", pid))?;
            let perms = parts.next().ok_or_else(|| bad("maps", pid))?.to_string();
            let offset = parts.next().ok_or_else(|| bad("maps", pid))?;
            let _dev = parts.next();
            let _inode = parts.next();
            let path = parts.next().unwrap_or("").trim_start().to_string();
            let (s, e) = range.split_once('-').ok_or_else(|| bad("maps", pid))?;
            let hex = |t: &str| u64::from_str_radix(t, 16).map_err(|_| bad("maps", pid));
            Ok(Mapping {
                start: hex(s)?,
                end: hex(e)?,
                perms,
                offset: hex(offset)?,
                path,
            })
        })
        .collect()
}

/// `/proc/PID/maps`.
pub fn maps(pid: Pid) -> io::Result<Vec<Mapping>> {
    parse_maps(&fs::read_to_string(proc_path(pid).join("maps"))?, pid)
}

/// Every process id in `/proc` (a snapshot: processes come and go while it is used).
pub fn all_pids() -> io::Result<Vec<Pid>> {
    all_pids_in(Path::new("/proc"))
}

fn all_pids_in(root: &Path) -> io::Result<Vec<Pid>> {
    let mut out: Vec<Pid> = fs::read_dir(root)?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_handles_odd_comm() {
        let s = parse_stat(
            "42 (a) b (c)) S 1 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 9876 0 0",
            42,
        )
        .unwrap();
        assert_eq!(s.comm, "a) b (c)");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.start_time, 9876);
        assert!(parse_stat("garbage", 1).is_err());
    }

    #[test]
    fn reads_this_process() {
        let me = std::process::id() as Pid;
        let s = stat(me).unwrap();
        assert_eq!(s.pid, me);
        // The process's main thread may be waiting for the test threads; this thread runs.
        let tid = nix::unistd::gettid().as_raw();
        assert_eq!(thread_stat(me, tid).unwrap().state, 'R');
        assert!(threads(me).unwrap().contains(&me));
        assert_eq!(tracer_pid(me).unwrap(), 0);
        assert_eq!(uid(me).unwrap(), nix_uid());
        assert!(environ(me).unwrap().contains_key("PATH") || std::env::var_os("PATH").is_none());
        let maps = maps(me).unwrap();
        assert!(
            maps.iter()
                .any(|m| m.is_executable() && m.path == exe(me).unwrap().to_string_lossy())
        );
        assert!(all_pids().unwrap().contains(&me));
    }

    fn nix_uid() -> u32 {
        // The test's own uid through another route than /proc/self/status.
        std::fs::metadata("/proc/self")
            .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
            .unwrap()
    }

    #[test]
    fn gone_processes_are_errors_not_panics() {
        assert!(stat(i32::MAX).is_err());
        assert!(threads(i32::MAX).is_err());
        assert!(maps(i32::MAX).is_err());
        assert_eq!(wchan(i32::MAX, i32::MAX), None);
    }
}
