//! What strata's PMPI library recorded in a rank: the MPI call it was in, with its exact
//! arguments (`result.json`'s `ranks[].pmpi`, `docs/FORMATS.md`).

use serde::{Deserialize, Serialize};

/// A rank's MPI call as the PMPI library recorded it at the end of sampling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiRecord {
    /// Why the record could not be read (another layout version, an unreadable page): the
    /// other fields are empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The call's C name; `None` outside MPI (or outside the calls the library wraps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The peer: the source of a receive, the destination of a send, the root of a rooted
    /// collective, as a rank of the call's communicator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PmpiPeer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub communicator: Option<PmpiCommunicator>,
    /// MPI calls the rank entered and completed since the library loaded.
    #[serde(default)]
    pub entered: u64,
    #[serde(default)]
    pub completed: u64,
}

/// A peer argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PmpiPeer {
    Rank(u32),
    AnySource,
    ProcNull,
}

/// A communicator argument.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PmpiCommunicator {
    World,
    #[serde(rename = "self")]
    Itself,
    /// The world rank of each of its ranks, rank 0 first.
    Members(Vec<u32>),
    /// An intercommunicator, or one whose members the library could not ask.
    Unknown,
}
