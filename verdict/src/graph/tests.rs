use super::*;
use crate::Verdict;
use crate::arguments::Request;
use crate::decide::Kind;
use crate::observe::observe;
use crate::testing::{mpi, result, stack};
use strata_filters::Frame;

fn in_call(function: &str, line: u32) -> Vec<Frame> {
    stack(
        line,
        vec![mpi(function, 0x100), mpi("opal_progress", 0x200)],
    )
}

fn finalized() -> Vec<Frame> {
    stack(90, vec![mpi("ompi_mpi_finalize", 0x10)])
}

/// `then` for ranks below `split`, `otherwise` for the rest.
fn split<T>(split: u32, then: impl Fn() -> T, otherwise: impl Fn() -> T) -> impl Fn(u32) -> T {
    move |rank| if rank < split { then() } else { otherwise() }
}

fn receive(from: Peer) -> Option<CallArguments> {
    Some(CallArguments {
        source: Some(from),
        communicator: Some(Communicator::World),
        origin: Some(Origin::SourceAndVariables),
        ..CallArguments::default()
    })
}

fn collective(comm: Communicator) -> Option<CallArguments> {
    Some(CallArguments {
        communicator: Some(comm),
        origin: Some(Origin::SourceAndVariables),
        ..CallArguments::default()
    })
}

fn verdict(
    ranks: u32,
    trace: impl Fn(u32) -> Vec<Frame>,
    args: impl Fn(u32) -> Option<CallArguments>,
) -> Verdict {
    let r = result(ranks, 3, |rank, _| trace(rank));
    let arguments = Arguments {
        ranks: (0..ranks).map(args).collect(),
    };
    Verdict::with_arguments(observe(&r), arguments)
}

#[test]
fn two_ranks_receiving_from_each_other_are_a_deadlock_cycle() {
    let v = verdict(
        4,
        |rank| {
            if rank < 2 {
                in_call("PMPI_Recv", 20)
            } else {
                in_call("PMPI_Barrier", 30)
            }
        },
        |rank| match rank {
            0 => receive(Peer::Rank(1)),
            1 => receive(Peer::Rank(0)),
            _ => collective(Communicator::World),
        },
    );
    let d = &v.decision;
    assert_eq!(
        (d.kind, d.ranks.as_str()),
        (Kind::DeadlockCycle, "0-1"),
        "{d:#?}"
    );
    assert_eq!(d.culprits[0].doing, "in MPI_Recv from rank 1");
    assert!(d.summary.contains("wait for each other"), "{}", d.summary);
    let graph = d.wait_for.as_ref().unwrap();
    assert_eq!(graph.cycles, vec![vec!["0".to_string(), "1".to_string()]]);
    assert!(
        graph
            .edges
            .iter()
            .any(|e| e.from == "2-3" && e.to == "0-1" && e.semantics == "all" && e.stuck),
        "{graph:#?}"
    );
    let dot = v.wait_for_dot.as_ref().unwrap();
    assert!(dot.starts_with("// strata wait-for graph"), "{dot}");
    assert!(
        dot.contains("n0 -> n1 [arrowhead=normal, color=red]"),
        "{dot}"
    );
}

#[test]
fn a_ring_of_many_ranks_is_one_cycle_and_a_chain_to_a_finished_rank_is_not() {
    let n = 3000;
    let v = verdict(
        n,
        |_| in_call("PMPI_Recv", 20),
        |rank| receive(Peer::Rank((rank + n - 1) % n)),
    );
    assert_eq!(v.decision.kind, Kind::DeadlockCycle);
    assert_eq!(v.decision.ranks, format!("0-{}", n - 1));
    // Every rank is a culprit in the file; the screen and the summary stay short.
    assert_eq!(v.decision.culprits.len(), n as usize);
    assert!(
        v.decision.summary.ends_with(&format!("and {} more", n - 4)),
        "{}",
        v.decision.summary
    );
    let text = crate::text::text(&v.observations, &v.decision, 80);
    assert!(text.lines().count() < 16, "{text}");
    assert!(
        text.contains(&format!("debug {} more groups", n - 8)),
        "{text}"
    );
    // Rank r receives from r + 1; the last rank finished: nobody is in a cycle, everyone
    // waits (through the chain) for a message that will not come, and the one next to the
    // finished rank is the one to debug.
    let v = verdict(
        n,
        |rank| {
            if rank == n - 1 {
                finalized()
            } else {
                in_call("PMPI_Recv", 20)
            }
        },
        |rank| {
            (rank < n - 1)
                .then(|| receive(Peer::Rank(rank + 1)))
                .flatten()
        },
    );
    let d = &v.decision;
    assert_eq!(
        (d.kind, d.ranks.clone()),
        (Kind::MessageNeverSent, format!("{}", n - 2)),
        "{}",
        d.summary
    );
    assert!(d.summary.contains("finished"), "{}", d.summary);
}

#[test]
fn a_receive_from_any_source_is_released_by_any_rank_that_may_send() {
    // Rank 0 receives from anyone; rank 1 computes (it may send): no deadlock is proved.
    let r = result(3, 3, |rank, s| match rank {
        0 => in_call("PMPI_Recv", 20),
        1 => stack(40 + s, vec![]),
        _ => in_call("PMPI_Recv", 21),
    });
    let arguments = Arguments {
        ranks: vec![receive(Peer::Any), None, receive(Peer::Rank(0))],
    };
    let o = observe(&r);
    let g = WaitFor::build(&o, &arguments);
    assert!(g.released.iter().all(|&r| r), "{:?}", g.nodes);
    assert!(g.cycles.is_empty());
}

#[test]
fn a_probe_from_any_source_while_the_rest_wait_in_a_collective_is_a_missing_participant() {
    let v = verdict(
        4,
        split(
            1,
            || in_call("PMPI_Probe", 15),
            || in_call("PMPI_Allreduce", 16),
        ),
        split(1, || receive(Peer::Any), || collective(Communicator::World)),
    );
    let d = &v.decision;
    assert_eq!(
        (d.kind, d.ranks.as_str()),
        (Kind::CollectiveMismatch, "0"),
        "{d:#?}"
    );
    assert_eq!(d.culprits[0].doing, "in MPI_Probe from MPI_ANY_SOURCE");
    assert!(
        d.summary.starts_with(
            "ranks [1-3] in MPI_Allreduce on MPI_COMM_WORLD at app.c:16 wait for rank 0"
        ),
        "{}",
        d.summary
    );
}

#[test]
fn unknown_communicators_and_requests_prove_nothing() {
    // Rank 0 in an allreduce on a derived communicator; the others in a barrier on the
    // world waiting for it: rank 0 may complete (its communicator's members are not
    // known), so nothing is stuck in the graph. Nor is rank 0 blamed: it may be waiting
    // rightly for a member that skipped the allreduce. It is named, undecided.
    let v = verdict(
        4,
        |rank| {
            if rank == 0 {
                in_call("PMPI_Allreduce", 10)
            } else {
                in_call("PMPI_Barrier", 11)
            }
        },
        |rank| {
            if rank == 0 {
                collective(Communicator::Other("half = 0x55".into()))
            } else {
                collective(Communicator::World)
            }
        },
    );
    let graph = v.decision.wait_for.as_ref().unwrap();
    assert!(graph.cycles.is_empty());
    assert!(graph.edges.iter().all(|e| !e.stuck), "{graph:#?}");
    assert!(graph.unknown[0].why.contains("half = 0x55"), "{graph:#?}");
    let d = &v.decision;
    assert_eq!((d.kind, d.ranks.as_str()), (Kind::Undecided, "0"), "{d:#?}");
    assert!(
        d.summary
            .contains("[0] wait in MPI_Allreduce on communicator half = 0x55, whose members"),
        "{}",
        d.summary
    );
    assert!(d.would_decide.as_deref().unwrap().contains("PMPI"));
}

#[test]
fn library_data_proves_what_source_reads_make_likely() {
    let library = |from: u32| {
        Some(CallArguments {
            source: Some(Peer::Rank(from)),
            communicator: Some(Communicator::Members(vec![3, 1])),
            origin: Some(Origin::MpiLibrary),
            ..CallArguments::default()
        })
    };
    // On the communicator {3, 1}, rank 0 of it is job rank 3.
    let v = verdict(
        4,
        |rank| {
            if rank % 2 == 1 {
                in_call("PMPI_Recv", 20)
            } else {
                finalized()
            }
        },
        |rank| match rank {
            1 => library(0),
            3 => library(1),
            _ => None,
        },
    );
    let d = &v.decision;
    assert_eq!(
        (d.kind, d.ranks.as_str(), d.confidence),
        (
            Kind::DeadlockCycle,
            "1,3",
            crate::decide::Confidence::Proved
        ),
        "{d:#?}"
    );
}

#[test]
fn an_undecided_answer_says_which_argument_was_not_read() {
    let v = verdict(
        3,
        split(
            2,
            || in_call("PMPI_Recv", 20),
            || in_call("PMPI_Barrier", 30),
        ),
        split(
            2,
            || receive(Peer::Unknown("`nbr[2]` is not evaluated".into())),
            || collective(Communicator::World),
        ),
    );
    let d = &v.decision;
    assert_eq!(
        (d.kind, d.ranks.as_str()),
        (Kind::Undecided, "0-1"),
        "{d:#?}"
    );
    assert!(
        d.would_decide
            .as_deref()
            .unwrap()
            .ends_with("not read: [0-1] peer unknown: `nbr[2]` is not evaluated"),
        "{d:#?}"
    );
}

fn requests(recorded: Vec<Request>) -> Option<CallArguments> {
    Some(CallArguments {
        requests: Some(Requests {
            recorded,
            unrecorded: 0,
        }),
        origin: Some(Origin::MpiLibrary),
        ..CallArguments::default()
    })
}

fn irecv(from: u32) -> Request {
    Request {
        started_by: Some("MPI_Irecv".into()),
        peer: Peer::Rank(from),
        tag: Some(2),
        communicator: Communicator::World,
    }
}

#[test]
fn a_waitall_on_a_receive_nobody_sends_is_proved_stuck_with_the_library() {
    // Rank 0 waits for a receive from rank 2, which waits in a barrier for rank 0.
    let trace = |rank| {
        if rank == 0 {
            in_call("PMPI_Waitall", 20)
        } else {
            in_call("PMPI_Barrier", 30)
        }
    };
    let barrier = || {
        Some(CallArguments {
            communicator: Some(Communicator::World),
            origin: Some(Origin::MpiLibrary),
            ..CallArguments::default()
        })
    };
    let v = verdict(4, trace, |rank| {
        if rank == 0 {
            requests(vec![irecv(2)])
        } else {
            barrier()
        }
    });
    let d = &v.decision;
    // The barrier misses rank 0, which waits for rank 2, which is in the barrier.
    assert_eq!(
        (d.kind, d.confidence, d.ranks.as_str()),
        (
            Kind::CollectiveMismatch,
            crate::decide::Confidence::Proved,
            "0"
        ),
        "{d:#?}"
    );
    let graph = d.wait_for.as_ref().unwrap();
    let edge = graph.edges.iter().find(|e| e.from == "0").unwrap();
    assert_eq!(
        (edge.to.as_str(), edge.semantics),
        ("2", "all"),
        "{graph:#?}"
    );
    assert!(
        d.culprits
            .iter()
            .any(|c| c.doing == "in MPI_Waitall on a receive from rank 2 (tag 2)"),
        "{d:#?}"
    );
    // Two pending requests: stuck only if every peer is (one may have completed since the
    // library looked). Rank 1 computing may send: nothing is proved.
    let v = verdict(
        4,
        |rank| match rank {
            1 => stack(40, vec![]),
            _ => trace(rank),
        },
        |rank| match rank {
            0 => requests(vec![irecv(1), irecv(2)]),
            1 => None,
            _ => collective(Communicator::World),
        },
    );
    let graph = v.decision.wait_for.as_ref().unwrap();
    let edge = graph.edges.iter().find(|e| e.from == "0").unwrap();
    assert_eq!(
        (edge.to.as_str(), edge.semantics),
        ("1-2", "any"),
        "{graph:#?}"
    );
    assert!(!edge.stuck, "{graph:#?}");
    // A request the library did not see started, or one past its cap: not known.
    for unknown in [
        Requests {
            recorded: vec![Request {
                started_by: None,
                ..irecv(2)
            }],
            unrecorded: 0,
        },
        Requests {
            recorded: vec![irecv(2)],
            unrecorded: 3,
        },
        // Who a nonblocking collective waits for, no record says.
        Requests {
            recorded: vec![Request {
                started_by: Some("MPI_Ibarrier".into()),
                peer: Peer::Unknown("none".into()),
                tag: None,
                communicator: Communicator::World,
            }],
            unrecorded: 0,
        },
    ] {
        let v = verdict(4, trace, |rank| {
            if rank == 0 {
                Some(CallArguments {
                    requests: Some(unknown.clone()),
                    origin: Some(Origin::MpiLibrary),
                    ..CallArguments::default()
                })
            } else {
                barrier()
            }
        });
        assert_ne!(
            v.decision.confidence,
            crate::decide::Confidence::Proved,
            "{unknown:?}"
        );
        let graph = v.decision.wait_for.as_ref().unwrap();
        assert_eq!(graph.unknown.len(), 1, "{graph:#?}");
    }
}

#[test]
fn requests_say_what_made_them() {
    let recv_init = Request {
        started_by: Some("MPI_Recv_init".into()),
        ..irecv(2)
    };
    assert!(recv_init.receives());
    assert_eq!(recv_init.describe(), "a receive from rank 2 (tag 2)");
    let ssend_init = Request {
        started_by: Some("MPI_Ssend_init".into()),
        ..irecv(3)
    };
    assert_eq!(
        ssend_init.describe(),
        "a synchronous send to rank 3 (tag 2)"
    );
    let ibcast = Request {
        started_by: Some("MPI_Ibcast".into()),
        peer: Peer::Rank(1),
        tag: None,
        communicator: Communicator::World,
    };
    assert!(ibcast.collective() && !ibcast.receives());
    assert_eq!(
        ibcast.describe(),
        "an MPI_Ibcast on MPI_COMM_WORLD with root rank 1"
    );
}
