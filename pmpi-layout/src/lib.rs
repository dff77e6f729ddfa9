//! The memory a rank's PMPI library (`libstrata_pmpi.so`, the `pmpi` crate) publishes for
//! the daemon: the MPI call the rank is in, with its arguments as passed, and counters.
//!
//! The library exports one symbol, [`SYMBOL`], an array of [`WORDS`] little-endian 64-bit
//! words that only the rank writes; a daemon reads it with `process_vm_readv` without
//! stopping the rank and decodes it with [`decode`]. The layout starts with [`MAGIC`] and a
//! [`VERSION`]: a reader that meets another version says so and goes on without it.
//!
//! Writes are published like a sequence lock: the rank makes the sequence word odd, writes
//! the call's words, and makes it even again. A copy taken while the sequence is odd is torn
//! ([`LayoutError::Torn`]): read again.
//!
//! In a completion call (`MPI_Wait`, `MPI_Waitall`, `MPI_Test`, ...) the state also points
//! to the requests the call completes, [`REQUEST_WORDS`] words each ([`request`]): what
//! started each (`MPI_Irecv`, `MPI_Isend`, ...), its peer, tag and communicator. They are
//! written under the same sequence: a reader copies them after the state, then reads the
//! sequence word again; a change means the copy is torn.
//!
//! The state also points to the rank's MPI history ([`history`], whose
//! [`history::decode_words`] reads those words): counters per call site,
//! the transitions between call sites with their times (a semi-Markov model of the rank, as
//! AutomaDeD builds one), and a ring of the last calls.

use std::fmt;

pub mod history;

/// The exported name of the state's words.
pub const SYMBOL: &str = "strata_pmpi_state";
/// `STRATApm`, little-endian.
pub const MAGIC: u64 = u64::from_le_bytes(*b"STRATApm");
/// The layout this strata writes and reads.
pub const VERSION: u64 = 3;
/// Words in the state.
pub const WORDS: usize = 32;
/// The state's size in bytes.
pub const BYTES: usize = WORDS * 8;
/// A peer or tag word that the call has none of (`MPI_Barrier` has no peer).
pub const NONE: u64 = i64::MIN as u64;

/// A peer word for `MPI_ANY_SOURCE` (whatever the library's own value).
pub const ANY_SOURCE: u64 = (i64::MIN + 1) as u64;
/// A peer word for `MPI_PROC_NULL`.
pub const PROC_NULL: u64 = (i64::MIN + 2) as u64;

/// Index of each word.
pub mod word {
    pub const MAGIC: usize = 0;
    pub const VERSION: usize = 1;
    /// Odd while the rank writes (see the module's doc).
    pub const SEQUENCE: usize = 2;
    /// The current call's index in [`super::CALLS`]; 0 outside MPI.
    pub const CALL: usize = 3;
    /// The peer (a rank of the call's communicator: the source of a receive, the
    /// destination of a send, the root of a rooted collective), [`super::ANY_SOURCE`],
    /// [`super::PROC_NULL`], or [`super::NONE`].
    pub const PEER: usize = 4;
    /// The tag as passed, or [`super::NONE`].
    pub const TAG: usize = 5;
    /// The communicator's handle as passed (a pointer in Open MPI, valid in that rank only;
    /// an `int` in MPICH and Intel MPI), or 0.
    pub const COMM: usize = 6;
    /// MPI calls entered since the library loaded.
    pub const ENTERED: usize = 7;
    /// MPI calls completed since the library loaded.
    pub const COMPLETED: usize = 8;
    /// What the communicator is, one of [`super::comm`].
    pub const COMM_KIND: usize = 9;
    /// The communicator's size (with [`super::comm::MEMBERS`]).
    pub const COMM_SIZE: usize = 10;
    /// With [`super::comm::MEMBERS`]: the address, in the rank, of `COMM_SIZE` 32-bit
    /// world ranks, rank *n* of the communicator first at *n*. The array stays while the
    /// communicator exists.
    pub const COMM_MEMBERS: usize = 11;
    /// The rank's own rank in `MPI_COMM_WORLD`, or [`super::NONE`] before it is known.
    pub const WORLD_RANK: usize = 12;
    /// 1 when the library stopped recording after an internal error (it forwards every
    /// call all the same): the other words are not to be trusted.
    pub const STOPPED: usize = 13;
    /// In a completion call: how many request records [`REQUEST_RECORDS`] holds.
    pub const REQUESTS: usize = 14;
    /// The address, in the rank, of [`REQUESTS`] records of [`super::REQUEST_WORDS`]
    /// words each (see [`super::request`]).
    pub const REQUEST_RECORDS: usize = 15;
    /// In a completion call: how many of the requests passed are active, that is, not
    /// `MPI_REQUEST_NULL`. More than [`REQUESTS`] when there were more than
    /// [`super::MAX_REQUESTS`]; fewer in a long `MPI_Waitall`, whose records are the
    /// requests still pending when the library last looked (see [`super::request`]).
    pub const REQUESTS_ACTIVE: usize = 16;
    /// 1 when the program was given `MPI_THREAD_MULTIPLE`: several of its threads may be
    /// in MPI at once, and the call's words are the last one's to enter.
    pub const THREAD_MULTIPLE: usize = 17;
    /// Calls of `MPI_Iprobe` and of the `MPI_Test` calls that found nothing (a polling
    /// loop's calls): `COMPLETED - FOUND_NOTHING` grows only when the rank gets somewhere.
    pub const FOUND_NOTHING: usize = 18;
    /// The address of [`super::history::MAX_SITES`] site records (0 before the first call).
    pub const SITES: usize = 19;
    /// The address of [`super::history::MAX_TRANSITIONS`] transition records.
    pub const TRANSITIONS: usize = 20;
    /// The address of the ring of [`super::history::MAX_EVENTS`] event records.
    pub const EVENTS: usize = 21;
    /// Events written since the library loaded; the ring holds the last
    /// [`super::history::MAX_EVENTS`], event *n* at *n* modulo that.
    pub const EVENTS_WRITTEN: usize = 22;
    /// Calls whose site found no room in the site table (it was full).
    pub const SITES_LOST: usize = 23;
    /// Transitions that found no room in the transition table, or between lost sites.
    pub const TRANSITIONS_LOST: usize = 24;
    /// The clock of every time in the history, one of [`super::history::clock`].
    pub const CLOCK: usize = 25;
    /// Two readings of the clock, each in its ticks and in `CLOCK_MONOTONIC` nanoseconds
    /// (see [`super::history::Clock`]): at the first call, and the latest refresh.
    pub const CLOCK_TICKS_0: usize = 26;
    pub const CLOCK_NS_0: usize = 27;
    pub const CLOCK_TICKS_1: usize = 28;
    pub const CLOCK_NS_1: usize = 29;
    /// In a call: when the rank entered it, in clock ticks.
    pub const ENTERED_AT: usize = 30;
    /// When the rank's last call completed, in clock ticks (0 before).
    pub const LAST_EXIT: usize = 31;
}

/// Words per request record.
pub const REQUEST_WORDS: usize = 6;
/// At most this many request records are published for one call.
pub const MAX_REQUESTS: u64 = 1024;

/// Index of each word of a request record. A `MPI_Waitall` that does not return at once
/// publishes the requests still pending when it last looked (it looks again 1, 2, 4 ... up
/// to every 64 ms): a request can have completed since, so a reader must take a waitall's
/// records as "at least one of these", never as "all of these".
pub mod request {
    /// The call that started the request, an index in [`super::CALLS`] (`MPI_Irecv`,
    /// `MPI_Isend`, ...); 0 when the library did not see it started (by a call it does not
    /// wrap, or when it was tracking [`super::MAX_TRACKED`] requests already).
    pub const CALL: usize = 0;
    /// The peer as [`super::word::PEER`] says it.
    pub const PEER: usize = 1;
    pub const TAG: usize = 2;
    /// The communicator, as [`super::word::COMM_KIND`], [`super::word::COMM_SIZE`] and
    /// [`super::word::COMM_MEMBERS`] say it.
    pub const COMM_KIND: usize = 3;
    pub const COMM_SIZE: usize = 4;
    pub const COMM_MEMBERS: usize = 5;
}

/// At most this many requests are tracked at once in a rank (started and not yet
/// completed); a request started beyond it is published as not seen started.
pub const MAX_TRACKED: u64 = 3072;

/// The values of [`word::COMM_KIND`].
pub mod comm {
    /// The call has no communicator, or the rank is outside MPI.
    pub const NONE: u64 = 0;
    pub const WORLD: u64 = 1;
    pub const SELF: u64 = 2;
    /// Another communicator whose members the library translated to world ranks.
    pub const MEMBERS: u64 = 3;
    /// Another communicator whose members are not known (an intercommunicator, or the
    /// library could not ask).
    pub const UNKNOWN: u64 = 4;
}

/// At most this many members are read from a rank (a bound on what a rank's memory can
/// make a daemon allocate).
pub const MAX_MEMBERS: u64 = 1 << 24;

/// The calls the library wraps, by index (index 0: none).
pub const CALLS: &[&str] = &[
    "",
    "MPI_Send",
    "MPI_Ssend",
    "MPI_Recv",
    "MPI_Wait",
    "MPI_Waitall",
    "MPI_Barrier",
    "MPI_Bcast",
    "MPI_Reduce",
    "MPI_Allreduce",
    "MPI_Finalize",
    "MPI_Comm_free",
    "MPI_Iprobe",
    "MPI_Isend",
    "MPI_Issend",
    "MPI_Ibsend",
    "MPI_Irsend",
    "MPI_Irecv",
    "MPI_Waitany",
    "MPI_Waitsome",
    "MPI_Test",
    "MPI_Testall",
    "MPI_Testany",
    "MPI_Testsome",
    "MPI_Request_free",
    "MPI_Send_init",
    "MPI_Ssend_init",
    "MPI_Bsend_init",
    "MPI_Rsend_init",
    "MPI_Recv_init",
    "MPI_Start",
    "MPI_Startall",
    "MPI_Ibarrier",
    "MPI_Ibcast",
    "MPI_Ireduce",
    "MPI_Iallreduce",
];

/// Whether the call of index `index` completes requests (its record points to them).
pub const fn completes_requests(index: u64) -> bool {
    if index as usize >= CALLS.len() {
        return false;
    }
    let name = CALLS[index as usize].as_bytes();
    starts_with(name, b"MPI_Wait") || starts_with(name, b"MPI_Test")
}

/// Whether the call of index `index` returns at once whatever other ranks do: a start
/// (`MPI_Isend`, `MPI_Ibarrier`, `MPI_Start`), a persistent request's making
/// (`MPI_Send_init`), a poll (`MPI_Iprobe`, the `MPI_Test` calls), `MPI_Request_free`. The
/// library reads the clock once for such a call (see [`history`]).
pub const fn returns_at_once(index: u64) -> bool {
    if index as usize >= CALLS.len() {
        return false;
    }
    let name = CALLS[index as usize].as_bytes();
    (starts_with(name, b"MPI_I") && !starts_with(name, b"MPI_Init"))
        || starts_with(name, b"MPI_Test")
        || starts_with(name, b"MPI_Request_free")
        || starts_with(name, b"MPI_Start")
        || ends_with(name, b"_init")
}

const fn ends_with(a: &[u8], suffix: &[u8]) -> bool {
    if a.len() < suffix.len() {
        return false;
    }
    let mut i = 0;
    while i < suffix.len() {
        if a[a.len() - suffix.len() + i] != suffix[i] {
            return false;
        }
        i += 1;
    }
    true
}

const fn starts_with(a: &[u8], prefix: &[u8]) -> bool {
    if a.len() < prefix.len() {
        return false;
    }
    let mut i = 0;
    while i < prefix.len() {
        if a[i] != prefix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The index of `name` in [`CALLS`].
/// A `const fn`, so that a wrapper's index is computed once, by the compiler.
pub const fn call_index(name: &str) -> Option<u64> {
    let mut i = 0;
    while i < CALLS.len() {
        if same(CALLS[i].as_bytes(), name.as_bytes()) {
            return Some(i as u64);
        }
        i += 1;
    }
    None
}

const fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A peer as the library recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeerWord {
    Rank(i64),
    AnySource,
    ProcNull,
}

/// A communicator as the library recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommWord {
    World,
    Itself,
    /// `size` members, whose world ranks lie at `address` in the rank.
    Members {
        size: u64,
        address: u64,
    },
    Unknown,
}

/// A rank's state, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmpiState {
    /// The MPI call the rank is in, by its C name; `None` outside MPI.
    pub call: Option<&'static str>,
    pub peer: Option<PeerWord>,
    pub tag: Option<i64>,
    /// The communicator's handle as passed (0 when the call has none or outside MPI).
    pub comm: u64,
    pub communicator: Option<CommWord>,
    pub entered: u64,
    pub completed: u64,
    pub world_rank: Option<i64>,
    /// In a completion call: where its requests' records are.
    pub requests: Option<RequestsWord>,
    /// The sequence word of the copy (a reader of the request records compares it with the
    /// word read again after them).
    pub sequence: u64,
    /// The program was given `MPI_THREAD_MULTIPLE` ([`word::THREAD_MULTIPLE`]).
    pub thread_multiple: bool,
    /// Calls that found nothing ([`word::FOUND_NOTHING`]).
    pub found_nothing: u64,
}

impl PmpiState {
    /// MPI calls that got somewhere since the library loaded: completed calls, less the
    /// polls that found nothing. A rank waiting in a polling loop does not add to it.
    pub fn progress(&self) -> u64 {
        self.completed.wrapping_sub(self.found_nothing)
    }
}

/// Where a completion call's request records are, and how many requests it was passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestsWord {
    /// Records published at `address`.
    pub published: u64,
    pub address: u64,
    /// Active requests passed (see [`word::REQUESTS_ACTIVE`]).
    pub active: u64,
}

/// One request a completion call was passed, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestState {
    /// The C name of the call that started it; `None` when the library did not see it.
    pub started_by: Option<&'static str>,
    pub peer: Option<PeerWord>,
    pub tag: Option<i64>,
    pub communicator: Option<CommWord>,
}

/// Why a copy of the state could not be decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LayoutError {
    Short(usize),
    NoMagic(u64),
    OtherVersion(u64),
    Torn,
    UnknownCall(u64),
    Stopped,
    /// More request records than a reader takes.
    TooManyRequests(u64),
}

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayoutError::Short(n) => write!(f, "{n} bytes is no strata PMPI state ({BYTES} bytes)"),
            LayoutError::NoMagic(m) => write!(f, "no strata PMPI state (magic {m:#x})"),
            LayoutError::OtherVersion(v) => write!(
                f,
                "strata PMPI layout version {v}, this strata reads version {VERSION}: \
                 preload the library this strata writes out (`strata run`)"
            ),
            LayoutError::Torn => write!(f, "the rank was writing its state: read again"),
            LayoutError::UnknownCall(i) => write!(f, "unknown MPI call index {i}"),
            LayoutError::Stopped => write!(
                f,
                "the PMPI library stopped recording after an internal error (the rank's \
                 error output says which)"
            ),
            LayoutError::TooManyRequests(n) => write!(
                f,
                "{n} request records, more than the {MAX_REQUESTS} the library publishes"
            ),
        }
    }
}

impl std::error::Error for LayoutError {}

/// Decodes a copy of the state's [`BYTES`] bytes.
pub fn decode(bytes: &[u8]) -> Result<PmpiState, LayoutError> {
    if bytes.len() < BYTES {
        return Err(LayoutError::Short(bytes.len()));
    }
    let w = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
        u64::from_le_bytes(b)
    };
    if w(word::MAGIC) != MAGIC {
        return Err(LayoutError::NoMagic(w(word::MAGIC)));
    }
    if w(word::VERSION) != VERSION {
        return Err(LayoutError::OtherVersion(w(word::VERSION)));
    }
    if w(word::STOPPED) != 0 {
        return Err(LayoutError::Stopped);
    }
    if w(word::SEQUENCE) % 2 == 1 {
        return Err(LayoutError::Torn);
    }
    let index = w(word::CALL);
    let call = match usize::try_from(index).ok().and_then(|i| CALLS.get(i)) {
        Some(&"") => None,
        Some(name) => Some(*name),
        None => return Err(LayoutError::UnknownCall(index)),
    };
    let in_call = call.is_some();
    let requests = (in_call && completes_requests(index)).then(|| RequestsWord {
        published: w(word::REQUESTS),
        address: w(word::REQUEST_RECORDS),
        active: w(word::REQUESTS_ACTIVE),
    });
    if let Some(r) = requests
        && r.published > MAX_REQUESTS
    {
        return Err(LayoutError::TooManyRequests(r.published));
    }
    Ok(PmpiState {
        call,
        peer: if in_call {
            peer_word(w(word::PEER))
        } else {
            None
        },
        tag: if in_call {
            tag_word(w(word::TAG))
        } else {
            None
        },
        comm: if in_call { w(word::COMM) } else { 0 },
        communicator: if in_call {
            comm_word(
                w(word::COMM_KIND),
                w(word::COMM_SIZE),
                w(word::COMM_MEMBERS),
            )
        } else {
            None
        },
        entered: w(word::ENTERED),
        completed: w(word::COMPLETED),
        world_rank: (w(word::WORLD_RANK) != NONE).then_some(w(word::WORLD_RANK) as i64),
        requests,
        sequence: w(word::SEQUENCE),
        thread_multiple: w(word::THREAD_MULTIPLE) == 1,
        found_nothing: w(word::FOUND_NOTHING),
    })
}

/// Decodes a copy of `requests.published` request records (whole: `REQUEST_WORDS * 8`
/// bytes each).
pub fn decode_requests(bytes: &[u8]) -> Result<Vec<RequestState>, LayoutError> {
    bytes
        .chunks(REQUEST_WORDS * 8)
        .map(|record| {
            if record.len() < REQUEST_WORDS * 8 {
                return Err(LayoutError::Short(record.len()));
            }
            let w = |i: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&record[i * 8..i * 8 + 8]);
                u64::from_le_bytes(b)
            };
            let index = w(request::CALL);
            let started_by = match usize::try_from(index).ok().and_then(|i| CALLS.get(i)) {
                Some(&"") => None,
                Some(name) => Some(*name),
                None => return Err(LayoutError::UnknownCall(index)),
            };
            Ok(RequestState {
                started_by,
                peer: peer_word(w(request::PEER)),
                tag: tag_word(w(request::TAG)),
                communicator: comm_word(
                    w(request::COMM_KIND),
                    w(request::COMM_SIZE),
                    w(request::COMM_MEMBERS),
                ),
            })
        })
        .collect()
}

pub(crate) fn peer_word(v: u64) -> Option<PeerWord> {
    match v {
        NONE => None,
        ANY_SOURCE => Some(PeerWord::AnySource),
        PROC_NULL => Some(PeerWord::ProcNull),
        v => Some(PeerWord::Rank(v as i64)),
    }
}

pub(crate) fn tag_word(v: u64) -> Option<i64> {
    (v != NONE).then_some(v as i64)
}

fn comm_word(kind: u64, size: u64, members: u64) -> Option<CommWord> {
    match kind {
        comm::NONE => None,
        comm::WORLD => Some(CommWord::World),
        comm::SELF => Some(CommWord::Itself),
        comm::MEMBERS => Some(CommWord::Members {
            size,
            address: members,
        }),
        _ => Some(CommWord::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(words: &[(usize, u64)]) -> Vec<u8> {
        let mut all = [0u64; WORDS];
        all[word::MAGIC] = MAGIC;
        all[word::VERSION] = VERSION;
        for &(i, v) in words {
            all[i] = v;
        }
        all.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn a_rank_in_a_receive() {
        let recv = call_index("MPI_Recv").unwrap();
        let state = decode(&bytes(&[
            (word::SEQUENCE, 4),
            (word::CALL, recv),
            (word::PEER, 3),
            (word::TAG, (-1i64) as u64),
            (word::COMM, 0x4400_0000),
            (word::COMM_KIND, comm::MEMBERS),
            (word::COMM_SIZE, 2),
            (word::COMM_MEMBERS, 0x7000),
            (word::WORLD_RANK, 1),
            (word::ENTERED, 7),
            (word::COMPLETED, 6),
        ]))
        .unwrap();
        assert_eq!(state.call, Some("MPI_Recv"));
        assert_eq!((state.peer, state.tag), (Some(PeerWord::Rank(3)), Some(-1)));
        assert_eq!(state.comm, 0x4400_0000);
        assert_eq!(
            state.communicator,
            Some(CommWord::Members {
                size: 2,
                address: 0x7000
            })
        );
        assert_eq!(state.world_rank, Some(1));
        assert_eq!((state.entered, state.completed), (7, 6));
        assert!(!state.thread_multiple);
        let polling = decode(&bytes(&[
            (word::COMPLETED, 40),
            (word::FOUND_NOTHING, 38),
            (word::THREAD_MULTIPLE, 1),
        ]))
        .unwrap();
        assert_eq!(polling.progress(), 2);
        assert!(polling.thread_multiple);
    }

    #[test]
    fn outside_mpi_no_call_nor_arguments() {
        let state = decode(&bytes(&[
            (word::PEER, 5),
            (word::COMM_KIND, comm::WORLD),
            (word::WORLD_RANK, NONE),
            (word::ENTERED, 2),
        ]))
        .unwrap();
        assert_eq!(state.call, None);
        assert_eq!((state.peer, state.tag, state.comm), (None, None, 0));
        assert_eq!((state.communicator, state.world_rank), (None, None));
        let barrier = call_index("MPI_Barrier").unwrap();
        let state = decode(&bytes(&[
            (word::CALL, barrier),
            (word::PEER, NONE),
            (word::COMM_KIND, comm::WORLD),
        ]))
        .unwrap();
        assert_eq!((state.call, state.peer), (Some("MPI_Barrier"), None));
        assert_eq!(state.communicator, Some(CommWord::World));
        let recv = call_index("MPI_Recv").unwrap();
        for (word_value, peer) in [
            (ANY_SOURCE, PeerWord::AnySource),
            (PROC_NULL, PeerWord::ProcNull),
        ] {
            let state = decode(&bytes(&[(word::CALL, recv), (word::PEER, word_value)])).unwrap();
            assert_eq!(state.peer, Some(peer));
        }
    }

    #[test]
    fn a_rank_in_a_waitall_points_to_its_requests() {
        let waitall = call_index("MPI_Waitall").unwrap();
        let state = decode(&bytes(&[
            (word::SEQUENCE, 6),
            (word::CALL, waitall),
            (word::REQUESTS, 2),
            (word::REQUEST_RECORDS, 0x9000),
            (word::REQUESTS_ACTIVE, 3),
        ]))
        .unwrap();
        assert_eq!(
            state.requests,
            Some(RequestsWord {
                published: 2,
                address: 0x9000,
                active: 3
            })
        );
        assert_eq!(state.sequence, 6);
        let record = |call: u64, peer: u64, tag: u64, kind: u64| {
            let mut words = [0u64; REQUEST_WORDS];
            words[request::CALL] = call;
            words[request::PEER] = peer;
            words[request::TAG] = tag;
            words[request::COMM_KIND] = kind;
            words
        };
        let records: Vec<u8> = [
            record(call_index("MPI_Irecv").unwrap(), 2, 7, comm::WORLD),
            record(0, NONE, NONE, comm::NONE),
        ]
        .iter()
        .flatten()
        .flat_map(|w| w.to_le_bytes())
        .collect();
        let requests = decode_requests(&records).unwrap();
        assert_eq!(
            requests[0],
            RequestState {
                started_by: Some("MPI_Irecv"),
                peer: Some(PeerWord::Rank(2)),
                tag: Some(7),
                communicator: Some(CommWord::World),
            }
        );
        assert_eq!(requests[1].started_by, None, "not seen started");
        // Outside a completion call there are no requests, whatever the words hold.
        let recv = call_index("MPI_Recv").unwrap();
        let state = decode(&bytes(&[(word::CALL, recv), (word::REQUESTS, 2)])).unwrap();
        assert_eq!(state.requests, None);
        assert!(matches!(
            decode(&bytes(&[
                (word::CALL, waitall),
                (word::REQUESTS, MAX_REQUESTS + 1)
            ])),
            Err(LayoutError::TooManyRequests(_))
        ));
    }

    #[test]
    fn what_is_refused() {
        assert_eq!(decode(&[0; 8]), Err(LayoutError::Short(8)));
        let mut other = bytes(&[]);
        other[0] ^= 1;
        assert!(matches!(decode(&other), Err(LayoutError::NoMagic(_))));
        assert_eq!(
            decode(&bytes(&[(word::VERSION, 1)])),
            Err(LayoutError::OtherVersion(1))
        );
        assert_eq!(
            decode(&bytes(&[(word::SEQUENCE, 3)])),
            Err(LayoutError::Torn)
        );
        assert_eq!(
            decode(&bytes(&[(word::CALL, 999)])),
            Err(LayoutError::UnknownCall(999))
        );
    }
}
