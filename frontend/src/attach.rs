//! `strata attach --pids ... | --launcher-pid ...`: find the ranks on this host, sample
//! them, build the merged rank-order trees, show the default view, write the result files.
//!
//! Serial mode: the front end is its own (only) daemon. The tree network (issue 5) puts
//! daemons and commnodes between discovery/sampling and the remap, without changing either.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::io::IsTerminal;

use nix::sys::signal::Signal;
use strata_daemon::capture::Capturer;
use strata_daemon::discovery::{self, DiscoveryError, Selector};
use strata_daemon::sampler::{SampleOptions, Sampled, Sampler};
use strata_daemon::symbols::Symbolizer;
use strata_filters::taskset::format_runs;
use strata_filters::{IndexMap, remap};

use crate::cli::{AttachArgs, Failure, show, write_files, write_stdout};
use crate::dump::symbol_options;
use crate::exit::Exit;
use crate::interrupt;
use crate::output;
use crate::render::stacks::render_process;
use crate::result::{
    JobInfo, MissingRanks, RankInfo, ResultMeta, SamplingInfo, StrataResult, ThreadInfo, rfc3339,
};

pub fn run(args: AttachArgs) -> Result<Exit, Failure> {
    run_named(args, None)
}

/// [`run`], with the job named `job_name` instead of after its launcher or first process.
pub fn run_named(args: AttachArgs, job_name: Option<String>) -> Result<Exit, Failure> {
    // Before any capture thread exists, so that they all inherit the blocked signals.
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let selector = match args.launcher_pid {
        Some(pid) => Selector::Launcher(pid),
        None => Selector::Pids(args.pids.clone()),
    };
    let found = discovery::discover(&selector, &discovery::Options::for_current_process())
        .map_err(discovery_failure)?;
    for p in &found.problems {
        eprintln!("strata: warning: {p}");
    }
    for d in &found.duplicates {
        eprintln!("strata: warning: {d}");
    }
    let tasks = found.tasks;
    let highest = tasks
        .iter()
        .map(|t| t.rank)
        .chain(found.duplicates.iter().map(|d| d.rank))
        .max()
        .unwrap_or(0);
    let job_size = tasks
        .iter()
        .filter_map(|t| t.job_size)
        .max()
        .unwrap_or(0)
        .max(highest + 1);

    let capturer = Capturer::with_default_threads();
    let mut sampler = Sampler::new(Symbolizer::new(symbol_options(&args.debug_dir)));
    let options = SampleOptions {
        samples: args.samples,
        interval: args.interval,
        threads: args.threads,
        ..SampleOptions::default()
    };
    let interrupted: Cell<Option<Signal>> = Cell::new(None);
    let stop = || {
        if let Ok(sig) = signals.try_recv() {
            interrupted.set(Some(sig));
        }
        interrupted.get().is_some()
    };
    let tty = std::io::stderr().is_terminal();
    let mut progress = |k: u32| {
        if tty {
            eprint!(
                "\rstrata: {} rank(s), sample {k}/{}",
                tasks.len(),
                options.samples
            );
        }
    };
    let sampled = sampler.sample(&capturer, &tasks, &options, &stop, &mut progress);
    if tty {
        eprint!("\r\x1b[K");
    }
    drop(capturer);
    if let Some(sig) = interrupted.get() {
        eprintln!(
            "strata: {sig}: stopped after {} sample(s); every process detached",
            sampled.samples
        );
        return Ok(Exit::Interrupted);
    }

    let job = JobInfo {
        id: job_name.unwrap_or_else(|| job_id(&selector, &tasks)),
        resource_manager: "local".to_string(),
        step: None,
        launcher_pid: args.launcher_pid.map(|p| p as u32),
    };
    let result = assemble(job, job_size, &tasks, &sampled, &options, &found.duplicates)?;
    show(&result, &args.show)?;
    hints(&sampled, options.threads);

    for &r in &args.rank {
        // A blank line between the tree's class list and each process.
        let mut out = String::from("\n");
        match tasks.iter().position(|t| t.rank == r) {
            Some(i) => match &sampled.last[i] {
                Some(last) => render_process(&mut out, &last.capture, Some(r), &last.threads),
                None => eprintln!("strata: rank {r}: no stack to show (see the warnings above)"),
            },
            None => eprintln!("strata: rank {r}: not a rank of this job on this host"),
        }
        write_stdout(&out)?;
    }
    if !args.no_files {
        let dir = args
            .output
            .clone()
            .unwrap_or_else(|| output::default_dir(&result));
        write_files(&result, &dir)?;
    }
    let troubled = sampled.tasks.iter().any(|t| t.error.is_some());
    Ok(if result.meta.missing.is_empty() && !troubled {
        Exit::Complete
    } else {
        Exit::Partial
    })
}

fn discovery_failure(e: DiscoveryError) -> Failure {
    let exit = match &e {
        DiscoveryError::LauncherNotFound(_) | DiscoveryError::NoTasks { .. } => Exit::NotFound,
        DiscoveryError::Proc(_) => Exit::Internal,
    };
    Failure::new(exit, e.to_string())
}

/// `mpirun-1234` for a launcher, `ring-5678` (executable, first pid) for pids.
fn job_id(selector: &Selector, tasks: &[discovery::Task]) -> String {
    let comm = |pid: i32| {
        strata_daemon::procfs::stat(pid)
            .map(|s| s.comm)
            .unwrap_or_else(|_| "job".to_string())
    };
    match selector {
        Selector::Launcher(pid) => format!("{}-{pid}", comm(*pid)),
        _ => tasks.first().map_or_else(
            || "pids".to_string(),
            |t| format!("{}-{}", comm(t.pid), t.pid),
        ),
    }
}

fn assemble(
    job: JobInfo,
    job_size: u32,
    tasks: &[discovery::Task],
    sampled: &Sampled,
    options: &SampleOptions,
    duplicates: &[discovery::Duplicate],
) -> Result<StrataResult, Failure> {
    let internal = |e: strata_filters::RemapError| Failure::new(Exit::Internal, e.to_string());
    let ranks = IndexMap::new(tasks.iter().map(|t| t.rank).collect(), job_size, "rank")
        .map_err(internal)?;
    let threads = options
        .threads
        .then(|| IndexMap::identity(sampled.threads.len() as u32, "thread"));
    let tree_2d = remap(&sampled.tree_2d, &ranks, threads.as_ref()).map_err(internal)?;
    let tree_3d = remap(&sampled.tree_3d, &ranks, threads.as_ref()).map_err(internal)?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string());
    let rank_info = tasks
        .iter()
        .zip(&sampled.tasks)
        .map(|(t, r)| RankInfo {
            rank: t.rank,
            host: host.clone(),
            pid: Some(t.pid as u32),
            executable: Some(r.executable.clone()),
            build_id: r.build_id.clone(),
            state: r.state.map(|c| c.to_string()),
            error: r.error.clone(),
        })
        .collect();
    let thread_info = sampled
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThreadInfo {
            id: i as u32,
            rank: tasks[t.task as usize].rank,
            tid: t.tid as u32,
            name: Some(t.name.clone()),
        })
        .collect();
    let mut missing = Vec::new();
    let found: BTreeSet<u32> = tasks.iter().map(|t| t.rank).collect();
    let dup: BTreeSet<u32> = duplicates.iter().map(|d| d.rank).collect();
    let dups = runs_of((0..job_size).filter(|r| dup.contains(r)));
    if !dups.is_empty() {
        missing.push(MissingRanks {
            ranks: format_runs(&dups),
            reason: "several unrelated processes claim these ranks".to_string(),
        });
    }
    let not_found = runs_of((0..job_size).filter(|r| !found.contains(r) && !dup.contains(r)));
    if !not_found.is_empty() {
        missing.push(MissingRanks {
            ranks: format_runs(&not_found),
            reason: "no process of these ranks on this host".to_string(),
        });
    }
    Ok(StrataResult {
        meta: ResultMeta {
            strata_version: env!("CARGO_PKG_VERSION").to_string(),
            created: rfc3339(std::time::SystemTime::now()),
            job,
            sampling: SamplingInfo {
                samples: sampled.samples,
                interval_ms: options.interval.as_millis() as u64,
                threads: options.threads,
                started: rfc3339(sampled.started),
                finished: rfc3339(sampled.finished),
            },
            job_size,
            ranks: rank_info,
            threads: thread_info,
            missing,
        },
        tree_2d,
        tree_3d,
    })
}

/// One line per thing the user should know: ranks that could not be sampled, ranks whose
/// main thread waits on its own threads, binaries without debug information.
fn hints(sampled: &Sampled, threads_shown: bool) {
    let ranks_where = |f: &dyn Fn(&strata_daemon::sampler::TaskReport) -> bool| {
        let mut r: Vec<u32> = sampled
            .tasks
            .iter()
            .filter(|t| f(t))
            .map(|t| t.rank)
            .collect();
        r.sort_unstable();
        r
    };
    for t in &sampled.tasks {
        if let Some(e) = &t.error {
            eprintln!("strata: rank {} (pid {}): {e}", t.rank, t.pid);
        }
    }
    let waiting = ranks_where(&|t| t.waits_on_threads);
    if !waiting.is_empty() && !threads_shown {
        eprintln!(
            "strata: rank(s) {}: the main thread waits for its own threads (join, condition, \
             barrier or lock); run with --threads to see what they do",
            list(&waiting)
        );
    }
    let mut no_debug: Vec<(&str, u32)> = sampled
        .tasks
        .iter()
        .filter(|t| t.no_debug_info)
        .map(|t| (t.executable.as_str(), t.rank))
        .collect();
    no_debug.sort_unstable();
    no_debug.dedup_by_key(|(exe, _)| *exe);
    for (exe, _) in no_debug {
        eprintln!(
            "strata: {exe} has no debug information: its frames are named from its symbol \
             table, without source lines (rebuild with -g, or install its debug package)"
        );
    }
}

fn list(ranks: &[u32]) -> String {
    format_runs(&runs_of(ranks.iter().copied()))
}

/// Ascending ranks as runs `(first, end)`.
fn runs_of(ranks: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in ranks {
        match runs.last_mut() {
            Some((_, end)) if *end == r => *end = r + 1,
            _ => runs.push((r, r + 1)),
        }
    }
    runs
}
