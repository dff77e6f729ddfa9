//! Measures how long a capture keeps tasks stopped (first interrupt to last detach).
//!
//!     cargo run --release -p strata-daemon --example stoptime -- [--captures N] [--threads T] PID...
//!
//! Captures every PID N times (default 200, all PIDs at once per round on T capture
//! threads, default one per core) and prints, per distinct thread count, the median and
//! 99th percentile stop time, plus the median wall time of one round over all PIDs.
//! `tests/bench/capture.sh` runs it on the fixtures and on a hung Open MPI job.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use strata_daemon::capture::{CaptureOptions, Capturer};

fn main() {
    let mut captures = 200usize;
    let mut threads = None;
    let mut pids = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--captures" => captures = args.next().and_then(|v| v.parse().ok()).expect("N"),
            "--threads" => threads = args.next().and_then(|v| v.parse().ok()),
            p => pids.push(p.parse::<i32>().unwrap_or_else(|_| {
                eprintln!("stoptime: not a pid: {p}");
                std::process::exit(2)
            })),
        }
    }
    if pids.is_empty() {
        eprintln!("usage: stoptime [--captures N] [--threads T] PID...");
        std::process::exit(2);
    }
    let capturer = threads.map_or_else(Capturer::with_default_threads, Capturer::new);
    let options = CaptureOptions::default();
    let mut by_threads: BTreeMap<usize, Vec<Duration>> = BTreeMap::new();
    let mut rounds = Vec::with_capacity(captures);
    let mut errors = 0;
    for _ in 0..captures {
        let start = Instant::now();
        let results = capturer.capture(&pids, &options);
        rounds.push(start.elapsed());
        for r in results {
            match r {
                Ok(c) => by_threads
                    .entry(c.threads.len())
                    .or_default()
                    .push(c.stopped_for),
                Err(e) => {
                    errors += 1;
                    if errors <= 5 {
                        eprintln!("stoptime: {e}");
                    }
                }
            }
        }
    }
    println!("{} pids x {captures} captures, {errors} errors", pids.len());
    for (t, mut v) in by_threads {
        v.sort();
        println!(
            "  {t} thread(s): stop time median {:>7.1} us, p99 {:>7.1} us  ({} captures)",
            us(percentile(&v, 50)),
            us(percentile(&v, 99)),
            v.len()
        );
    }
    rounds.sort();
    println!(
        "  one round over all pids: median {:.2} ms, p99 {:.2} ms",
        us(percentile(&rounds, 50)) / 1000.0,
        us(percentile(&rounds, 99)) / 1000.0
    );
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[((sorted.len() - 1) * p).div_ceil(100)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
