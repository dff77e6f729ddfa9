//! The calls' arguments as strata's PMPI library recorded them in each rank (`ranks[].pmpi`
//! of the result): exact, with the members of derived communicators. A rank's record is
//! used when it is of the call the rank was seen in at its last sample; otherwise (the rank
//! moved on between the last sample and the read, or is in a call the library does not
//! wrap) the arguments read from the source stand.

use crate::arguments::{Arguments, CallArguments, Communicator, Origin, Peer};
use crate::observe::{Activity, Observations};
use crate::signature::signature;
use strata_result::StrataResult;
use strata_result::pmpi::{PmpiCommunicator, PmpiPeer};

/// `arguments` with every rank's call replaced by the library's record where it has one
/// (see the module's doc).
pub fn overlay(
    result: &StrataResult,
    observations: &Observations,
    mut arguments: Arguments,
) -> Arguments {
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
                Activity::InMpi { call, .. } => Some(call.name.as_str()),
                _ => None,
            });
        if seen != Some(name) {
            continue;
        }
        let Some(sig) = signature(name) else {
            continue;
        };
        let peer = record.peer.as_ref().map(|p| match p {
            PmpiPeer::Rank(r) => Peer::Rank(*r),
            PmpiPeer::AnySource => Peer::Any,
            PmpiPeer::ProcNull => Peer::ProcNull,
        });
        let communicator = record.communicator.as_ref().map(|c| match c {
            PmpiCommunicator::World => Communicator::World,
            PmpiCommunicator::Itself => Communicator::Itself,
            PmpiCommunicator::Members(m) => Communicator::Members(m.clone()),
            PmpiCommunicator::Unknown => Communicator::Unknown(
                "an intercommunicator, or one the PMPI library could not ask".to_string(),
            ),
        });
        let exact = CallArguments {
            source: sig.source.and(peer.clone()),
            destination: sig.destination.and(peer.clone()),
            root: sig.root.and(peer),
            communicator: sig.communicator.and(communicator),
            origin: Some(Origin::MpiLibrary),
        };
        if let Some(slot) = arguments.ranks.get_mut(info.rank as usize) {
            *slot = Some(exact);
        }
    }
    arguments
}
