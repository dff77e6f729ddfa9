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
    /// Of `completed`, the polls (`MPI_Iprobe`, the `MPI_Test` calls) that found nothing.
    #[serde(default)]
    pub found_nothing: u64,
    /// In a completion call (`MPI_Wait`, `MPI_Waitall`, `MPI_Test`, ...): the requests it
    /// was passed. In a `MPI_Waitall` that lasted, those still pending when the library
    /// last looked (a request may have completed since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<PmpiRequest>,
    /// Active requests the call was passed that `requests` does not hold (past the
    /// library's cap of 1024).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_unrecorded: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A request a completion call was passed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiRequest {
    /// The call that started it (`MPI_Irecv`, `MPI_Isend`); `None` when the library did not
    /// see it started (a call it does not wrap, such as `MPI_Ibcast` or `MPI_Start`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_by: Option<String>,
    /// The source of a receive, the destination of a send, as a rank of `communicator`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PmpiPeer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub communicator: Option<PmpiCommunicator>,
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
