//! `strata attach` end to end on this host: a hung Open MPI ring under `mpirun` (found
//! through its launcher), plain processes given by pid, threads, `--rank`, result files,
//! exit codes. Every target is checked to be running and untraced afterwards.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mpi::{MpiJob, assert_ring_classes, class_lines};
use support::{parts, strata};
use target::{Target, assert_free};

#[test]
fn hung_open_mpi_ring_through_its_launcher() {
    let job = MpiJob::ring(8);
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("result");
    let (code, out, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "-n",
        "5",
        "--interval",
        "50ms",
        "-o",
        out_dir.to_str().unwrap(),
        "--rank",
        "1",
    ]));
    assert_eq!(code, 0, "{out}\n{err}");
    let classes = assert_ring_classes(&out, 8);
    // --rank 1: rank 1's full stacks, every thread (Open MPI adds 2 helper threads).
    assert!(
        out.contains(&format!("Process {} (mpi_ring) rank 1", job.ranks[1])),
        "{out}"
    );
    assert!(out.matches("  Thread ").count() >= 3, "{out}");
    // Line-level frames from the ring's debug info.
    assert!(out.contains("mpi_ring.c:"), "{out}");
    // The result files.
    support::assert_result_files(&out_dir);
    let (code, viewed, _) = parts(&strata(&[
        "view",
        out_dir.join("result.json").to_str().unwrap(),
    ]));
    assert_eq!(code, 0);
    assert_eq!(
        class_lines(&viewed),
        classes,
        "the saved result shows the same classes"
    );
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

/// `strata attach --pids PIDS -n N --interval 10ms --no-files EXTRA...`: exit code, stdout,
/// stderr.
fn attach_pids(pids: &str, samples: u32, extra: &[&str]) -> (i32, String, String) {
    let n = samples.to_string();
    let mut args = vec![
        "attach",
        "--pids",
        pids,
        "-n",
        &n,
        "--interval",
        "10ms",
        "--no-files",
    ];
    args.extend_from_slice(extra);
    // A later --interval overrides the one above.
    parts(&strata(&args))
}

/// The same hang in Fortran (gfortran through mpif90): the views name Open MPI's Fortran
/// bindings by their C calls (`MPI_Barrier`), module procedures read `module::procedure`,
/// and the result file keeps the frames as the symbolizer named them: as the program calls
/// them (`mpi_barrier_`, not the library's `ompi_barrier_f`).
#[test]
fn hung_fortran_ring_names_the_fortran_mpi_calls() {
    let exe = target::compile_with("mpif90", "mpi_ring.f90", "mpi_ring_f", &["-O2", "-g"]);
    let job = MpiJob::start(&exe, 8);
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "-n",
        "3",
        "--interval",
        "50ms",
        "-o",
        dir.path().to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{out}\n{err}");
    let classes = class_lines(&out);
    assert_eq!(classes.len(), 3, "{out}");
    let class = |prefix: &str| classes.iter().find(|l| l.starts_with(prefix)).cloned();
    assert!(
        class("1:[1] ").is_some_and(|c| c.contains("sleep")),
        "{out}"
    );
    assert!(
        class("1:[2] ").is_some_and(|c| c.ends_with("solver::exchange > MPI_Waitall")),
        "{out}"
    );
    assert!(
        class("6:[0,3-7] ").is_some_and(|c| c.ends_with("solver::exchange > MPI_Barrier")),
        "{out}"
    );
    let saved = std::fs::read_to_string(dir.path().join("result.json")).unwrap();
    for raw in ["\"mpi_waitall_\"", "\"mpi_barrier_\""] {
        assert!(saved.contains(raw), "result.json keeps {raw}");
    }
    for &pid in &job.ranks {
        assert_free(pid);
    }
}

fn blocked(threads: usize) -> Target {
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let t = Target::start(&exe, &[&threads.to_string()]);
    t.wait_all_sleeping(threads + 1);
    t
}

#[test]
fn pids_in_rank_order_with_threads_and_rank_stacks() {
    let a = blocked(0);
    let b = blocked(2);
    let pids = format!("{},{}", a.pid(), b.pid());
    let (code, out, err) = attach_pids(&pids, 3, &[]);
    assert_eq!(code, 0, "{err}");
    let classes = class_lines(&out);
    assert_eq!(classes.len(), 1, "{out}");
    assert!(
        classes[0].starts_with("2:[0-1] ") && classes[0].contains("main_level3"),
        "{out}"
    );
    assert!(out.contains("2 of 2 ranks"), "{out}");

    // Every thread: the threads' own function shows up, counted as ranks and threads.
    let (code, out, err) = attach_pids(&pids, 2, &["--threads", "--rank", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("all threads"), "{out}");
    assert!(out.contains("thread_level2"), "{out}");
    assert!(
        out.contains(&format!("Process {} (capture_target) rank 1", b.pid())),
        "{out}"
    );
    assert_eq!(out.matches("  Thread ").count(), 3, "{out}");
    assert_free(a.pid());
    assert_free(b.pid());
}

/// Daemons sharing the given pids each inspect their own block: a block with no usable pid
/// does not fail the attach, its problems are told once each, and when every block fails the
/// error counts the whole list's problems.
#[test]
fn daemons_sharing_the_pids_tell_each_problem_once() {
    let a = blocked(0);
    let gone = "2147483000";
    let pids = format!("{gone},{}", a.pid());
    let (code, out, err) = attach_pids(&pids, 2, &["--daemons", "2"]);
    assert_eq!(code, 4, "rank 0 is missing: {err}");
    assert!(out.contains("1 of 2 ranks"), "{out}");
    assert_eq!(
        err.matches(&format!("pid {gone}: no such process")).count(),
        1,
        "{err}"
    );
    assert!(!err.contains("daemon 0 on"), "told by its problem: {err}");
    assert_free(a.pid());

    let (code, _, err) = attach_pids("2147483000,2147483001,2147483002", 1, &["--daemons", "2"]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("none of the given pids can be inspected (3 process(es) skipped"),
        "{err}"
    );
}

#[test]
fn a_main_thread_waiting_for_its_threads_gets_a_hint() {
    let exe = target::compile("join_wait.c", "join_wait", &["-O0", "-g"]);
    let t = Target::start(&exe, &[]);
    t.wait_all_sleeping(3);
    let pid = t.pid().to_string();
    let (code, out, err) = attach_pids(&pid, 2, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("--threads"), "{err}");
    assert!(!out.contains("worker_stuck"), "{out}");
    let (_, out, err) = attach_pids(&pid, 2, &["--threads"]);
    assert!(out.contains("worker_stuck"), "{out}");
    assert!(
        !err.contains("--threads"),
        "no hint once threads are shown: {err}"
    );
    assert_free(t.pid());
}

#[test]
fn bad_targets_get_one_line_and_an_exit_code() {
    let (code, _, err) = parts(&strata(&["attach", "--pids", "2147483000", "--no-files"]));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("2147483000"), "{err}");
    let (code, _, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        "2147483000",
        "--no-files",
    ]));
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("launcher 2147483000 does not exist"), "{err}");
    // A launcher with no rank below it (a shell running a sleep, taken as a launcher).
    let mut launcher = Command::new("sh")
        .args(["-c", "sleep 30; true"])
        .spawn()
        .unwrap();
    let (code, _, err) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &launcher.id().to_string(),
        "--any-launcher",
        "--no-files",
    ]));
    let _ = launcher.kill();
    let _ = launcher.wait();
    assert_eq!(code, 5, "{err}");
    assert!(err.contains("no rank process"), "{err}");
    // (No target at all is `without_a_target_the_one_local_job_is_attached`'s, in a PID
    // namespace: here it would attach to another test's job.)
    let (code, _, err) = parts(&strata(&["attach", "--pids", "1", "--interval", "soon"]));
    assert_eq!(code, 2, "{err}");
}

#[test]
fn ctrl_c_and_kill_9_while_sampling_leave_targets_running() {
    let t = blocked(3);
    let pid = t.pid().to_string();
    let long_attach = || {
        Command::new(support::strata_bin())
            .args([
                "attach",
                "--pids",
                &pid,
                "-n",
                "5000",
                "--interval",
                "5ms",
                "--no-files",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let attach = long_attach();
    std::thread::sleep(Duration::from_millis(400));
    let asked = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(attach.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = attach.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Not a performance bound: sampling to the end would take over 25 s, so this tells a
    // Ctrl-C that was honoured from one that was not, on however slow a machine.
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "Ctrl-C took {:?}",
        asked.elapsed()
    );
    assert_free(t.pid());

    for delay_ms in [50, 137, 311] {
        let mut attach = long_attach();
        std::thread::sleep(Duration::from_millis(delay_ms));
        attach.kill().unwrap();
        attach.wait().unwrap();
        target::wait_for(Duration::from_secs(5), || {
            target::thread_ids(t.pid())
                .iter()
                .all(|&tid| target::tracer(t.pid(), tid) == Some(0))
        });
        assert_free(t.pid());
    }
}

#[test]
fn a_rank_without_debug_information_is_named_once_and_still_sampled() {
    let exe = target::compile("capture_target.c", "capture_target", &["-O0", "-g"]);
    let stripped = target::strip(&exe, "capture_target_nodebug", &["--strip-debug"]);
    let t = Target::start(&stripped, &["0"]);
    t.wait_all_sleeping(1);
    let (code, out, err) = attach_pids(&t.pid().to_string(), 2, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("main_level3"), "names from .symtab: {out}");
    assert_eq!(err.matches("has no debug information").count(), 1, "{err}");
    assert!(err.contains("capture_target_nodebug"), "{err}");
    assert_free(t.pid());
}

#[test]
fn a_rank_that_exits_while_sampled_stays_in_the_tree_as_exited() {
    let stays = blocked(0);
    // `sleep` under its own sh (see tests/support/target.rs: never this test's child).
    let mut sh = Command::new("sh")
        .args(["-c", "sleep 0.4 & echo $!; wait $!"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(sh.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let goes = line.trim().to_string();
    let pids = format!("{},{goes}", stays.pid());
    let (code, out, err) = attach_pids(&pids, 12, &["--interval", "100ms"]);
    sh.wait().unwrap();
    assert_eq!(code, 4, "partial result: {out}\n{err}");
    assert!(out.contains("[task exited]"), "{out}");
    assert!(err.contains(&format!("rank 1 (pid {goes})")), "{err}");
    assert_free(stays.pid());
}

/// The 2D tree is the latest sample only, also for threads: threads that came and went
/// between samples must not pile up in it (they do in the 3D tree, which holds them all).
#[test]
fn two_d_tree_with_threads_holds_only_the_latest_sample() {
    let exe = target::compile("capture_churn.c", "capture_churn", &["-O0", "-g"]);
    let t = Target::start(&exe, &[]);
    let pid = t.pid().to_string();
    let most_threads = |tree: &str| {
        let (code, out, err) = attach_pids(&pid, 20, &["--threads", "--tree", tree]);
        assert_eq!(code, 0, "{err}");
        out.lines()
            .filter_map(|l| {
                let at = l.find(" thr)")?;
                let open = l[..at].rfind('(')?;
                l[open + 1..at].trim().parse::<u32>().ok()
            })
            .max()
            .unwrap_or_else(|| panic!("no thread counts in:\n{out}"))
    };
    // The churn fixture has its main thread and at most 4 short-lived threads at a time.
    // (Before the 2D tree was rebuilt per sample it held every thread ever seen: 20-30.)
    assert!(most_threads("2d") <= 5, "2D tree mixes samples");
    // Threads that ended during a capture are left out, not shown as an exited task.
    // (A thread caught in its last instructions, its stack being given back, can still show
    // as an unwind error: not asserted.)
    let (_, out, _) = attach_pids(&pid, 10, &["--threads"]);
    assert!(!out.contains("[task exited]"), "{out}");
    assert_free(t.pid());
}

/// `strata attach` with no target, inside a PID namespace of its own (so that no other
/// test's job is in sight): no MPI job says so (exit 5); one is attached through its
/// launcher; two are listed with their launcher pids (exit 2).
#[test]
fn without_a_target_the_one_local_job_is_attached() {
    let exe = target::compile_with("mpicc", "mpi_matrix.c", "mpi_matrix_auto", &["-O0", "-g"]);
    let script = format!(
        r#"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_mpi_yield_when_idle=1
attach() {{ "{strata}" attach -n 2 --no-files > "$1.out" 2> "$1.err"; echo "$1 exit $?"; }}
job() {{
    mpirun --oversubscribe -np 4 "{exe}" > "$1.ranks" 2>&1 &
    echo "$1 launcher $!"
    for _ in $(seq 300); do [ "$(grep -c '^rank' "$1.ranks")" -ge 4 ] && return; sleep 0.1; done
    echo "$1 did not start"
}}
cd "$(mktemp -d)"
attach none
job first
attach one
cat one.out one.err
job second
attach several
cat several.err
"#,
        strata = support::strata_bin().display(),
        exe = exe.display()
    );
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "bash", "-c", &script])
        .output()
        .expect("unshare (util-linux) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |prefix: &str| {
        text.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no '{prefix}' in:\n{text}"))
            .to_string()
    };
    assert_eq!(line("none exit"), "none exit 5", "{text}");
    assert_eq!(line("one exit"), "one exit 0", "{text}");
    let first = line("first launcher")
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    let second = line("second launcher")
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    assert!(text.contains("4 of 4 ranks"), "{text}");
    assert!(
        text.contains(&format!(
            "attaching to the one MPI job of yours on this host: 4 ranks under {first}"
        )),
        "{text}"
    );
    assert_eq!(line("several exit"), "several exit 2", "{text}");
    for launcher in [&first, &second] {
        assert!(
            text.contains(&format!("--launcher-pid {launcher}")),
            "{launcher}: {text}"
        );
    }
}

/// The numbers of a line, in order (`4 daemon(s) indexed 2 binaries (2 distinct ...`).
fn numbers_in(line: &str) -> Vec<f64> {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter_map(|w| w.trim_end_matches('.').parse().ok())
        .collect()
}

/// The daemons say what debug information cost them (`STRATA_TIMINGS`), and each binary's
/// is read once per job (the 208K paper's shared-file-system problem, solved as its SBRS
/// did): on a cold index cache the front end indexes the ranks' binaries once and sends
/// the indexes down the tree, however many daemons map them, and no daemon reads DWARF or
/// the cache; on a warm node-local cache each daemon reads the entries and the tree
/// carries none; on a shared one (`--debug-cache-shared`) the front end reads them once
/// and the daemons take them from the tree.
#[test]
fn debug_information_is_read_once_per_job_and_sent_down_the_tree() {
    let job = MpiJob::ring(8);
    let caches = tempfile::tempdir().expect("a temporary directory");
    // The daemons' (count, indexed, distinct build-ids, cache hits, megabytes read, taken
    // down the tree), and the front end's (sent, indexed) when it sent any.
    let summary = |daemons: &str, cache: &str, shared: bool| {
        let cache = caches.path().join(cache).display().to_string();
        let launcher = job.mpirun.id().to_string();
        let mut args = vec![
            "attach",
            "--launcher-pid",
            &launcher,
            "-n",
            "1",
            "--no-files",
            "--daemons",
            daemons,
            "--fanout",
            "2",
            "--debug-cache",
            &cache,
        ];
        if shared {
            args.push("--debug-cache-shared");
        }
        let out = support::strata_command(&args)
            .env("STRATA_TIMINGS", "1")
            .output()
            .expect("strata");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        assert!(!err.contains("warning: debug index cache"), "{err}");
        let line = err
            .lines()
            .find_map(|l| l.strip_prefix("strata: debug info: "))
            .unwrap_or_else(|| panic!("no debug info line in {err}"));
        // "4 daemon(s) indexed 2 binaries (2 distinct build-ids), took 6 from the index
        // cache, read 16.7 MB of ..., 3.1 ms summed over daemons; took 0 down the tree"
        let numbers = numbers_in(line);
        assert_eq!(numbers.len(), 7, "{line}");
        // "4 daemon(s), CPU 31.0 ms median, 40.2 ms max; peak memory ..."
        let cost = err
            .lines()
            .find_map(|l| l.strip_prefix("strata: daemons: "))
            .unwrap_or_else(|| panic!("no daemon cost line in {err}"));
        let cost = numbers_in(cost);
        assert_eq!(cost[0], numbers[0], "the same daemons: {cost:?}");
        assert!(
            cost[1] > 0.0 && cost[2] >= cost[1] && cost[3] > 0.0,
            "{cost:?}"
        );
        // "debug indexes down the tree: 4 sent, 3.9 MB; the front end read 5.6 MB of
        // debug files and indexes and indexed 4 binaries (4 partially)"
        let front = err
            .lines()
            .find_map(|l| l.strip_prefix("strata: debug indexes down the tree: "))
            .map(|l| {
                let n = numbers_in(l);
                assert_eq!(n.len(), 5, "{l}");
                (n[0] as u32, n[3] as u32, n[4] as u32)
            });
        let n = |i: usize| numbers[i] as u32;
        ((n(0), n(1), n(2), n(3), numbers[4], n(6)), front)
    };
    let ((daemons, indexed, distinct, hits, megabytes, provided), front) =
        summary("1", "one", false);
    assert_eq!(daemons, 1);
    // The ring (embedded DWARF) and libc (libc6-dbg, a separate file) at least.
    assert!(distinct >= 2, "{distinct}");
    assert_eq!(
        (indexed, hits, provided),
        (0, 0, distinct),
        "cold: every index came down the tree"
    );
    assert_eq!(megabytes, 0.0, "the daemon read no debug file or entry");
    let (sent, built, partial) = front.expect("the front end sent the indexes");
    // The daemon probed its stacks at set-up and asked for the binaries they are in only
    // (before, every mapped binary with DWARF: libm and the loader too), and cold the
    // front end built partial indexes, of the units the stacks hit; the daemon found
    // every address it symbolized in them (it indexed nothing itself).
    assert_eq!(
        (sent, built, partial),
        (distinct, distinct, distinct),
        "only the binaries the stacks hit, partially"
    );
    let ((daemons, indexed, distinct_4, hits, megabytes, provided), front) =
        summary("4", "four", false);
    assert_eq!(daemons, 4);
    assert_eq!(distinct_4, distinct, "the same binaries");
    assert_eq!(
        (indexed, hits, provided, megabytes),
        (0, 0, 4 * distinct, 0.0),
        "cold, 4 daemons: nothing read by any daemon"
    );
    assert_eq!(
        front,
        Some((sent, built, partial)),
        "the front end indexed each binary once for the 4 daemons"
    );
    // The whole entries come from detached builders, at idle priority: the next attach
    // is warm once they are written.
    let written = || {
        std::fs::read_dir(caches.path().join("four/v1"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "idx"))
                    .count()
            })
            .unwrap_or(0)
    };
    let end = Instant::now() + Duration::from_secs(120);
    while written() < distinct as usize {
        assert!(
            Instant::now() < end,
            "{} of {distinct} whole entries written by the builders",
            written()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let ((_, indexed, distinct_warm, hits, megabytes_warm, provided), front) =
        summary("4", "four", false);
    assert_eq!(distinct_warm, distinct);
    assert_eq!(
        (indexed, hits, provided),
        (0, 4 * distinct, 0),
        "warm: each daemon reads its node-local cache, no DWARF"
    );
    assert!(megabytes_warm > 0.0);
    assert_eq!(front, None, "warm: nothing goes down the tree");
    let ((_, indexed, _, hits, megabytes, provided), front) = summary("4", "four", true);
    assert_eq!(
        (indexed, hits, provided, megabytes),
        (0, 0, 4 * distinct, 0.0),
        "a warm shared cache: read by the front end alone"
    );
    assert_eq!(front, Some((sent, 0, 0)), "read from the cache, not built");
    for &pid in &job.ranks {
        assert_free(pid);
    }
}
