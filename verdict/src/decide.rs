//! One answer to "why does it hang, and which ranks do I debug", from the ranks' states and,
//! where their calls' arguments were known, the wait-for graph ([`crate::graph`]).
//!
//! The rules, in order; the first that applies answers:
//!
//! 1. **No hang seen**: some rank moved between samples. Ranks that wait may be waiting for
//!    it; it is named, not blamed.
//! 2. **Stuck outside MPI**: ranks outside MPI whose path never changed (ParaStack's rule)
//!    while the others wait: computing forever, sleeping, or in a signal handler that does
//!    not return. When no rank at all is in MPI, the rule has nothing to stand on:
//!    undecided.
//! 3. Ranks not sampled: **undecided** (they may be the ones the others wait for).
//! 4. What the **wait-for graph** proves: a cycle of point-to-point
//!    waits is a **deadlock cycle**; a cycle through a collective is a **collective
//!    mismatch** (a missing participant: the ranks not in the largest collective are
//!    named); ranks stuck waiting for finished ones wait for a **message never sent**.
//!    Unknown waits (requests, derived communicators, arguments not read) are taken to be
//!    released, so the graph only claims what its known edges force.
//! 5. Without the graph's proof: one rank alone waits in a point-to-point call (a receive,
//!    a synchronous send, a probe, a wait) and every other rank is finished or blocked in
//!    another call: whoever its peer is, it sends nothing (**message never sent**).
//! 6. Several ranks wait in point-to-point calls whose peers are not known: a cycle among
//!    them, or messages never sent. When the progress order has one class behind every
//!    other (code order and loop counters, STAT's temporal order analysis), it is named:
//!    **least progressed**, a guess. Otherwise **undecided**, naming the waiting ranks:
//!    they are the ranks to debug.
//! 7. Ranks in **different collectives** (or some in a collective, some finished): a
//!    mismatch. The groups that are not the largest are named, as a guess; but when one of
//!    them waits on a communicator whose members are not known (a derived one), it may be
//!    waiting rightly for a rank that skipped the call: **undecided**, naming it as
//!    waiting.
//! 8. Everything else (every rank in one collective) is **undecided**, with the reason.
//!
//! A rank is blamed only with what was seen: one sample has no motion (undecided), and a
//! rank some samples could not read weakens the answer to a guess.

pub use crate::answer::{Confidence, Culprit, Decision, Kind};
use crate::describe::{doing, seen_line};
use crate::graph::WaitFor;
use crate::observe::{Motion, Observations, RankState};
use crate::proof::from_graph;
use crate::prose::rank_list;
use crate::role::{Role, role};
use strata_filters::{RankSet, TaskSet};

struct Ranked<'a> {
    ranks: RankSet,
    state: &'a RankState,
    role: Role,
}

/// Decides from `observations` and, when some calls' arguments were known, their wait-for
/// `graph`: see the module's doc.
pub fn decide(observations: &Observations, graph: Option<&WaitFor>) -> Decision {
    decide_with(observations, graph, &mut || None)
}

/// The ranks behind every other: by code order and loop counters (the progress order's
/// least progressed class), or by their MPI histories (the runtime model's progress
/// dependence); with its label and what says so.
#[derive(Clone, Debug, PartialEq)]
pub struct Behind {
    pub ranks: RankSet,
    pub label: String,
    /// `by code order and loop counters`.
    pub by: String,
}

/// [`decide`], with the progress order to fall back on where the graph does not decide:
/// `behind` is asked only then (it parses sources).
pub fn decide_with(
    observations: &Observations,
    graph: Option<&WaitFor>,
    behind: &mut dyn FnMut() -> Option<Behind>,
) -> Decision {
    let mut d = decide_on(observations, graph, behind);
    d.wait_for = graph.map(WaitFor::to_file);
    d
}

fn decide_on(
    observations: &Observations,
    graph: Option<&WaitFor>,
    behind: &mut dyn FnMut() -> Option<Behind>,
) -> Decision {
    let mut groups: Vec<Ranked> = Vec::new();
    for group in observations.groups() {
        let state = observations.ranks[group.ranks.min().expect("groups are not empty") as usize]
            .as_ref()
            .expect("grouped ranks were sampled");
        groups.push(Ranked {
            role: role(state),
            ranks: group.ranks,
            state,
        });
    }
    let with = |role: Role| -> Vec<&Ranked> { groups.iter().filter(|g| g.role == role).collect() };
    let count = |gs: &[&Ranked]| -> u64 { gs.iter().map(|g| g.ranks.count()).sum() };
    let total: u64 = groups.iter().map(|g| g.ranks.count()).sum();
    let partly = groups
        .iter()
        .any(|g| g.state.motion == Motion::PartlySeen && g.role != Role::Unseen);
    let evidence = evidence(&groups);

    if groups.is_empty() {
        return undecided(
            Vec::new(),
            "no rank was sampled",
            "attach again; see the rank table for why no rank could be read",
            evidence,
        );
    }
    if observations.samples < 2 {
        return undecided(
            Vec::new(),
            "one sample shows where the ranks are, not whether they move",
            "take several samples (-n 10)",
            evidence,
        );
    }
    let moving = with(Role::Moving);
    if !moving.is_empty() {
        let waiting =
            count(&with(Role::WaitingCollective)) + count(&with(Role::WaitingPointToPoint));
        let summary = if waiting > 0 {
            format!(
                "no hang seen: {} still moving; {waiting} rank(s) wait in MPI, perhaps for {}",
                ranks_phrase(&moving),
                if count(&moving) == 1 { "it" } else { "them" }
            )
        } else {
            format!(
                "no hang seen: {} moving between samples",
                ranks_phrase(&moving)
            )
        };
        return decision(
            Kind::NoHangSeen,
            Confidence::Likely,
            &moving,
            summary,
            evidence,
            None,
        );
    }
    let stuck = with(Role::StillOutside);
    if count(&stuck) == total {
        // ParaStack's rule needs ranks that wait in MPI for the ones that do not.
        return undecided(
            Vec::new(),
            "no rank is inside MPI: every rank is outside it, on an unchanged path",
            "nothing strata reads today: the job does not use MPI at this point, or its MPI \
             library's frames are not recognised; the classes above show where each rank is",
            evidence,
        );
    }
    if !stuck.is_empty() {
        let others = total - count(&stuck);
        let summary = format!(
            "{} outside MPI, on the same path in every sample{}",
            ranks_phrase(&stuck),
            if others > 0 {
                "; every other rank waits in MPI or has finished"
            } else {
                ""
            }
        );
        let confidence = if partly {
            Confidence::Guess
        } else {
            Confidence::Likely
        };
        return decision(
            Kind::StuckOutsideMpi,
            confidence,
            &stuck,
            summary,
            evidence,
            None,
        );
    }
    let unseen = with(Role::Unseen);
    let p2p = with(Role::WaitingPointToPoint);
    let collective = with(Role::WaitingCollective);
    let finished = with(Role::Finished);
    if !unseen.is_empty() {
        return undecided(
            unseen,
            "some ranks could not be sampled: they may be the ones the others wait for",
            "attach again, or look at the rank table for why they could not be read",
            evidence,
        );
    }
    if let Some(d) = graph.and_then(|g| from_graph(g, partly, &evidence)) {
        return d;
    }
    if count(&p2p) == 1 {
        let confidence = if partly {
            Confidence::Guess
        } else {
            Confidence::Likely
        };
        let summary = format!(
            "{} waits {}; every other rank has finished or is blocked in another call, so no \
             rank sends what it waits for",
            ranks_phrase(&p2p),
            doing(p2p[0].state).0
        );
        return decision(
            Kind::MessageNeverSent,
            confidence,
            &p2p,
            summary,
            evidence,
            None,
        );
    }
    if !p2p.is_empty() {
        let mut would_decide = "the peers of their calls (the source and destination \
                                arguments, or the PMPI library)"
            .to_string();
        if let Some(why) = graph.and_then(WaitFor::first_unknown) {
            would_decide.push_str(&format!("; not read: {why}"));
        }
        if let Some(d) =
            behind().and_then(|b| least_progressed(&groups, &b, &evidence, &would_decide))
        {
            return d;
        }
        return undecided(
            p2p,
            "several ranks wait in point-to-point calls: a cycle among them, or messages never \
             sent",
            &would_decide,
            evidence,
        );
    }
    let calls: std::collections::BTreeSet<&str> = collective
        .iter()
        .filter_map(|g| g.state.activity.call().map(|c| c.name.as_str()))
        .collect();
    if calls.len() > 1 || (!collective.is_empty() && !finished.is_empty()) {
        // The largest group is taken to be where the job is; the others left it. With two
        // groups of one size nothing tells them apart: all are named.
        let mut parts: Vec<&Ranked> = collective.iter().chain(finished.iter()).copied().collect();
        let largest = parts.iter().map(|g| g.ranks.count()).max().unwrap_or(0);
        let minority: Vec<&Ranked> = parts
            .iter()
            .filter(|g| g.ranks.count() < largest)
            .copied()
            .collect();
        if !minority.is_empty() {
            parts = minority;
        }
        // A group named here that waits on a communicator whose members only the library
        // knows may be waiting rightly, for ranks that skipped the call: blaming it would
        // be a confident wrong answer. It is named as waiting, undecided.
        if let Some(why) =
            graph.and_then(|g| parts.iter().find_map(|p| g.unknown_communicator(&p.ranks)))
        {
            return undecided(
                parts,
                &format!(
                    "ranks wait in different collectives, and {why}: the ranks missing from it \
                     may be the ones to debug"
                ),
                "the communicator's members (the PMPI library records them)",
                evidence,
            );
        }
        let summary = format!(
            "ranks wait in different collectives or have finished: {}",
            groups
                .iter()
                .map(|g| format!("[{}] {}", rank_list(&g.ranks), doing(g.state).0))
                .collect::<Vec<_>>()
                .join(", ")
        );
        return decision(
            Kind::CollectiveMismatch,
            Confidence::Guess,
            &parts,
            summary,
            evidence,
            Some(
                "the communicators of the calls (their arguments, or the PMPI library): on \
                 different communicators they need not match"
                    .to_string(),
            ),
        );
    }
    if collective.len() == 1 {
        return undecided(
            collective,
            "every rank waits in the same collective: it does not complete although all are in it",
            "its communicator (a sub-communicator may lack a rank), or the MPI library's own \
             state",
            evidence,
        );
    }
    undecided(
        finished,
        "every rank has finished or is in MPI_Finalize",
        "nothing: the job is ending",
        evidence,
    )
}

/// The least progressed ranks as the answer, when the graph decided nothing: a guess, as
/// in STAT's temporal order analysis (the task behind the others is the likely culprit).
fn least_progressed(
    groups: &[Ranked],
    behind: &Behind,
    evidence: &[String],
    would_decide: &str,
) -> Option<Decision> {
    let named: Vec<Ranked> = groups
        .iter()
        .filter_map(|g| {
            let ranks = &g.ranks & &behind.ranks;
            (!ranks.is_empty()).then_some(Ranked {
                ranks,
                state: g.state,
                role: g.role,
            })
        })
        .collect();
    if named.is_empty() {
        return None;
    }
    let refs: Vec<&Ranked> = named.iter().collect();
    let summary = format!(
        "not decided by the wait-for graph; {}, {} {} behind every other rank ({})",
        behind.by,
        ranks_phrase(&refs),
        if behind.ranks.count() == 1 {
            "is"
        } else {
            "are"
        },
        behind.label
    );
    Some(decision(
        Kind::LeastProgressed,
        Confidence::Guess,
        &refs,
        summary,
        evidence.to_vec(),
        Some(would_decide.to_string()),
    ))
}

/// One line per group: what it does and whether it moved.
fn evidence(groups: &[Ranked]) -> Vec<String> {
    groups
        .iter()
        .map(|g| seen_line(rank_list(&g.ranks), g.state))
        .collect()
}

fn ranks_phrase(groups: &[&Ranked]) -> String {
    let mut all = RankSet::new();
    for g in groups {
        all.union_with(&g.ranks);
    }
    if all.count() == 1 {
        format!("rank {}", rank_list(&all))
    } else {
        format!("ranks [{}]", rank_list(&all))
    }
}

fn decision(
    kind: Kind,
    confidence: Confidence,
    named: &[&Ranked],
    summary: String,
    evidence: Vec<String>,
    would_decide: Option<String>,
) -> Decision {
    let culprits = named
        .iter()
        .map(|g| Culprit::new(&g.ranks, doing(g.state)))
        .collect();
    Decision::new(kind, confidence, culprits, summary, evidence, would_decide)
}

fn undecided(
    named: Vec<&Ranked>,
    because: &str,
    would_decide: &str,
    evidence: Vec<String>,
) -> Decision {
    decision(
        Kind::Undecided,
        Confidence::Guess,
        &named,
        format!("not decided: {because}"),
        evidence,
        Some(would_decide.to_string()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{Motion, observe};
    use crate::testing::{app, mpi, result, stack};
    use strata_filters::Frame;
    use strata_result::StrataResult;

    fn decide_on(ranks: u32, samples: u32, trace: impl Fn(u32, u32) -> Vec<Frame>) -> Decision {
        decide(&observe(&result(ranks, samples, trace)), None)
    }

    fn recv(line: u32) -> Vec<Frame> {
        stack(
            line,
            vec![mpi("PMPI_Recv", 0x300), mpi("opal_progress", 0x200)],
        )
    }

    fn barrier(line: u32) -> Vec<Frame> {
        stack(line, vec![mpi("PMPI_Barrier", 0x100)])
    }

    #[test]
    fn the_example_ring_is_held_by_the_sleeping_rank() {
        let d = decide(&observe(&strata_result::example::ring_result()), None);
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::StuckOutsideMpi, "1"),
            "{d:#?}"
        );
        assert_eq!(d.culprits[0].at.as_ref().and_then(|p| p.line), Some(38));
        assert_eq!(d.confidence, Confidence::Likely);
        assert_eq!(d.evidence.len(), 3, "one line per group");
    }

    #[test]
    fn several_ranks_in_receives_are_named_but_not_decided() {
        let d = decide_on(
            4,
            3,
            |rank, _| if rank < 2 { recv(20) } else { barrier(30) },
        );
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::Undecided, "0-1"),
            "{d:#?}"
        );
        assert!(d.would_decide.as_deref().unwrap().contains("peers"));
    }

    #[test]
    fn without_the_peers_the_least_progressed_ranks_are_a_guess() {
        let r = result(4, 3, |rank, _| {
            if rank < 2 {
                recv(20 + rank)
            } else {
                barrier(30)
            }
        });
        let o = observe(&r);
        let mut asked = 0;
        let d = decide_with(&o, None, &mut || {
            asked += 1;
            Some(Behind {
                ranks: std::iter::once(0).collect(),
                label: "T1.1".into(),
                by: "by code order and loop counters".into(),
            })
        });
        assert_eq!(
            (d.kind, d.ranks.as_str(), d.confidence),
            (Kind::LeastProgressed, "0", Confidence::Guess),
            "{d:#?}"
        );
        assert!(
            d.summary
                .contains("rank 0 is behind every other rank (T1.1)"),
            "{}",
            d.summary
        );
        assert!(d.would_decide.as_deref().unwrap().contains("peers"));
        // Where the states decide, the progress order is not even computed.
        let stuck = observe(&result(3, 3, |rank, _| {
            if rank == 1 {
                stack(10, vec![app("spin", 11)])
            } else {
                barrier(30)
            }
        }));
        let d = decide_with(&stuck, None, &mut || {
            asked += 1;
            None
        });
        assert_eq!(d.kind, Kind::StuckOutsideMpi);
        assert_eq!(asked, 1);
    }

    #[test]
    fn one_rank_waiting_while_the_rest_finished_waits_for_a_message_never_sent() {
        let d = decide_on(4, 3, |rank, _| match rank {
            0 => recv(20),
            _ => stack(40, vec![mpi("ompi_mpi_finalize", 0x10)]),
        });
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::MessageNeverSent, "0"),
            "{d:#?}"
        );
        assert_eq!(d.culprits[0].at.as_ref().and_then(|p| p.line), Some(20));
    }

    #[test]
    fn a_rank_that_moves_means_no_hang_seen() {
        let d = decide_on(3, 4, |rank, s| match (rank, s % 2) {
            (2, 0) => stack(10, vec![app("assemble", 50)]),
            (2, _) => stack(11, vec![app("solve", 60)]),
            _ => stack(12, vec![mpi("PMPI_Allreduce", 0x10)]),
        });
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::NoHangSeen, "2"),
            "{d:#?}"
        );
    }

    #[test]
    fn a_rank_whose_library_counted_calls_moved_though_its_stack_did_not() {
        // Rank 1 computes for most of each iteration: every sample finds it in `compute`.
        let mut r = result(3, 4, |rank, _| match rank {
            1 => stack(10, vec![app("compute", 50)]),
            _ => stack(12, vec![mpi("PMPI_Waitall", 0x10)]),
        });
        let calls = |r: &mut StrataResult, rank: usize, calls: Option<u64>| {
            r.meta.ranks[rank].pmpi = Some(strata_result::pmpi::PmpiRecord {
                progress_while_sampled: calls,
                ..Default::default()
            });
        };
        for rank in 0..3 {
            calls(&mut r, rank, Some(0));
        }
        let d = decide(&observe(&r), None);
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::StuckOutsideMpi, "1"),
            "{d:#?}"
        );
        // Its library counted calls between the first sample and the last: it moves, and
        // the others (which made none) wait for it.
        calls(&mut r, 1, Some(120));
        let o = observe(&r);
        assert_eq!(o.ranks[1].as_ref().unwrap().motion, Motion::MadeCalls);
        assert_eq!(o.ranks[0].as_ref().unwrap().motion, Motion::Unchanged);
        let d = decide(&o, None);
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::NoHangSeen, "1"),
            "{d:#?}"
        );
        assert!(
            d.evidence
                .iter()
                .any(|e| e.starts_with("[1]") && e.ends_with("(its stack looked the same)")),
            "{d:#?}"
        );
        // Unread at the first sample: no claim either way.
        calls(&mut r, 1, None);
        assert_eq!(decide(&observe(&r), None).kind, Kind::StuckOutsideMpi);
    }

    #[test]
    fn different_collectives_name_the_smaller_groups_or_all_of_equal_size() {
        let d = decide_on(4, 3, |rank, _| {
            if rank == 3 {
                barrier(30)
            } else {
                stack(31, vec![mpi("PMPI_Win_fence", 0x20)])
            }
        });
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::CollectiveMismatch, "3"),
            "{d:#?}"
        );
        assert_eq!(
            d.confidence,
            Confidence::Guess,
            "communicators are not known"
        );
        let d = decide_on(4, 3, |rank, _| {
            if rank < 2 {
                barrier(30)
            } else {
                stack(31, vec![mpi("PMPI_Allreduce", 0x20)])
            }
        });
        assert_eq!(
            (d.kind, d.ranks.as_str()),
            (Kind::CollectiveMismatch, "0-3"),
            "{d:#?}"
        );
    }

    #[test]
    fn what_the_samples_cannot_show_is_undecided() {
        let once = decide_on(
            2,
            1,
            |rank, _| if rank == 0 { recv(20) } else { barrier(30) },
        );
        assert_eq!(
            (once.kind, once.ranks.as_str()),
            (Kind::Undecided, ""),
            "{once:#?}"
        );
        let no_mpi = decide_on(2, 3, |rank, _| stack(10 + rank, vec![app("read_pipe", 20)]));
        assert_eq!(
            (no_mpi.kind, no_mpi.ranks.as_str()),
            (Kind::Undecided, ""),
            "{no_mpi:#?}"
        );
        let all_in_one = decide_on(3, 3, |_, _| barrier(30));
        assert_eq!(all_in_one.kind, Kind::Undecided, "{all_in_one:#?}");
        assert_eq!(all_in_one.ranks, "0-2");
    }
}
