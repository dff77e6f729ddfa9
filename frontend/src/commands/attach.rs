//! `strata attach`: the options become an [`AttachRequest`] (what to sample, through which
//! tree) and a [`Presentation`] (how to show and keep the result); [`strata_session`] finds
//! the ranks, samples them through the tree network (or, with `--serial`, in this process)
//! and remaps the merge to rank order; this module shows the default view, the hints and
//! `--rank`'s stacks, writes the result files and chooses the exit code.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;

use strata_proto::overlay::StacksReply;

use crate::cli::{AttachArgs, ShowArgs};
use crate::commands::show::{color_on, show, view_state, write_files, write_stdout};
use crate::exit::Exit;
use crate::failure::Failure;
use crate::interrupt;
use crate::live::LiveOptions;
use std::path::PathBuf;
use strata_proto::sampling::Sampling;
use strata_result::directory as output;
use strata_session::assemble::{Assembled, assemble, list, nothing_found, report_problems};
use strata_session::gather::{requests, serial, tree};
use strata_session::place::{job_info, where_to_attach};
use strata_session::request::{AttachRequest, JobTarget, TreeShape};
use strata_session::root::Outcome;

pub fn run(mut args: AttachArgs) -> Result<Exit, Failure> {
    if args.job.is_none() && args.launcher_pid.is_none() && args.pids.is_empty() {
        args.launcher_pid = Some(the_one_local_job()?);
    }
    let (req, shown) = request(args);
    run_request(req, shown, None)
}

/// `strata attach` without a target: the MPI job of this user on this host, when there is
/// exactly one; else the jobs are listed and the user picks one (exit 2), or there is none
/// (exit 5).
fn the_one_local_job() -> Result<i32, Failure> {
    let jobs = strata_session::local_jobs::local_jobs(nix::unistd::geteuid().as_raw());
    match jobs.as_slice() {
        [] => Err(Failure::new(
            Exit::NotFound,
            "no MPI job of yours on this host: give a Slurm job id, --launcher-pid PID or \
             --pids PID,...",
        )),
        [one] => {
            eprintln!(
                "strata: attaching to the one MPI job of yours on this host: {} ranks under \
                 {} ({})",
                one.ranks, one.launcher, one.command
            );
            Ok(one.launcher)
        }
        several => {
            eprintln!(
                "strata: {} MPI jobs of yours run on this host:",
                several.len()
            );
            for job in several {
                eprintln!(
                    "  --launcher-pid {:<8} {} ranks  {}",
                    job.launcher, job.ranks, job.command
                );
            }
            Err(Failure::new(
                Exit::BadInput,
                "several MPI jobs: pick one with --launcher-pid PID (listed above)",
            ))
        }
    }
}

/// The job's side of `strata attach`'s options: what to attach to and how to sample.
pub fn request(args: AttachArgs) -> (AttachRequest, Presentation) {
    let req = AttachRequest {
        target: JobTarget::chosen(args.job, args.step, args.launcher_pid, args.pids),
        rm: args.rm.map(Into::into),
        sampling: Sampling {
            samples: args.samples,
            interval: args.interval,
            threads: args.threads,
            ..Sampling::default()
        },
        tree: TreeShape {
            daemons: args.daemons,
            fanout: args.fanout,
            depth: args.depth,
            commnodes_in_job: args.commnodes_in_job,
        },
        serial: args.serial,
        debug_dirs: args.debug_dir,
        debug_cache: args.debug_cache.dir(),
        debug_cache_shared: args.debug_cache_shared,
        stacks_of: args.rank,
        variables: args.var,
        loop_variables: args.show.progress,
        source_dirs: args.show.source_dir.clone(),
        any_launcher: args.any_launcher,
    };
    let shown = Presentation {
        json: args.json,
        interactive: args.interactive,
        output: args.output,
        no_files: args.no_files,
        show: args.show,
    };
    (req, shown)
}

/// `--rm` as the attach machinery takes it.
impl From<crate::cli::ResourceManager> for strata_session::request::ResourceManager {
    fn from(rm: crate::cli::ResourceManager) -> Self {
        match rm {
            crate::cli::ResourceManager::Local => strata_session::request::ResourceManager::Local,
            crate::cli::ResourceManager::Slurm => strata_session::request::ResourceManager::Slurm,
        }
    }
}

/// The command's side of an attach: how the result is shown and kept.
#[derive(Debug)]
pub struct Presentation {
    /// The result as JSON on standard output, no progress bar.
    pub json: bool,
    /// The terminal UI on the live session.
    pub interactive: bool,
    /// Where the result files go (default: `strata-results/<job>-<time>/`).
    pub output: Option<PathBuf>,
    /// Write no result files.
    pub no_files: bool,
    /// The view printed (or opened).
    pub show: ShowArgs,
}

/// Runs an attach; the job is named `job_name` instead of after its launcher or first
/// process when given.
pub fn run_request(
    req: AttachRequest,
    args: Presentation,
    job_name: Option<String>,
) -> Result<Exit, Failure> {
    let looked_up = std::time::Instant::now();
    let place = where_to_attach(&req)?;
    let lookup = looked_up.elapsed();
    // Before any thread exists, so that they all inherit the blocked signals.
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let (setup, sample) = requests(&req, &place);
    let progress = std::io::stderr().is_terminal() && !args.json;
    if args.interactive {
        if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
            return Err(Failure::new(
                Exit::BadInput,
                "-i needs a terminal on standard input and output: run it in a terminal, or \
                 drop -i to print the tree",
            ));
        }
        let options = LiveOptions {
            state: view_state(&args.show),
            color: color_on(args.show.color, true),
            job_name,
            output: args.output,
            no_files: args.no_files,
        };
        return crate::live::run(setup, sample, &req, &place, signals, options);
    }
    let started = looked_up;
    // `--progress` assembles the result inside the session (to choose the loop counters
    // to read); it is kept here so that the remap runs, and warns, once.
    let mut early: Option<Assembled> = None;
    let gathered = if req.serial {
        serial(setup, &sample, &req, signals)?
    } else {
        tree(
            setup,
            sample.clone(),
            &req,
            &place,
            signals,
            progress,
            &mut early,
        )?
    };
    let gathered = match gathered {
        Outcome::Done(g) => g,
        Outcome::Interrupted(sig) => {
            eprintln!("strata: {sig}: stopped; every process detached");
            return Ok(Exit::Interrupted);
        }
    };
    let rank_map = &gathered.rank_map;
    report_problems(rank_map);
    if let Some(failure) = nothing_found(rank_map) {
        return Err(failure.into());
    }
    let job = job_info(&place, &req, rank_map, job_name);
    let t = std::time::Instant::now();
    let mut assembled = match early {
        Some(mut a) => {
            a.result.meta.job = job;
            a
        }
        None => assemble(job, rank_map, &gathered.sampled, &sample)?,
    };
    if let Some((requests, reply)) = &gathered.variables {
        assembled.result.set_variables(requests, reply);
        assembled.result.mark_verdict_reads(&gathered.verdict_only);
    }
    let remapped = t.elapsed();
    let mut show_args = args.show;
    // `--json` is the result for scripts, with or without `--progress` (whose order then
    // goes into the result directory's progress.json).
    let progress_for_files = args.json && show_args.progress;
    if args.json {
        show_args.format = Some(crate::cli::FormatArg::Json);
        show_args.progress = false;
    }
    let t = std::time::Instant::now();
    let (mut analyses, html) = show(&assembled.result, &show_args)?;
    if html.is_some() {
        crate::commands::show::write_stdout(&analyses.html(&assembled.result))?;
    }
    if progress_for_files {
        show_args.progress = true;
        analyses.progress = crate::commands::show::progress_order(&show_args, &assembled.result);
    }
    let rendered = t.elapsed();
    hints(&assembled, req.sampling.threads);
    // With --json, stdout stays one JSON document: the stacks go to stderr.
    let unknown_rank = print_stacks(&req.stacks_of, &gathered.stacks, &assembled, !args.json)?;
    let written = if args.no_files {
        None
    } else {
        let dir = args
            .output
            .clone()
            .unwrap_or_else(|| output::default_dir(&assembled.result));
        Some(write_files(&assembled.result, &dir, &analyses)?)
    };
    if std::env::var_os("STRATA_TIMINGS").is_some() {
        let mut phases = vec![("job lookup", lookup)];
        phases.extend(gathered.timings.iter().cloned());
        phases.push(("remap and assemble", remapped));
        phases.push(("render", rendered));
        if let Some(w) = written {
            phases.push(("result files", w.files));
            phases.push(("report.html", w.report));
        }
        for (phase, d) in phases {
            eprintln!("strata: timing: {phase}: {:.1} ms", d.as_secs_f64() * 1e3);
        }
        eprintln!(
            "strata: timing: total: {:.1} ms",
            started.elapsed().as_secs_f64() * 1e3
        );
        if gathered.provided.indexes > 0 {
            eprintln!("strata: {}", gathered.provided);
        }
        if let Some(line) = debug_info_summary(&gathered.sampled.reply.stats) {
            eprintln!("strata: {line}");
        }
        if let Some(line) = daemon_cost_summary(&gathered.sampled.reply.stats) {
            eprintln!("strata: {line}");
        }
    }
    for warning in debug_cache_warnings(&gathered.sampled.reply.stats) {
        eprintln!("strata: warning: debug index cache: {warning}");
    }
    let troubled = assembled.notes.iter().any(|(_, n)| n.error.is_some());
    Ok(if unknown_rank {
        // The result is shown and kept, but the user asked for a rank the job lacks.
        Exit::BadInput
    } else if assembled.result.meta.missing.is_empty() && !troubled {
        Exit::Complete
    } else {
        Exit::Partial
    })
}

/// `--rank`: each chosen rank's full stacks, in the order asked, on stdout (else stderr).
/// True when a chosen rank is not a rank of the job.
fn print_stacks(
    wanted: &[u32],
    stacks: &StacksReply,
    a: &Assembled,
    on_stdout: bool,
) -> Result<bool, Failure> {
    let mut unknown = false;
    for &r in wanted {
        match stacks.ranks.iter().find(|s| s.rank == r) {
            Some(s) => match &s.error {
                None if on_stdout => write_stdout(&format!("\n{}", s.text))?,
                None => eprint!("\n{}", s.text),
                Some(e) => eprintln!("strata: rank {r}: {e}"),
            },
            None if a.notes.iter().any(|(rank, _)| *rank == r) => {
                eprintln!("strata: rank {r}: its daemon sent no stacks")
            }
            None => {
                unknown = true;
                let size = a.result.meta.job_size;
                eprintln!(
                    "strata: rank {r}: not a rank of this job (its {size} ranks are 0-{})",
                    size.saturating_sub(1)
                );
            }
        }
    }
    Ok(unknown)
}

/// One line per thing the user should know: ranks that could not be sampled, ranks whose
/// main thread waits on its own threads, binaries without debug information.
fn hints(a: &Assembled, threads_shown: bool) {
    // One line per distinct error: a lost daemon's ranks share one.
    let mut errors: BTreeMap<&str, Vec<(u32, Option<u32>)>> = BTreeMap::new();
    for ((rank, note), info) in a.notes.iter().zip(&a.result.meta.ranks) {
        if let Some(e) = &note.error {
            errors.entry(e).or_default().push((*rank, info.pid));
        }
    }
    for (e, mut ranks) in errors {
        ranks.sort_unstable();
        match ranks.as_slice() {
            [(rank, Some(pid))] => eprintln!("strata: rank {rank} (pid {pid}): {e}"),
            _ => {
                let rs: Vec<u32> = ranks.iter().map(|r| r.0).collect();
                eprintln!("strata: rank(s) {}: {e}", list(&rs));
            }
        }
    }
    let mut waiting: Vec<u32> = a
        .notes
        .iter()
        .filter(|(_, n)| n.waits_on_threads)
        .map(|(r, _)| *r)
        .collect();
    waiting.sort_unstable();
    if !waiting.is_empty() && !threads_shown {
        eprintln!(
            "strata: rank(s) {}: the main thread waits for its own threads (join, condition, \
             barrier or lock); run with --threads to see what they do",
            list(&waiting)
        );
    }
    let no_debug: BTreeSet<&str> = a
        .notes
        .iter()
        .zip(&a.executables)
        .filter(|((_, n), _)| n.no_debug_info)
        .map(|(_, exe)| exe.as_str())
        .collect();
    let mut python_refused: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (rank, note) in &a.notes {
        if let Some(why) = &note.python_error {
            python_refused.entry(why).or_default().push(*rank);
        }
    }
    for (why, mut ranks) in python_refused {
        ranks.sort_unstable();
        eprintln!(
            "strata: rank(s) {}: Python frames not read ({why}); their stacks show the \
             interpreter's C frames only",
            list(&ranks)
        );
    }
    for exe in no_debug {
        eprintln!(
            "strata: {exe} has no debug information: its frames are named from its symbol \
             table, without source lines (rebuild with -g, or install its debug package)"
        );
    }
}

/// What each daemon cost (their level-0 stats): `daemons: 4 daemon(s), CPU 31.0 ms median,
/// 40.2 ms max; peak memory 12.1 MiB median, 13.0 MiB max`.
pub fn daemon_cost_summary(stats: &[strata_proto::overlay::NodeStat]) -> Option<String> {
    let daemons: Vec<_> = stats.iter().filter(|s| s.level == 0).collect();
    if daemons.is_empty() {
        return None;
    }
    let middle = |mut v: Vec<u64>| -> (u64, u64) {
        v.sort_unstable();
        (v[(v.len() - 1) / 2], v[v.len() - 1])
    };
    let (cpu, cpu_max) = middle(daemons.iter().map(|s| s.cpu_us).collect());
    let (rss, rss_max) = middle(daemons.iter().map(|s| s.peak_rss_kib).collect());
    Some(format!(
        "daemons: {} daemon(s), CPU {:.1} ms median, {:.1} ms max; peak memory {:.1} MiB median, {:.1} MiB max",
        daemons.len(),
        cpu as f64 / 1e3,
        cpu_max as f64 / 1e3,
        rss as f64 / 1024.0,
        rss_max as f64 / 1024.0
    ))
}

/// The daemons' index cache warnings (corrupt, foreign or unwritable entries), each once.
pub fn debug_cache_warnings(stats: &[strata_proto::overlay::NodeStat]) -> Vec<&str> {
    let all = stats.iter().filter(|s| s.level == 0);
    let mut seen = std::collections::BTreeSet::new();
    all.flat_map(|s| s.debug_cache_warnings.iter().map(String::as_str))
        .filter(|w| seen.insert(*w))
        .collect()
}

/// What the daemons spent on debug information (their level-0 stats), summed:
/// `debug info: 4 daemons indexed 2 binaries (2 distinct build-ids), took 6 from the index
/// cache, read 9.1 MB of debug files and indexes, 412.0 ms`. The time is summed over
/// daemons (they work in parallel).
pub fn debug_info_summary(stats: &[strata_proto::overlay::NodeStat]) -> Option<String> {
    let daemons: Vec<_> = stats.iter().filter(|s| s.level == 0).collect();
    if daemons.is_empty() {
        return None;
    }
    let indexed: u32 = daemons.iter().map(|s| s.debug_indexed).sum();
    let hits: u32 = daemons.iter().map(|s| s.debug_cache_hits).sum();
    let bytes: u64 = daemons.iter().map(|s| s.debug_bytes_read).sum();
    let micros: u64 = daemons.iter().map(|s| s.debug_load_us).sum();
    let deferred: u32 = daemons.iter().map(|s| s.debug_index_deferred).sum();
    let provided: u32 = daemons.iter().map(|s| s.debug_provided).sum();
    let deferred = match deferred {
        0 => String::new(),
        n => format!(", read {n} large binaries lazily (their indexes built in the background)"),
    };
    let distinct: std::collections::BTreeSet<&str> = daemons
        .iter()
        .flat_map(|s| s.debug_build_ids.iter().map(String::as_str))
        .collect();
    Some(format!(
        "debug info: {} daemon(s) indexed {indexed} binaries ({} distinct build-ids), took {hits} from the index cache{deferred}, read {:.1} MB of debug files and indexes, {:.1} ms summed over daemons; took {provided} down the tree",
        daemons.len(),
        distinct.len(),
        bytes as f64 / 1e6,
        micros as f64 / 1e3
    ))
}
