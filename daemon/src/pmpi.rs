//! A rank's state as strata's PMPI library publishes it (`libstrata_pmpi.so`, laid out by
//! [`strata_pmpi_layout`]), read from the rank's memory without stopping it.
//!
//! The library is found among the rank's mappings by its file name, the state by its
//! exported symbol; the copy is decoded, read again when the rank was writing it, and the
//! communicator's members followed where the state points to them, and the rank's history
//! (call sites, transitions, last calls) copied where the state says it is.

use crate::images::AddressSpace;
use crate::memory::MemoryReader;
use strata_pmpi_layout::history::{self as layout, Event, HistoryWords, Site, Transition};
use strata_pmpi_layout::{self as pmpi, CommWord, LayoutError, PmpiState, RequestState};

/// The library's file name starts so (`strata run` writes it under a versioned name).
pub const LIBRARY_PREFIX: &str = "libstrata_pmpi";

/// How often a torn copy is read again before giving up.
const TRIES: usize = 64;

/// What was read of one rank.
#[derive(Clone, Debug, PartialEq)]
pub struct PmpiRead {
    pub state: PmpiState,
    /// The call's communicator's members as world ranks (with [`CommWord::Members`]).
    pub members: Vec<u32>,
    /// In a completion call: the requests it was passed, each with the index in
    /// `communicators` of its communicator's members (with [`CommWord::Members`]).
    pub requests: Vec<(RequestState, Option<usize>)>,
    /// The members of the requests' communicators, each read once.
    pub communicators: Vec<Vec<u32>>,
    /// The rank's history; `None` before its first call, an error when it could not be
    /// read (the state was read all the same).
    pub history: Option<Result<History, String>>,
    /// Calls that made progress ([`PmpiState::progress`]) between the first sample and
    /// this read; `None` when the first sample could not read the state.
    pub progress_while_sampled: Option<u64>,
}

/// At most this many of the ring's last events are kept from a read.
pub const EVENTS_KEPT: usize = 32;

/// A rank's MPI history as read.
#[derive(Clone, Debug, PartialEq)]
pub struct History {
    pub sites: Vec<Site>,
    pub transitions: Vec<Transition>,
    /// The last [`EVENTS_KEPT`] calls completed, oldest first.
    pub events: Vec<Event>,
    /// Where each of `sites` is in the program (filled by the sampler, which symbolizes).
    pub places: Vec<Place>,
    pub words: HistoryWords,
    /// `CLOCK_MONOTONIC` nanoseconds when the state was read (the rank's clock readings
    /// are on the same clock: "in its call for 3.2 s").
    pub read_at_ns: u64,
}

/// A call site in the source: the innermost function there (inlined or not), its file and
/// line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Place {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl History {
    /// Seconds from the rank's time `ticks` to the read, if the clock can say.
    pub fn seconds_before_read(&self, ticks: u64) -> Option<f64> {
        let at = self.words.clock.monotonic_ns(ticks)?;
        Some(self.read_at_ns.saturating_sub(at) as f64 / 1e9)
    }

    /// Seconds since the rank's last transition when read: its entry into the call it is in
    /// (`in_call`), else its return from the last one. `None` before its first return or
    /// while the clock cannot say.
    pub fn idle_s(&self, in_call: bool) -> Option<f64> {
        let at = if in_call {
            self.words.entered_at
        } else {
            self.words.last_exit
        };
        (at != 0).then(|| self.seconds_before_read(at)).flatten()
    }

    /// The longest the rank went between two transitions, in seconds: a completed call at
    /// one of its sites, or the computation between two calls. `None` before any.
    pub fn longest_s(&self) -> Option<f64> {
        let in_calls = self.sites.iter().map(|s| s.ticks_max);
        let between = self
            .transitions
            .iter()
            .filter(|t| t.from != layout::START)
            .flat_map(|t| [t.between.max, t.within.max]);
        let ticks = in_calls.chain(between).max()?;
        Some(self.words.clock.duration_ns(ticks as f64)? / 1e9)
    }
}

/// The state of the rank whose executable mappings are `space`, read through `memory`;
/// `None` when the rank has not loaded the library, an error saying why it could not be
/// read otherwise (another layout version, an unreadable page).
pub fn read(space: &AddressSpace, memory: &dyn MemoryReader) -> Option<Result<PmpiRead, String>> {
    Some(read_from(library(space)?, memory))
}

/// The calls the rank has completed that made progress (not polls that found nothing), by
/// the library's state alone: how the sampler tells, from two readings, that a rank moved
/// while its stack looked the same. `None` without the library or when it cannot be read.
pub fn progress(space: &AddressSpace, memory: &dyn MemoryReader) -> Option<u64> {
    let address = state_address(library(space)?).ok()?;
    let mut bytes = [0u8; pmpi::BYTES];
    whole(|| {
        memory
            .read(address, &mut bytes)
            .map_err(|e| format!("reading the PMPI state: {e}"))?;
        match pmpi::decode(&bytes) {
            Ok(state) => Ok(Some(state.progress())),
            Err(LayoutError::Torn) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    })
    .ok()
}

/// The library among the rank's mappings, if it loaded it.
fn library(space: &AddressSpace) -> Option<&crate::images::MappedImage> {
    space
        .mappings
        .iter()
        .find(|m| m.short_name().starts_with(LIBRARY_PREFIX))
}

/// Where the library's state is in the rank.
fn state_address(m: &crate::images::MappedImage) -> Result<u64, String> {
    let image = m
        .image()
        .ok_or_else(|| format!("{}: {}", m.path, m.image.as_ref().err().unwrap()))?;
    let svma = image
        .data_symbol_address(pmpi::SYMBOL)
        .ok_or_else(|| format!("{} exports no {}", m.path, pmpi::SYMBOL))?;
    Ok(svma.wrapping_add(m.bias))
}

/// `once` until it reads a whole copy (`Some`), at most [`TRIES`] times.
fn whole<T>(mut once: impl FnMut() -> Result<Option<T>, String>) -> Result<T, String> {
    for attempt in 0..TRIES {
        match once()? {
            Some(copy) => return Ok(copy),
            // A rank preempted while writing stays odd for its time slice: after a few
            // quick tries, wait for it to run again.
            None if attempt < 8 => std::thread::yield_now(),
            None => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
    Err(LayoutError::Torn.to_string())
}

fn read_from(
    m: &crate::images::MappedImage,
    memory: &dyn MemoryReader,
) -> Result<PmpiRead, String> {
    let address = state_address(m)?;
    let (mut read, words) = whole(|| read_once(address, memory))?;
    read.history = (words.sites != 0).then(|| read_history(words, address, memory));
    Ok(read)
}

/// One copy of the state and what it points to, with its history words; `None` when the
/// rank was writing it.
fn read_once(
    address: u64,
    memory: &dyn MemoryReader,
) -> Result<Option<(PmpiRead, HistoryWords)>, String> {
    let mut bytes = [0u8; pmpi::BYTES];
    memory
        .read(address, &mut bytes)
        .map_err(|e| format!("reading the PMPI state: {e}"))?;
    let state = match pmpi::decode(&bytes) {
        Err(LayoutError::Torn) => return Ok(None),
        other => other.map_err(|e| e.to_string())?,
    };
    let mut requests = Vec::new();
    let mut communicators: Vec<Vec<u32>> = Vec::new();
    let mut read_at: Vec<(u64, u64)> = Vec::new();
    let mut raw = Vec::new();
    if let Some(r) = state.requests.filter(|r| r.published > 0) {
        raw = vec![0u8; r.published as usize * pmpi::REQUEST_WORDS * 8];
        memory
            .read(r.address, &mut raw)
            .map_err(|e| format!("reading the call's requests: {e}"))?;
    }
    // A copy is not taken at one instant: the words (and the request records, written
    // under the same sequence) are whole only if the sequence word did not change while
    // they were copied.
    let mut sequence = [0u8; 8];
    memory
        .read(address + pmpi::word::SEQUENCE as u64 * 8, &mut sequence)
        .map_err(|e| format!("reading the PMPI state: {e}"))?;
    if u64::from_le_bytes(sequence) != state.sequence {
        return Ok(None);
    }
    let call_members = match state.communicator {
        Some(c) => members(c, memory)?,
        None => Vec::new(),
    };
    if !raw.is_empty() {
        for request in pmpi::decode_requests(&raw).map_err(|e| e.to_string())? {
            let index = match request.communicator {
                Some(c @ CommWord::Members { size, address }) => {
                    Some(match read_at.iter().position(|&at| at == (size, address)) {
                        Some(i) => i,
                        None => {
                            communicators.push(members(c, memory)?);
                            read_at.push((size, address));
                            communicators.len() - 1
                        }
                    })
                }
                _ => None,
            };
            requests.push((request, index));
        }
    }
    let words = layout::decode_words(&bytes).map_err(|e| e.to_string())?;
    Ok(Some((
        PmpiRead {
            state,
            members: call_members,
            requests,
            communicators,
            history: None,
            progress_while_sampled: None,
        },
        words,
    )))
}

/// Copies the history the state's words point to (`state` is the state's address).
fn read_history(
    words: HistoryWords,
    state: u64,
    memory: &dyn MemoryReader,
) -> Result<History, String> {
    let read_at_ns = monotonic_ns();
    let copy = |what: &str, address: u64, bytes: usize| -> Result<Vec<u8>, String> {
        let mut raw = vec![0u8; bytes];
        memory
            .read(address, &mut raw)
            .map_err(|e| format!("reading the PMPI history's {what}: {e}"))?;
        Ok(raw)
    };
    let sites = copy(
        "sites",
        words.sites,
        layout::MAX_SITES * layout::SITE_WORDS * 8,
    )?;
    let transitions = copy(
        "transitions",
        words.transitions,
        layout::MAX_TRANSITIONS * layout::TRANSITION_WORDS * 8,
    )?;
    // Only the records of the events kept: a whole ring is 128 KiB, and a watch reads its
    // monitored ranks every few hundred milliseconds.
    let mut ring = vec![0u8; layout::MAX_EVENTS * layout::EVENT_WORDS * 8];
    for (at, len) in layout::event_ranges(words.events_written, EVENTS_KEPT) {
        let part = copy("events", words.events + at as u64, len)?;
        ring[at..at + len].copy_from_slice(&part);
    }
    let after = copy(
        "event count",
        state + pmpi::word::EVENTS_WRITTEN as u64 * 8,
        8,
    )?;
    let after = u64::from_le_bytes(after.try_into().expect("8 bytes"));
    let events = layout::decode_events(
        &ring,
        words.events_written,
        after.max(words.events_written),
        EVENTS_KEPT,
    )
    .map_err(|e| e.to_string())?;
    Ok(History {
        sites: layout::decode_sites(&sites).map_err(|e| e.to_string())?,
        transitions: layout::decode_transitions(&transitions).map_err(|e| e.to_string())?,
        events,
        places: Vec::new(),
        words,
        read_at_ns,
    })
}

fn monotonic_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        (t.tv_sec() as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(t.tv_nsec() as u64)
    })
}

/// The world ranks of a communicator's members, where the state points to them.
fn members(communicator: CommWord, memory: &dyn MemoryReader) -> Result<Vec<u32>, String> {
    let CommWord::Members { size, address } = communicator else {
        return Ok(Vec::new());
    };
    if size == 0 || size > pmpi::MAX_MEMBERS {
        return Err(format!("a communicator of {size} members"));
    }
    let mut raw = vec![0u8; size as usize * 4];
    memory
        .read(address, &mut raw)
        .map_err(|e| format!("reading the communicator's members: {e}"))?;
    Ok(raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}
