//! `strata demo`: a hung "job" that needs no MPI and no cluster, attached like a real one.
//!
//! The job is N copies of this binary (`strata demo-rank`, hidden) passing a token around a
//! ring of pipes, each rank's stdin reading from its left neighbour and its stdout writing to
//! its right one, the way the classic STAT test ring passes MPI messages: every rank sends
//! its token, then waits for its neighbour's, then waits in a "barrier". Rank 1 is stuck
//! computing before it sends, so rank 2 waits for a token that never comes and everyone
//! else has moved on to the barrier: three classes, found by sampling the live processes
//! through the same capture, unwinding and symbolization as any job.
//!
//! The ranks die with strata (`PR_SET_PDEATHSIG`), so nothing is left behind even if strata
//! is killed.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::{DemoArgs, DemoRankArgs};
use crate::commands::attach;
use crate::commands::attach::Presentation;
use crate::exit::Exit;
use crate::failure::Failure;
use strata_proto::sampling::Sampling;
use strata_session::request::{AttachRequest, JobTarget, ResourceManager, TreeShape};

/// The rank that is stuck in its computation.
const STUCK_RANK: u32 = 1;

pub fn run(args: DemoArgs) -> Result<Exit, Failure> {
    let n = args.ranks;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::internal(format!("cannot find strata's binary: {e}")))?;
    let job = Job::start(&exe, n)?;
    eprintln!(
        "strata: demo job of {n} ranks (pids {}) hung: rank {STUCK_RANK} never sends its token",
        job.pids()
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let req = AttachRequest {
        rm: Some(ResourceManager::Local),
        sampling: Sampling {
            samples: args.samples,
            interval: args.interval,
            ..Sampling::default()
        },
        tree: TreeShape {
            daemons: Some(args.daemons.min(n)),
            fanout: Some(args.fanout),
            ..TreeShape::default()
        },
        stacks_of: args.rank.clone(),
        loop_variables: args.show.progress,
        source_dirs: args.show.source_dir.clone(),
        ..AttachRequest::new(JobTarget::Pids(job.pids()))
    };
    let shown = Presentation {
        json: args.json,
        interactive: args.interactive,
        no_files: args.output.is_none(),
        output: args.output,
        show: args.show,
    };
    let exit = attach::run_request(req, shown, Some(format!("demo-ring-{n}")));
    drop(job);
    exit
}

/// The rank processes; killed and reaped on drop.
struct Job {
    children: Vec<Child>,
}

impl Job {
    fn start(exe: &std::path::Path, n: u32) -> Result<Job, Failure> {
        let io = |e: std::io::Error| Failure::internal(format!("cannot start the demo job: {e}"));
        // pipes[i]: rank i writes, rank i+1 reads.
        let mut pipes: Vec<(Option<OwnedFd>, Option<OwnedFd>)> = (0..n)
            .map(|_| {
                nix::unistd::pipe()
                    .map(|(r, w)| (Some(r), Some(w)))
                    .map_err(|e| io(e.into()))
            })
            .collect::<Result<_, _>>()?;
        let mut job = Job {
            children: Vec::new(),
        };
        for rank in 0..n {
            let prev = ((rank + n - 1) % n) as usize;
            let stdin = pipes[prev].0.take().expect("each read end once");
            let stdout = pipes[rank as usize].1.take().expect("each write end once");
            let child = Command::new(exe)
                .args(["demo-rank", "--rank", &rank.to_string()])
                .stdin(Stdio::from(stdin))
                .stdout(Stdio::from(stdout))
                .stderr(Stdio::null())
                .spawn()
                .map_err(io)?;
            job.children.push(child);
        }
        // Every rank is blocked (stuck rank included: it sleeps) before sampling starts.
        let end = Instant::now() + Duration::from_secs(10);
        while !job.pids().iter().all(|&p| all_threads_sleep(p)) {
            if Instant::now() > end {
                return Err(Failure::new(
                    Exit::Internal,
                    "the demo job did not reach its hang within 10 s",
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(job)
    }

    fn pids(&self) -> Vec<i32> {
        self.children.iter().map(|c| c.id() as i32).collect()
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn all_threads_sleep(pid: i32) -> bool {
    strata_daemon::procfs::threads(pid).is_ok_and(|tids| {
        tids.iter()
            .all(|&t| strata_daemon::procfs::thread_stat(pid, t).is_ok_and(|s| s.state == 'S'))
    })
}

/// One rank of the demo job (the hidden `strata demo-rank`). Plain system calls on the
/// standard descriptors (no buffered std I/O), so that the stacks read like a C program's.
pub fn rank_main(args: DemoRankArgs) -> Result<Exit, Failure> {
    // Die with the demo (or the test) that started us, however it ends.
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
    let next = std::io::stdout();
    let prev = std::io::stdin();
    if args.rank == STUCK_RANK {
        compute_forever();
    }
    send_token(next.as_fd(), args.rank);
    receive_token(prev.as_fd());
    barrier_wait(prev.as_fd());
    Ok(Exit::Complete)
}

#[inline(never)]
fn compute_forever() {
    loop {
        nix::unistd::sleep(3600);
    }
}

#[inline(never)]
fn send_token(next: BorrowedFd<'_>, rank: u32) {
    let _ = nix::unistd::write(next, &rank.to_le_bytes());
}

#[inline(never)]
fn receive_token(prev: BorrowedFd<'_>) {
    let mut token = [0u8; 4];
    let _ = nix::unistd::read(prev, &mut token);
}

/// Nobody ever writes again: the rank waits here until the demo ends (EOF or death).
#[inline(never)]
fn barrier_wait(prev: BorrowedFd<'_>) {
    let mut byte = [0u8; 1];
    while matches!(nix::unistd::read(prev, &mut byte), Ok(n) if n > 0) {}
}
