//! `strata dump PID...`: every thread's stack of running processes, like `eu-stack -p` or
//! `py-spy dump`, through strata's own capture, unwinder and symbolizer. It is the
//! single-host, no-merging base the sampling commands build on, and the tool to check
//! strata's stacks against other debuggers.

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use strata_daemon::capture::{CaptureError, CaptureOptions, Capturer, Held, TaskCapture};
use strata_daemon::sampler::Sampler;
use strata_daemon::stacks::DEFAULT_MAX_FRAMES;
use strata_daemon::symbols::Symbolizer;

use crate::cli::DumpArgs;
use crate::commands::show::write_stdout;
use crate::exit::Exit;
use crate::failure::{Failure, capture_exit};
use crate::interrupt;
use strata_daemon::stack_text::render_process;

pub fn run(args: DumpArgs) -> Result<Exit, Failure> {
    let hold = match args.hold {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s <= 24.0 * 3600.0 => {
            Some(Duration::from_secs_f64(s))
        }
        Some(s) => {
            return Err(Failure::new(
                Exit::BadInput,
                format!("--hold {s}: give a number of seconds between 0 and 86400"),
            ));
        }
    };
    // Before any capture thread exists, so that they all inherit the blocked signals.
    let signals = interrupt::watch().map_err(|e| {
        Failure::new(
            Exit::Internal,
            format!("cannot set up signal handling: {e}"),
        )
    })?;
    let capturer = Capturer::with_default_threads();
    let mut sampler = Sampler::new(Symbolizer::new(strata_session::gather::symbol_options(
        &args.debug_dir,
        args.debug_cache.dir().as_deref(),
    )));
    let options = CaptureOptions::default();
    let max_frames = args.max_frames.unwrap_or(DEFAULT_MAX_FRAMES);

    // One rule with `attach`: strata inspects only the invoking user's processes (real
    // uid), also when run as root; another user's process is dumped by running strata as
    // that user. Others are refused before any ptrace.
    let me = nix::unistd::getuid().as_raw();
    let refusal = |pid: i32| match strata_daemon::procfs::uid(pid) {
        Ok(owner) if owner != me => Some(CaptureError::OtherUser { pid, owner, me }),
        _ => None,
    };
    let refusals: Vec<Option<CaptureError>> = args.pids.iter().map(|&p| refusal(p)).collect();
    let own: Vec<i32> = args
        .pids
        .iter()
        .zip(&refusals)
        .filter(|(_, r)| r.is_none())
        .map(|(&p, _)| p)
        .collect();
    let mut held: Vec<Held<'_>> = Vec::new();
    let own_captures: Vec<Result<TaskCapture, CaptureError>> = match hold {
        Some(d) => capturer
            .capture_and_hold_many(&own, &options, d)
            .into_iter()
            .map(|h| {
                h.map(|h| {
                    let c = h.capture().clone();
                    held.push(h);
                    c
                })
            })
            .collect(),
        None => capturer.capture(&own, &options),
    };
    // In the order asked, the refused ones in their places.
    let mut own_captures = own_captures.into_iter();
    let captures: Vec<Result<TaskCapture, CaptureError>> = refusals
        .into_iter()
        .map(|r| match r {
            Some(e) => Err(e),
            None => own_captures.next().expect("one capture per own pid"),
        })
        .collect();

    let mut out = String::new();
    let mut errors: Vec<CaptureError> = Vec::new();
    for (pid, result) in args.pids.iter().zip(captures) {
        match result {
            Ok(capture) => {
                let stacks = sampler.unwind(&capture, max_frames);
                let threads = sampler.symbolized(&stacks);
                render_process(
                    &mut out,
                    &capture,
                    None,
                    &threads,
                    stacks.python_summary().as_deref(),
                );
            }
            Err(e) => {
                eprintln!("strata: pid {pid}: {e}");
                errors.push(e);
            }
        }
    }
    write_stdout(&out)?;

    let mut interrupted = None;
    if let Some(d) = hold
        && !held.is_empty()
    {
        eprintln!(
            "strata: holding {} process(es) stopped for {:.1} s; Ctrl-C releases them",
            held.len(),
            d.as_secs_f64()
        );
        match signals.recv_timeout(d) {
            Ok(sig) => interrupted = Some(sig),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
        }
    } else if let Ok(sig) = signals.try_recv() {
        interrupted = Some(sig);
    }
    drop(held); // release
    drop(capturer);
    if let Some(sig) = interrupted {
        eprintln!("strata: {sig}: detached from every process");
        return Ok(Exit::Interrupted);
    }
    Ok(outcome(args.pids.len(), &errors))
}

/// All captured: complete; some: partial; none: the first error's kind.
pub fn outcome(asked: usize, errors: &[CaptureError]) -> Exit {
    match errors.first() {
        None => Exit::Complete,
        Some(_) if errors.len() < asked => Exit::Partial,
        Some(e) => capture_exit(e),
    }
}
