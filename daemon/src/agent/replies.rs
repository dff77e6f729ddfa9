//! What a daemon answers, built from what it found and sampled: the rank map, the sample
//! reply with its task notes (the PMPI library's records and histories among them), the
//! full stacks, and the replies of a failed setup or sample.

use std::time::SystemTime;

use strata_filters::wire;
use strata_proto::overlay::{
    self as pb, DaemonMap, ErrorKind, RankText, SampleReply, SetupReply, StacksReply, TaskEntry,
    TaskNote, ThreadEntry,
};
use strata_proto::sampling::Sampling;

use crate::discovery::{self, DiscoveryError, Selector, Task};
use crate::sampler::{LastStacks, SampleOptions, Sampled};
use crate::stack_text::render_process;

/// Sampling options from a sample command, every field bounded
/// ([`Sampling::from_command`]: the bounds live with the settings).
pub fn sample_options(s: &pb::Sample) -> SampleOptions {
    let sampling = Sampling::from_command(s);
    SampleOptions {
        samples: sampling.samples,
        interval: sampling.interval,
        jitter: sampling.jitter,
        threads: sampling.threads,
        max_frames: match sampling.max_frames {
            0 => SampleOptions::default().max_frames,
            n => n as usize,
        },
        ..SampleOptions::default()
    }
}

/// Discovery on this node, this daemon's share of the tasks, and its rank map.
pub fn rank_map(
    index: u32,
    host: &str,
    selector: &Selector,
    opts: &discovery::Options,
    share: u32,
) -> (SetupReply, Vec<Task>) {
    let found = match discovery::discover_share(selector, opts, index, share) {
        Ok(found) => found,
        Err(e) => {
            let kind = match &e {
                DiscoveryError::NoTasks { problems, .. }
                    if !problems.is_empty() && problems.iter().all(|p| p.is_foreign()) =>
                {
                    ErrorKind::PermissionDenied
                }
                DiscoveryError::LauncherNotFound(_) | DiscoveryError::NoTasks { .. } => {
                    ErrorKind::NotFound
                }
                DiscoveryError::Proc(_) => ErrorKind::Internal,
            };
            let mut reply = failed_map(index, host, e.to_string(), kind);
            // A daemon with a share of the pids saw only its block: its problems go with the
            // error, and the front end tells the whole job's story from every daemon's.
            if let (DiscoveryError::NoTasks { problems, .. }, true) = (&e, share > 1) {
                reply.daemons[0].problems = problems.iter().map(|p| p.to_string()).collect();
            }
            return (reply, Vec::new());
        }
    };
    let tasks = found.tasks;
    let mut executables: Vec<String> = Vec::new();
    let entries = tasks
        .iter()
        .map(|t| {
            let exe = t.exe.to_string_lossy().into_owned();
            let e = match executables.iter().position(|x| *x == exe) {
                Some(e) => e,
                None => {
                    executables.push(exe);
                    executables.len() - 1
                }
            };
            TaskEntry {
                rank: t.rank,
                pid: t.pid as u32,
                executable: e as u32,
                job_size: t.job_size,
            }
        })
        .collect();
    let reply = SetupReply {
        daemons: vec![DaemonMap {
            index,
            host: host.to_string(),
            executables,
            tasks: entries,
            problems: found.problems.iter().map(|p| p.to_string()).collect(),
            duplicate_ranks: found.duplicates.iter().map(|d| d.rank).collect(),
            error: None,
            error_kind: ErrorKind::None as i32,
        }],
        ..SetupReply::default()
    };
    (reply, tasks)
}

/// The rank map of a daemon whose discovery failed: why, and the exit-code class.
pub(super) fn failed_map(index: u32, host: &str, message: String, kind: ErrorKind) -> SetupReply {
    SetupReply {
        daemons: vec![DaemonMap {
            index,
            host: host.to_string(),
            error: Some(message),
            error_kind: kind as i32,
            ..DaemonMap::default()
        }],
        ..SetupReply::default()
    }
}

/// Full stacks of the chosen ranks among `tasks` from their last sample, as text.
pub fn stacks_reply(tasks: &[Task], last: &[Option<LastStacks>], ranks: &[u32]) -> StacksReply {
    let mut out = StacksReply::default();
    for &r in ranks {
        let Some(i) = tasks.iter().position(|t| t.rank == r) else {
            continue;
        };
        let mut text = String::new();
        let error = match last.get(i).and_then(Option::as_ref) {
            Some(last) => {
                render_process(
                    &mut text,
                    &last.capture,
                    Some(r),
                    &last.threads,
                    last.python.as_deref(),
                );
                None
            }
            None => Some("no stack to show: its last sample failed".to_string()),
        };
        out.ranks.push(RankText {
            rank: r,
            text,
            error,
        });
    }
    out
}

fn unix_us(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// What a daemon sends up after sampling, its call sites' places in one table.
pub fn sample_reply(s: &Sampled) -> SampleReply {
    let mut reply = SampleReply {
        tree_2d: Some(wire::encode(&s.tree_2d)),
        tree_3d: Some(wire::encode(&s.tree_3d)),
        threads: s
            .threads
            .iter()
            .map(|t| ThreadEntry {
                task: t.task,
                tid: t.tid as u32,
                name: t.name.clone(),
            })
            .collect(),
        notes: s
            .tasks
            .iter()
            .map(|t| TaskNote {
                state: t.state.map(String::from).unwrap_or_default(),
                error: t.error.clone(),
                exited: t.exited,
                waits_on_threads: t.waits_on_threads,
                no_debug_info: t.no_debug_info,
                build_id: t.build_id.clone(),
                samples_ok: t.samples_ok,
                pmpi: t.pmpi.as_ref().map(pmpi_note),
                python: t.python.clone().and_then(Result::ok),
                python_error: t.python.clone().and_then(Result::err),
            })
            .collect(),
        missing: vec![],
        samples: s.samples,
        started_us: unix_us(s.started),
        finished_us: unix_us(s.finished),
        stats: vec![],
        pmpi_places: vec![],
    };
    strata_filters::places::intern(&mut reply);
    reply
}

/// A task's PMPI record and its history, when both were read.
pub(super) fn history(
    report: &crate::sampler::TaskReport,
) -> Option<(&crate::pmpi::PmpiRead, &crate::pmpi::History)> {
    let read = report.pmpi.as_ref()?.as_ref().ok()?;
    Some((read, read.history.as_ref()?.as_ref().ok()?))
}

/// A task's PMPI record as the wire carries it.
fn pmpi_note(read: &Result<crate::pmpi::PmpiRead, String>) -> strata_proto::overlay::PmpiNote {
    use strata_pmpi_layout::{CommWord, PeerWord};
    let read = match read {
        Ok(read) => read,
        Err(e) => {
            return strata_proto::overlay::PmpiNote {
                error: Some(e.clone()),
                ..Default::default()
            };
        }
    };
    let s = &read.state;
    let peer = |p: Option<PeerWord>| match p {
        Some(PeerWord::Rank(r)) => Some(r),
        _ => None,
    };
    let communicator = |c: Option<CommWord>| {
        match c {
            None => "",
            Some(CommWord::World) => "world",
            Some(CommWord::Itself) => "self",
            Some(CommWord::Members { .. }) => "members",
            Some(CommWord::Unknown) => "unknown",
        }
        .to_string()
    };
    strata_proto::overlay::PmpiNote {
        error: None,
        call: s.call.unwrap_or_default().to_string(),
        peer: peer(s.peer),
        any_source: s.peer == Some(PeerWord::AnySource),
        proc_null: s.peer == Some(PeerWord::ProcNull),
        tag: s.tag,
        communicator: communicator(s.communicator),
        members: read.members.clone(),
        entered: s.entered,
        completed: s.completed,
        world_rank: s.world_rank,
        requests: read
            .requests
            .iter()
            .map(|(r, members)| strata_proto::overlay::PmpiRequestNote {
                started_by: r.started_by.unwrap_or_default().to_string(),
                peer: peer(r.peer),
                any_source: r.peer == Some(PeerWord::AnySource),
                proc_null: r.peer == Some(PeerWord::ProcNull),
                tag: r.tag,
                communicator: communicator(r.communicator),
                members: members.map(|i| i as u32),
            })
            .collect(),
        requests_active: s.requests.map_or(0, |r| r.active),
        thread_multiple: s.thread_multiple,
        found_nothing: s.found_nothing,
        progress_while_sampled: read.progress_while_sampled,
        communicators: read
            .communicators
            .iter()
            .map(|ranks| strata_proto::overlay::Members {
                ranks: ranks.clone(),
            })
            .collect(),
        history: read.history.as_ref().map(|h| {
            h.as_ref().map_or_else(
                |e| strata_proto::overlay::PmpiHistoryNote {
                    error: Some(e.clone()),
                    ..Default::default()
                },
                |h| history_note(h, s),
            )
        }),
    }
}

/// A task's history as the wire carries it, its times in seconds.
fn history_note(
    h: &crate::pmpi::History,
    state: &strata_pmpi_layout::PmpiState,
) -> strata_proto::overlay::PmpiHistoryNote {
    use strata_pmpi_layout::PeerWord;
    use strata_pmpi_layout::history::{NO_SITE, START, Times};
    use strata_proto::overlay::{
        PmpiEventNote, PmpiHistoryNote, PmpiSiteNote, PmpiTimesNote, PmpiTransitionNote,
    };
    let clock = h.words.clock;
    let seconds = |ticks: f64| clock.duration_ns(ticks).map(|ns| ns / 1e9);
    let times = |t: &Times| {
        Some(PmpiTimesNote {
            sum_s: seconds(t.sum as f64)?,
            squares_s2: clock.duration_ns(clock.duration_ns(t.squares)?)? / 1e18,
            max_s: seconds(t.max as f64)?,
        })
    };
    PmpiHistoryNote {
        error: None,
        sites: h
            .sites
            .iter()
            .zip(h.places.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(site, place)| PmpiSiteNote {
                index: u32::from(site.index),
                call: site.call.to_string(),
                address: site.address,
                function: place.and_then(|p| p.function.clone()),
                file: place.and_then(|p| p.file.clone()),
                line: place.and_then(|p| p.line),
                entered: site.entered,
                completed: site.completed,
                found_nothing: site.found_nothing,
                seconds_in: seconds(site.ticks_in as f64),
                longest_s: seconds(site.ticks_max as f64),
                place: None,
            })
            .collect(),
        transitions: h
            .transitions
            .iter()
            .map(|t| PmpiTransitionNote {
                from: (t.from != START).then_some(u32::from(t.from)),
                to: u32::from(t.to),
                count: t.count,
                between: times(&t.between),
                within: times(&t.within),
            })
            .collect(),
        events: h
            .events
            .iter()
            .map(|e| PmpiEventNote {
                call: e.call.to_string(),
                site: (e.site != NO_SITE).then_some(u32::from(e.site)),
                found_nothing: e.found_nothing,
                peer: match e.peer {
                    Some(PeerWord::Rank(r)) => Some(r),
                    _ => None,
                },
                any_source: e.peer == Some(PeerWord::AnySource),
                proc_null: e.peer == Some(PeerWord::ProcNull),
                tag: e.tag,
                returned_before_s: h.seconds_before_read(e.exited),
                seconds: seconds(e.exited.saturating_sub(e.entered) as f64),
            })
            .collect(),
        sites_lost: h.words.sites_lost,
        transitions_lost: h.words.transitions_lost,
        events_written: h.words.events_written,
        in_call_s: state
            .call
            .and_then(|_| h.seconds_before_read(h.words.entered_at)),
        since_return_s: (h.words.last_exit != 0)
            .then(|| h.seconds_before_read(h.words.last_exit))
            .flatten(),
    }
}

pub(super) fn failed_sample(tasks: usize, reason: &str) -> SampleReply {
    let tree = strata_filters::PrefixTree::<strata_filters::TaskRuns>::new(tasks as u32, 0);
    SampleReply {
        tree_2d: Some(wire::encode(&tree)),
        tree_3d: Some(wire::encode(&tree)),
        notes: vec![
            TaskNote {
                error: Some(reason.to_string()),
                ..TaskNote::default()
            };
            tasks
        ],
        ..SampleReply::default()
    }
}
