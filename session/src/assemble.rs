//! From the root's two replies to a result: problems reported, the trees remapped once to
//! MPI rank order, ranks that could not be sampled shown under a frame that says why.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use strata_commnode::merge::{Merged, Trees};
use strata_filters::taskset::format_runs;
use strata_filters::{Frame, IndexMap, Special, remap};
use strata_proto::overlay::{DaemonMap, ErrorKind, Sample, SetupReply, TaskNote};
use strata_result::{
    JobInfo, MAX_JOB_SIZE, MissingRanks, RankInfo, ResultMeta, SamplingInfo, StrataResult,
    ThreadInfo, rfc3339,
};

use crate::error::AttachError;

/// Discovery problems, once each (daemons on one host see the same processes).
pub fn report_problems(rank_map: &SetupReply) {
    let mut seen = BTreeSet::new();
    let any_task = rank_map.daemons.iter().any(|d| !d.tasks.is_empty());
    for d in &rank_map.daemons {
        // A daemon that found nothing while others did (a node of the job without ranks);
        // one that lists its problems (its block of the given pids) is told by them.
        if let (Some(e), true, true) = (&d.error, any_task, d.problems.is_empty())
            && seen.insert(e.clone())
        {
            eprintln!("strata: warning: daemon {} on {}: {e}", d.index, d.host);
        }
        for p in &d.problems {
            if seen.insert(p.clone()) {
                eprintln!("strata: warning: {p}");
            }
        }
    }
    let dups: BTreeSet<u32> = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.duplicate_ranks.iter().copied())
        .collect();
    if !dups.is_empty() {
        eprintln!(
            "strata: warning: rank(s) {} are claimed by several unrelated processes (none or \
             several mapping MPI): name the job step, or the pids",
            list(&dups.into_iter().collect::<Vec<_>>())
        );
    }
}

/// The failure when no daemon found any task: the first daemon's own reason.
pub fn nothing_found(rank_map: &SetupReply) -> Option<AttachError> {
    let any_task = rank_map
        .daemons
        .iter()
        .any(|d| !d.tasks.is_empty() || !d.duplicate_ranks.is_empty());
    if any_task {
        return None;
    }
    let failed: Vec<_> = rank_map
        .daemons
        .iter()
        .filter(|d| d.error.is_some())
        .collect();
    if let Some(d) = failed.first() {
        let kind = |d: &DaemonMap| ErrorKind::try_from(d.error_kind).unwrap_or(ErrorKind::Internal);
        let mut why = d.error.clone().unwrap_or_default();
        let mut kind_of_all = kind(d);
        // Daemons sharing one host's given pids each saw a block of them: the whole story
        // is every block's problems (the daemon's own wording, counted over all of them).
        if failed.len() > 1 && failed.iter().all(|d| !d.problems.is_empty()) {
            let problems: BTreeSet<&String> = failed.iter().flat_map(|d| &d.problems).collect();
            why = format!(
                "none of the given pids can be inspected ({} process(es) skipped; first: {})",
                problems.len(),
                d.problems[0]
            );
            if failed
                .iter()
                .any(|d| kind(d) != ErrorKind::PermissionDenied)
            {
                kind_of_all = ErrorKind::NotFound;
            }
        }
        return Some(match kind_of_all {
            ErrorKind::NotFound => AttachError::NotFound(why),
            ErrorKind::PermissionDenied => AttachError::PermissionDenied(why),
            ErrorKind::None | ErrorKind::Internal => AttachError::Internal(why),
        });
    }
    let why = rank_map.missing.first().map_or_else(
        || "no daemon answered".to_string(),
        |m| format!("{}: {}", m.who, m.reason),
    );
    Some(AttachError::Internal(format!(
        "no rank map arrived ({why}); see the messages above"
    )))
}

/// The result and what the hints need.
#[derive(Debug)]
pub struct Assembled {
    pub result: StrataResult,
    /// Per task (root task order): rank and note.
    pub notes: Vec<(u32, TaskNote)>,
    /// Per task: executable path.
    pub executables: Vec<String>,
}

pub fn assemble(
    job: JobInfo,
    rank_map: &SetupReply,
    merged: &Merged,
    sample: &Sample,
) -> Result<Assembled, AttachError> {
    let internal = AttachError::Internal;
    let sampled = &merged.reply;
    let mut ranks = Vec::new();
    let mut rank_info = Vec::new();
    let mut executables = Vec::new();
    for d in &rank_map.daemons {
        for t in &d.tasks {
            ranks.push(t.rank);
            let exe = d
                .executables
                .get(t.executable as usize)
                .cloned()
                .unwrap_or_default();
            executables.push(exe.clone());
            rank_info.push(RankInfo {
                rank: t.rank,
                host: Some(d.host.clone()),
                pid: Some(t.pid),
                executable: Some(exe),
                ..RankInfo::default()
            });
        }
    }
    let dups: BTreeSet<u32> = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.duplicate_ranks.iter().copied())
        .collect();
    let hinted = rank_map
        .daemons
        .iter()
        .flat_map(|d| d.tasks.iter().filter_map(|t| t.job_size))
        .max()
        .unwrap_or(0);
    let highest = ranks.iter().chain(&dups).max().map_or(0, |r| r + 1);
    let job_size = hinted.max(highest);
    // Ranks and sizes come from the ranks' environments, through the daemons: bounded
    // before anything is allocated or walked per rank.
    if job_size > MAX_JOB_SIZE {
        return Err(AttachError::Usage(format!(
            "the job claims {job_size} ranks (a rank or MPI size variable in a rank's \
                 environment), more than strata handles ({MAX_JOB_SIZE})"
        )));
    }
    if sampled.notes.len() != ranks.len() {
        return Err(internal(format!(
            "the merged samples cover {} tasks, the rank map {}",
            sampled.notes.len(),
            ranks.len()
        )));
    }
    let index_map =
        IndexMap::new(ranks.clone(), job_size, "rank").map_err(|e| internal(e.to_string()))?;
    let threads = sample
        .threads
        .then(|| IndexMap::identity(sampled.threads.len() as u32, "thread"));
    // Job-wide vectors need no remap and are `strata bench --dense`'s alone.
    let Trees::Runs(merged_2d, merged_3d) = &merged.trees else {
        return Err(internal(
            "the merged samples hold job-wide bit vectors, not task runs".into(),
        ));
    };
    let mut tree_2d =
        remap(merged_2d, &index_map, threads.as_ref()).map_err(|e| internal(e.to_string()))?;
    let mut tree_3d =
        remap(merged_3d, &index_map, threads.as_ref()).map_err(|e| internal(e.to_string()))?;

    for (info, note) in rank_info.iter_mut().zip(&sampled.notes) {
        info.build_id = note.build_id.clone();
        info.state = (!note.state.is_empty()).then(|| note.state.clone());
        info.error = note.error.clone();
        info.pmpi = note.pmpi.as_ref().map(|p| pmpi_record(p, job_size));
        info.python = note.python.clone();
        info.python_error = note.python_error.clone();
    }
    let thread_info = sampled
        .threads
        .iter()
        .enumerate()
        .map(|(i, t)| ThreadInfo {
            id: i as u32,
            rank: ranks.get(t.task as usize).copied().unwrap_or(u32::MAX),
            tid: t.tid,
            name: Some(t.name.clone()),
            runtime: false,
        })
        .collect();

    let mut missing = Vec::new();
    // Subtrees lost after the rank map: their ranks are known.
    let mut lost: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for m in &sampled.missing {
        let rs = ranks
            .get(m.first as usize..m.end as usize)
            .ok_or_else(|| internal("a missing range outside the rank map".into()))?;
        lost.entry(format!("{} did not answer: {}", m.who, m.reason))
            .or_default()
            .extend(rs);
    }
    for (reason, mut rs) in lost {
        rs.sort_unstable();
        missing.push(MissingRanks {
            ranks: list(&rs),
            reason,
        });
    }
    let dup_runs = runs_of((0..job_size).filter(|r| dups.contains(r)));
    if !dup_runs.is_empty() {
        missing.push(MissingRanks {
            ranks: format_runs(&dup_runs),
            reason: "several unrelated processes claim these ranks".to_string(),
        });
    }
    let found: BTreeSet<u32> = ranks.iter().copied().collect();
    let unmapped: Vec<u32> = (0..job_size)
        .filter(|r| !found.contains(r) && !dups.contains(r))
        .collect();
    if !unmapped.is_empty() {
        if rank_map.missing.is_empty() {
            missing.push(MissingRanks {
                ranks: list(&unmapped),
                reason: "no process of these ranks was found".to_string(),
            });
        } else {
            // Some daemons never gave their rank map: these ranks are probably theirs,
            // and are shown in the tree as unknown.
            let who: Vec<String> = rank_map
                .missing
                .iter()
                .map(|m| format!("{} ({})", m.who, m.reason))
                .collect();
            missing.push(MissingRanks {
                ranks: list(&unmapped),
                reason: format!("ranks unknown: no rank map from {}", who.join(", ")),
            });
            let path = [Frame::Special(Special::RanksUnknown)];
            for &r in &unmapped {
                tree_2d.add_trace(&path, r, None);
                tree_3d.add_trace(&path, r, None);
            }
        }
    } else if !rank_map.missing.is_empty() {
        for m in &rank_map.missing {
            eprintln!(
                "strata: warning: {} gave no rank map ({}); every rank of the job is accounted \
                 for without it",
                m.who, m.reason
            );
        }
    }
    let time = |us: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_micros(us));
    let notes = ranks
        .iter()
        .copied()
        .zip(sampled.notes.iter().cloned())
        .collect();
    let result = StrataResult {
        meta: ResultMeta {
            strata_version: env!("CARGO_PKG_VERSION").to_string(),
            created: rfc3339(SystemTime::now()),
            job,
            sampling: SamplingInfo {
                samples: sampled.samples,
                interval_ms: sample.interval_us / 1000,
                threads: sample.threads,
                started: time(sampled.started_us),
                finished: time(sampled.finished_us),
            },
            job_size,
            ranks: rank_info,
            threads: thread_info,
            missing,
            variables: Vec::new(),
        },
        tree_2d,
        tree_3d,
    };
    Ok(Assembled {
        result,
        notes,
        executables,
    })
}

pub fn list(ranks: &[u32]) -> String {
    format_runs(&runs_of(ranks.iter().copied()))
}

/// Ascending ranks as runs `(first, end)`.
fn runs_of(ranks: impl Iterator<Item = u32>) -> Vec<(u32, u32)> {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for r in ranks {
        match runs.last_mut() {
            Some((_, end)) if *end == r => *end = r + 1,
            _ => runs.push((r, r + 1)),
        }
    }
    runs
}

/// A rank's PMPI note as the result keeps it, bounded by the job: a member or peer outside
/// the job makes the record an error, not a claim.
fn pmpi_record(
    note: &strata_proto::overlay::PmpiNote,
    job_size: u32,
) -> strata_result::pmpi::PmpiRecord {
    use strata_result::pmpi::{PmpiRecord, PmpiRequest};
    let refused = |why: String| PmpiRecord {
        error: Some(why),
        ..PmpiRecord::default()
    };
    if let Some(e) = &note.error {
        return refused(e.clone());
    }
    if note.thread_multiple {
        return refused(
            "the rank runs with MPI_THREAD_MULTIPLE: several of its threads may be in MPI at \
             once, and strata's PMPI library records the last to enter, so its record is not \
             used"
                .to_string(),
        );
    }
    let arguments = || -> Result<_, String> {
        let communicator = pmpi_communicator(&note.communicator, &note.members, job_size)?;
        let peer = pmpi_peer(note.peer, note.any_source, note.proc_null, job_size)?;
        let mut requests = Vec::new();
        for r in &note.requests {
            let members = match r.members {
                None => &[][..],
                Some(i) => note
                    .communicators
                    .get(i as usize)
                    .map(|m| &m.ranks[..])
                    .ok_or_else(|| format!("a request's communicator {i} that was not sent"))?,
            };
            requests.push(PmpiRequest {
                started_by: (!r.started_by.is_empty()).then(|| r.started_by.clone()),
                peer: pmpi_peer(r.peer, r.any_source, r.proc_null, job_size)?,
                tag: r.tag,
                communicator: pmpi_communicator(&r.communicator, members, job_size)?,
            });
        }
        Ok((communicator, peer, requests))
    };
    let (communicator, peer, requests) = match arguments() {
        Ok(parts) => parts,
        Err(why) => return refused(why),
    };
    PmpiRecord {
        error: None,
        call: (!note.call.is_empty()).then(|| note.call.clone()),
        peer,
        tag: note.tag,
        communicator,
        entered: note.entered,
        completed: note.completed,
        found_nothing: note.found_nothing,
        progress_while_sampled: note.progress_while_sampled,
        requests_unrecorded: note.requests_active.saturating_sub(requests.len() as u64),
        requests,
        history: note
            .history
            .as_ref()
            .filter(|h| h.error.is_none())
            .map(|h| pmpi_history(h, job_size)),
        history_error: note.history.as_ref().and_then(|h| h.error.clone()),
    }
}

/// A task's history note, its times in whole nanoseconds.
fn pmpi_history(
    h: &strata_proto::overlay::PmpiHistoryNote,
    job_size: u32,
) -> strata_result::pmpi::PmpiHistory {
    use strata_result::pmpi::{PmpiEvent, PmpiHistory, PmpiSite, PmpiTimes, PmpiTransition};
    let ns = |s: f64| (s.is_finite() && s >= 0.0).then(|| (s * 1e9).round() as u64);
    let times = |t: &strata_proto::overlay::PmpiTimesNote, count: u64| {
        let n = count.max(1) as f64;
        let mean = t.sum_s / n;
        let variance = (t.squares_s2 / n - mean * mean).max(0.0);
        Some(PmpiTimes {
            mean_ns: ns(mean)?,
            sd_ns: ns(variance.sqrt())?,
            max_ns: ns(t.max_s)?,
        })
    };
    PmpiHistory {
        sites: h
            .sites
            .iter()
            .map(|s| PmpiSite {
                index: s.index,
                call: s.call.clone(),
                address: s.address,
                function: s.function.clone(),
                file: s.file.clone(),
                line: s.line,
                entered: s.entered,
                completed: s.completed,
                found_nothing: s.found_nothing,
                time_in_ns: s.seconds_in.and_then(ns),
                longest_ns: s.longest_s.and_then(ns),
            })
            .collect(),
        transitions: h
            .transitions
            .iter()
            .map(|t| PmpiTransition {
                from: t.from,
                to: t.to,
                count: t.count,
                // The first transition of a thread has no times: its `from` is the start.
                between: t
                    .from
                    .and(t.between.as_ref())
                    .and_then(|b| times(b, t.count)),
                within: t
                    .from
                    .and(t.within.as_ref())
                    .and_then(|w| times(w, t.count)),
            })
            .collect(),
        events: h
            .events
            .iter()
            .map(|e| PmpiEvent {
                call: e.call.clone(),
                site: e.site,
                found_nothing: e.found_nothing,
                peer: pmpi_peer(e.peer, e.any_source, e.proc_null, job_size)
                    .ok()
                    .flatten(),
                tag: e.tag,
                returned_before_ns: e.returned_before_s.and_then(ns),
                duration_ns: e.seconds.and_then(ns),
            })
            .collect(),
        calls: h.events_written,
        sites_lost: h.sites_lost,
        transitions_lost: h.transitions_lost,
        in_call_ns: h.in_call_s.and_then(ns),
        since_return_ns: h.since_return_s.and_then(ns),
    }
}

/// A communicator word of a note, bounded by the job.
fn pmpi_communicator(
    kind: &str,
    members: &[u32],
    job_size: u32,
) -> Result<Option<strata_result::pmpi::PmpiCommunicator>, String> {
    use strata_result::pmpi::PmpiCommunicator;
    Ok(match kind {
        "" => None,
        "world" => Some(PmpiCommunicator::World),
        "self" => Some(PmpiCommunicator::Itself),
        "members" => {
            if members.is_empty() || members.iter().any(|&r| r >= job_size) {
                return Err(format!(
                    "a communicator of {} members, some outside the job of {job_size}",
                    members.len()
                ));
            }
            Some(PmpiCommunicator::Members(members.to_vec()))
        }
        _ => Some(PmpiCommunicator::Unknown),
    })
}

/// A peer word of a note, bounded by the job.
fn pmpi_peer(
    peer: Option<i64>,
    any_source: bool,
    proc_null: bool,
    job_size: u32,
) -> Result<Option<strata_result::pmpi::PmpiPeer>, String> {
    use strata_result::pmpi::PmpiPeer;
    if any_source {
        return Ok(Some(PmpiPeer::AnySource));
    }
    if proc_null {
        return Ok(Some(PmpiPeer::ProcNull));
    }
    match peer {
        None => Ok(None),
        Some(p) => match u32::try_from(p) {
            Ok(p) if p < job_size => Ok(Some(PmpiPeer::Rank(p))),
            _ => Err(format!("a peer {p} outside the job of {job_size}")),
        },
    }
}
