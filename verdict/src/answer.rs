//! The verdict's answer: its kind, how sure, the ranks to debug and where they are, the
//! evidence, and the wait-for graph it stands on. [`crate::decide`] draws it.

use crate::graph::GraphFile;
use crate::mpi_call::Place;
use serde::Serialize;
use strata_filters::{RankSet, TaskSet};

/// What kind of answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    NoHangSeen,
    StuckOutsideMpi,
    DeadlockCycle,
    MessageNeverSent,
    CollectiveMismatch,
    LeastProgressed,
    Undecided,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NoHangSeen => "no_hang_seen",
            Kind::StuckOutsideMpi => "stuck_outside_mpi",
            Kind::DeadlockCycle => "deadlock_cycle",
            Kind::MessageNeverSent => "message_never_sent",
            Kind::CollectiveMismatch => "collective_mismatch",
            Kind::LeastProgressed => "least_progressed",
            Kind::Undecided => "undecided",
        }
    }
}

/// How sure: `proved` from exact data (the PMPI library's), `likely` from what every sample
/// showed, `guess` from a heuristic (communicators not known, samples missing).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    Guess,
    Likely,
    Proved,
}

/// Ranks the answer names, where they are.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Culprit {
    /// Rank list (`0,3-7`).
    pub ranks: String,
    /// The same ranks, as a set (for shortened lists on screen).
    #[serde(skip)]
    pub set: RankSet,
    /// What they do: `in MPI_Recv`, `outside MPI in spin_forever`, ...
    pub doing: String,
    /// Their MPI call site, or their innermost program frame outside MPI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<Place>,
}

/// The answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub kind: Kind,
    pub confidence: Confidence,
    /// Every rank named, as one rank list.
    pub ranks: String,
    /// The ranks to debug, by what they do.
    pub culprits: Vec<Culprit>,
    /// One sentence.
    pub summary: String,
    /// What it stands on, a sentence each.
    pub evidence: Vec<String>,
    /// For `undecided` (and guesses): what would decide it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_decide: Option<String>,
    /// The wait-for graph, when some call's peers or communicator were known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_for: Option<GraphFile>,
}

impl Culprit {
    /// `ranks`, doing `doing` at `at`.
    pub fn new(ranks: &RankSet, (doing, at): (String, Option<Place>)) -> Culprit {
        Culprit {
            ranks: strata_filters::taskset::format_set(ranks),
            set: ranks.clone(),
            doing,
            at,
        }
    }
}

impl Decision {
    /// An answer naming `culprits` (its `ranks` are theirs), without a graph yet.
    pub fn new(
        kind: Kind,
        confidence: Confidence,
        culprits: Vec<Culprit>,
        summary: String,
        evidence: Vec<String>,
        would_decide: Option<String>,
    ) -> Decision {
        let mut all = RankSet::new();
        for c in &culprits {
            all.union_with(&c.set);
        }
        Decision {
            kind,
            confidence,
            ranks: strata_filters::taskset::format_set(&all),
            culprits,
            summary,
            evidence,
            would_decide,
            wait_for: None,
        }
    }
}
