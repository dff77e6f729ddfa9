//! The bundled example result (`docs/examples/ring-8.json`): what `strata attach` reports
//! for the classic STAT test case, an 8-rank Open MPI ring where rank 1 sleeps before its
//! send. Rank 2 waits for rank 1's message in `MPI_Waitall`; everyone else has moved on to
//! `MPI_Barrier`. Below the MPI entry the frames change from sample to sample because the
//! waiting ranks spin in Open MPI's progress engine.
//!
//! The traces are written by hand after real Open MPI 4.1 stacks, and the result is built
//! through the same path as a live run (daemon trees, merge, remap), so the example
//! exercises the real pipeline. A test keeps the committed file equal to this output.

use crate::model::{JobInfo, RankInfo, ResultMeta, SamplingInfo, StrataResult};
use strata_filters::{
    CodeFrame, ConcatMerge, Frame, IndexMap, Module, PrefixTree, TaskRuns, remap,
};

fn frame(function: &str, module: &str, offset: u64, file: &str, line: u32) -> Frame {
    // One build-id per module (a made-up but stable one: the example has no real binaries).
    let hash = module.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    let build_id = format!("{hash:016x}{:024x}", hash.rotate_left(17));
    Frame::Code(CodeFrame {
        function: Some(function.to_string()),
        module: Some(Module {
            path: module.to_string(),
            build_id: Some(build_id),
        }),
        offset: Some(offset),
        file: (!file.is_empty()).then(|| file.to_string()),
        line: (line > 0).then_some(line),
        inlined: false,
        recovered: false,
        kind: strata_filters::CodeKind::Native,
    })
}

const APP: &str = "/home/alice/ring/ring";
const LIBC: &str = "/usr/lib/x86_64-linux-gnu/libc.so.6";
const MPI: &str = "/usr/lib/x86_64-linux-gnu/libmpi.so.40.30.5";
const PAL: &str = "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.3";

/// Rank `rank`'s main-thread stack in sample `s`, outermost first.
fn trace(rank: u32, s: u32) -> Vec<Frame> {
    let mut t = vec![
        frame("_start", APP, 0x10f5, "", 0),
        frame(
            "__libc_start_main_impl",
            LIBC,
            0x271c5,
            "../csu/libc-start.c",
            360,
        ),
        frame(
            "__libc_start_call_main",
            LIBC,
            0x2724a,
            "../sysdeps/nptl/libc_start_call_main.h",
            58,
        ),
        frame("main", APP, 0x1392, "ring.c", 38),
    ];
    // Spin-polling: which progress function is innermost changes with every sample.
    let spin = [
        frame(
            "mca_btl_vader_component_progress",
            "/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/mca_btl_vader.so",
            0x4c30,
            "btl_vader_component.c",
            714,
        ),
        frame(
            "opal_progress_events",
            PAL,
            0x2a6e1,
            "runtime/opal_progress.c",
            191,
        ),
        frame(
            "opal_timer_linux_get_cycles_sys_timer",
            PAL,
            0x8e0a2,
            "timer_linux_component.c",
            232,
        ),
    ];
    let innermost = spin[((rank + s) % 3) as usize].clone();
    match rank {
        1 => {
            t.push(frame(
                "sleep",
                LIBC,
                0xd6c17,
                "../sysdeps/posix/sleep.c",
                55,
            ));
            t.push(frame(
                "__GI___nanosleep",
                LIBC,
                0xd6cb3,
                "../sysdeps/unix/sysv/linux/nanosleep.c",
                25,
            ));
            t.push(frame(
                "__GI___clock_nanosleep",
                LIBC,
                0xd1b85,
                "../sysdeps/unix/sysv/linux/clock_nanosleep.c",
                78,
            ));
        }
        2 => {
            t.pop();
            t.push(frame("main", APP, 0x13d8, "ring.c", 45));
            t.push(frame("PMPI_Waitall", MPI, 0x8a2f0, "pwaitall.c", 80));
            t.push(frame(
                "ompi_request_default_wait_all",
                MPI,
                0x5b4d5,
                "request/req_wait.c",
                234,
            ));
            t.push(frame(
                "opal_progress",
                PAL,
                0x2a7ec,
                "runtime/opal_progress.c",
                245,
            ));
            if s.is_multiple_of(2) {
                t.push(innermost);
            }
        }
        _ => {
            t.pop();
            t.push(frame("main", APP, 0x13f1, "ring.c", 47));
            t.push(frame("PMPI_Barrier", MPI, 0x7c1e9, "pbarrier.c", 74));
            t.push(frame(
                "ompi_coll_base_barrier_intra_recursivedoubling",
                MPI,
                0xba2c4,
                "base/coll_base_barrier.c",
                222,
            ));
            t.push(frame(
                "ompi_request_default_wait",
                MPI,
                0x5b36d,
                "request/req_wait.c",
                42,
            ));
            if s % 3 != 1 {
                t.push(frame(
                    "opal_progress",
                    PAL,
                    0x2a7ec,
                    "runtime/opal_progress.c",
                    245,
                ));
                t.push(innermost);
            }
        }
    }
    t
}

/// The example result. Ranks 0-3 ran on `node1`, 4-7 on `node2`; two daemons, one each.
pub fn ring_result() -> StrataResult {
    const SAMPLES: u32 = 10;
    let hosts = ["node1", "node2"];
    let daemon_ranks: [Vec<u32>; 2] = [(0..4).collect(), (4..8).collect()];
    let build = |first_sample: u32| {
        let mut merge = ConcatMerge::new();
        for ranks in &daemon_ranks {
            let mut t: PrefixTree<TaskRuns> = PrefixTree::new(ranks.len() as u32, 0);
            for (local, &rank) in ranks.iter().enumerate() {
                for s in first_sample..SAMPLES {
                    t.add_trace(&trace(rank, s), local as u32, None);
                }
            }
            merge.push(&t);
        }
        let map = IndexMap::concat(daemon_ranks.iter().map(|r| r.as_slice()), 8, "rank")
            .expect("valid rank map");
        remap(&merge.finish(), &map, None).expect("map matches tree")
    };
    let ranks = (0..8)
        .map(|r| RankInfo {
            rank: r,
            host: Some(hosts[(r / 4) as usize].to_string()),
            pid: Some(41_200 + r * 3 + (r / 4) * 1000),
            executable: Some(APP.to_string()),
            build_id: Some("3f1c0d1e9a2b4c5d6e7f80912a3b4c5d6e7f8091".to_string()),
            state: Some(if r == 1 { "S" } else { "R" }.to_string()),
            error: None,
            pmpi: None,
            python: None,
            python_error: None,
        })
        .collect();
    StrataResult {
        meta: ResultMeta {
            strata_version: "example".to_string(),
            created: "2026-11-22T03:00:02Z".to_string(),
            job: JobInfo {
                id: "ring-8-example".to_string(),
                resource_manager: "local".to_string(),
                step: None,
                launcher_pid: Some(41_180),
            },
            sampling: SamplingInfo {
                samples: SAMPLES,
                interval_ms: 100,
                threads: false,
                started: "2026-11-22T03:00:01Z".to_string(),
                finished: "2026-11-22T03:00:02Z".to_string(),
            },
            job_size: 8,
            ranks,
            threads: Vec::new(),
            missing: Vec::new(),
            variables: Vec::new(),
        },
        tree_2d: build(SAMPLES - 1),
        tree_3d: build(0),
    }
}
