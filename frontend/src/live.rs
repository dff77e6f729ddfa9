//! `strata attach -i` (and `strata demo -i`): the terminal UI on a live session.
//!
//! The tree stays up between commands: the session is opened once (launch, connect, rank
//! map), sampled once before the UI opens, and then sampled again, asked for full stacks or
//! shut down as the user says, through [`LiveSource`]. Between commands no target is stopped
//! or traced: a daemon attaches only while it samples or reads stacks. Whatever ends the UI
//! (q, an error, a panic, SIGTERM or SIGHUP), the tree is shut down and every daemon detaches;
//! if the front end itself is killed, the daemons notice their lost parent and detach too.

use std::time::Duration;

use strata_launcher::Launcher;
use strata_proto::overlay::{Sample, Setup};

use crate::commands::show::{Analyses, write_files};
use crate::exit::Exit;
use crate::failure::Failure;
use std::path::PathBuf;
use strata_result::directory as output;
use strata_result::variables::{self as values, VariableReads, VariableSpec};
use strata_result::{JobInfo, StrataResult};
use strata_session::Session;
use strata_session::place::Place;
use strata_session::request::AttachRequest;
use strata_tui::{self as tui, Source, ViewState};

/// What a live UI session runs on: the open session, its runtime and launcher.
pub struct LiveSource {
    runtime: tokio::runtime::Runtime,
    session: Option<Box<Session>>,
    launcher: Box<dyn Launcher>,
    job: JobInfo,
    /// The settings of the last sampling (the next one starts from them).
    sample: Sample,
}

impl std::fmt::Debug for LiveSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSource")
            .field("job", &self.job.id)
            .field("live", &self.session.is_some())
            .finish_non_exhaustive()
    }
}

impl LiveSource {
    fn session(&mut self) -> Result<&mut Session, String> {
        match self.session.as_deref_mut() {
            Some(s) if s.stopped().is_none() => Ok(s),
            Some(_) => Err("interrupted by a signal: the job has been detached".into()),
            None => Err(
                "detached from the job: nothing more to sample (quit, then attach \
                         again)"
                    .into(),
            ),
        }
    }
}

impl Source for LiveSource {
    fn live(&self) -> bool {
        self.session
            .as_deref()
            .is_some_and(|s| s.stopped().is_none())
    }

    fn sample(&mut self, samples: u32, threads: bool) -> Result<StrataResult, String> {
        let sample = Sample {
            samples,
            threads,
            ..self.sample.clone()
        };
        let runtime = &self.runtime;
        let session = match self.session.as_deref_mut() {
            Some(s) if s.stopped().is_none() => s,
            _ => return Err(self.session().err().unwrap_or_default()),
        };
        let sampled = runtime
            .block_on(session.sample(&sample))
            .ok_or("interrupted by a signal: the job has been detached")?;
        let assembled = strata_session::assemble::assemble(
            self.job.clone(),
            &session.rank_map,
            &sampled,
            &sample,
        )
        .map_err(|e| e.to_string())?;
        self.sample = sample;
        Ok(assembled.result)
    }

    fn read_variables(
        &mut self,
        ranks: &[u32],
        variables: &[VariableSpec],
    ) -> Result<Vec<VariableReads>, String> {
        let runtime = &self.runtime;
        let session = match self.session.as_deref_mut() {
            Some(s) if s.stopped().is_none() => s,
            _ => return Err(self.session().err().unwrap_or_default()),
        };
        let requests: Vec<_> = variables.iter().map(VariableSpec::request).collect();
        let reply = runtime
            .block_on(session.read_variables(ranks.to_vec(), requests.clone()))
            .ok_or("interrupted by a signal: the job has been detached")?;
        let expected: strata_filters::RankSet = ranks.iter().copied().collect();
        Ok(values::from_reply(&requests, &reply, &expected))
    }

    fn stacks(&mut self, ranks: &[u32]) -> Result<String, String> {
        let runtime = &self.runtime;
        let session = match self.session.as_deref_mut() {
            Some(s) if s.stopped().is_none() => s,
            _ => return Err(self.session().err().unwrap_or_default()),
        };
        let reply = runtime
            .block_on(session.stacks(ranks.to_vec()))
            .ok_or("interrupted by a signal: the job has been detached")?;
        let mut text = String::new();
        for &r in ranks {
            match reply.ranks.iter().find(|s| s.rank == r) {
                Some(s) => match &s.error {
                    None => text.push_str(&s.text),
                    Some(e) => text.push_str(&format!("rank {r}: {e}\n")),
                },
                None => text.push_str(&format!(
                    "rank {r}: no daemon answered for it (not a rank of this job, or its \
                     daemon is lost)\n"
                )),
            }
        }
        Ok(text)
    }

    fn state(&self) -> &'static str {
        match self.session.as_deref() {
            Some(s) if s.stopped().is_none() => "attached",
            Some(_) => "interrupted",
            None => "detached",
        }
    }

    fn detach(&mut self) -> Result<(), String> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let (_, _, _) = self.runtime.block_on(session.close());
        self.launcher.reap(Duration::from_secs(5));
        Ok(())
    }
}

impl Drop for LiveSource {
    fn drop(&mut self) {
        let _ = self.detach();
    }
}

/// How the live UI starts and what it leaves behind.
#[derive(Debug)]
pub(crate) struct LiveOptions {
    /// The first view.
    pub state: ViewState,
    pub color: bool,
    /// The name the result files give the job (else after its launcher or first process).
    pub job_name: Option<String>,
    /// Where the last result's files go on quitting; `None`: the default directory.
    pub output: Option<PathBuf>,
    /// Write no files on quitting.
    pub no_files: bool,
}

/// Opens the session, samples once, and runs the terminal UI on it until the user quits.
pub(crate) fn run(
    setup: Setup,
    sample: Sample,
    req: &AttachRequest,
    place: &Place,
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
    options: LiveOptions,
) -> Result<Exit, Failure> {
    let (plan, mut launcher, key) =
        strata_session::gather::tree_plan(setup, sample.clone(), req, place, true)?;
    let signals = unless_debugging(signals);
    let Some((runtime, mut session)) =
        strata_session::gather::open_live(&plan, launcher.as_mut(), key, signals)?
    else {
        return Ok(Exit::Interrupted);
    };
    let job = strata_session::place::job_info(place, req, &session.rank_map, options.job_name);
    let mut source = LiveSource {
        runtime,
        session: None,
        launcher,
        job,
        sample,
    };
    if let Some(failure) = strata_session::assemble::nothing_found(&session.rank_map) {
        source.session = Some(session);
        return Err(failure.into());
    }
    let first = source.runtime.block_on(session.sample(&source.sample));
    let stopped = session.stopped();
    session.quiet();
    source.session = Some(session);
    let Some(sampled) = first else {
        drop(source);
        eprintln!(
            "strata: {}: stopped; every process detached",
            stopped.map_or("signal".to_string(), |s| s.to_string())
        );
        return Ok(Exit::Interrupted);
    };
    let result = {
        let session = source.session.as_deref().expect("just set");
        strata_session::assemble::assemble(
            source.job.clone(),
            &session.rank_map,
            &sampled,
            &source.sample,
        )?
        .result
    };
    watch_signals(&source);
    // What the tree warns about while the UI owns the terminal (a refused connection, a
    // lost daemon) is printed once the UI has closed; lost ranks also show in the result.
    let warnings = source
        .session
        .as_deref()
        .map(Session::warnings_handle)
        .expect("open");
    let outcome = tui::run(result, Box::new(source), options.state, options.color);
    for w in warnings
        .lock()
        .expect("not poisoned")
        .take()
        .unwrap_or_default()
    {
        eprintln!("strata: warning: {w}");
    }
    // The source (and with it the session) has been dropped by now: the tree is shut down.
    let last = outcome?;
    let exit = Exit::of_result(&last);
    if !options.no_files {
        let dir = options.output.unwrap_or_else(|| output::default_dir(&last));
        write_files(&last, &dir, &Analyses::new(&last, None, &[]))?;
    }
    Ok(exit)
}

/// The ending signals, less the SIGINT a Ctrl-C typed into a debugger started by the
/// hand-off also sends to strata (same process group): that one is the debugger's.
fn unless_debugging(
    signals: std::sync::mpsc::Receiver<nix::sys::signal::Signal>,
) -> std::sync::mpsc::Receiver<nix::sys::signal::Signal> {
    let (tx, rx) = std::sync::mpsc::channel();
    let _ = strata_launcher::priority::spawn_raised("strata-signal-filter", move || {
        while let Ok(sig) = signals.recv() {
            if sig == nix::sys::signal::Signal::SIGINT && tui::debugger_running() {
                continue;
            }
            if tx.send(sig).is_err() {
                break;
            }
        }
    });
    rx
}

/// SIGTERM or SIGHUP while the UI owns the terminal: the session's signal thread has sent
/// the shutdown down the tree already; restore the terminal and exit (the daemons also
/// detach when this process's links close).
fn watch_signals(source: &LiveSource) {
    let Some(flag) = source.session.as_deref().map(Session::interrupt_flag) else {
        return;
    };
    let _ = strata_launcher::priority::spawn_raised("strata-tui-signals", move || {
        loop {
            std::thread::sleep(Duration::from_millis(100));
            let sig = *flag.lock().expect("not poisoned");
            if let Some(sig) = sig {
                // Give the shutdown a moment to reach the daemons before the links close.
                std::thread::sleep(Duration::from_millis(500));
                tui::restore_terminal();
                eprintln!("strata: {sig}: stopped; every process detached");
                std::process::exit(Exit::Interrupted as i32);
            }
        }
    });
}
