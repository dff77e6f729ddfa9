//! The scheduling priority of strata's own threads.
//!
//! A hung MPI job busy-polls: every rank spins on its core. On a node whose cores are all
//! taken by spinning ranks, the kernel's fair scheduler has been seen (Linux 6.18, 2 cores,
//! 2 spinning ranks) to leave a runnable strata thread without a core for 10 to 90 s. A
//! daemon starved that long misses its heartbeats and is declared lost with all its ranks;
//! a capture thread starved between `PTRACE_INTERRUPT` and `waitpid` misses its deadline;
//! `nice -5` did not help. So the threads that sample, merge and keep the links alive run
//! under `SCHED_RR` at the lowest real-time priority when the system allows it (root,
//! `CAP_SYS_NICE`, or an `RLIMIT_RTPRIO` of at least 1), and under the normal policy
//! otherwise, silently: nothing else changes.
//!
//! Why this is safe for the job: strata's threads mostly sleep (they wait for a sample's
//! moment, a stop or a message); the kernel caps all real-time threads together at 95% of
//! each second (`kernel.sched_rt_runtime_us`), so even a strata bug that spun could not
//! freeze the node; and `SCHED_RESET_ON_FORK` means nothing strata starts (a daemon
//! launched locally, `srun`, gdb, the demo's ranks) and no thread it did not raise itself
//! inherits the policy.
//!
//! `STRATA_REALTIME=0` in the environment keeps every thread at the normal policy.

use nix::libc;

/// The environment variable that turns the raise off (`0`, `no`, `off`, `false`).
pub const REALTIME_ENV: &str = "STRATA_REALTIME";

/// What [`raise_current_thread`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Priority {
    /// The thread now runs under `SCHED_RR` at priority 1.
    RealTime,
    /// The user turned it off ([`REALTIME_ENV`]).
    Disabled,
    /// The system refused (no privilege, no real-time budget): the normal policy stays.
    Refused,
}

/// Whether the user turned real-time scheduling off.
pub fn disabled_by_env() -> bool {
    std::env::var(REALTIME_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "no" | "off" | "false"
        )
    })
}

/// Spawns a named thread that raises itself ([`raise_current_thread`]) before running `f`.
/// Every thread a strata process starts must be raised: a thread at the normal policy
/// starved by spinning ranks not only does its own work late, it also holds up the process's
/// exit (each thread must run to die), and a join on it waits as long: one attach took 37 s
/// to reap its daemon and another 36 s to clear a progress bar's ticker thread that way.
pub fn spawn_raised<F, T>(name: &str, f: F) -> std::io::Result<std::thread::JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            raise_current_thread();
            f()
        })
}

/// Moves the calling thread (not the whole process: Linux schedules threads) to
/// `SCHED_RR` priority 1 with `SCHED_RESET_ON_FORK`, when allowed. Threads created later
/// start with the normal policy and call this themselves (tokio's `on_thread_start`, the
/// capture threads).
pub fn raise_current_thread() -> Priority {
    if disabled_by_env() {
        return Priority::Disabled;
    }
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    #[allow(unsafe_code)]
    let r =
        unsafe { libc::sched_setscheduler(0, libc::SCHED_RR | libc::SCHED_RESET_ON_FORK, &param) };
    if r == 0 {
        Priority::RealTime
    } else {
        Priority::Refused
    }
}

/// Makes a process strata starts for itself (a local daemon or commnode) begin under the
/// raised policy, when the calling thread has it: a process that first had to wait for a
/// core at the normal policy could be starved before it ever reaches
/// [`raise_current_thread`] (seen: a local daemon that never connected within 20 s).
/// Never used for other programs (gdb, srun, the demo's ranks).
pub fn start_raised(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    if disabled_by_env() || current_policy() != libc::SCHED_RR {
        return;
    }
    // SAFETY: the hook runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed; it makes one system call and allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            let param = libc::sched_param { sched_priority: 1 };
            // A refusal leaves the normal policy: the child raises itself again later.
            libc::sched_setscheduler(0, libc::SCHED_RR | libc::SCHED_RESET_ON_FORK, &param);
            Ok(())
        });
    }
}

/// Moves the calling thread to the lowest priority (`SCHED_IDLE`, nice 19), for work
/// nobody waits on (a debug index built for the next attach): it never takes a core from
/// the job's ranks or from strata's own sampling.
pub fn lower_current_thread() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param. Refusals leave
    // the normal priority, which is still correct.
    #[allow(unsafe_code)]
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_IDLE, &param);
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}

/// The calling thread's scheduling policy, without the reset-on-fork flag.
pub fn current_policy() -> i32 {
    // SAFETY: pid 0 is the calling thread.
    #[allow(unsafe_code)]
    let p = unsafe { libc::sched_getscheduler(0) };
    p & !libc::SCHED_RESET_ON_FORK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raised_threads_do_not_hand_the_policy_to_new_threads_or_children() {
        // In a thread of its own, so that the test harness's threads keep their policy.
        std::thread::spawn(|| {
            let got = raise_current_thread();
            if got != Priority::RealTime {
                // Without privilege (the fast tier runs as any user) the raise is refused
                // and the policy stays normal: that is the documented fallback.
                assert_eq!(current_policy(), libc::SCHED_OTHER);
                return;
            }
            assert_eq!(current_policy(), libc::SCHED_RR);
            let child_policy = std::thread::spawn(current_policy).join().unwrap();
            assert_eq!(
                child_policy,
                libc::SCHED_OTHER,
                "a new thread inherited SCHED_RR"
            );
            let out = std::process::Command::new("sh")
                .args(["-c", "cat /proc/self/sched | grep '^policy'"])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let policy = text.split_whitespace().last();
            assert_eq!(
                policy,
                Some("0"),
                "a child process inherited SCHED_RR: {text}"
            );
        })
        .join()
        .unwrap();
    }
}
