//! A hung Open MPI job for end-to-end tests: `mpi_ring.c` (or any program printing
//! `rank R/N pid P host H` lines) under `mpirun`, killed with its process group on drop.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A hung 8-rank ring under mpirun, killed with its process group on Drop.
pub struct MpiJob {
    pub mpirun: Child,
    pub ranks: Vec<i32>,
}

impl MpiJob {
    pub fn ring(np: usize) -> MpiJob {
        let exe = crate::target::compile_with("mpicc", "mpi_ring.c", "mpi_ring", &["-O1", "-g"]);
        MpiJob::start(&exe, np)
    }

    pub fn start(exe: &std::path::Path, np: usize) -> MpiJob {
        MpiJob::start_with_args(exe, np, &[])
    }

    /// [`MpiJob::start`] with arguments for the program.
    pub fn start_with_args(exe: &std::path::Path, np: usize, args: &[&str]) -> MpiJob {
        let mut mpirun = Command::new("mpirun");
        mpirun.process_group(0);
        MpiJob::launch(mpirun, exe, np, args)
    }

    /// [`MpiJob::start`] in a session of its own, as a job started from a batch script or
    /// another terminal is: the kernel then schedules its ranks as a group apart from the
    /// test's processes and strata's (`sched_autogroup`), which is how spinning ranks
    /// starved strata. mpirun is still the process group's leader.
    pub fn start_in_own_session(exe: &std::path::Path, np: usize) -> MpiJob {
        // setsid(1) execs mpirun in place (it is not a group leader yet): same pid.
        let mut setsid = Command::new("setsid");
        setsid.arg("mpirun");
        MpiJob::launch(setsid, exe, np, &[])
    }

    fn launch(mut mpirun: Command, exe: &std::path::Path, np: usize, args: &[&str]) -> MpiJob {
        mpirun
            .args(["--oversubscribe", "-np", &np.to_string()])
            .arg(exe)
            .args(args)
            // Ranks that wait yield the core now and then: 8 spinning ranks on 2 cores
            // would starve everything else on a CI machine.
            .env("OMPI_MCA_mpi_yield_when_idle", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
        MpiJob::spawn(mpirun, np)
    }

    /// `np` ranks of `exe` under any MPI's `launcher` (its own options given), which
    /// takes `-n N PROGRAM` (Open MPI's mpirun and prterun, hydra's mpiexec), in a
    /// process group of its own.
    pub fn launch_with(launcher: Command, exe: &std::path::Path, np: usize) -> MpiJob {
        MpiJob::launch_with_args(launcher, exe, np, &[])
    }

    /// [`MpiJob::launch_with`] with arguments for the program.
    pub fn launch_with_args(
        mut launcher: Command,
        exe: &std::path::Path,
        np: usize,
        args: &[&str],
    ) -> MpiJob {
        launcher
            .process_group(0)
            .args(["-n", &np.to_string()])
            .arg(exe)
            .args(args);
        MpiJob::spawn(launcher, np)
    }

    fn spawn(mut mpirun: Command, np: usize) -> MpiJob {
        let program = mpirun.get_program().to_string_lossy().into_owned();
        let mut mpirun = mpirun
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e} (tests/run-all.sh installs the MPIs)"));
        // Lines come through a thread, so that a job that stops printing fails the test
        // at the deadline instead of blocking it.
        let out = BufReader::new(mpirun.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut ranks = vec![0; np];
        let mut seen = 0;
        let end = Instant::now() + Duration::from_secs(60);
        while let Ok(line) = lines.recv_timeout(end.saturating_duration_since(Instant::now())) {
            // "rank 3/8 pid 1234 host vm"
            let w: Vec<&str> = line.split_whitespace().collect();
            if w.len() >= 4 && w[0] == "rank" && w[2] == "pid" {
                let r: usize = w[1].split('/').next().unwrap().parse().unwrap();
                ranks[r] = w[3].parse().unwrap();
                seen += 1;
                if seen == np {
                    break;
                }
            }
        }
        if seen < np {
            let job = MpiJob {
                mpirun,
                ranks: ranks.into_iter().filter(|&r| r > 0).collect(),
            };
            drop(job);
            panic!("{program}: {seen} of {np} ranks started within 60 s");
        }
        // Let the ranks reach their waits.
        std::thread::sleep(Duration::from_millis(500));
        MpiJob { mpirun, ranks }
    }
}

impl Drop for MpiJob {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.mpirun.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        for &r in &self.ranks {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(r),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.mpirun.wait();
    }
}

/// The class lines of a text rendering: `  1:[1]      … > main > sleep ...`.
pub fn class_lines(out: &str) -> Vec<String> {
    out.lines()
        .skip_while(|l| !l.contains("equivalence class"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

/// The three classes of the hung ring of `ranks` ranks: rank 1 in `sleep`, rank 2 in
/// `MPI_Waitall`, the others in `MPI_Barrier`. Returns the class lines.
pub fn assert_ring_classes(out: &str, ranks: usize) -> Vec<String> {
    let classes = class_lines(out);
    assert_eq!(classes.len(), 3, "three classes expected:\n{out}");
    let class = |prefix: &str| {
        classes
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no class {prefix}:\n{out}"))
            .clone()
    };
    assert!(class("1:[1] ").contains("sleep"), "{out}");
    assert!(class("1:[2] ").contains("MPI_Waitall"), "{out}");
    let rest = format!("{}:[0,3-{}] ", ranks - 2, ranks - 1);
    assert!(class(&rest).contains("MPI_Barrier"), "{out}");
    classes
}
