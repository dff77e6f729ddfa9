//! The rank's MPI history (laid out as `strata_pmpi_layout::history` says): a record per
//! call site, a record per transition between two sites of one thread, and a ring of the
//! last calls, each bounded; and the clock their times are read from.
//!
//! Every outermost wrapped call is noted twice: at its entry (`entered`: its site's
//! record, and the transition from the thread's previous call) and at its return
//! (`returned`: its site's counts and times, the ring). The tables are open-addressed
//! and never shrink: a record is claimed once (a compare-and-swap, the only locked
//! instruction, taken once per site or transition), and its words are then loads and
//! stores, as the state's counters are (see `State::add`).

use crate::state::strata_pmpi_state;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, fence};
use strata_pmpi_layout::history::{
    self as layout, EVENT_WORDS, MAX_EVENTS, MAX_SITES, MAX_TRANSITIONS, NO_SITE, SITE_WORDS,
    START, TRANSITION_WORDS, clock, event, site, transition,
};
use strata_pmpi_layout::{CALLS, word};

/// Words on cache lines of their own, zero until written (they live in `.bss`: a page
/// costs memory only once written).
#[repr(C, align(64))]
struct Words<const N: usize>([AtomicU64; N]);

impl<const N: usize> Words<N> {
    const fn new() -> Self {
        Words([const { AtomicU64::new(0) }; N])
    }

    fn at(&self, i: usize) -> &AtomicU64 {
        &self.0[i]
    }

    fn address(&self) -> u64 {
        self.0.as_ptr() as u64
    }
}

static SITES: Words<{ MAX_SITES * SITE_WORDS }> = Words::new();
static TRANSITIONS: Words<{ MAX_TRANSITIONS * TRANSITION_WORDS }> = Words::new();
static EVENTS: Words<{ MAX_EVENTS * EVENT_WORDS }> = Words::new();

/// A record is looked for this far from its hash's place: past it, it is lost (counted),
/// so that a full table costs a bounded search, not a scan.
const PROBES: usize = 32;

/// The previous call of this thread, the source of its next transition.
#[derive(Clone, Copy)]
pub(crate) struct Previous {
    site: u16,
    entered: u64,
    returned: u64,
}

impl Previous {
    #[cfg(test)]
    const START: Previous = Previous {
        site: START,
        entered: 0,
        returned: 0,
    };
}

/// What [`entered`] noted, for [`returned`].
#[derive(Clone, Copy)]
pub(crate) struct Entry {
    pub site: u16,
    pub at: u64,
}

/// Notes the entry of call `index` from the return address `address`, after the thread's
/// `previous` call.
pub(crate) fn entered(index: u64, address: u64, previous: Previous) -> Entry {
    start_once();
    let at = now();
    let site = site_record(address, index);
    if site != NO_SITE {
        add(SITES.at(site_word(site, site::ENTERED)), 1);
    }
    transit(previous, site, at);
    Entry { site, at }
}

/// Notes the return of the call `index` entered as `entry`, and returns it as the thread's
/// previous call. `peer_tag` is the event's [`event::PEER_TAG`] word. A call that returns
/// at once ([`returns_at_once`]) is not timed again: its return is its entry (a read of the
/// clock is most of what noting a call costs), and the computation after it is counted
/// from its entry.
pub(crate) fn returned(index: u64, entry: Entry, found_nothing: bool, peer_tag: u64) -> Previous {
    let at = if returns_at_once(index) {
        entry.at
    } else {
        now()
    };
    let spent = at.wrapping_sub(entry.at);
    if entry.site != NO_SITE {
        let s = entry.site;
        add(SITES.at(site_word(s, site::COMPLETED)), 1);
        if found_nothing {
            add(SITES.at(site_word(s, site::FOUND_NOTHING)), 1);
        }
        add(SITES.at(site_word(s, site::TICKS_IN)), spent);
        longest(SITES.at(site_word(s, site::TICKS_MAX)), spent);
    }
    let number = strata_pmpi_state.get(word::EVENTS_WRITTEN);
    let slot = (number % MAX_EVENTS as u64) as usize * EVENT_WORDS;
    let what = index | u64::from(entry.site) << 16 | u64::from(found_nothing) << 32;
    EVENTS.at(slot + event::WHAT).store(what, Ordering::Relaxed);
    EVENTS
        .at(slot + event::PEER_TAG)
        .store(peer_tag, Ordering::Relaxed);
    EVENTS
        .at(slot + event::ENTERED)
        .store(entry.at, Ordering::Relaxed);
    EVENTS.at(slot + event::EXITED).store(at, Ordering::Relaxed);
    // The record before the count that says it is there (a reader trusts the records
    // below the count it read first).
    fence(Ordering::Release);
    strata_pmpi_state.set(word::EVENTS_WRITTEN, number.wrapping_add(1));
    strata_pmpi_state.set(word::LAST_EXIT, at);
    refresh_clock(at);
    Previous {
        site: entry.site,
        entered: entry.at,
        returned: at,
    }
}

/// [`strata_pmpi_layout::returns_at_once`] of each call, computed by the compiler (the
/// wrappers ask on every call).
fn returns_at_once(index: u64) -> bool {
    const AT_ONCE: [bool; CALLS.len()] = {
        let mut at_once = [false; CALLS.len()];
        let mut i = 0;
        while i < CALLS.len() {
            at_once[i] = strata_pmpi_layout::returns_at_once(i as u64);
            i += 1;
        }
        at_once
    };
    AT_ONCE.get(index as usize).copied().unwrap_or(false)
}

/// The event word of a peer and a tag, as the state's words say them.
pub(crate) fn peer_tag(peer: u64, tag: u64) -> u64 {
    u64::from(layout::word_32(peer) as u32) | u64::from(layout::word_32(tag) as u32) << 32
}

fn site_word(site: u16, w: usize) -> usize {
    usize::from(site) * SITE_WORDS + w
}

/// The index of the record of the site at `address` for call `index`, claimed if new.
fn site_record(address: u64, index: u64) -> u16 {
    let key = (address & ((1 << 48) - 1)) | index << 48;
    match claim(&SITES, SITE_WORDS, MAX_SITES, key) {
        Some(i) => i as u16,
        None => {
            strata_pmpi_state.add(word::SITES_LOST, 1);
            NO_SITE
        }
    }
}

/// Counts the transition from the thread's previous call to the site `to` entered at `at`.
fn transit(previous: Previous, to: u16, at: u64) {
    if previous.site == NO_SITE || to == NO_SITE {
        strata_pmpi_state.add(word::TRANSITIONS_LOST, 1);
        return;
    }
    let key = u64::from(previous.site) | u64::from(to) << 16 | 1 << 32;
    let Some(i) = claim(&TRANSITIONS, TRANSITION_WORDS, MAX_TRANSITIONS, key) else {
        strata_pmpi_state.add(word::TRANSITIONS_LOST, 1);
        return;
    };
    let w = |field| TRANSITIONS.at(i * TRANSITION_WORDS + field);
    add(w(transition::COUNT), 1);
    // A thread's first call has no previous one to time.
    if previous.site != START {
        let between = at.wrapping_sub(previous.returned);
        let within = previous.returned.wrapping_sub(previous.entered);
        add(w(transition::BETWEEN_SUM), between);
        add_square(w(transition::BETWEEN_SQUARES), between);
        longest(w(transition::BETWEEN_MAX), between);
        add(w(transition::IN_SUM), within);
        add_square(w(transition::IN_SQUARES), within);
        longest(w(transition::IN_MAX), within);
    }
}

/// The record of `key` in `table` (`records` records of `words` words, the key first),
/// claimed when it is not there; `None` when it is neither there nor free within
/// [`PROBES`] records of its place.
fn claim<const N: usize>(
    table: &Words<N>,
    words: usize,
    records: usize,
    key: u64,
) -> Option<usize> {
    let bits = records.trailing_zeros();
    let mut i = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize;
    for _ in 0..PROBES {
        let slot = table.at(i * words);
        match slot.load(Ordering::Relaxed) {
            k if k == key => return Some(i),
            0 => match slot.compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(i),
                Err(k) if k == key => return Some(i),
                Err(_) => {}
            },
            _ => {}
        }
        i = (i + 1) & (records - 1);
    }
    None
}

fn add(w: &AtomicU64, v: u64) {
    w.store(w.load(Ordering::Relaxed).wrapping_add(v), Ordering::Relaxed);
}

fn add_square(w: &AtomicU64, v: u64) {
    let x = v as f64;
    let sum = f64::from_bits(w.load(Ordering::Relaxed)) + x * x;
    w.store(sum.to_bits(), Ordering::Relaxed);
}

fn longest(w: &AtomicU64, v: u64) {
    if v > w.load(Ordering::Relaxed) {
        w.store(v, Ordering::Relaxed);
    }
}

// The clock.

/// Whether the history's ticks are the time-stamp counter's (decided once).
static TSC: AtomicBool = AtomicBool::new(false);
static STARTED: AtomicBool = AtomicBool::new(false);
/// The ticks of the clock's latest refresh.
static REFRESHED: AtomicU64 = AtomicU64::new(0);
/// About 20 ms of a time-stamp counter between two refreshes of its second reading.
const REFRESH_TICKS: u64 = 1 << 26;

/// The clock's time in ticks.
pub(crate) fn now() -> u64 {
    if TSC.load(Ordering::Relaxed) {
        // SAFETY: reads the time-stamp counter; x86-64 has it.
        unsafe { core::arch::x86_64::_rdtsc() }
    } else {
        monotonic_ns()
    }
}

#[repr(C)]
struct Timespec {
    seconds: i64,
    nanoseconds: i64,
}

unsafe extern "C" {
    /// libc's, through the vDSO.
    fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
}

const CLOCK_MONOTONIC: i32 = 1;

fn monotonic_ns() -> u64 {
    let mut t = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: a valid clock and a pointer to our own timespec.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut t) };
    (t.seconds as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(t.nanoseconds as u64)
}

/// At the first call: chooses the clock, takes its first reading, and publishes where the
/// history is. The time-stamp counter only where the kernel keeps time by it (then it is
/// invariant and the same on every core); `CLOCK_MONOTONIC` elsewhere (a virtual machine
/// whose clock source is the hypervisor's).
fn start_once() {
    if STARTED.load(Ordering::Relaxed) || STARTED.swap(true, Ordering::Relaxed) {
        return;
    }
    let tsc =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc");
    TSC.store(tsc, Ordering::Relaxed);
    let (ticks, ns) = reading();
    REFRESHED.store(ticks, Ordering::Relaxed);
    strata_pmpi_state.publish(|s| {
        s.set(word::SITES, SITES.address());
        s.set(word::TRANSITIONS, TRANSITIONS.address());
        s.set(word::EVENTS, EVENTS.address());
        s.set(word::CLOCK, if tsc { clock::TSC } else { clock::MONOTONIC });
        for (t, n) in [
            (word::CLOCK_TICKS_0, word::CLOCK_NS_0),
            (word::CLOCK_TICKS_1, word::CLOCK_NS_1),
        ] {
            s.set(t, ticks);
            s.set(n, ns);
        }
    });
}

/// The clock in ticks and in `CLOCK_MONOTONIC` nanoseconds, read together.
fn reading() -> (u64, u64) {
    let ns = monotonic_ns();
    (now(), ns)
}

/// Takes the clock's second reading again when the last is about 20 ms old: a reader
/// converts ticks to nanoseconds by the two readings' rate.
pub(crate) fn refresh_clock(at: u64) {
    if !TSC.load(Ordering::Relaxed)
        || at.wrapping_sub(REFRESHED.load(Ordering::Relaxed)) < REFRESH_TICKS
    {
        return;
    }
    let (ticks, ns) = reading();
    REFRESHED.store(ticks, Ordering::Relaxed);
    strata_pmpi_state.publish(|s| {
        s.set(word::CLOCK_TICKS_1, ticks);
        s.set(word::CLOCK_NS_1, ns);
    });
}

/// A thread's depth in wrapped calls and its previous call. Words, not cells: where MPI
/// lets one thread at a time into MPI (anything short of `MPI_THREAD_MULTIPLE`), one
/// [`Thread`] shared by all ([`SHARED`]) is right and spares a thread-local lookup (a call
/// into the dynamic loader's `__tls_get_addr` from a shared library) on every call.
pub(crate) struct Thread {
    depth: AtomicU64,
    site: AtomicU64,
    entered: AtomicU64,
    returned: AtomicU64,
}

/// The thread in MPI, outside `MPI_THREAD_MULTIPLE`.
pub(crate) static SHARED: Thread = Thread::new();

impl Thread {
    pub(crate) const fn new() -> Thread {
        Thread {
            depth: AtomicU64::new(0),
            site: AtomicU64::new(START as u64),
            entered: AtomicU64::new(0),
            returned: AtomicU64::new(0),
        }
    }

    /// Enters a wrapped call: the depth it was at, and the thread's previous call.
    pub(crate) fn enter(&self) -> (u64, Previous) {
        let depth = self.depth.load(Ordering::Relaxed);
        self.depth.store(depth + 1, Ordering::Relaxed);
        let previous = Previous {
            site: self.site.load(Ordering::Relaxed) as u16,
            entered: self.entered.load(Ordering::Relaxed),
            returned: self.returned.load(Ordering::Relaxed),
        };
        (depth, previous)
    }

    /// Leaves a wrapped call; `previous` is the outermost call that returned.
    pub(crate) fn leave(&self, previous: Option<Previous>) {
        let depth = self.depth.load(Ordering::Relaxed);
        self.depth.store(depth.saturating_sub(1), Ordering::Relaxed);
        if let Some(p) = previous {
            self.site.store(u64::from(p.site), Ordering::Relaxed);
            self.entered.store(p.entered, Ordering::Relaxed);
            self.returned.store(p.returned, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_pmpi_layout::history::{decode_events, decode_sites, decode_transitions};

    fn bytes<const N: usize>(w: &Words<N>) -> Vec<u8> {
        w.0.iter()
            .flat_map(|x| x.load(Ordering::Relaxed).to_le_bytes())
            .collect()
    }

    /// Two sites called in turn: their counts, one transition each way, and the ring.
    #[test]
    fn calls_in_turn_make_sites_transitions_and_events() {
        let send = strata_pmpi_layout::call_index("MPI_Send").unwrap();
        let recv = strata_pmpi_layout::call_index("MPI_Recv").unwrap();
        let before = strata_pmpi_state.get(word::EVENTS_WRITTEN);
        let mut previous = Previous::START;
        for round in 0..3 {
            for (index, address) in [(send, 0x4000_1000), (recv, 0x4000_2000)] {
                let entry = entered(index, address, previous);
                previous = returned(index, entry, round == 2, peer_tag(1, 7));
            }
        }
        let sites = decode_sites(&bytes(&SITES)).unwrap();
        let site = |address| sites.iter().find(|s| s.address == address).unwrap();
        assert_eq!(
            (site(0x4000_1000).call, site(0x4000_1000).entered),
            ("MPI_Send", 3)
        );
        assert_eq!(site(0x4000_2000).completed, 3);
        assert_eq!(site(0x4000_2000).found_nothing, 1);
        let transitions = decode_transitions(&bytes(&TRANSITIONS)).unwrap();
        let (a, b) = (site(0x4000_1000).index, site(0x4000_2000).index);
        let count = |from, to| {
            transitions
                .iter()
                .find(|t| (t.from, t.to) == (from, to))
                .map_or(0, |t| t.count)
        };
        assert_eq!((count(START, a), count(a, b), count(b, a)), (1, 3, 2));
        let after = strata_pmpi_state.get(word::EVENTS_WRITTEN);
        assert_eq!(after - before, 6);
        let events = decode_events(&bytes(&EVENTS), after, after, MAX_EVENTS).unwrap();
        let last = events.last().unwrap();
        assert_eq!(
            (last.call, last.site, last.found_nothing),
            ("MPI_Recv", b, true)
        );
        assert_eq!(last.tag, Some(7));
        assert!(last.exited >= last.entered);
    }
}
