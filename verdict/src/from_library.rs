//! The calls' arguments as strata's PMPI library recorded them in each rank (`ranks[].pmpi`
//! of the result): exact, with the members of derived communicators. A rank's record is
//! used when it is of the call the rank was seen in at its last sample; otherwise (the rank
//! moved on between the last sample and the read, or is in a call the library does not
//! wrap) the arguments read from the source stand.

use crate::arguments::{Arguments, CallArguments, Communicator, Origin, Peer, Request, Requests};
use crate::mpi_call::CallKind;
use crate::observe::{Activity, Observations};
use crate::signature::signature;
use serde::Serialize;
use strata_filters::taskset::{format_set, format_set_shortened};
use strata_filters::{RankSet, TaskSet};
use strata_result::StrataResult;
use strata_result::pmpi::{PmpiCommunicator, PmpiPeer, PmpiRequest};

/// Which ranks in MPI the verdict has the library's exact record of, and which not: said
/// whenever some rank of the job had the library loaded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    /// Ranks whose call's arguments are the library's record.
    pub exact: RankSet,
    /// Ranks in MPI without a usable record (the library not loaded, a record of another
    /// call or unreadable), whose arguments were read from the source if at all.
    pub without: RankSet,
}

/// [`Coverage`] as the verdict object carries it (`pmpi` in `result.json`'s verdict).
#[derive(Serialize)]
struct CoverageFile {
    exact: String,
    without: String,
}

impl Coverage {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(CoverageFile {
            exact: format_set(&self.exact),
            without: format_set(&self.without),
        })
        .expect("coverage serializes")
    }

    /// The paragraph's line, rank lists shortened to `max_list` characters.
    pub fn line(&self, max_list: usize) -> String {
        let mut line = format!(
            "  exact MPI state from strata's PMPI library: [{}]",
            format_set_shortened(&self.exact, max_list)
        );
        if !self.without.is_empty() {
            line.push_str(&format!(
                "; none for [{}] in MPI",
                format_set_shortened(&self.without, max_list)
            ));
        }
        line.push('\n');
        line
    }
}

/// `arguments` with every rank's call replaced by the library's record where it has one
/// (see the module's doc), and what was covered: `None` when no rank had the library.
pub fn overlay(
    result: &StrataResult,
    observations: &Observations,
    mut arguments: Arguments,
) -> (Arguments, Option<Coverage>) {
    let loaded = result.meta.ranks.iter().any(|r| r.pmpi.is_some());
    let mut coverage = Coverage::default();
    for (rank, state) in observations.ranks.iter().enumerate() {
        if state
            .as_ref()
            .is_some_and(|s| matches!(s.activity, Activity::InMpi { .. }))
        {
            coverage.without.insert(rank as u32);
        }
    }
    for info in &result.meta.ranks {
        let Some(record) = info.pmpi.as_ref().filter(|r| r.error.is_none()) else {
            continue;
        };
        let Some(name) = record.call.as_deref() else {
            continue;
        };
        let seen = observations
            .ranks
            .get(info.rank as usize)
            .and_then(Option::as_ref)
            .and_then(|s| match &s.activity {
                Activity::InMpi { call, .. } => Some(call),
                _ => None,
            });
        let Some(seen) = seen.filter(|call| call.name == name) else {
            continue;
        };
        // A wait or a test: its record lists the requests it completes.
        let exact = if seen.kind == CallKind::Completion {
            CallArguments {
                requests: Some(Requests {
                    recorded: record.requests.iter().map(request).collect(),
                    unrecorded: record.requests_unrecorded,
                }),
                origin: Some(Origin::MpiLibrary),
                ..CallArguments::default()
            }
        } else {
            let Some(sig) = signature(name) else {
                continue;
            };
            let peer = record.peer.as_ref().map(peer);
            let communicator = record.communicator.as_ref().map(communicator);
            CallArguments {
                source: sig.source.and(peer.clone()),
                destination: sig.destination.and(peer.clone()),
                root: sig.root.and(peer),
                communicator: sig.communicator.and(communicator),
                requests: None,
                origin: Some(Origin::MpiLibrary),
            }
        };
        if let Some(slot) = arguments.ranks.get_mut(info.rank as usize) {
            *slot = Some(exact);
            coverage.exact.insert(info.rank);
        }
    }
    coverage.without = coverage.without.difference(&coverage.exact);
    (arguments, loaded.then_some(coverage))
}

fn peer(p: &PmpiPeer) -> Peer {
    match p {
        PmpiPeer::Rank(r) => Peer::Rank(*r),
        PmpiPeer::AnySource => Peer::Any,
        PmpiPeer::ProcNull => Peer::ProcNull,
    }
}

fn communicator(c: &PmpiCommunicator) -> Communicator {
    match c {
        PmpiCommunicator::World => Communicator::World,
        PmpiCommunicator::Itself => Communicator::Itself,
        PmpiCommunicator::Members(m) => Communicator::Members(m.clone()),
        PmpiCommunicator::Unknown => Communicator::Unknown(
            "an intercommunicator, or one the PMPI library could not ask".to_string(),
        ),
    }
}

fn request(r: &PmpiRequest) -> Request {
    let unknown = |what: &str| format!("the PMPI library did not record its {what}");
    Request {
        started_by: r.started_by.clone(),
        peer: r
            .peer
            .as_ref()
            .map_or_else(|| Peer::Unknown(unknown("peer")), peer),
        tag: r.tag,
        communicator: r.communicator.as_ref().map_or_else(
            || Communicator::Unknown(unknown("communicator")),
            communicator,
        ),
    }
}
