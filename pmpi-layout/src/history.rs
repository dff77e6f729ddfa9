//! A rank's MPI history as the library keeps it, bounded: what the runtime models of
//! AutomaDeD ("Probabilistic diagnosis of performance faults in large-scale parallel
//! applications", 2012) and Prodometer ("Accurate application progress analysis for
//! large-scale parallel debugging", 2014) are built from.
//!
//! * **Sites**: one record per call site (the return address of the program's call of an
//!   MPI function, with the call): calls entered, completed, found nothing, and the time
//!   spent in them. [`MAX_SITES`] records; a call at a site that finds the table full is
//!   counted in [`crate::word::SITES_LOST`] only.
//! * **Transitions**: one record per pair of sites that followed each other in a thread
//!   (the program's start counts as the site [`START`]): how often, the time spent in the
//!   first call before the second began, and the computation between them (from the first
//!   call's return to the second's entry), each as sum, sum of squares and maximum. That is
//!   a semi-Markov model whose states are the MPI call sites and the code between them.
//!   [`MAX_TRANSITIONS`] records; a transition that finds no room is counted in
//!   [`crate::word::TRANSITIONS_LOST`].
//! * **Events**: a ring of the last [`MAX_EVENTS`] calls completed (call, site, peer, tag,
//!   entry and return times). At the cap the oldest is overwritten: the event count
//!   ([`crate::word::EVENTS_WRITTEN`]) says how many there were in all.
//!
//! The tables only grow (a record, once claimed, keeps its key) and their words are each
//! written whole, so a reader's copy is a consistent set of keys with counts that may be a
//! call behind each other. An event record is trusted when the count read after copying
//! says it cannot have been overwritten during the copy ([`decode_events`]).
//!
//! Times are clock ticks ([`Clock`]): the time-stamp counter where the kernel keeps its own
//! time by it (a few nanoseconds to read), `CLOCK_MONOTONIC` nanoseconds otherwise.
//!
//! Memory per rank: 16 KiB of sites, 64 KiB of transitions, 128 KiB of events.

use crate::{CALLS, LayoutError, PeerWord, peer_word, tag_word, word};

/// Site records.
pub const MAX_SITES: usize = 256;
/// Words per site record ([`site`]).
pub const SITE_WORDS: usize = 8;
/// Transition records.
pub const MAX_TRANSITIONS: usize = 1024;
/// Words per transition record ([`transition`]).
pub const TRANSITION_WORDS: usize = 8;
/// Event records in the ring.
pub const MAX_EVENTS: usize = 4096;
/// Words per event record ([`event`]).
pub const EVENT_WORDS: usize = 4;

/// The site index of the program's start (the source of a thread's first transition).
pub const START: u16 = 0xfffe;
/// The site index of a call whose site found no record.
pub const NO_SITE: u16 = 0xffff;

/// Words of a site record.
pub mod site {
    /// The return address in the rank (low 48 bits) and the call's index in
    /// [`crate::CALLS`] (bits 48 and up); 0 while the record is free.
    pub const KEY: usize = 0;
    pub const ENTERED: usize = 1;
    pub const COMPLETED: usize = 2;
    /// Polls that found nothing (see [`crate::word::FOUND_NOTHING`]).
    pub const FOUND_NOTHING: usize = 3;
    /// Ticks spent in completed calls.
    pub const TICKS_IN: usize = 4;
    /// The longest completed call, in ticks.
    pub const TICKS_MAX: usize = 5;
}

/// Words of a transition record.
pub mod transition {
    /// `from | to << 16 | 1 << 32`, site indices ([`super::START`] for the start); 0 while
    /// the record is free.
    pub const KEY: usize = 0;
    pub const COUNT: usize = 1;
    /// The computation between the first call's return and the second's entry: ticks
    /// summed, squared ticks summed (an `f64`'s bits), the longest.
    pub const BETWEEN_SUM: usize = 2;
    pub const BETWEEN_SQUARES: usize = 3;
    pub const BETWEEN_MAX: usize = 4;
    /// The time in the first call: the same three.
    pub const IN_SUM: usize = 5;
    pub const IN_SQUARES: usize = 6;
    pub const IN_MAX: usize = 7;
}

/// Words of an event record.
pub mod event {
    /// The call's index (bits 0-15), its site index (16-31), 1 at bit 32 when it was a poll
    /// that found nothing.
    pub const WHAT: usize = 0;
    /// The peer (low 32 bits) and the tag (high 32 bits), each an `i32` with
    /// [`super::NONE_32`], [`super::ANY_SOURCE_32`] and [`super::PROC_NULL_32`].
    pub const PEER_TAG: usize = 1;
    pub const ENTERED: usize = 2;
    pub const EXITED: usize = 3;
}

/// An event's peer or tag that the call has none of.
pub const NONE_32: i32 = i32::MIN;
/// An event's peer for `MPI_ANY_SOURCE`.
pub const ANY_SOURCE_32: i32 = i32::MIN + 1;
/// An event's peer for `MPI_PROC_NULL`.
pub const PROC_NULL_32: i32 = i32::MIN + 2;

/// The 32-bit form of a peer or tag word ([`crate::word::PEER`]).
pub const fn word_32(word: u64) -> i32 {
    match word {
        crate::NONE => NONE_32,
        crate::ANY_SOURCE => ANY_SOURCE_32,
        crate::PROC_NULL => PROC_NULL_32,
        v => v as i64 as i32,
    }
}

fn word_64(v: i32) -> u64 {
    match v {
        NONE_32 => crate::NONE,
        ANY_SOURCE_32 => crate::ANY_SOURCE,
        PROC_NULL_32 => crate::PROC_NULL,
        v => i64::from(v) as u64,
    }
}

/// The values of [`crate::word::CLOCK`].
pub mod clock {
    /// No call yet: no time recorded.
    pub const NONE: u64 = 0;
    /// The time-stamp counter.
    pub const TSC: u64 = 1;
    /// `CLOCK_MONOTONIC` nanoseconds.
    pub const MONOTONIC: u64 = 2;
}

/// The history's clock, with two readings of it against `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    pub kind: u64,
    pub ticks: [u64; 2],
    pub ns: [u64; 2],
}

/// The readings must lie this far apart for a rate (the library refreshes its second one
/// about every 20 ms while the rank makes calls).
const MIN_CALIBRATION_NS: u64 = 5_000_000;

impl Clock {
    /// Nanoseconds per tick; `None` before the clock can say (no call yet, or a time-stamp
    /// counter whose two readings are too close for a rate).
    pub fn ns_per_tick(&self) -> Option<f64> {
        match self.kind {
            clock::MONOTONIC => Some(1.0),
            clock::TSC => {
                let ns = self.ns[1].checked_sub(self.ns[0])?;
                let ticks = self.ticks[1].checked_sub(self.ticks[0])?;
                (ns >= MIN_CALIBRATION_NS && ticks > 0).then(|| ns as f64 / ticks as f64)
            }
            _ => None,
        }
    }

    /// A duration in ticks, in nanoseconds.
    pub fn duration_ns(&self, ticks: f64) -> Option<f64> {
        Some(ticks * self.ns_per_tick()?)
    }

    /// A time in ticks as `CLOCK_MONOTONIC` nanoseconds.
    pub fn monotonic_ns(&self, ticks: u64) -> Option<u64> {
        let rate = self.ns_per_tick()?;
        let since = (i128::from(ticks) - i128::from(self.ticks[1])) as f64;
        let ns = self.ns[1] as f64 + since * rate;
        (ns >= 0.0).then_some(ns as u64)
    }
}

/// The history words of the state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HistoryWords {
    pub sites: u64,
    pub transitions: u64,
    pub events: u64,
    pub events_written: u64,
    pub sites_lost: u64,
    pub transitions_lost: u64,
    pub clock: Clock,
    /// In a call: when it was entered, in ticks (0 outside MPI).
    pub entered_at: u64,
    pub last_exit: u64,
}

/// The history words of a copy of the state (whole: [`crate::BYTES`], decoded first with
/// [`crate::decode`]).
pub fn decode_words(state: &[u8]) -> Result<HistoryWords, LayoutError> {
    if state.len() < crate::BYTES {
        return Err(LayoutError::Short(state.len()));
    }
    let w = |i: usize| u64::from_le_bytes(state[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok(HistoryWords {
        sites: w(word::SITES),
        transitions: w(word::TRANSITIONS),
        events: w(word::EVENTS),
        events_written: w(word::EVENTS_WRITTEN),
        sites_lost: w(word::SITES_LOST),
        transitions_lost: w(word::TRANSITIONS_LOST),
        clock: Clock {
            kind: w(word::CLOCK),
            ticks: [w(word::CLOCK_TICKS_0), w(word::CLOCK_TICKS_1)],
            ns: [w(word::CLOCK_NS_0), w(word::CLOCK_NS_1)],
        },
        entered_at: if w(word::CALL) != 0 {
            w(word::ENTERED_AT)
        } else {
            0
        },
        last_exit: w(word::LAST_EXIT),
    })
}

/// One call site and its counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    /// The record's index (what transitions and events name it by).
    pub index: u16,
    /// The return address of the program's call, in the rank.
    pub address: u64,
    pub call: &'static str,
    pub entered: u64,
    pub completed: u64,
    pub found_nothing: u64,
    pub ticks_in: u64,
    pub ticks_max: u64,
}

/// Times in ticks, summed, squared and summed, and the longest.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Times {
    pub sum: u64,
    pub squares: f64,
    pub max: u64,
}

impl Times {
    /// The mean and variance over `count` times.
    pub fn mean_variance(&self, count: u64) -> (f64, f64) {
        if count == 0 {
            return (0.0, 0.0);
        }
        let n = count as f64;
        let mean = self.sum as f64 / n;
        (mean, (self.squares / n - mean * mean).max(0.0))
    }
}

/// One transition between sites.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition {
    /// Site indices; `from` is [`START`] for a thread's first call.
    pub from: u16,
    pub to: u16,
    pub count: u64,
    /// The computation between the two calls.
    pub between: Times,
    /// The time in the first call.
    pub within: Times,
}

/// One completed call of the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Its number since the library loaded (0 first).
    pub number: u64,
    pub call: &'static str,
    /// Its site index ([`NO_SITE`] when the table was full).
    pub site: u16,
    pub found_nothing: bool,
    pub peer: Option<PeerWord>,
    pub tag: Option<i64>,
    pub entered: u64,
    pub exited: u64,
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
}

fn call_name(index: u64) -> Result<&'static str, LayoutError> {
    match usize::try_from(index).ok().and_then(|i| CALLS.get(i)) {
        Some(&"") | None => Err(LayoutError::UnknownCall(index)),
        Some(name) => Ok(name),
    }
}

/// The site records in a copy of the site table ([`MAX_SITES`] records), the free ones
/// left out.
pub fn decode_sites(bytes: &[u8]) -> Result<Vec<Site>, LayoutError> {
    if bytes.len() < MAX_SITES * SITE_WORDS * 8 {
        return Err(LayoutError::Short(bytes.len()));
    }
    let all: Vec<u64> = words(bytes).collect();
    let mut sites = Vec::new();
    for (index, r) in all.chunks_exact(SITE_WORDS).take(MAX_SITES).enumerate() {
        let key = r[site::KEY];
        if key == 0 {
            continue;
        }
        sites.push(Site {
            index: index as u16,
            address: key & ((1 << 48) - 1),
            call: call_name(key >> 48)?,
            entered: r[site::ENTERED],
            completed: r[site::COMPLETED],
            found_nothing: r[site::FOUND_NOTHING],
            ticks_in: r[site::TICKS_IN],
            ticks_max: r[site::TICKS_MAX],
        });
    }
    Ok(sites)
}

/// The transition records in a copy of the transition table ([`MAX_TRANSITIONS`]
/// records), the free ones left out.
pub fn decode_transitions(bytes: &[u8]) -> Result<Vec<Transition>, LayoutError> {
    if bytes.len() < MAX_TRANSITIONS * TRANSITION_WORDS * 8 {
        return Err(LayoutError::Short(bytes.len()));
    }
    let all: Vec<u64> = words(bytes).collect();
    Ok(all
        .chunks_exact(TRANSITION_WORDS)
        .take(MAX_TRANSITIONS)
        .filter(|r| r[transition::KEY] != 0)
        .map(|r| {
            let key = r[transition::KEY];
            let times = |sum, squares, max| Times {
                sum: r[sum],
                squares: f64::from_bits(r[squares]),
                max: r[max],
            };
            Transition {
                from: key as u16,
                to: (key >> 16) as u16,
                count: r[transition::COUNT],
                between: times(
                    transition::BETWEEN_SUM,
                    transition::BETWEEN_SQUARES,
                    transition::BETWEEN_MAX,
                ),
                within: times(
                    transition::IN_SUM,
                    transition::IN_SQUARES,
                    transition::IN_MAX,
                ),
            }
        })
        .collect())
}

/// The last `last` events of a copy of the ring ([`MAX_EVENTS`] records) that are whole,
/// oldest first: `written_before` is the event count read before the copy, `written_after`
/// the count read again after it. An event the rank may have overwritten while the ring was
/// copied is left out. Only the records of those events are read from `bytes` (a reader
/// may copy just them: [`event_ranges`]).
pub fn decode_events(
    bytes: &[u8],
    written_before: u64,
    written_after: u64,
    last: usize,
) -> Result<Vec<Event>, LayoutError> {
    if bytes.len() < MAX_EVENTS * EVENT_WORDS * 8 {
        return Err(LayoutError::Short(bytes.len()));
    }
    let all: Vec<u64> = words(bytes).collect();
    let ring = MAX_EVENTS as u64;
    // Event n was whole before the copy when n < written_before; its record was not
    // reused during the copy when no event n + ring had begun, that is n + ring >
    // written_after (the one being written then is written_after itself).
    let first = (written_after + 1)
        .saturating_sub(ring)
        .max(written_before.saturating_sub(last as u64));
    let mut events = Vec::new();
    for number in first..written_before {
        let slot = (number % ring) as usize * EVENT_WORDS;
        let r = &all[slot..slot + EVENT_WORDS];
        let what = r[event::WHAT];
        let peer_tag = r[event::PEER_TAG];
        events.push(Event {
            number,
            call: call_name(what & 0xffff)?,
            site: (what >> 16) as u16,
            found_nothing: (what >> 32) & 1 == 1,
            peer: peer_word(word_64(peer_tag as u32 as i32)),
            tag: tag_word(word_64((peer_tag >> 32) as u32 as i32)),
            entered: r[event::ENTERED],
            exited: r[event::EXITED],
        });
    }
    Ok(events)
}

/// Where, in the ring, the last `last` of `written` events lie: at most two byte ranges
/// (offset, length), the ring wrapping between them.
pub fn event_ranges(written: u64, last: usize) -> Vec<(usize, usize)> {
    let record = EVENT_WORDS * 8;
    let count = written.min(last.min(MAX_EVENTS) as u64) as usize;
    let first = ((written - count as u64) % MAX_EVENTS as u64) as usize;
    let tail = count.min(MAX_EVENTS - first);
    let mut ranges = vec![(first * record, tail * record)];
    if count > tail {
        ranges.push((0, (count - tail) * record));
    }
    ranges.retain(|&(_, len)| len > 0);
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call_index;

    fn to_bytes(words: &[u64]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn sites_and_transitions_are_the_claimed_records() {
        let barrier = call_index("MPI_Barrier").unwrap();
        let mut table = vec![0u64; MAX_SITES * SITE_WORDS];
        let at = 7 * SITE_WORDS;
        table[at + site::KEY] = 0x5555_0000_1234 | barrier << 48;
        table[at + site::ENTERED] = 5;
        table[at + site::COMPLETED] = 4;
        table[at + site::TICKS_MAX] = 90;
        let sites = decode_sites(&to_bytes(&table)).unwrap();
        assert_eq!(sites.len(), 1);
        assert_eq!(
            (sites[0].index, sites[0].address, sites[0].call),
            (7, 0x5555_0000_1234, "MPI_Barrier")
        );
        assert_eq!((sites[0].entered, sites[0].completed), (5, 4));
        table[at + site::KEY] = 0x10 | 999 << 48;
        assert_eq!(
            decode_sites(&to_bytes(&table)),
            Err(LayoutError::UnknownCall(999))
        );

        let mut table = vec![0u64; MAX_TRANSITIONS * TRANSITION_WORDS];
        let at = 3 * TRANSITION_WORDS;
        table[at + transition::KEY] = u64::from(START) | 7 << 16 | 1 << 32;
        table[at + transition::COUNT] = 2;
        table[at + transition::BETWEEN_SUM] = 30;
        table[at + transition::BETWEEN_SQUARES] = (500.0f64).to_bits();
        table[at + transition::BETWEEN_MAX] = 20;
        let t = decode_transitions(&to_bytes(&table)).unwrap();
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].from, t[0].to, t[0].count), (START, 7, 2));
        // 10 and 20: mean 15, variance 25.
        assert_eq!(t[0].between.mean_variance(t[0].count), (15.0, 25.0));
        assert_eq!(t[0].between.max, 20);
    }

    fn ring(written: u64) -> Vec<u64> {
        let recv = call_index("MPI_Recv").unwrap();
        let mut ring = vec![0u64; MAX_EVENTS * EVENT_WORDS];
        for n in written.saturating_sub(MAX_EVENTS as u64)..written {
            let at = (n as usize % MAX_EVENTS) * EVENT_WORDS;
            ring[at + event::WHAT] = recv | 2 << 16;
            let peer = word_32(n % 4) as u32 as u64;
            let tag = word_32(crate::NONE) as u32 as u64;
            ring[at + event::PEER_TAG] = peer | tag << 32;
            ring[at + event::ENTERED] = n * 10;
            ring[at + event::EXITED] = n * 10 + 5;
        }
        ring
    }

    #[test]
    fn events_are_the_ones_whole_oldest_first() {
        let few = decode_events(&to_bytes(&ring(3)), 3, 3, MAX_EVENTS).unwrap();
        assert_eq!(few.iter().map(|e| e.number).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!((few[1].call, few[1].site), ("MPI_Recv", 2));
        assert_eq!((few[1].peer, few[1].tag), (Some(PeerWord::Rank(1)), None));
        assert_eq!((few[2].entered, few[2].exited), (20, 25));
        // A full ring, and two events written while it was copied: the two oldest may be
        // overwritten, and so may the one being written then.
        let written = MAX_EVENTS as u64 + 100;
        let all =
            decode_events(&to_bytes(&ring(written)), written, written + 2, MAX_EVENTS).unwrap();
        assert_eq!(all.len(), MAX_EVENTS - 3);
        assert_eq!(all[0].number, 103);
        assert_eq!(all.last().unwrap().number, written - 1);
        let none = decode_events(&to_bytes(&ring(0)), 0, 0, MAX_EVENTS).unwrap();
        assert!(none.is_empty());
        // The last few, from only their records: the ring wraps between them.
        let written = 2 * MAX_EVENTS as u64 + 2;
        let full = to_bytes(&ring(written));
        let ranges = event_ranges(written, 5);
        assert_eq!(
            ranges,
            [
                ((MAX_EVENTS - 3) * EVENT_WORDS * 8, 3 * EVENT_WORDS * 8),
                (0, 2 * EVENT_WORDS * 8)
            ]
        );
        let mut sparse = vec![0u8; full.len()];
        for (at, len) in ranges {
            sparse[at..at + len].copy_from_slice(&full[at..at + len]);
        }
        let last = decode_events(&sparse, written, written, 5).unwrap();
        assert_eq!(
            last.iter().map(|e| e.number).collect::<Vec<_>>(),
            (written - 5..written).collect::<Vec<_>>()
        );
        assert_eq!(event_ranges(3, 5), [(0, 3 * EVENT_WORDS * 8)]);
        assert!(event_ranges(0, 5).is_empty());
    }

    #[test]
    fn the_clock_says_nanoseconds_only_once_it_can() {
        let mut clock = Clock {
            kind: clock::TSC,
            ticks: [1_000, 1_000],
            ns: [50, 50],
        };
        assert_eq!(clock.ns_per_tick(), None, "one reading is no rate");
        clock.ticks[1] = 1_000 + 30_000_000;
        clock.ns[1] = 50 + 10_000_000;
        let rate = clock.ns_per_tick().unwrap();
        assert!((rate - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            clock.monotonic_ns(1_000 + 60_000_000),
            Some(50 + 20_000_000)
        );
        assert_eq!(clock.duration_ns(3.0), Some(1.0));
        let ns = Clock {
            kind: clock::MONOTONIC,
            ..Clock::default()
        };
        assert_eq!(ns.ns_per_tick(), Some(1.0));
        assert_eq!(Clock::default().ns_per_tick(), None);
    }
}
