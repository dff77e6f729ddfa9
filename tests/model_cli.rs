//! The runtime model end to end: real halo-exchange jobs (`model_halo.c`) with strata's
//! PMPI library preloaded, a fault injected in one rank, and what `strata attach` makes of
//! the ranks' MPI histories: the progress dependence's least progressed ranks (Prodometer)
//! and the abnormal ranks (AutomaDeD), under the verdict.

#[path = "support/mpi.rs"]
mod mpi;
#[path = "support/pmpi.rs"]
mod pmpi_library;
#[path = "support/stacks.rs"]
mod stacks;
mod support;
#[path = "support/target.rs"]
mod target;

use mpi::MpiJob;
use pmpi_library::{attach_json, attach_json_with, library};
use serde_json::Value;
use stacks::Stack;
use std::sync::{Mutex, MutexGuard};
use support::{parts, strata};

/// `model_halo.c` on 4 ranks of `stack` with the library, `fault` injected in rank `rank`.
/// The fault starts at iteration `from`. The test holds [`ONE_JOB`] while the job runs.
fn halo_job(stack: Stack, fault: &str, rank: u32, from: u32) -> MpiJob {
    let exe = stack.build("c", "model_halo.c", &format!("model_halo_{}", stack.name()));
    let (rank, from) = (rank.to_string(), from.to_string());
    MpiJob::launch_with_args(
        stack.launcher_with_library(&library()),
        &exe,
        4,
        &[fault, &rank, &from],
    )
}

/// One halo job at a time: the models are of times, and two jobs of busy-polling ranks on
/// two cores stretch a 1 ms computation to 5-10 ms.
static ONE_JOB: Mutex<()> = Mutex::new(());

fn one_job() -> MutexGuard<'static, ()> {
    ONE_JOB.lock().unwrap_or_else(|e| e.into_inner())
}

/// A rank that stops computing in a halo exchange leaves its neighbours waiting one
/// iteration ahead of it and the rank beyond them two: the runtime model's progress
/// dependence puts it behind every other rank, from the iteration counts of the loop it
/// finds in the ranks' MPI histories; it is the most abnormal rank by its current state;
/// and the verdict (which proves it stuck from its stacks) says the histories agree.
#[test]
fn the_runtime_model_puts_a_hung_rank_of_a_halo_exchange_least_progressed() {
    for stack in [Stack::OpenMpi4, Stack::Mpich4] {
        let _alone = one_job();
        let job = halo_job(stack, "hang", 2, 40);
        // Hung for a while, as a job is when someone attaches to it.
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let result = attach_json(&job, 3, stack);
        let model = &result["runtime_model"];
        let context = format!("{stack:?}: {model:#}");
        assert_eq!(model["ranks"], "0-3", "{context}");
        let progress = &model["progress"];
        assert_eq!(
            progress["least_progressed"],
            serde_json::json!(["2"]),
            "{context}"
        );
        // Its histories up to the hang are its neighbours', but it has been computing for
        // longer than any transition it made, while they wait: the most abnormal rank.
        let abnormal = &model["abnormal"][0];
        assert_eq!(abnormal["rank"], 2, "{context}");
        assert_eq!(
            abnormal["transitions"][0]["to"], "(still computing after it when read)",
            "{context}"
        );
        let classes = progress["classes"].as_array().unwrap();
        let class = |ranks: &str| {
            classes
                .iter()
                .find(|c| c["ranks"] == ranks)
                .unwrap_or_else(|| panic!("no class {ranks}: {context}"))
        };
        let at = |ranks: &str| class(ranks)["position"].as_str().unwrap().to_string();
        assert!(
            at("2").starts_with("after MPI_Waitall in main (model_halo.c:"),
            "{context}"
        );
        assert!(at("1,3").starts_with("in MPI_Waitall in main"), "{context}");
        assert!(at("0").starts_with("in MPI_Waitall in main"), "{context}");
        // One loop, headed by the first receive; rank 2 completed 40 iterations' back edges
        // (its 41 iterations), its neighbours one more, rank 0 two more.
        let loops = progress["loops"].as_array().unwrap();
        assert_eq!(loops.len(), 1, "{context}");
        assert!(
            loops[0]["header"]
                .as_str()
                .unwrap()
                .starts_with("MPI_Irecv in main"),
            "{context}"
        );
        let completed = |ranks: &str| class(ranks)["iterations"][0]["completed"].as_u64();
        assert_eq!(
            (completed("2"), completed("1,3"), completed("0")),
            (Some(40), Some(41), Some(42)),
            "{context}"
        );
        let verdict = &result["verdict"];
        assert_eq!(
            verdict["kind"], "stuck_outside_mpi",
            "{stack:?}: {verdict:#}"
        );
        assert!(
            verdict["evidence"].as_array().unwrap().iter().any(|e| e
                .as_str()
                .unwrap()
                .starts_with("their MPI histories agree: [2]")),
            "{stack:?}: {verdict:#}"
        );
        // The text report shows it under the verdict.
        let launcher = job.mpirun.id().to_string();
        let (code, text, err) = parts(&strata(&[
            "attach",
            "--launcher-pid",
            &launcher,
            "-n",
            "3",
            "--no-files",
        ]));
        assert_eq!(code, 0, "{stack:?}: {err}");
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("least progressed:"))
            .unwrap_or_else(|| panic!("{stack:?}: no least progressed line: {text}"));
        assert!(
            line.contains("[2] after MPI_Waitall in main (model_halo.c:")
                && line.contains("iteration 41 of the loop at MPI_Irecv")
                && line.ends_with("vs 42, for [1,3]"),
            "{stack:?}: {line}"
        );
        // Through a tree of commnodes (four daemons, fanout 2), where the call sites'
        // places travel once per subtree: the same places and the same answer.
        let tree = attach_json_with(&job, 3, stack, &["--daemons", "4", "--fanout", "2"]);
        let model = &tree["runtime_model"];
        assert_eq!(
            model["progress"]["least_progressed"],
            serde_json::json!(["2"]),
            "{stack:?} through the tree: {model:#}"
        );
        assert_eq!(model["abnormal"][0]["rank"], 2, "{stack:?}: {model:#}");
        for rank in tree["ranks"].as_array().unwrap() {
            let sites = rank["pmpi"]["history"]["sites"].as_array().unwrap();
            assert!(
                sites.iter().all(|s| s["file"]
                    .as_str()
                    .is_some_and(|f| f.ends_with("model_halo.c"))
                    && s["call"].as_str().is_some_and(|c| c.starts_with("MPI_"))),
                "{stack:?}: {sites:#?}"
            );
        }
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}

/// A rank that computes ten times as long as the others in every iteration slows the job
/// without hanging it: the verdict sees it move, and the runtime model names it as the one
/// abnormal rank, at the transition that holds its computation.
#[test]
fn the_runtime_model_names_a_slow_rank_abnormal_at_its_computation() {
    for stack in [Stack::OpenMpi4, Stack::Mpich4] {
        let _alone = one_job();
        // Slow from its fifth iteration on: its history is of slow iterations.
        let job = halo_job(stack, "slow", 1, 5);
        std::thread::sleep(std::time::Duration::from_secs(2));
        let result = attach_json(&job, 3, stack);
        let model = &result["runtime_model"];
        let context = format!("{stack:?}: {model:#}");
        let abnormal = model["abnormal"].as_array().unwrap();
        let standing: Vec<&Value> = abnormal
            .iter()
            .filter(|a| a["stands_out"] == true)
            .collect();
        assert_eq!(standing.len(), 1, "{context}");
        assert_eq!(standing[0]["rank"], 1, "{context}");
        let first = &standing[0]["transitions"][0];
        assert!(
            first["from"]
                .as_str()
                .unwrap()
                .starts_with("MPI_Waitall in main")
                && first["to"]
                    .as_str()
                    .unwrap()
                    .starts_with("MPI_Irecv in main")
                && first["what"]
                    .as_str()
                    .unwrap()
                    .starts_with("computation between: "),
            "{context}"
        );
        // Every sample finds the slow rank in its computation, yet its library counted its
        // calls between the samples: it moves, and the verdict says so.
        let verdict = &result["verdict"];
        assert_eq!(verdict["kind"], "no_hang_seen", "{stack:?}: {verdict:#}");
        let named = verdict["ranks"].as_str().unwrap();
        assert!(
            named.split(',').any(|run| match run.split_once('-') {
                Some((a, b)) => a.parse::<u32>().unwrap() <= 1 && 1 <= b.parse::<u32>().unwrap(),
                None => run == "1",
            }),
            "{stack:?}: {verdict:#}"
        );
        for &pid in &job.ranks {
            target::assert_free(pid);
        }
    }
}
