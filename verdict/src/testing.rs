//! Results built from per-rank traces, for the tests of this crate.

use strata_filters::{CodeFrame, CodeKind, Frame, Module, PrefixTree, RankSet, Special};
use strata_result::StrataResult;
use strata_result::model::{RankInfo, ResultMeta, SamplingInfo, ThreadInfo};

pub(crate) const APP: &str = "/home/alice/app";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const MPI: &str = "/usr/lib/x86_64-linux-gnu/libmpi.so.40";

/// A frame of the program at `line` (its address: a stable function of the line).
pub(crate) fn app(function: &str, line: u32) -> Frame {
    code(function, APP, u64::from(line) * 4, Some(("app.c", line)))
}

/// A frame of libc at `offset`.
pub(crate) fn libc(function: &str, offset: u64) -> Frame {
    code(function, LIBC, offset, None)
}

/// A frame of the MPI library at `offset`.
pub(crate) fn mpi(function: &str, offset: u64) -> Frame {
    code(function, MPI, offset, None)
}

/// A Python function's frame at `line` of `train.py`, as the daemon reads it.
pub(crate) fn python(function: &str, line: u32) -> Frame {
    Frame::Code(CodeFrame {
        function: Some(function.to_string()),
        module: Some(Module {
            path: "/home/alice/train.py".to_string(),
            build_id: None,
        }),
        file: Some("/home/alice/train.py".to_string()),
        line: Some(line),
        kind: CodeKind::Python,
        ..CodeFrame::default()
    })
}

/// A frame of the CPython interpreter's own code at `offset`.
pub(crate) fn interpreter(function: &str, offset: u64) -> Frame {
    let mut f = code(function, "/usr/bin/python3.11", offset, None);
    if let Frame::Code(c) = &mut f {
        c.kind = CodeKind::Interpreter;
    }
    f
}

pub(crate) fn special(s: Special) -> Frame {
    Frame::Special(s)
}

fn code(function: &str, module: &str, offset: u64, place: Option<(&str, u32)>) -> Frame {
    Frame::Code(CodeFrame {
        function: Some(function.to_string()),
        module: Some(Module {
            path: module.to_string(),
            build_id: None,
        }),
        offset: Some(offset),
        file: place.map(|(f, _)| f.to_string()),
        line: place.map(|(_, l)| l),
        inlined: false,
        recovered: false,
        kind: strata_filters::CodeKind::Native,
    })
}

/// `main` at `line` above `rest`, below the start-up frames.
pub(crate) fn stack(line: u32, rest: Vec<Frame>) -> Vec<Frame> {
    let mut t = vec![
        app("_start", 1),
        libc("__libc_start_call_main", 0x2724a),
        app("main", line),
    ];
    t.extend(rest);
    t
}

/// A job of `ranks` ranks (main threads only) sampled `samples` times: `trace(rank, s)`.
pub(crate) fn result(
    ranks: u32,
    samples: u32,
    trace: impl Fn(u32, u32) -> Vec<Frame>,
) -> StrataResult {
    let mut tree_3d: PrefixTree<RankSet> = PrefixTree::new(ranks, 0);
    let mut tree_2d: PrefixTree<RankSet> = PrefixTree::new(ranks, 0);
    for rank in 0..ranks {
        for s in 0..samples {
            let t = trace(rank, s);
            tree_3d.add_trace(&t, rank, None);
            if s + 1 == samples {
                tree_2d.add_trace(&t, rank, None);
            }
        }
    }
    StrataResult {
        meta: meta(ranks, samples, false),
        tree_2d,
        tree_3d,
    }
}

/// A job whose ranks each run `threads` threads: `trace(rank, thread, s)`; thread 0 is the
/// main thread (its tid is the rank's pid).
pub(crate) fn threaded_result(
    ranks: u32,
    threads: u32,
    samples: u32,
    trace: impl Fn(u32, u32, u32) -> Vec<Frame>,
) -> StrataResult {
    let space = ranks * threads;
    let mut tree_3d: PrefixTree<RankSet> = PrefixTree::new(ranks, space);
    let mut tree_2d: PrefixTree<RankSet> = PrefixTree::new(ranks, space);
    let mut meta = meta(ranks, samples, true);
    for rank in 0..ranks {
        for thread in 0..threads {
            let id = rank * threads + thread;
            meta.threads.push(ThreadInfo {
                id,
                rank,
                tid: pid(rank) + thread,
                name: None,
                runtime: false,
            });
            for s in 0..samples {
                let t = trace(rank, thread, s);
                tree_3d.add_trace(&t, rank, Some(id));
                if s + 1 == samples {
                    tree_2d.add_trace(&t, rank, Some(id));
                }
            }
        }
    }
    StrataResult {
        meta,
        tree_2d,
        tree_3d,
    }
}

fn pid(rank: u32) -> u32 {
    1000 + rank * 100
}

fn meta(ranks: u32, samples: u32, threads: bool) -> ResultMeta {
    ResultMeta {
        job_size: ranks,
        sampling: SamplingInfo {
            samples,
            interval_ms: 10,
            threads,
            ..SamplingInfo::default()
        },
        ranks: (0..ranks)
            .map(|rank| RankInfo {
                rank,
                pid: Some(pid(rank)),
                executable: Some(APP.to_string()),
                ..RankInfo::default()
            })
            .collect(),
        ..ResultMeta::default()
    }
}
