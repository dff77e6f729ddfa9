//! `strata bench`: STATBench's idea on strata's code. Emulated daemons (many per OS
//! process) answer the real protocol with synthetic trees shaped like real hangs
//! (`filters::synth`); the commnodes, their merges, the gRPC transport, the front end's
//! session and the remap are the production code, as separate processes on loopback. What
//! it measures is the tree's own cost at scales no test machine has ranks for.
//!
//! `--check` compares the merged, remapped trees with the trees built directly from the
//! synthetic traces: the test suite runs a small configuration that way.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_commnode::merge::{Merged, Trees, peak_rss_kib_of};
use strata_filters::dense::{densify, to_rank_tree};
use strata_filters::synth::SynthJob;
use strata_filters::wire;
use strata_filters::{
    IndexMap, PrefixTree, RankSet, ViewOptions, equivalence_classes, remap, view,
};
use strata_launcher::local::LocalLauncher;
use strata_launcher::topology::{Topology, parent_of};
use strata_launcher::{CommnodeSpec, DaemonSpec, LaunchError, Launcher};
use strata_proto::auth::SessionKey;
use strata_proto::link::{self, ParentLink, send_reply, send_reply_bytes};
use strata_proto::overlay::{
    DaemonMap, Done, NodeStat, PidList, Role, Sample, SampleReply, Setup, SetupReply, TaskEntry,
    TaskNote, command::Action, down, setup::Target,
};

use crate::cli::{BenchArgs, EmulatorArgs, SynthArgs};
use crate::commands::show::{Analyses, write_files};
use crate::exit::Exit;
use crate::failure::Failure;
use strata_session::assemble::assemble;
use strata_session::root::{self as session, Outcome, Plan};

/// Starts commnodes like the local launcher, and the emulated daemons as `emulators`
/// processes of `strata bench-daemons`.
#[derive(Debug)]
struct EmulatorLauncher {
    local: LocalLauncher,
    exe: PathBuf,
    key_hex: String,
    synth: SynthArgs,
    emulators: u32,
    level: u32,
    dense: bool,
    children: Vec<Child>,
}

impl Launcher for EmulatorLauncher {
    fn name(&self) -> &'static str {
        "bench"
    }

    fn listen_host(&self) -> String {
        "127.0.0.1".into()
    }

    fn start_commnodes(&mut self, specs: &[CommnodeSpec]) -> Result<Vec<SocketAddr>, LaunchError> {
        self.local.start_commnodes(specs)
    }

    fn start_daemons(&mut self, spec: &DaemonSpec) -> Result<(), LaunchError> {
        let parents: Vec<String> = spec.parents.iter().map(|a| a.to_string()).collect();
        let e = self.emulators.min(spec.daemons).max(1);
        for p in 0..e {
            let first = (p as u64 * spec.daemons as u64 / e as u64) as u32;
            let end = ((p as u64 + 1) * spec.daemons as u64 / e as u64) as u32;
            let child = Command::new(&self.exe)
                .arg("bench-daemons")
                .args(self.synth.to_args())
                .arg(format!("--parents={}", parents.join(",")))
                .arg(format!("--first={first}"))
                .arg(format!("--count={}", end - first))
                .arg(format!("--level={}", self.level))
                .args(self.dense.then_some("--dense"))
                .env(strata_launcher::KEY_ENV, &self.key_hex)
                .env(strata_launcher::ROLE_ENV, "bench-daemons")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .map_err(|e| LaunchError::Spawn {
                    what: format!("emulator {p}"),
                    reason: e.to_string(),
                })?;
            self.children.push(child);
        }
        Ok(())
    }

    /// The commnodes are the local launcher's; an emulated daemon holds no rank, and its
    /// process serves many daemons, so it is left to the reaping.
    fn lost_ender(&self) -> strata_launcher::LostEnder {
        self.local.lost_ender()
    }

    fn reap(&mut self, grace: Duration) {
        self.local.reap(grace);
        strata_launcher::reap_children(&mut self.children, grace);
    }
}

pub fn run(args: BenchArgs) -> Result<Exit, Failure> {
    let params = args.synth.params();
    let tasks = params.daemons as u64 * params.tasks_per_daemon as u64;
    if tasks > strata_result::MAX_JOB_SIZE as u64 {
        return Err(Failure::new(
            Exit::BadInput,
            format!("{tasks} tasks: at most {}", strata_result::MAX_JOB_SIZE),
        ));
    }
    let topology = Topology::choose(params.daemons, args.fanout, args.depth)
        .map_err(|e| Failure::new(Exit::BadInput, e.to_string()))?;
    let key = SessionKey::generate().map_err(Failure::internal)?;
    let exe = std::env::current_exe().map_err(Failure::internal)?;
    let mut launcher = EmulatorLauncher {
        local: LocalLauncher::new(exe.clone(), key.to_hex()),
        exe,
        key_hex: key.to_hex(),
        synth: args.synth.clone(),
        emulators: args.emulators,
        level: topology.depth(),
        dense: args.dense,
        children: Vec::new(),
    };
    eprintln!(
        "strata bench: {tasks} tasks, {} daemons of {} in {} emulator process(es), tree {}",
        params.daemons,
        params.tasks_per_daemon,
        args.emulators.min(params.daemons),
        topology.describe()
    );
    let sample = Sample {
        samples: params.samples,
        interval_us: 0,
        jitter: 0.0,
        threads: false,
        max_frames: 0,
        dense: args.dense,
    };
    let plan = Plan {
        topology: topology.clone(),
        setup: Setup {
            uid: 0,
            target: Some(Target::Pids(PidList { pids: vec![] })),
            share: 0,
            debug_dirs: vec![],
            debug_cache: None,
            debug_cache_shared: false,
        },
        sample: sample.clone(),
        stacks_of: vec![],
        connect_timeout: Duration::from_secs(120),
        progress: false,
    };
    let runtime = strata_session::gather::runtime()?;
    let (_never, signals) = std::sync::mpsc::channel();
    let started = Instant::now();
    let outcome = runtime.block_on(session::run(plan, &mut launcher, key, signals, None));
    let session_wall = started.elapsed();
    // Peak memory of every process, before they exit.
    let commnode_rss: Vec<u64> = launcher
        .local
        .pids()
        .into_iter()
        .map(peak_rss_kib_of)
        .collect();
    let emulator_rss: Vec<u64> = launcher
        .children
        .iter()
        .map(|c| peak_rss_kib_of(c.id()))
        .collect();
    drop(runtime);
    launcher.reap(Duration::from_secs(10));
    let gathered = match outcome? {
        Outcome::Done(g) => g,
        Outcome::Interrupted(_) => return Ok(Exit::Interrupted),
    };

    // The root's remap, as attach does it. The index map depends only on the rank map (a
    // resample reuses it), so it is timed on its own; "to_root" includes it.
    let t = Instant::now();
    let ranks: Vec<u32> = gathered
        .rank_map
        .daemons
        .iter()
        .flat_map(|d| d.tasks.iter().map(|t| t.rank))
        .collect();
    let index_map = IndexMap::new(ranks, tasks as u32, "rank").map_err(Failure::internal)?;
    let index_built = t.elapsed();
    let (tree_2d, tree_3d, decoded, remapped) =
        root_trees(&gathered.sampled, &index_map, args.dense)?;
    let index_built = if args.dense {
        Duration::ZERO
    } else {
        index_built
    };
    let t = Instant::now();
    let shown = view(&tree_3d, ViewOptions::default());
    let classes = equivalence_classes(&shown);
    let viewed = t.elapsed();

    let output = match &args.output {
        Some(dir) => write_output(dir, &gathered, &sample)?,
        None => serde_json::Value::Null,
    };

    let mut levels: Vec<serde_json::Value> = Vec::new();
    for level in 1..=topology.depth() {
        let here: Vec<&NodeStat> = gathered
            .sampled
            .reply
            .stats
            .iter()
            .filter(|s| s.level == level)
            .collect();
        let max = |f: &dyn Fn(&NodeStat) -> u64| here.iter().map(|s| f(s)).max().unwrap_or(0);
        let sum = |f: &dyn Fn(&NodeStat) -> u64| here.iter().map(|s| f(s)).sum::<u64>();
        levels.push(serde_json::json!({
            "level": level,
            "nodes": topology.levels()[level as usize],
            "reported": here.len(),
            "merge_ms_max": max(&|s| s.merge_us) as f64 / 1e3,
            "bytes_in_total": sum(&|s| s.bytes_in),
            "bytes_out_total": sum(&|s| s.bytes_out),
            "bytes_out_max": max(&|s| s.bytes_out),
            "peak_rss_kib_max": max(&|s| s.peak_rss_kib),
        }));
    }
    let phase = |name: &str| {
        gathered
            .timings
            .iter()
            .find(|(p, _)| *p == name)
            .map_or(0.0, |(_, d)| d.as_secs_f64() * 1e3)
    };
    let report = serde_json::json!({
        "tasks": tasks,
        "daemons": params.daemons,
        "tasks_per_daemon": params.tasks_per_daemon,
        "eqclasses": params.classes,
        "samples": params.samples,
        "placement": format!("{:?}", params.placement).to_lowercase(),
        "task_sets": if args.dense { "dense" } else { "runs" },
        "topology": topology.levels(),
        "ms": {
            "launch": phase("launch"),
            "connect": phase("connect"),
            "rank_map": phase("rank map"),
            "sample_through_tree": phase("sample (through the tree)"),
            "merge_at_root": phase("merge at the root"),
            "decode_at_root": decoded.as_secs_f64() * 1e3,
            "index_map": index_built.as_secs_f64() * 1e3,
            "remap": remapped.as_secs_f64() * 1e3,
            "view_and_classes": viewed.as_secs_f64() * 1e3,
            "to_root": (phase("sample (through the tree)") + phase("merge at the root")
                + (decoded + index_built + remapped).as_secs_f64() * 1e3),
            "session_wall": session_wall.as_secs_f64() * 1e3,
        },
        "levels": levels,
        "peak_rss_kib": {
            "front_end": strata_commnode::merge::peak_rss_kib(),
            "commnode_max": commnode_rss.iter().copied().max().unwrap_or(0),
            "emulator_max": emulator_rss.iter().copied().max().unwrap_or(0),
        },
        "classes": classes.len(),
        "nodes_3d": tree_3d.len(),
        "output": output,
    });
    let text = serde_json::to_string_pretty(&report).map_err(Failure::internal)?;
    println!("{text}");
    if let Some(path) = &args.json {
        std::fs::write(path, &text).map_err(|e| {
            Failure::new(
                Exit::BadInput,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
    }
    if !gathered.sampled.reply.missing.is_empty() || !gathered.rank_map.missing.is_empty() {
        let lost: Vec<&strata_proto::overlay::Missing> = gathered
            .rank_map
            .missing
            .iter()
            .chain(&gathered.sampled.reply.missing)
            .collect();
        eprintln!(
            "strata bench: {} emulated daemon(s) or subtree(s) did not answer; first: {} ({})",
            lost.len(),
            lost[0].who,
            lost[0].reason
        );
        return Ok(Exit::Partial);
    }
    if args.check {
        let job = SynthJob::new(params.clone());
        let same_3d = job.direct_tree(0).canonical() == tree_3d.canonical();
        let same_2d = job.direct_tree(params.samples - 1).canonical() == tree_2d.canonical();
        if !(same_3d && same_2d) {
            eprintln!(
                "strata bench: check FAILED: the merged trees differ from the direct ones \
                 (3D {}, 2D {})",
                if same_3d { "same" } else { "different" },
                if same_2d { "same" } else { "different" }
            );
            return Ok(Exit::Internal);
        }
        eprintln!("strata bench: check passed: merged 2D and 3D trees equal the direct ones");
    }
    Ok(Exit::Complete)
}

/// `--output DIR`: the result directory `strata attach` would write for this job, and what
/// each step of it cost (the same steps as attach's, after the measured session).
fn write_output(
    dir: &std::path::Path,
    gathered: &strata_session::root::Gathered,
    sample: &Sample,
) -> Result<serde_json::Value, Failure> {
    let job = strata_result::JobInfo {
        id: "bench".into(),
        resource_manager: "bench".into(),
        step: None,
        launcher_pid: None,
    };
    let t = Instant::now();
    let assembled = assemble(job, &gathered.rank_map, &gathered.sampled, sample)?;
    let assembled_in = t.elapsed();
    let t = Instant::now();
    let analyses = Analyses::new(&assembled.result, None, &[]);
    let verdict_in = t.elapsed();
    let written = write_files(&assembled.result, dir, &analyses)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    Ok(serde_json::json!({
        "dir": dir.display().to_string(),
        "ms": {
            "assemble": ms(assembled_in),
            "verdict": ms(verdict_in),
            "result_files": ms(written.files),
            "report_html": ms(written.report),
        },
        "report_html_bytes": written.report_bytes,
        "verdict": analyses.verdict.decision.kind.as_str(),
    }))
}

/// The merged trees in rank order, as the root builds them, and the time to take them from
/// the merge and to remap them. In dense mode the "remap" turns job-wide vectors into rank
/// sets. The root's merge is not encoded, so there is nothing to decode: the first duration
/// stays in the report (`decode_at_root`) and is now next to nothing.
fn root_trees(
    sampled: &Merged,
    index_map: &IndexMap,
    dense: bool,
) -> Result<(RankTree, RankTree, Duration, Duration), Failure> {
    let t = Instant::now();
    match (&sampled.trees, dense) {
        (Trees::Dense(m2, m3), true) => {
            let decoded = t.elapsed();
            let t = Instant::now();
            let (t2, t3) = (to_rank_tree(m2), to_rank_tree(m3));
            Ok((t2, t3, decoded, t.elapsed()))
        }
        (Trees::Runs(m2, m3), false) => {
            let decoded = t.elapsed();
            let t = Instant::now();
            let t3 = remap(m3, index_map, None).map_err(Failure::internal)?;
            let t2 = remap(m2, index_map, None).map_err(Failure::internal)?;
            Ok((t2, t3, decoded, t.elapsed()))
        }
        _ => Err(Failure::internal(
            "the merged trees are not in the round's encoding",
        )),
    }
}

type RankTree = PrefixTree<RankSet>;

/// `strata bench-daemons`: emulated daemons answering the real protocol.
pub fn emulate(args: EmulatorArgs) -> Result<Exit, Failure> {
    let key = SessionKey::from_env()?;
    let job = Arc::new(SynthJob::new(args.synth.params()));
    let runtime = strata_session::gather::runtime()?;
    let parents = Arc::new(args.parents);
    let result: Result<(), String> = runtime.block_on(async {
        let mut tasks = Vec::new();
        for i in args.first..args.first + args.count {
            let (job, parents, key) = (job.clone(), parents.clone(), key.clone());
            tasks.push(tokio::spawn(async move {
                emulate_one(&job, &parents, i, args.level, args.dense, &key).await
            }));
        }
        // A daemon that cannot link is reported by its parent as missing; the others go on.
        let mut failed = 0;
        for t in tasks {
            if let Ok(Err(e)) | Err(e) = t.await.map_err(|e| e.to_string()) {
                if failed == 0 {
                    eprintln!("strata bench-daemons: {e}");
                }
                failed += 1;
            }
        }
        if failed > 1 {
            eprintln!("strata bench-daemons: {failed} emulated daemons could not link");
        }
        Ok(())
    });
    result.map_err(Failure::internal)?;
    Ok(Exit::Complete)
}

async fn emulate_one(
    job: &SynthJob,
    parents: &[String],
    index: u32,
    level: u32,
    dense: bool,
    key: &SessionKey,
) -> Result<(), String> {
    let daemons = job.params.daemons;
    let parent = &parents[parent_of(index, daemons, parents.len() as u32) as usize];
    let ParentLink { up, mut down } = link::connect(parent, key, Role::Daemon, index)
        .await
        .map_err(|e| e.to_string())?;
    let mut prepared: Option<Vec<u8>> = None;
    while let Some(kind) = link::next_down(&mut down).await {
        let down::Kind::Command(cmd) = kind else {
            continue;
        };
        let sent = match cmd.action {
            Some(Action::Setup(_)) => {
                let sent = send_reply(&up, cmd.id, &setup_reply(job, index)).await;
                // The sample reply is built now, outside the measured rounds (a real daemon
                // spends this time sampling; `strata bench` measures the tree).
                prepared = Some(sample_reply(job, index, level, dense));
                sent
            }
            Some(Action::Sample(s)) => {
                if s.dense != dense {
                    prepared = None;
                }
                let bytes =
                    prepared.get_or_insert_with(|| sample_reply(job, index, level, s.dense));
                send_reply_bytes(&up, cmd.id, bytes).await
            }
            Some(Action::Shutdown(_)) => {
                let _ = send_reply(
                    &up,
                    cmd.id,
                    &Done {
                        daemons: 1,
                        missing: vec![],
                    },
                )
                .await;
                // Exit when the parent closes the link (at most 2 s).
                let _ = tokio::time::timeout(Duration::from_secs(2), async {
                    while link::next_down(&mut down).await.is_some() {}
                })
                .await;
                return Ok(());
            }
            Some(Action::Detach(_)) => {
                send_reply(
                    &up,
                    cmd.id,
                    &Done {
                        daemons: 1,
                        missing: vec![],
                    },
                )
                .await
            }
            _ => send_reply_bytes(&up, cmd.id, &[]).await,
        };
        if sent.is_err() {
            break;
        }
    }
    Ok(())
}

fn setup_reply(job: &SynthJob, d: u32) -> SetupReply {
    let total = job.ranks();
    SetupReply {
        daemons: vec![DaemonMap {
            index: d,
            host: format!("emulated-{d}"),
            executables: vec!["/opt/app/bin/solver".into()],
            tasks: job
                .rank_map(d)
                .into_iter()
                .map(|rank| TaskEntry {
                    rank,
                    pid: 100_000 + rank,
                    executable: 0,
                    job_size: Some(total),
                })
                .collect(),
            ..DaemonMap::default()
        }],
        ..SetupReply::default()
    }
}

fn sample_reply(job: &SynthJob, d: u32, level: u32, dense: bool) -> Vec<u8> {
    let p = &job.params;
    let (tree_2d, tree_3d) = (job.daemon_tree(d, p.samples - 1), job.daemon_tree(d, 0));
    let (tree_2d, tree_3d) = if dense {
        // Global ranks in job-wide vectors, as a daemon of the original STAT sent them.
        let ranks = IndexMap::new(job.rank_map(d), job.ranks(), "rank")
            .expect("synthetic rank maps are valid");
        (
            wire::encode_dense(&densify(&tree_2d, &ranks)),
            wire::encode_dense(&densify(&tree_3d, &ranks)),
        )
    } else {
        (wire::encode(&tree_2d), wire::encode(&tree_3d))
    };
    let mut reply = SampleReply {
        tree_2d: Some(tree_2d),
        tree_3d: Some(tree_3d),
        threads: vec![],
        notes: vec![
            TaskNote {
                state: "R".into(),
                samples_ok: p.samples,
                ..TaskNote::default()
            };
            p.tasks_per_daemon as usize
        ],
        missing: vec![],
        samples: p.samples,
        started_us: 0,
        finished_us: 0,
        stats: vec![],
        pmpi_places: vec![],
    };
    let bytes_out = strata_proto::Message::encoded_len(&reply) as u64;
    reply.stats.push(NodeStat {
        level,
        index: d,
        merge_us: 0,
        bytes_in: 0,
        bytes_out,
        peak_rss_kib: 0,
        ..NodeStat::default()
    });
    strata_proto::Message::encode_to_vec(&reply)
}
