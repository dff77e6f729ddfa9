//! Task discovery against real processes this test spawns: `sleep` (and `tail`) with rank
//! variables in their environment, `sh` wrappers that fork or exec, fake launcher trees.
//! Every Slurm test uses a job id of its own so that tests running in parallel (and other
//! test binaries) never see each other's processes.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid as NixPid;
use strata_daemon::discovery::{
    Discovery, DiscoveryError, Options, RankSource, Selector, SlurmStep, discover, discover_share,
};
use strata_daemon::procfs::{self, Pid};

/// Kills every spawned process group on Drop, so that a failing assertion leaves no
/// `sleep` behind (each spawned command leads its own process group, which its wrapped
/// children share).
#[derive(Default)]
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, cmd: &mut Command) -> Pid {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("spawn test process");
        let pid = child.id() as Pid;
        self.0.push(child);
        pid
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = killpg(NixPid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
    }
}

/// A command with a clean environment (the test may itself run inside a Slurm job, whose
/// variables must not leak into the fixtures) plus `vars`.
fn cmd(prog: &str, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut c = Command::new(prog);
    c.args(args).env_clear().env("PATH", "/usr/bin:/bin");
    for (k, v) in vars {
        c.env(k, v);
    }
    c
}

fn sleeper(vars: &[(&str, &str)]) -> Command {
    cmd("sleep", &["60"], vars)
}

/// A Slurm job id no other test uses.
fn unique_job() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    1_000_000_000 + (std::process::id() % 1_000_000) * 1000 + NEXT.fetch_add(1, Ordering::Relaxed)
}

fn me() -> Options {
    Options {
        uid: nix::unistd::getuid().as_raw(),
        own_step: None,
    }
}

/// All descendants of `root`, from one /proc snapshot.
fn descendants(root: Pid) -> Vec<Pid> {
    let parent: HashMap<Pid, Pid> = procfs::all_pids()
        .unwrap()
        .into_iter()
        .filter_map(|p| Some((p, procfs::stat(p).ok()?.ppid)))
        .collect();
    let mut out: Vec<Pid> = parent
        .keys()
        .copied()
        .filter(|&p| {
            let mut cur = p;
            while let Some(&pp) = parent.get(&cur) {
                if pp == root {
                    return true;
                }
                if pp <= 1 {
                    return false;
                }
                cur = pp;
            }
            false
        })
        .collect();
    out.sort_unstable();
    out
}

fn exe_name(pid: Pid) -> String {
    procfs::exe(pid)
        .ok()
        .and_then(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .unwrap_or_default()
}

/// Waits until `root` has `n` descendants that have exec'd one of `names` (a wrapper's
/// children exist a moment before they exec, with the wrapper's exe and environment).
fn wait_for(root: Pid, names: &[&str], n: usize) -> Vec<Pid> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        // The kernel names the new executable a moment before it sets up the new
        // environment: a process counts once its environment can be read too.
        let found: Vec<Pid> = descendants(root)
            .into_iter()
            .filter(|&p| names.contains(&exe_name(p).as_str()))
            .filter(|&p| procfs::environ(p).is_ok_and(|e| !e.is_empty()))
            .collect();
        if found.len() == n {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "{root} has {found:?} of {n} {names:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn ranks(d: &Discovery) -> Vec<(u32, Pid)> {
    d.tasks.iter().map(|t| (t.rank, t.pid)).collect()
}

fn slurm(job: u32, step: Option<u32>) -> Selector {
    Selector::Slurm { job, step }
}

#[test]
fn rank_precedence_ompi_pmix_pmi_then_slurm_procid_with_step() {
    let mut p = Procs::default();
    let job = unique_job().to_string();
    let j = job.as_str();
    let ompi = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", j),
        ("SLURM_STEP_ID", "0"),
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("PMIX_RANK", "10"),
        ("PMI_RANK", "20"),
        ("SLURM_PROCID", "30"),
    ]));
    let pmix = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", j),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_STEP_NUM_TASKS", "4"),
        ("PMIX_RANK", "1"),
        ("PMI_RANK", "21"),
        ("SLURM_PROCID", "31"),
    ]));
    let pmi = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", j),
        ("SLURM_STEP_ID", "0"),
        ("PMI_RANK", "2"),
        ("PMI_SIZE", "4"),
        ("SLURM_PROCID", "32"),
    ]));
    let procid = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", j),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_STEP_NUM_TASKS", "4"),
        ("SLURM_PROCID", "3"),
    ]));
    // No step id: like mpirun or the batch shell inside sbatch, SLURM_PROCID is no rank.
    p.spawn(&mut sleeper(&[("SLURM_JOB_ID", j), ("SLURM_PROCID", "4")]));

    let d = discover(&slurm(job.parse().unwrap(), None), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, ompi), (1, pmix), (2, pmi), (3, procid)]);
    let sources: Vec<RankSource> = d.tasks.iter().map(|t| t.rank_source).collect();
    assert_eq!(
        sources,
        vec![
            RankSource::OmpiCommWorldRank,
            RankSource::PmixRank,
            RankSource::PmiRank,
            RankSource::SlurmProcid
        ]
    );
    assert!(d.tasks.iter().all(|t| t.job_size == Some(4)), "{d:?}");
    for t in &d.tasks {
        assert_eq!(t.exe.file_name().unwrap(), "sleep");
        assert_eq!(t.start_time, procfs::stat(t.pid).unwrap().start_time);
    }
    assert!(d.problems.is_empty() && d.duplicates.is_empty(), "{d:?}");
}

#[test]
fn slurm_job_and_step_filtering() {
    let mut p = Procs::default();
    let job = unique_job();
    let (j, other) = (job.to_string(), (job + 500).to_string());
    let step = |s: &str, rank: &str, jid: &str| {
        sleeper(&[
            ("SLURM_JOB_ID", jid),
            ("SLURM_STEP_ID", s),
            ("SLURM_PROCID", rank),
            ("PMIX_RANK", rank),
        ])
    };
    let s0r0 = p.spawn(&mut step("0", "0", &j));
    let s0r1 = p.spawn(&mut step("0", "1", &j));
    let s1r0 = p.spawn(&mut step("1", "0", &j));
    p.spawn(&mut step("0", "2", &other));
    // An mpirun rank on the batch host: job id, no step id.
    let batch = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", &j),
        ("SLURM_PROCID", "0"),
        ("OMPI_COMM_WORLD_RANK", "5"),
    ]));

    let d = discover(&slurm(job, Some(0)), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, s0r0), (1, s0r1)]);
    let d = discover(&slurm(job, Some(1)), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, s1r0)]);

    // The whole job: two steps both have a rank 0, which is reported, not guessed.
    let d = discover(&slurm(job, None), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(1, s0r1), (5, batch)]);
    assert_eq!(d.duplicates.len(), 1);
    assert_eq!(d.duplicates[0].rank, 0);
    let mut both = vec![s0r0, s1r0];
    both.sort_unstable();
    assert_eq!(d.duplicates[0].pids, both);

    // The caller's own step (where strata's daemons run) is left out.
    let opts = Options {
        own_step: Some(SlurmStep { job, step: 1 }),
        ..me()
    };
    let d = discover(&slurm(job, None), &opts).unwrap();
    assert_eq!(ranks(&d), vec![(0, s0r0), (1, s0r1), (5, batch)]);
    assert!(d.duplicates.is_empty());

    // Empty results say what was looked for.
    let err = discover(&slurm(job + 999, None), &me()).unwrap_err();
    assert!(matches!(err, DiscoveryError::NoTasks { .. }));
    assert!(
        err.to_string().starts_with(&format!(
            "no process of Slurm job {} on this node",
            job + 999
        )),
        "{err}"
    );
    let err = discover(&slurm(job, Some(7)), &me()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&format!("Slurm step {job}.7")), "{msg}");
    assert!(msg.contains("step(s) 0, 1"), "{msg}");
}

#[test]
fn serial_pids_are_ranked_in_the_order_given() {
    let mut p = Procs::default();
    let a = p.spawn(&mut sleeper(&[]));
    let b = p.spawn(&mut cmd("tail", &["-f", "/dev/null"], &[]));
    let c = p.spawn(&mut sleeper(&[("OMPI_COMM_WORLD_RANK", "7")]));
    let me_pid = std::process::id() as Pid;
    let d = discover(&Selector::Pids(vec![c, a, me_pid, b, a]), &me()).unwrap();
    // Ranks are positions in the list, whatever the environment says.
    assert_eq!(ranks(&d), vec![(0, c), (1, a), (3, b)]);
    assert!(d.tasks.iter().all(|t| t.rank_source == RankSource::Order));
    assert_eq!(d.tasks[2].exe.file_name().unwrap(), "tail");
    let msgs: Vec<String> = d.problems.iter().map(|p| p.to_string()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert!(
        msgs.contains(&format!("pid {a}: given twice; kept as rank 1")),
        "{msgs:?}"
    );
    assert!(
        msgs.contains(&format!("pid {me_pid}: is this strata process itself")),
        "{msgs:?}"
    );
}

/// Daemons sharing one host's given pids inspect only their own block of the list (a pid
/// outside it is not even read), and together they find what one daemon finds: the same
/// ranks (positions in the whole list) and the same problems, each reported once.
#[test]
fn daemons_sharing_the_pids_each_inspect_their_block() {
    let mut p = Procs::default();
    let a = p.spawn(&mut sleeper(&[]));
    let b = p.spawn(&mut cmd("tail", &["-f", "/dev/null"], &[]));
    let c = p.spawn(&mut sleeper(&[]));
    let mut gone = cmd("true", &[], &[]).spawn().unwrap();
    let gone_pid = gone.id() as Pid;
    gone.wait().unwrap();
    let me_pid = std::process::id() as Pid;
    let pids = Selector::Pids(vec![c, a, me_pid, b, a, gone_pid]);
    let whole = discover(&pids, &me()).unwrap();
    assert_eq!(ranks(&whole), vec![(0, c), (1, a), (3, b)]);
    assert_eq!(whole.problems.len(), 3, "{whole:?}");

    // Blocks of 6 over 3 daemons: [c, a] [me, b] [a, gone].
    let share: Vec<_> = (0..3).map(|i| discover_share(&pids, &me(), i, 3)).collect();
    let d0 = share[0].as_ref().unwrap();
    assert_eq!(ranks(d0), vec![(0, c), (1, a)]);
    assert!(d0.problems.is_empty(), "{d0:?}");
    let d1 = share[1].as_ref().unwrap();
    assert_eq!(ranks(d1), vec![(3, b)]);
    let pids_of = |d: &Discovery| d.problems.iter().map(|p| p.pid).collect::<Vec<_>>();
    assert_eq!(pids_of(d1), vec![me_pid]);
    // The last block has no usable pid: its problems (the repeat named by its first rank,
    // the exited pid) come with the error.
    match &share[2] {
        Err(DiscoveryError::NoTasks { problems, .. }) => {
            let msgs: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
            assert_eq!(msgs.len(), 2, "{msgs:?}");
            assert!(
                msgs.contains(&format!("pid {a}: given twice; kept as rank 1")),
                "{msgs:?}"
            );
            assert!(
                msgs.contains(&format!(
                    "pid {gone_pid}: no such process (it exited, or the pid is wrong)"
                )),
                "{msgs:?}"
            );
        }
        other => panic!("expected no tasks in the last block: {other:?}"),
    }
    // More daemons than pids: a daemon with an empty block has nothing to report.
    let many: Vec<_> = (0..8)
        .map(|i| discover_share(&Selector::Pids(vec![a, b]), &me(), i, 8))
        .collect();
    let found: Vec<(u32, Pid)> = many
        .iter()
        .flat_map(|d| ranks(d.as_ref().unwrap()))
        .collect();
    assert_eq!(found, vec![(0, a), (1, b)]);
    // 0 or 1 daemons: the whole list.
    for share in [0, 1] {
        assert_eq!(discover_share(&pids, &me(), 0, share).unwrap(), whole);
    }
}

#[test]
fn vanished_pid_is_a_problem_not_a_panic() {
    let mut p = Procs::default();
    let live = p.spawn(&mut sleeper(&[]));
    let mut gone = cmd("true", &[], &[]).spawn().unwrap();
    let gone_pid = gone.id() as Pid;
    gone.wait().unwrap();

    let d = discover(&Selector::Pids(vec![gone_pid, live]), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(1, live)]);
    assert_eq!(d.problems.len(), 1);
    assert_eq!(d.problems[0].pid, gone_pid);
    assert!(d.problems[0].message.contains("no such process"), "{d:?}");

    let err = discover(&Selector::Pids(vec![gone_pid]), &me()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.starts_with("none of the given pids"), "{msg}");
    assert!(
        msg.contains(&format!("pid {gone_pid}: no such process")),
        "{msg}"
    );
}

#[test]
fn launcher_descendants_with_different_executables() {
    let mut p = Procs::default();
    // A fake mpirun: ranks are its children (rank 2 one level deeper, like under a
    // hydra_pmi_proxy), plus a helper that carries no rank.
    let launcher = p.spawn(&mut cmd(
        "sh",
        &[
            "-c",
            "OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3 tail -f /dev/null & \
             OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3 sleep 60 & \
             sh -c 'OMPI_COMM_WORLD_RANK=2 OMPI_COMM_WORLD_SIZE=3 sleep 60 & wait' & \
             sleep 60 & wait",
        ],
        &[],
    ));
    // Not a descendant: must not be found.
    p.spawn(&mut sleeper(&[("OMPI_COMM_WORLD_RANK", "0")]));
    wait_for(launcher, &["sleep", "tail"], 4);

    let d = discover(&Selector::Launcher(launcher), &me()).unwrap();
    let found: Vec<(u32, String)> = d
        .tasks
        .iter()
        .map(|t| (t.rank, t.exe.file_name().unwrap().to_string_lossy().into()))
        .collect();
    assert_eq!(
        found,
        vec![
            (0, "sleep".to_string()),
            (1, "tail".to_string()),
            (2, "sleep".to_string())
        ]
    );
    let mine = descendants(launcher);
    assert!(d.tasks.iter().all(|t| mine.contains(&t.pid)), "{d:?}");
    assert!(d.tasks.iter().all(|t| t.job_size == Some(3)));
    assert!(d.problems.is_empty() && d.duplicates.is_empty(), "{d:?}");
}

#[test]
fn launcher_errors_name_the_launcher() {
    let mut p = Procs::default();
    let mut gone = cmd("true", &[], &[]).spawn().unwrap();
    let gone_pid = gone.id() as Pid;
    gone.wait().unwrap();
    let err = discover(&Selector::Launcher(gone_pid), &me()).unwrap_err();
    assert!(matches!(err, DiscoveryError::LauncherNotFound(p) if p == gone_pid));
    assert_eq!(
        err.to_string(),
        format!("launcher {gone_pid} does not exist on this node")
    );

    let idle = p.spawn(&mut cmd("sh", &["-c", "sleep 60 & wait"], &[]));
    wait_for(idle, &["sleep"], 1);
    let err = discover(&Selector::Launcher(idle), &me()).unwrap_err();
    assert!(
        err.to_string()
            .starts_with(&format!("launcher {idle} has no rank process")),
        "{err}"
    );
}

/// Copies a harmless shared library under an MPI library's name, so that a process that
/// preloads it "maps MPI" without MPI being installed.
fn fake_libmpi(dir: &tempfile::TempDir) -> String {
    let src = [
        "/lib/x86_64-linux-gnu/libdl.so.2",
        "/lib/aarch64-linux-gnu/libdl.so.2",
    ]
    .into_iter()
    .find(|p| std::path::Path::new(p).exists())
    .expect("a libdl.so.2 to copy");
    let dst = dir.path().join("libmpi.so.40");
    std::fs::copy(src, &dst).unwrap();
    dst.to_string_lossy().into_owned()
}

#[test]
fn wrappers_resolve_to_the_mpi_mapper_or_the_deepest() {
    let mut p = Procs::default();
    let dir = tempfile::tempdir().unwrap();
    let libmpi = fake_libmpi(&dir);
    let job = unique_job();
    let j = job.to_string();
    let vars = |rank: &'static str| {
        [
            ("SLURM_JOB_ID", j.clone()),
            ("SLURM_STEP_ID", "0".to_string()),
            ("SLURM_PROCID", rank.to_string()),
            ("PMIX_RANK", rank.to_string()),
        ]
    };
    let with = |prog: &str, script: &str, rank: &'static str| {
        let mut c = cmd(prog, &["-c", script], &[]);
        for (k, v) in vars(rank) {
            c.env(k, v);
        }
        c
    };
    // Rank 0: `srun sh run.sh` where the script forks the app: the app (deepest) wins.
    let w0 = p.spawn(&mut with("sh", "sleep 60 & wait", "0"));
    // Rank 1: a wrapper that execs (`numactl ./app`): one process.
    let w1 = p.spawn(&mut with("sh", "exec sleep 60", "1"));
    // Rank 2: two wrapper levels.
    let w2 = p.spawn(&mut with("sh", "sh -c 'sleep 60 & wait' & wait", "2"));
    // Rank 3: the rank maps MPI and forked a child that exec'd something else: the MPI
    // mapper wins although it is not the deepest.
    let mut c3 = with("sh", "LD_PRELOAD= sleep 60 & wait", "3");
    c3.env("LD_PRELOAD", &libmpi);
    let w3 = p.spawn(&mut c3);
    let a0 = wait_for(w0, &["sleep"], 1)[0];
    let a2 = wait_for(w2, &["sleep"], 1)[0];
    wait_for(w3, &["sleep"], 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while exe_name(w1) != "sleep" {
        assert!(Instant::now() < deadline, "{w1} never exec'd sleep");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        procfs::maps(w3).unwrap().iter().any(|m| m.path == libmpi),
        "fixture: {w3} should map {libmpi}"
    );

    let d = discover(&slurm(job, Some(0)), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, a0), (1, w1), (2, a2), (3, w3)]);
    assert!(d.duplicates.is_empty() && d.problems.is_empty(), "{d:?}");
}

#[test]
fn a_launch_daemon_started_by_srun_is_not_a_rank() {
    // Like an orted launched by srun into step 0 on node 0: it carries SLURM_PROCID=0 and
    // a step id, its children are the real ranks 1 and 2 with OMPI_COMM_WORLD_RANK.
    let mut p = Procs::default();
    let job = unique_job();
    let j = job.to_string();
    let orted = p.spawn(&mut cmd(
        "sh",
        &[
            "-c",
            "OMPI_COMM_WORLD_RANK=1 sleep 60 & OMPI_COMM_WORLD_RANK=2 sleep 60 & wait",
        ],
        &[
            ("SLURM_JOB_ID", &j),
            ("SLURM_STEP_ID", "0"),
            ("SLURM_PROCID", "0"),
        ],
    ));
    let kids = wait_for(orted, &["sleep"], 2);
    let d = discover(&slurm(job, None), &me()).unwrap();
    assert_eq!(d.tasks.len(), 2, "{d:?}");
    assert!(d.tasks.iter().all(|t| kids.contains(&t.pid)), "{d:?}");
    assert_eq!(
        d.tasks.iter().map(|t| t.rank).collect::<Vec<_>>(),
        vec![1, 2]
    );
    assert!(d.duplicates.is_empty(), "{d:?}");
}

#[test]
fn unrelated_processes_with_one_rank_are_reported() {
    let mut p = Procs::default();
    let launcher = p.spawn(&mut cmd(
        "sh",
        &[
            "-c",
            "OMPI_COMM_WORLD_RANK=0 sleep 60 & OMPI_COMM_WORLD_RANK=0 sleep 60 & \
             OMPI_COMM_WORLD_RANK=1 sleep 60 & wait",
        ],
        &[],
    ));
    wait_for(launcher, &["sleep"], 3);
    let d = discover(&Selector::Launcher(launcher), &me()).unwrap();
    assert_eq!(d.tasks.len(), 1);
    assert_eq!(d.tasks[0].rank, 1);
    assert_eq!(d.duplicates.len(), 1, "{d:?}");
    assert_eq!(d.duplicates[0].rank, 0);
    assert_eq!(d.duplicates[0].pids.len(), 2);
    assert!(!d.duplicates[0].pids.contains(&d.tasks[0].pid));
    assert!(
        d.duplicates[0]
            .to_string()
            .starts_with("rank 0 is claimed by pids")
    );
}

#[test]
fn strata_processes_are_excluded() {
    let mut p = Procs::default();
    let job = unique_job();
    let j = job.to_string();
    let rank = [
        ("SLURM_JOB_ID", j.as_str()),
        ("SLURM_STEP_ID", "0"),
        ("SLURM_PROCID", "0"),
        ("PMIX_RANK", "0"),
    ];
    // A daemon launched into the job with --mpi=pmix looks like rank 0 of its own step,
    // and so does a child it forks.
    let daemon_env = [
        ("SLURM_JOB_ID", j.as_str()),
        ("SLURM_STEP_ID", "1"),
        ("SLURM_PROCID", "0"),
        ("PMIX_RANK", "0"),
        ("STRATA_ROLE", "daemon"),
    ];
    let real = p.spawn(&mut sleeper(&rank));
    let daemon = p.spawn(&mut cmd("sh", &["-c", "sleep 60 & wait"], &daemon_env));
    wait_for(daemon, &["sleep"], 1);
    let d = discover(&slurm(job, None), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, real)]);
    assert!(d.duplicates.is_empty() && d.problems.is_empty(), "{d:?}");

    // Named explicitly, it is refused with a reason.
    let d = discover(&Selector::Pids(vec![real, daemon]), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, real)]);
    assert_eq!(
        d.problems[0].to_string(),
        format!("pid {daemon}: is a strata process (STRATA_ROLE=daemon)")
    );
}

#[test]
fn processes_of_another_uid_are_reported_not_chosen() {
    // Asking on behalf of another uid makes this test's own processes "another user's":
    // the check compares uids explicitly, so it holds for root too.
    let mut p = Procs::default();
    let job = unique_job();
    let j = job.to_string();
    let mine = p.spawn(&mut sleeper(&[
        ("SLURM_JOB_ID", &j),
        ("SLURM_STEP_ID", "0"),
        ("PMIX_RANK", "0"),
    ]));
    let own_uid = nix::unistd::getuid().as_raw();
    let other = Options {
        uid: own_uid + 1,
        own_step: None,
    };
    let err = discover(&slurm(job, None), &other).unwrap_err();
    let DiscoveryError::NoTasks { problems, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].pid, mine);
    assert!(
        problems[0]
            .message
            .starts_with(&format!("owned by uid {own_uid}, not the invoking user")),
        "{err}"
    );
    assert!(err.to_string().contains("owned by uid"), "{err}");
    let d = discover(&Selector::Pids(vec![mine]), &other).unwrap_err();
    assert!(d.to_string().contains("owned by uid"), "{d}");
}

#[test]
fn root_does_not_pick_up_processes_of_nobody() {
    let own_uid = nix::unistd::getuid().as_raw();
    assert_eq!(
        own_uid, 0,
        "this test spawns a process as `nobody` and needs root"
    );
    let nobody = nix::unistd::User::from_name("nobody")
        .unwrap()
        .expect("user nobody");
    let mut p = Procs::default();
    let job = unique_job();
    let j = job.to_string();
    let vars = |rank: &'static str| {
        vec![
            ("SLURM_JOB_ID", j.clone()),
            ("SLURM_STEP_ID", "0".to_string()),
            ("PMIX_RANK", rank.to_string()),
        ]
    };
    let mut c = cmd("sleep", &["60"], &[]);
    c.envs(vars("0"));
    let root_rank = p.spawn(&mut c);
    let mut c = cmd(
        "setpriv",
        &[
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sleep",
            "60",
        ],
        &[],
    );
    c.envs(vars("1"));
    let nobody_rank = p.spawn(&mut c);
    let deadline = Instant::now() + Duration::from_secs(5);
    while exe_name(nobody_rank) != "sleep" {
        assert!(Instant::now() < deadline, "setpriv never exec'd sleep");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(procfs::uid(nobody_rank).unwrap(), nobody.uid.as_raw());

    let d = discover(&slurm(job, None), &me()).unwrap();
    assert_eq!(ranks(&d), vec![(0, root_rank)]);
    assert_eq!(d.problems.len(), 1, "{d:?}");
    assert_eq!(d.problems[0].pid, nobody_rank);
    assert!(
        d.problems[0]
            .message
            .starts_with(&format!("owned by uid {}", nobody.uid)),
        "{d:?}"
    );

    // And the other way round: on behalf of nobody, root's rank is the foreign one.
    let as_nobody = Options {
        uid: nobody.uid.as_raw(),
        own_step: None,
    };
    let d = discover(&slurm(job, None), &as_nobody).unwrap();
    assert_eq!(ranks(&d), vec![(1, nobody_rank)]);
    assert_eq!(d.problems.len(), 1);
    assert!(d.problems[0].message.starts_with("owned by uid 0"), "{d:?}");
}
