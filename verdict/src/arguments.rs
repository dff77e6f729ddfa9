//! What each rank's blocking MPI call was given: whom it waits for (the source of a
//! receive, the destination of a send, the root of a rooted collective) and on which
//! communicator. This is the input of the wait-for graph ([`crate::graph`]).
//!
//! Two producers fill it, and say which in [`Origin`]:
//! * [`crate::from_source`], best effort: the call's argument expressions read from the
//!   source line at the call site, their variables read by the daemons in the calling
//!   frame (exact at -O0; optimised code often has them `<optimized out>`).
//! * [`crate::from_library`]: the arguments as strata's PMPI library was called, exact,
//!   with the peers behind request handles and the members of derived communicators.
//!
//! A peer is a rank *of the call's communicator*. Only on the world communicator is that a
//! job rank; on any other, membership lives inside the MPI library and the peer's job rank
//! is unknown until a producer says it ([`Communicator::Members`]).

use crate::prose::rank_list;
use serde::Serialize;
use strata_filters::RankSet;

/// A peer argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Peer {
    /// A rank of the call's communicator.
    Rank(u32),
    /// `MPI_ANY_SOURCE`.
    Any,
    /// `MPI_PROC_NULL`: the call does not wait for anyone.
    ProcNull,
    /// Not known, and why (`src is <optimized out>`, `nbr[2] is not evaluated`).
    Unknown(String),
}

impl Peer {
    pub fn describe(&self) -> String {
        match self {
            Peer::Rank(r) => format!("rank {r}"),
            Peer::Any => "MPI_ANY_SOURCE".to_string(),
            Peer::ProcNull => "MPI_PROC_NULL".to_string(),
            Peer::Unknown(why) => format!("unknown ({why})"),
        }
    }
}

/// A communicator argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Communicator {
    /// `MPI_COMM_WORLD`: rank *n* of the communicator is job rank *n*.
    World,
    /// `MPI_COMM_SELF`.
    Itself,
    /// A communicator whose members a producer knows: rank *n* of the communicator is the
    /// *n*-th job rank of the list (the PMPI library gives this).
    Members(Vec<u32>),
    /// Another communicator, as read (`half = 0x55d0c0a2b3c0`): its members are not known.
    Other(String),
    /// Not known, and why.
    Unknown(String),
}

impl Communicator {
    /// The job rank of rank `n` of this communicator, when the communicator is known.
    pub fn job_rank(&self, n: u32, job_size: u32) -> Option<u32> {
        match self {
            Communicator::World => (n < job_size).then_some(n),
            Communicator::Members(members) => members.get(n as usize).copied(),
            _ => None,
        }
    }

    /// Its members as job ranks, when known.
    pub fn members(&self, rank: u32, job_size: u32) -> Option<RankSet> {
        match self {
            Communicator::World => Some((0..job_size).collect()),
            Communicator::Itself => Some(std::iter::once(rank).collect()),
            Communicator::Members(members) => Some(members.iter().copied().collect()),
            _ => None,
        }
    }

    /// Why its members are not known, when they are not.
    pub fn unknown_because(&self) -> Option<String> {
        match self {
            Communicator::Other(what) => Some(format!(
                "the members of communicator {what} are not known (the PMPI library knows them)"
            )),
            Communicator::Unknown(why) => Some(format!("the communicator is unknown ({why})")),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Communicator::World => "MPI_COMM_WORLD".to_string(),
            Communicator::Itself => "MPI_COMM_SELF".to_string(),
            Communicator::Members(m) => {
                let set: RankSet = m.iter().copied().collect();
                format!("a communicator of ranks [{}]", rank_list(&set))
            }
            Communicator::Other(what) => format!("communicator {what}"),
            Communicator::Unknown(why) => format!("an unknown communicator ({why})"),
        }
    }
}

/// Where the arguments came from: how far to trust them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The call's source line and the calling frame's variables, read by strata.
    SourceAndVariables,
    /// The MPI library's own record of the call (PMPI).
    MpiLibrary,
}

/// The arguments of one rank's MPI call that say whom it waits for. A field is `None` when
/// the call has no such argument.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallArguments {
    /// Whom a receive or probe receives from.
    pub source: Option<Peer>,
    /// Whom a send sends to.
    pub destination: Option<Peer>,
    /// The root of a rooted collective.
    pub root: Option<Peer>,
    pub communicator: Option<Communicator>,
    /// A completion call's requests (`MPI_Wait`, `MPI_Waitall`, `MPI_Test`, ...), which the
    /// PMPI library knows.
    pub requests: Option<Requests>,
    pub origin: Option<Origin>,
}

/// The requests a completion call was passed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Requests {
    /// The active ones, as recorded (in a waitall that lasted: those pending when the
    /// library last looked, some of which may have completed since).
    pub recorded: Vec<Request>,
    /// Active requests not recorded (past the library's cap).
    pub unrecorded: u64,
}

/// One request, as the call that started it was given it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// The call that started it (`MPI_Irecv`); `None` when the library did not see it
    /// started.
    pub started_by: Option<String>,
    /// The source of a receive, the destination of a send.
    pub peer: Peer,
    pub tag: Option<i64>,
    pub communicator: Communicator,
}

impl Request {
    /// Whether it is a receive (else a send, a collective, or not known).
    pub fn receives(&self) -> bool {
        matches!(
            self.started_by.as_deref(),
            Some("MPI_Irecv" | "MPI_Recv_init")
        )
    }

    /// Whether a nonblocking collective started it (`MPI_Ibarrier`).
    pub fn collective(&self) -> bool {
        self.started_by
            .as_deref()
            .and_then(strata_filters::mpi::call_named)
            .is_some_and(|c| c.kind == strata_filters::mpi::CallKind::Collective)
    }

    /// `a receive from rank 2 (tag 7)`, `an MPI_Ibarrier on MPI_COMM_WORLD`.
    pub fn describe(&self) -> String {
        let Some(call) = &self.started_by else {
            return "a request the PMPI library did not see started".to_string();
        };
        if self.collective() {
            let mut text = format!("an {call} on {}", self.communicator.describe());
            if let Peer::Rank(_) = self.peer {
                text.push_str(&format!(" with root {}", self.peer.describe()));
            }
            return text;
        }
        let (what, way) = if self.receives() {
            ("a receive", "from")
        } else {
            ("a send", "to")
        };
        let what = if call == "MPI_Issend" || call == "MPI_Ssend_init" {
            "a synchronous send"
        } else {
            what
        };
        let mut text = format!("{what} {way} {}", self.peer.describe());
        if !matches!(self.communicator, Communicator::World) {
            text.push_str(&format!(" of {}", self.communicator.describe()));
        }
        if let Some(tag) = self.tag {
            text.push_str(&format!(" (tag {tag})"));
        }
        text
    }
}

impl Requests {
    /// `a receive from rank 2 (tag 7)`, or for many, `12 requests: receives from [1-3],
    /// sends to [1-3]`.
    pub fn describe(&self) -> String {
        let mut text = if self.recorded.len() <= 3 {
            self.recorded
                .iter()
                .map(Request::describe)
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            let of = |receives: bool| {
                let set: RankSet = self
                    .recorded
                    .iter()
                    .filter(|r| r.receives() == receives)
                    .filter_map(|r| match r.peer {
                        Peer::Rank(n) => Some(n),
                        _ => None,
                    })
                    .collect();
                rank_list(&set)
            };
            format!(
                "{} requests: receives from ranks [{}], sends to ranks [{}] (ranks of their \
                 communicators)",
                self.recorded.len(),
                of(true),
                of(false)
            )
        };
        if self.unrecorded > 0 {
            text.push_str(&format!(" and {} not recorded", self.unrecorded));
        }
        text
    }
}

impl CallArguments {
    /// Whether any of its arguments is known.
    pub fn any_known(&self) -> bool {
        let peer = |p: &Option<Peer>| p.as_ref().is_some_and(|p| !matches!(p, Peer::Unknown(_)));
        peer(&self.source)
            || peer(&self.destination)
            || peer(&self.root)
            || self
                .communicator
                .as_ref()
                .is_some_and(|c| !matches!(c, Communicator::Unknown(_)))
            || self
                .requests
                .as_ref()
                .is_some_and(|r| !r.recorded.is_empty())
    }
}

/// Every rank's [`CallArguments`], indexed by job rank; `None` where nothing was read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Arguments {
    pub ranks: Vec<Option<CallArguments>>,
}

impl Arguments {
    pub fn of(&self, rank: u32) -> Option<&CallArguments> {
        self.ranks.get(rank as usize).and_then(Option::as_ref)
    }

    /// Whether no rank has any argument known (then the graph has nothing to stand on).
    pub fn is_empty(&self) -> bool {
        !self.ranks.iter().flatten().any(CallArguments::any_known)
    }
}
