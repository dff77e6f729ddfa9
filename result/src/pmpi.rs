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
    /// Calls that made progress (completed, less the polls that found nothing) between the
    /// first sample and the read: a rank with some moved, whatever its stacks looked like.
    /// `None` when one sample was taken or the first could not read the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_while_sampled: Option<u64>,
    /// In a completion call (`MPI_Wait`, `MPI_Waitall`, `MPI_Test`, ...): the requests it
    /// was passed. In a `MPI_Waitall` that lasted, those still pending when the library
    /// last looked (a request may have completed since).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requests: Vec<PmpiRequest>,
    /// Active requests the call was passed that `requests` does not hold (past the
    /// library's cap of 1024).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_unrecorded: u64,
    /// The rank's MPI history: its call sites, the transitions between them, its last
    /// calls. `None` before its first call or when it could not be read
    /// (`history_error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<PmpiHistory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_error: Option<String>,
}

/// A rank's MPI history as the PMPI library kept it, bounded: 256 call sites, 1024
/// transitions, the last calls (the library keeps 4096; a result carries the last 32).
/// Times are `None` while the library's clock could not yet say (its time-stamp counter is
/// converted by two readings at least 5 ms apart).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiHistory {
    #[serde(default)]
    pub sites: Vec<PmpiSite>,
    /// The semi-Markov model of the rank: which site followed which, how often, and how
    /// long the computation between and the first call took.
    #[serde(default)]
    pub transitions: Vec<PmpiTransition>,
    /// The last calls completed, oldest first.
    #[serde(default)]
    pub events: Vec<PmpiEvent>,
    /// Calls completed since the library loaded (`events` are the last of them).
    #[serde(default)]
    pub calls: u64,
    /// Calls whose site, and transitions, found the library's tables full.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sites_lost: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub transitions_lost: u64,
    /// In a call: for how long when read, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_call_ns: Option<u64>,
    /// Since the rank's last call returned, when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_return_ns: Option<u64>,
}

/// One call site: where the program called an MPI function (the call instruction before
/// the return address; a Fortran program's calls are at its MPI library's binding), and
/// what the library counted there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiSite {
    /// The site's index, by which transitions and events name it.
    pub index: u32,
    pub call: String,
    /// The return address in the rank.
    pub address: u64,
    /// The innermost function at the call (an inlined one where the call was inlined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub entered: u64,
    pub completed: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub found_nothing: u64,
    /// Time in its completed calls, and the longest of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_in_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub longest_ns: Option<u64>,
}

/// A call at site `from` followed, in the same thread, by one at site `to`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiTransition {
    /// `None`: the thread's first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<u32>,
    pub to: u32,
    pub count: u64,
    /// The computation between the first call's return and the second's entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<PmpiTimes>,
    /// The time in the first call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub within: Option<PmpiTimes>,
}

/// Times over a transition's occurrences.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiTimes {
    pub mean_ns: u64,
    /// The standard deviation.
    pub sd_ns: u64,
    pub max_ns: u64,
}

/// One completed call.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PmpiEvent {
    pub call: String,
    /// Its site; `None` when the site table was full.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub found_nothing: bool,
    /// As passed: a rank of the call's communicator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<PmpiPeer>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<i64>,
    /// How long before the read it returned, and how long it lasted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub returned_before_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
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
