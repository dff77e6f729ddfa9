//! What the call sites' places cost on the wire, written in every rank's note or once per
//! reply (`strata_filters::places`): a daemon's reply of TASKS tasks of one program (10 MPI
//! call sites in two functions of one source file, 12 transitions, the last 32 calls), and
//! a commnode's merge of CHILDREN such replies.
//!
//!     cargo run --release -p strata-filters --example places_size [TASKS] [CHILDREN]

use strata_filters::places::{self, Places};
use strata_proto::Message;
use strata_proto::overlay::{
    PmpiEventNote, PmpiHistoryNote, PmpiNote, PmpiSiteNote, PmpiTimesNote, PmpiTransitionNote,
    SampleReply, TaskNote,
};

const FILE: &str = "/p/lustre1/user/apps/solver/src/halo_exchange.c";
const CALLS: [&str; 10] = [
    "MPI_Irecv",
    "MPI_Irecv",
    "MPI_Isend",
    "MPI_Isend",
    "MPI_Waitall",
    "MPI_Allreduce",
    "MPI_Sendrecv",
    "MPI_Allreduce",
    "MPI_Barrier",
    "MPI_Reduce",
];

fn history(task: u32) -> PmpiHistoryNote {
    let times = |s: f64| PmpiTimesNote {
        sum_s: s * 100.0 + f64::from(task) * 1e-7,
        squares_s2: s * s * 110.0,
        max_s: s * 1.5,
    };
    PmpiHistoryNote {
        sites: CALLS
            .iter()
            .enumerate()
            .map(|(i, call)| PmpiSiteNote {
                index: i as u32,
                call: call.to_string(),
                address: 0x5555_5555_0000 + 0x40 * i as u64 + (u64::from(task) << 20),
                function: Some(if i < 5 { "exchange_halo" } else { "solve_step" }.into()),
                file: Some(FILE.into()),
                line: Some(120 + 7 * i as u32),
                entered: 4000 + u64::from(task),
                completed: 4000 + u64::from(task),
                seconds_in: Some(0.01 * (i + 1) as f64),
                longest_s: Some(0.001 * (i + 1) as f64),
                ..PmpiSiteNote::default()
            })
            .collect(),
        transitions: (0..12)
            .map(|i| PmpiTransitionNote {
                from: (i > 0).then_some((i - 1) % 10),
                to: i % 10,
                count: 4000,
                between: Some(times(1e-3)),
                within: Some(times(2e-5)),
            })
            .collect(),
        events: (0..32)
            .map(|i| PmpiEventNote {
                call: CALLS[i % 10].into(),
                site: Some((i % 10) as u32),
                peer: Some(i64::from(task ^ 1)),
                tag: Some(7),
                returned_before_s: Some(0.001 * i as f64),
                seconds: Some(2e-5),
                ..PmpiEventNote::default()
            })
            .collect(),
        events_written: 40_000,
        ..PmpiHistoryNote::default()
    }
}

fn daemon(tasks: u32, first: u32) -> SampleReply {
    SampleReply {
        notes: (first..first + tasks)
            .map(|t| TaskNote {
                state: "S".into(),
                samples_ok: 3,
                pmpi: Some(PmpiNote {
                    call: "MPI_Waitall".into(),
                    history: Some(history(t)),
                    ..PmpiNote::default()
                }),
                ..TaskNote::default()
            })
            .collect(),
        ..SampleReply::default()
    }
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<u32>().expect("a number"));
    let tasks = args.next().unwrap_or(64);
    let children = args.next().unwrap_or(16);
    let per_task = |bytes: usize, n: u32| bytes as f64 / f64::from(n);

    let inline = daemon(tasks, 0);
    let mut interned = inline.clone();
    places::intern(&mut interned);
    println!(
        "a daemon of {tasks} tasks: {:.0} bytes a task with the places in every site, {:.0} \
         with one table ({} places)",
        per_task(inline.encoded_len(), tasks),
        per_task(interned.encoded_len(), tasks),
        interned.pmpi_places.len()
    );

    let mut merged_inline = SampleReply::default();
    let mut merged = SampleReply::default();
    let mut table = Places::default();
    for c in 0..children {
        let d = daemon(tasks, c * tasks);
        merged_inline.notes.extend(d.notes.clone());
        let mut d = d;
        places::intern(&mut d);
        table.absorb(&mut d.notes, &d.pmpi_places);
        merged.notes.extend(d.notes);
    }
    merged.pmpi_places = table.into_table();
    let all = tasks * children;
    println!(
        "a commnode of {children} such daemons ({all} tasks): {:.0} vs {:.0} bytes a task, \
         {:.1} vs {:.1} MB in all",
        per_task(merged_inline.encoded_len(), all),
        per_task(merged.encoded_len(), all),
        merged_inline.encoded_len() as f64 / 1e6,
        merged.encoded_len() as f64 / 1e6
    );
}
