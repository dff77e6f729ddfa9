//! Attaching to a thread (`PTRACE_SEIZE`) and, when the kernel refuses, why, in words
//! the user can act on: the per-task errors of a capture.

use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::ptrace;
use nix::unistd::Pid as NixPid;

use crate::procfs::{self, Pid};

/// Why a task could not be captured at all. These are per-task results, not a failed run:
/// one bad rank never hides the others.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    #[error("process {0} does not exist (or exited)")]
    NoSuchProcess(Pid),
    #[error("process {0} is a zombie (exited, not yet reaped by its parent)")]
    Zombie(Pid),
    #[error("process {pid} exited during the capture")]
    ExitedDuringCapture { pid: Pid },
    #[error(
        "process {pid} is already traced by pid {tracer} ({tracer_comm}): detach that debugger first"
    )]
    AlreadyTraced {
        pid: Pid,
        tracer: Pid,
        tracer_comm: String,
    },
    #[error(
        "process {pid} is being sampled by another strata session (pid {tracer}) that did not let it go in time: wait for that session to end, or end it"
    )]
    HeldByStrata { pid: Pid, tracer: Pid },
    #[error("process {pid} belongs to uid {owner}, not to you (uid {me}): run strata as its owner")]
    OtherUser { pid: Pid, owner: u32, me: u32 },
    #[error(
        "ptrace of process {pid} refused by kernel.yama.ptrace_scope={scope}: run `sysctl kernel.yama.ptrace_scope=0` (as root) or give strata CAP_SYS_PTRACE"
    )]
    PtraceScope { pid: Pid, scope: u32 },
    #[error(
        "ptrace of process {pid} not permitted ({errno}); is it setuid, or in another user namespace?"
    )]
    PermissionDenied { pid: Pid, errno: Errno },
    #[error("ptrace of process {pid} failed: {errno}")]
    Os { pid: Pid, errno: Errno },
    #[error("process {0} is a kernel thread: it has no user-space stack to show")]
    KernelThread(Pid),
    #[error("process {0} is not held (its hold deadline passed, or it was released)")]
    NotHeld(Pid),
    #[error("process {0} is already held by this capture session")]
    AlreadyHeld(Pid),
    #[error("the capture thread is gone")]
    WorkerGone,
}

/// `PTRACE_SEIZE`, tried again until `deadline` while another strata session's capture
/// thread traces the thread: such a capture lets go within microseconds (milliseconds on a
/// loaded machine), so two sessions on one job both get their samples. Any other tracer (a
/// debugger) is reported at once. A refusal whose tracer has already let go by the time
/// `TracerPid` is read (the other capture detached in between) is tried again at once, a
/// few times: a refusal for want of permission repeats with no tracer and is returned.
pub(super) fn seize_within(tid: Pid, deadline: Instant) -> Result<(), Errno> {
    const TRIES_WITHOUT_TRACER: u32 = 3;
    let mut untraced_refusals = 0;
    loop {
        match ptrace::seize(NixPid::from_raw(tid), ptrace::Options::empty()) {
            Err(Errno::EPERM) if Instant::now() < deadline => match procfs::tracer_pid(tid) {
                Ok(t) if t != 0 && is_strata_thread(t) => {
                    thread::sleep(Duration::from_micros(200));
                }
                Ok(0) if untraced_refusals < TRIES_WITHOUT_TRACER => untraced_refusals += 1,
                _ => return Err(Errno::EPERM),
            },
            other => return other,
        }
    }
}

/// Whether a thread is one of strata's capture threads (or another thread of a `strata`
/// process): `TracerPid` names the tracing thread.
fn is_strata_thread(tid: Pid) -> bool {
    procfs::stat(tid).is_ok_and(|s| s.comm == "strata" || s.comm.starts_with("strata-"))
}

/// Turns a refused `PTRACE_SEIZE` into an error the user can act on.
pub(super) fn diagnose_attach(pid: Pid, errno: Errno) -> CaptureError {
    if errno == Errno::ESRCH {
        return match procfs::stat(pid) {
            Ok(s) if s.state == 'Z' || s.state == 'X' => CaptureError::Zombie(pid),
            Ok(_) => CaptureError::Os { pid, errno },
            Err(_) => CaptureError::NoSuchProcess(pid),
        };
    }
    if errno != Errno::EPERM {
        return CaptureError::Os { pid, errno };
    }
    // The kernel also refuses (EPERM) to attach to a task that is exiting: look again a
    // moment later before blaming permissions.
    for wait_us in [0, 2000] {
        std::thread::sleep(Duration::from_micros(wait_us));
        match procfs::stat(pid) {
            Err(_) => return CaptureError::ExitedDuringCapture { pid },
            Ok(s) if s.state == 'Z' || s.state == 'X' => {
                return CaptureError::ExitedDuringCapture { pid };
            }
            Ok(_) => {}
        }
    }
    if procfs::maps(pid).is_ok_and(|m| m.is_empty()) {
        return CaptureError::KernelThread(pid);
    }
    if let Ok(tracer_tid) = procfs::tracer_pid(pid)
        && tracer_tid != 0
    {
        // TracerPid names the tracing *thread*; the user knows its process.
        let tracer = procfs::status_field(tracer_tid, "Tgid")
            .ok()
            .flatten()
            .and_then(|t| t.parse().ok())
            .unwrap_or(tracer_tid);
        let tracer_comm = procfs::stat(tracer).map(|s| s.comm).unwrap_or_default();
        if is_strata_thread(tracer_tid) {
            return CaptureError::HeldByStrata { pid, tracer };
        }
        return CaptureError::AlreadyTraced {
            pid,
            tracer,
            tracer_comm,
        };
    }
    let me = nix::unistd::geteuid().as_raw();
    if let Ok(owner) = procfs::uid(pid)
        && owner != me
        && me != 0
    {
        return CaptureError::OtherUser { pid, owner, me };
    }
    if let Some(scope) = ptrace_scope()
        && scope > 0
    {
        return CaptureError::PtraceScope { pid, scope };
    }
    CaptureError::PermissionDenied { pid, errno }
}

/// `kernel.yama.ptrace_scope`, when the Yama module is present.
pub fn ptrace_scope() -> Option<u32> {
    std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope")
        .ok()?
        .trim()
        .parse()
        .ok()
}
