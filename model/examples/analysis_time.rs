//! How long the root takes to analyse the MPI histories of an emulated job: the runtime
//! model of `RANKS` ranks (abnormal ranks and progress dependence), median of `REPEATS`.
//!
//! Each rank runs a halo exchange of a time-step loop holding an inner loop of solver
//! sweeps (10 sites, 12 transitions), its times drawn with 20% jitter; rank 7 computes ten
//! times as long, rank 11 stopped after its 100th time step while the others wait in their
//! 101st. The histories are what the daemons send up, as `result.json` keeps them.
//!
//! Usage: cargo run --release -p strata-model --example analysis_time [RANKS] [REPEATS]

use std::time::Instant;
use strata_filters::RankSet;
use strata_model::RuntimeModel;
use strata_result::pmpi::{PmpiEvent, PmpiHistory, PmpiSite, PmpiTimes, PmpiTransition};

/// A small deterministic generator (xorshift64*): the same histories on every run.
struct Jitter(u64);

impl Jitter {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `ns` within 20%.
    fn around(&mut self, ns: f64) -> PmpiTimes {
        let mean = ns * (0.8 + 0.4 * self.next());
        PmpiTimes {
            mean_ns: mean as u64,
            sd_ns: (mean * 0.1) as u64,
            max_ns: (mean * 1.5) as u64,
        }
    }
}

const CALLS: [(&str, u32); 10] = [
    ("MPI_Irecv", 30),
    ("MPI_Irecv", 31),
    ("MPI_Isend", 32),
    ("MPI_Isend", 33),
    ("MPI_Waitall", 34),
    ("MPI_Allreduce", 40),
    ("MPI_Sendrecv", 44),
    ("MPI_Allreduce", 46),
    ("MPI_Barrier", 52),
    ("MPI_Reduce", 55),
];

/// A rank after `steps` time steps of `sweeps` sweeps each: `waiting` in the next step's
/// `MPI_Waitall`, else computing after the step's last call (it stopped).
fn history(steps: u64, sweeps: u64, waiting: bool, slow: bool, rng: &mut Jitter) -> PmpiHistory {
    let compute = if slow { 10e6 } else { 1e6 };
    let inner = steps * sweeps;
    let halo = steps + u64::from(waiting);
    // (from, to, count, within ns, between ns): a time step is the halo (0-4), the inner
    // sweeps (5 -> 6 -> 7 -> 5), then a barrier and a reduction.
    let edges: [(Option<u32>, u32, u64, f64, f64); 12] = [
        (None, 0, 1, 0.0, 0.0),
        (Some(0), 1, halo, 2e3, 1e3),
        (Some(1), 2, halo, 2e3, 1e3),
        (Some(2), 3, halo, 3e3, 1e3),
        (Some(3), 4, halo, 3e3, 1e3),
        (Some(4), 5, steps, 5e5, compute),
        (Some(5), 6, inner, 2e4, 5e4),
        (Some(6), 7, inner, 1e4, 5e4),
        (Some(7), 5, inner - steps, 2e4, 5e4),
        (Some(7), 8, steps, 2e4, 1e4),
        (Some(8), 9, steps, 1e5, 1e3),
        (Some(9), 0, halo - 1, 1e4, 1e4),
    ];
    let transitions = edges
        .iter()
        .map(|&(from, to, count, within, between)| PmpiTransition {
            from,
            to,
            count,
            within: from.is_some().then(|| rng.around(within)),
            between: from.is_some().then(|| rng.around(between)),
        })
        .collect();
    let sites = CALLS
        .iter()
        .enumerate()
        .map(|(i, &(call, line))| {
            let entered = match i {
                0..=4 => halo,
                5..=7 => inner,
                _ => steps,
            };
            PmpiSite {
                index: i as u32,
                call: call.into(),
                address: 0x40_1000 + 16 * i as u64,
                function: Some("main".into()),
                file: Some("solver.c".into()),
                line: Some(line),
                entered,
                completed: if i == 4 { steps } else { entered },
                ..PmpiSite::default()
            }
        })
        .collect();
    let last = if waiting { 3 } else { 9 };
    PmpiHistory {
        sites,
        transitions,
        events: vec![PmpiEvent {
            call: CALLS[last].0.into(),
            site: Some(last as u32),
            ..PmpiEvent::default()
        }],
        calls: halo * 4 + steps * 3 + inner * 3,
        in_call_ns: waiting.then_some(5_000_000_000),
        since_return_ns: (!waiting).then_some(5_000_000_000),
        ..PmpiHistory::default()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let ranks: u32 = args
        .next()
        .map_or(1024, |a| a.parse().expect("RANKS: a number"));
    let repeats: usize = args
        .next()
        .map_or(11, |a| a.parse().expect("REPEATS: a number"));
    let mut rng = Jitter(0x5eed);
    let histories: Vec<PmpiHistory> = (0..ranks)
        .map(|r| history(100, 8, r != 11, r == 7, &mut rng))
        .collect();
    let with: Vec<(u32, &PmpiHistory)> = histories
        .iter()
        .enumerate()
        .map(|(r, h)| (r as u32, h))
        .collect();
    let mut times = Vec::with_capacity(repeats);
    let mut model = None;
    for _ in 0..repeats.max(1) {
        let started = Instant::now();
        model = RuntimeModel::of_histories(&with, RankSet::new());
        times.push(started.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let model = model.expect("two ranks or more");
    println!(
        "{ranks} ranks: runtime model in {:.1} ms (median of {}; min {:.1} ms, max {:.1} ms)",
        times[times.len() / 2] * 1e3,
        times.len(),
        times[0] * 1e3,
        times[times.len() - 1] * 1e3
    );
    print!("{}", model.text(80));
}
