//! `strata watch`: the statistical core ([`strata_watch`]), run against a live job.
//!
//! The tree network stays up beside the job. At random moments ([`Detector::next_gap`]) the
//! monitored ranks are probed (one capture of their main thread, no tree:
//! [`Session::probe`]); S_out feeds the [`Detector`]. An alarm is verified with
//! [`VERIFY_SAMPLES`] probes of every rank; a verified hang gets a full snapshot through the
//! tree (the normal result files), a report directory ([`strata_watch::report`]) and the action
//! `--on-hang` asks for. A job that ends makes the watch end with exit 0.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Serialize;

use crate::cli::WatchArgs;
use crate::exit::Exit;
use crate::failure::Failure;
use crate::interrupt;
use strata_proto::sampling::Sampling;
use strata_result::{StrataResult, now_rfc3339};
use strata_session::Session;
use strata_session::place::Place;
use strata_session::request::{AttachRequest, JobTarget, TreeShape};

use strata_watch::report::{self, Hang};
use strata_watch::{
    Detector, DetectorConfig, InsideMpi, MonitorSet, OnHang, Probed, ProbedStack, RankState,
    STALL_FACTOR, STILLNESS_SAMPLES, Status, Trigger, VERIFY_SAMPLES, Verdict, s_out, stall,
    verify,
};

/// The attach the watch's tree is built from: the job, its sample count, and the 100 ms
/// interval of a snapshot.
fn attach_request(args: &WatchArgs) -> AttachRequest {
    let target = JobTarget::chosen(
        args.job.clone(),
        args.step,
        args.launcher_pid,
        args.pids.clone(),
    );
    AttachRequest {
        rm: args.rm.map(Into::into),
        sampling: Sampling {
            samples: args.samples,
            interval: Sampling::DEFAULT_INTERVAL,
            ..Sampling::default()
        },
        tree: TreeShape {
            daemons: args.daemons,
            fanout: args.fanout,
            ..TreeShape::default()
        },
        any_launcher: args.any_launcher,
        ..AttachRequest::new(target)
    }
}

/// Why the watch ended.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Ended {
    Hang {
        report_dir: PathBuf,
        cancelled: bool,
    },
    JobEnded,
    WatchedFor {
        seconds: f64,
    },
}

pub fn run(args: WatchArgs) -> Result<Exit, Failure> {
    let bad = |m: String| Failure::new(Exit::BadInput, m);
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(bad(format!(
            "--alpha {}: must be between 0 and 1",
            args.alpha
        )));
    }
    let inside = match &args.mpi_pattern {
        None => InsideMpi::Frames,
        Some(p) => {
            InsideMpi::Pattern(Regex::new(p).map_err(|e| bad(format!("--mpi-pattern '{p}': {e}")))?)
        }
    };
    let attach_req = attach_request(&args);
    let place = strata_session::place::where_to_attach(&attach_req)?;
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let (setup, sample) = strata_session::gather::requests(&attach_req, &place);
    let progress = std::io::stderr().is_terminal() && !args.json;
    let (plan, mut launcher, key) =
        strata_session::gather::tree_plan(setup, sample.clone(), &attach_req, &place, progress)?;
    let Some((runtime, mut session)) =
        strata_session::gather::open_live(&plan, launcher.as_mut(), key, signals)?
    else {
        return Ok(Exit::Interrupted);
    };
    if let Some(failure) = strata_session::assemble::nothing_found(&session.rank_map) {
        let _ = runtime.block_on(session.close());
        drop(runtime);
        launcher.reap(Duration::from_secs(5));
        return Err(failure.into());
    }
    session.quiet();
    let job = strata_session::place::job_info(&place, &attach_req, &session.rank_map, None);
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    });
    let mut watch = Watch {
        args: &args,
        inside,
        place: &place,
        started: Instant::now(),
        started_at: now_rfc3339(),
        timeline: Vec::new(),
        dismissed: 0,
        reported: false,
        seed,
    };
    let outcome = runtime.block_on(watch.run(&mut session, &job, &sample));
    // Detach whatever happened.
    let interrupted = session.stopped();
    let _ = runtime.block_on(session.close());
    drop(runtime);
    launcher.reap(Duration::from_secs(5));
    if let Some(sig) = interrupted {
        eprintln!("strata: {sig}: stopped watching; every process detached");
        return Ok(Exit::Interrupted);
    }
    let ended = outcome?;
    if args.json {
        let v = serde_json::json!({
            "job": job,
            "started": watch.started_at,
            "seed": seed,
            "result": &ended,
        });
        crate::commands::show::write_stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&v).unwrap()
        ))?;
    }
    Ok(match ended {
        Ended::Hang { .. } => Exit::HangDetected,
        Ended::JobEnded | Ended::WatchedFor { .. } => Exit::Complete,
    })
}

struct Watch<'a> {
    args: &'a WatchArgs,
    inside: InsideMpi,
    place: &'a Place,
    started: Instant,
    started_at: String,
    timeline: Vec<Probed>,
    dismissed: u32,
    /// A hang was reported and the job has not moved since (`--on-hang continue`).
    reported: bool,
    seed: u64,
}

impl Watch<'_> {
    fn say(&self, line: &str) {
        if !self.args.json {
            eprintln!("strata watch: {line}");
        }
    }

    async fn run(
        &mut self,
        session: &mut Session,
        job: &strata_result::JobInfo,
        sample: &strata_proto::overlay::Sample,
    ) -> Result<Ended, Failure> {
        let ranks: Vec<u32> = session
            .rank_map
            .daemons
            .iter()
            .flat_map(|d| d.tasks.iter().map(|t| t.rank))
            .collect();
        let mut monitor = MonitorSet::new(&ranks, self.args.monitor as usize, self.seed);
        let mut detector = Detector::new(
            DetectorConfig {
                alpha: self.args.alpha,
                initial_interval: self.args.interval,
                ..DetectorConfig::default()
            },
            self.seed,
        );
        self.say(&format!(
            "watching job {} ({} ranks; {} monitored, first interval {} ms, alpha {})",
            job.id,
            ranks.len(),
            monitor.ranks().len(),
            self.args.interval.as_millis(),
            self.args.alpha
        ));
        // Where a report would go, before it matters: a script's user must find it.
        let report_to = match &self.args.report_dir {
            Some(dir) => absolute(dir).display().to_string(),
            None => format!(
                "{} (in the current directory; --report-dir chooses)",
                absolute(Path::new(&format!("strata-watch-{}-TIME", job.id))).display()
            ),
        };
        self.say(&format!("a hang report will go to {report_to}"));
        // Uninformative samples in a row (see [`STILLNESS_SAMPLES`]).
        let mut still = 0u32;
        // Whether a stall of the ranks' MPI histories may start a verification (once per
        // stall: see `strata_watch::stall`).
        let mut stall_armed = true;
        loop {
            if let Some(limit) = self.args.watch_for
                && self.started.elapsed() >= limit
            {
                self.say(&format!(
                    "no hang in {:.0} s of watching ({} probes, {} alarm(s) dismissed)",
                    limit.as_secs_f64(),
                    self.timeline.len(),
                    self.dismissed
                ));
                return Ok(Ended::WatchedFor {
                    seconds: limit.as_secs_f64(),
                });
            }
            tokio::time::sleep(detector.next_gap()).await;
            let Some(probe) = session.probe(monitor.ranks().to_vec()).await else {
                return Ok(Ended::WatchedFor {
                    seconds: self.started.elapsed().as_secs_f64(),
                });
            };
            let answered = || {
                probe
                    .ranks
                    .iter()
                    .filter(|r| r.error.is_none() && !r.exited && !r.functions.is_empty())
            };
            let inside: Vec<bool> = answered()
                .map(|r| self.inside.state(probed(r)).in_mpi)
                .collect();
            // The ranks' own MPI histories, with strata's PMPI library.
            let histories: Vec<Option<(f64, f64)>> = answered()
                .map(|r| r.mpi_idle_s.zip(r.mpi_longest_s))
                .collect();
            let stalled = stall(&histories);
            if stalled.is_none() {
                // A rank made a transition: the next stall is a new one.
                stall_armed = true;
            }
            if self.args.verbose && inside.len() < probe.ranks.len() {
                for r in probe.ranks.iter().filter(|r| r.error.is_some() || r.exited) {
                    eprintln!(
                        "strata watch: rank {}: {}",
                        r.rank,
                        r.error.as_deref().unwrap_or("exited")
                    );
                }
            }
            let Some(s) = s_out(inside) else {
                if self.args.verbose {
                    eprintln!(
                        "strata watch: {:>8.3} s  no monitored rank answered",
                        self.started.elapsed().as_secs_f64()
                    );
                }
                // Nobody answered: the job ended, or the tree lost the monitored ranks.
                if !self.job_running(session).await {
                    self.say("the job ended");
                    return Ok(Ended::JobEnded);
                }
                continue;
            };
            monitor.sampled();
            let observation = detector
                .observe(s)
                .map_err(|e| Failure::internal(format!("S_out {}", e.0)))?;
            if let Some(to) = observation.doubled_to {
                self.say(&format!(
                    "samples not random: interval doubled to {} ms",
                    to.as_millis()
                ));
            }
            if self.args.verbose {
                eprintln!(
                    "strata watch: {:>8.3} s  S_out {:.3}  {:?}",
                    self.started.elapsed().as_secs_f64(),
                    s,
                    observation.status
                );
            }
            self.timeline.push(Probed {
                ms: self.started.elapsed().as_millis() as u64,
                s_out: s,
                status: observation.status,
            });
            let trigger = match (observation.status, stalled) {
                (Status::Alarm(alarm), _) => Trigger::Alarm(alarm),
                // One verification per stall: the ranks must move before the next.
                (_, Some(stalled)) if stall_armed && !self.reported => {
                    stall_armed = false;
                    still = 0;
                    Trigger::Stall(stalled)
                }
                (Status::Uninformative, _) => {
                    still += 1;
                    if still < STILLNESS_SAMPLES {
                        continue;
                    }
                    still = 0;
                    Trigger::Stillness {
                        samples: STILLNESS_SAMPLES,
                        s_out: s,
                    }
                }
                (other, _) => {
                    still = 0;
                    if self.reported && matches!(other, Status::Normal) {
                        // The job moved after a reported hang: report the next one again.
                        self.reported = false;
                    }
                    continue;
                }
            };
            let dismiss = |detector: &mut Detector| {
                if matches!(trigger, Trigger::Alarm(_)) {
                    detector.dismissed();
                }
            };
            match &trigger {
                Trigger::Alarm(alarm) => self.say(&format!(
                    "alarm: {} suspicious samples in a row (q^k = {:.2e} <= {}); verifying with \
                     {VERIFY_SAMPLES} samples of every rank",
                    alarm.k, alarm.probability, alarm.alpha
                )),
                Trigger::Stillness { samples, .. } => self.say(&format!(
                    "S_out has not told anything for {samples} samples (too little variation to \
                     judge); verifying with {VERIFY_SAMPLES} samples of every rank"
                )),
                Trigger::Stall(stalled) => self.say(&format!(
                    "no monitored rank made an MPI transition for {:.1} s, past {STALL_FACTOR} \
                     times the longest each had gone between two (at most {:.3} s, by strata's \
                     PMPI library); verifying with {VERIFY_SAMPLES} samples of every rank",
                    stalled.idle_s, stalled.longest_s
                )),
            }
            let mut full = Vec::new();
            for i in 0..VERIFY_SAMPLES {
                if i > 0 {
                    tokio::time::sleep(detector.interval()).await;
                }
                let Some(p) = session.probe(Vec::new()).await else {
                    return Ok(Ended::WatchedFor {
                        seconds: self.started.elapsed().as_secs_f64(),
                    });
                };
                full.push(self.states(&p));
            }
            if full.iter().all(BTreeMap::is_empty) {
                if !self.job_running(session).await {
                    self.say("the job ended");
                    return Ok(Ended::JobEnded);
                }
                dismiss(&mut detector);
                continue;
            }
            let verification = match verify(&full) {
                Ok(v) => v,
                Err(e) => {
                    self.say(&format!("cannot verify ({e}): watching on"));
                    dismiss(&mut detector);
                    continue;
                }
            };
            let Verdict::Hung(classification) = &verification.verdict else {
                self.dismissed += 1;
                if let Verdict::NotHung { changed_ranks } = &verification.verdict {
                    self.say(&format!(
                        "not a hang: {} rank(s) moved: {}; watching on",
                        changed_ranks.len(),
                        report::ranks_text(changed_ranks)
                    ));
                }
                self.reported = false;
                dismiss(&mut detector);
                continue;
            };
            if self.reported {
                // Still the hang already reported (`--on-hang continue`).
                dismiss(&mut detector);
                continue;
            }
            self.say("hang verified: no rank moved in any verification sample; taking a snapshot");
            let result = self.snapshot(session, job, sample).await?;
            let dir = self.args.report_dir.clone().unwrap_or_else(|| {
                PathBuf::from(format!(
                    "strata-watch-{}-{}",
                    job.id,
                    strata_result::directory::timestamp_for_path()
                ))
            });
            let hang = Hang {
                job,
                started: &self.started_at,
                detected_after: self.started.elapsed(),
                detected_at_unix: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0.0, |d| d.as_secs_f64()),
                seed: self.seed,
                trigger: &trigger,
                stats: detector.stats(),
                verification: &verification,
                classification,
                timeline: &self.timeline,
                on_hang: self.args.on_hang.into(),
                mpi_pattern: self.inside.pattern(),
            };
            let progress = report::progress_of(&result);
            let verdict = report::verdict_of(&result, &progress);
            report::write(&dir, &result, &hang, &progress, &verdict).map_err(|e| {
                Failure::new(
                    Exit::BadInput,
                    format!("cannot write the report to {}: {e}", dir.display()),
                )
            })?;
            if !self.args.json {
                crate::commands::show::write_stdout(&report::summary(
                    &result, &hang, &progress, &verdict,
                ))?;
            }
            self.say(&format!("report written to {}", absolute(&dir).display()));
            match OnHang::from(self.args.on_hang) {
                OnHang::Exit => {
                    return Ok(Ended::Hang {
                        report_dir: dir,
                        cancelled: false,
                    });
                }
                OnHang::Cancel => {
                    let cancelled = self.cancel(session);
                    return Ok(Ended::Hang {
                        report_dir: dir,
                        cancelled,
                    });
                }
                OnHang::Continue => {
                    self.reported = true;
                    dismiss(&mut detector);
                }
            }
        }
    }

    /// Each rank's state in one full probe (ranks without a stack are left out).
    fn states(&self, p: &strata_proto::overlay::ProbeReply) -> BTreeMap<u32, RankState> {
        p.ranks
            .iter()
            .filter(|r| r.error.is_none() && !r.exited && !r.functions.is_empty())
            .map(|r| (r.rank, self.inside.state(probed(r))))
            .collect()
    }

    /// The full snapshot through the tree, as `strata attach` takes it.
    async fn snapshot(
        &self,
        session: &mut Session,
        job: &strata_result::JobInfo,
        sample: &strata_proto::overlay::Sample,
    ) -> Result<StrataResult, Failure> {
        let interrupted =
            || Failure::new(Exit::Interrupted, "interrupted while taking the snapshot");
        let sampled = session.sample(sample).await.ok_or_else(interrupted)?;
        let mut result =
            strata_session::assemble::assemble(job.clone(), &session.rank_map, &sampled, sample)?
                .result;
        // What the report's analyses need, read as attach --progress reads it: the loop
        // counters of the progress order (who is behind inside the time-step loop) and the
        // peers and communicators of the verdict's wait-for graph.
        let mut sources = strata_progress::source::SourceIndex::new(Vec::new());
        let wanted =
            strata_session::gather::analysis_requests(&result, &mut sources, Vec::new(), true);
        if !wanted.all.is_empty() {
            let reply = session
                .read_variables(Vec::new(), wanted.all.clone())
                .await
                .ok_or_else(interrupted)?;
            result.set_variables(&wanted.all, &reply);
            result.mark_verdict_reads(&wanted.verdict_only);
        }
        Ok(result)
    }

    /// Whether the job still runs: Slurm's word for a Slurm job; for a local job, whether
    /// any rank process is left.
    async fn job_running(&self, session: &mut Session) -> bool {
        match self.place {
            Place::Slurm { job, .. } => {
                let id = job.id;
                let uid = nix::unistd::getuid().as_raw();
                tokio::task::spawn_blocking(move || {
                    strata_launcher::slurm::lookup(id, uid).is_ok_and(|j| j.state == "RUNNING")
                })
                .await
                .unwrap_or(false)
            }
            Place::Local => session.rank_map.daemons.iter().any(|d| {
                d.tasks.iter().any(|t| {
                    strata_daemon::procfs::stat(t.pid as i32).is_ok_and(|s| s.state != 'Z')
                })
            }),
        }
    }

    /// `--on-hang cancel`: scancel a Slurm job; SIGTERM to a local job's launcher or ranks.
    fn cancel(&self, session: &Session) -> bool {
        match self.place {
            Place::Slurm { job, .. } => match strata_launcher::slurm::cancel(job.id) {
                Ok(()) => {
                    self.say(&format!("job {} cancelled (scancel)", job.id));
                    true
                }
                Err(e) => {
                    eprintln!("strata watch: cannot cancel job {}: {e}", job.id);
                    false
                }
            },
            Place::Local => {
                use nix::sys::signal::{Signal, kill};
                use nix::unistd::Pid;
                let pids: Vec<i32> = match self.args.launcher_pid {
                    Some(p) => vec![p],
                    None => session
                        .rank_map
                        .daemons
                        .iter()
                        .flat_map(|d| d.tasks.iter().map(|t| t.pid as i32))
                        .collect(),
                };
                let sent = pids
                    .iter()
                    .filter(|&&p| kill(Pid::from_raw(p), Signal::SIGTERM).is_ok())
                    .count();
                self.say(&format!("sent SIGTERM to {sent} process(es) of the job"));
                sent > 0
            }
        }
    }
}

/// `path` made absolute against the current directory (as given when that fails).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// A rank's probed stack as the watch reads it: its names, and the MPI call the daemon found.
fn probed(r: &strata_proto::overlay::RankProbe) -> ProbedStack<'_> {
    ProbedStack {
        functions: &r.functions,
        mpi_call: r
            .mpi_entry
            .zip(r.mpi_call.as_deref())
            .map(|(entry, call)| (entry as usize, call)),
        progress: r.mpi_progress,
    }
}
