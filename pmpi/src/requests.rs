//! Requests: what each nonblocking call started (its peer, tag and communicator), kept by
//! handle until the request completes, and published as the records of the requests a
//! completion call is passed (`strata_pmpi_layout::request`).
//!
//! The table is bounded: at most [`pmpi::MAX_TRACKED`] requests are tracked at once, in a
//! fixed table of 4,096 entries (256 KiB of zero pages, touched as used); a request
//! started beyond that is published as "not seen started", and a reader knows nothing of
//! its peer. The published records are at most [`pmpi::MAX_REQUESTS`] (48 KiB).
//!
//! A request leaves the table when the call that completes it sets the program's handle to
//! `MPI_REQUEST_NULL` (every completion call, and `MPI_Request_free`, is wrapped): a handle
//! the MPI library hands out again is never taken for the request it named before.

use crate::comms::Described;
use crate::state::State;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use strata_pmpi_layout::{self as pmpi, NONE, REQUEST_WORDS, comm, request, word};

/// A request's record, as the daemon reads it.
pub(crate) type Record = [u64; REQUEST_WORDS];

/// The record of a request the library did not see started.
const UNSEEN: Record = {
    let mut r = [0u64; REQUEST_WORDS];
    r[request::PEER] = NONE;
    r[request::TAG] = NONE;
    r[request::COMM_KIND] = comm::NONE;
    r
};

/// The record of a request started by the call of index `call` with these arguments.
pub(crate) fn record(call: u64, peer: u64, tag: u64, described: Described) -> Record {
    let mut r = [0u64; REQUEST_WORDS];
    r[request::CALL] = call;
    r[request::PEER] = peer;
    r[request::TAG] = tag;
    r[request::COMM_KIND] = described.kind;
    r[request::COMM_SIZE] = described.size;
    r[request::COMM_MEMBERS] = described.members;
    r
}

/// Entries of the table: a power of two, with room for [`pmpi::MAX_TRACKED`] at a load
/// of 3/4.
const SLOTS: usize = 4096;
const _: () = assert!(SLOTS.is_power_of_two() && (pmpi::MAX_TRACKED as usize) * 4 <= SLOTS * 3);

/// Open addressing with linear probing, keyed by handle (0: empty; no MPI gives a live
/// request the handle 0), and deletion by backward shift, so that no tombstone lengthens
/// a search.
///
/// Its words are atomics used with plain loads and stores, not locked instructions (which
/// would cost more than the rest of a wrapper): a rank's thread in MPI is its only writer.
/// Where MPI allows several threads in MPI at once (`MPI_THREAD_MULTIPLE`), every use is
/// serialised by [`SERIAL`].
struct Table {
    slots: [Slot; SLOTS],
    len: AtomicU64,
}

/// A handle and its record on one cache line: a start or a completion touches one line
/// per request, which a program reusing its request objects (Open MPI's free lists) keeps
/// in cache.
#[repr(C, align(64))]
struct Slot {
    key: AtomicU64,
    record: [AtomicU64; REQUEST_WORDS],
}

static TABLE: Table = Table::new();

/// Taken around every use of the table once the program asked for `MPI_THREAD_MULTIPLE`.
static SERIAL: Mutex<()> = Mutex::new(());
static MULTIPLE: AtomicBool = AtomicBool::new(false);

/// The program runs with `MPI_THREAD_MULTIPLE`: from now on, the table is used under a lock.
pub(crate) fn serialise() {
    MULTIPLE.store(true, Ordering::Relaxed);
}

/// Whether the program runs with `MPI_THREAD_MULTIPLE`.
pub(crate) fn multiple() -> bool {
    MULTIPLE.load(Ordering::Relaxed)
}

fn serial() -> Option<MutexGuard<'static, ()>> {
    MULTIPLE
        .load(Ordering::Relaxed)
        .then(|| SERIAL.lock().unwrap_or_else(|p| p.into_inner()))
}

fn home(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

fn next(i: usize) -> usize {
    (i + 1) & (SLOTS - 1)
}

impl Table {
    const fn new() -> Table {
        Table {
            slots: [const {
                Slot {
                    key: AtomicU64::new(0),
                    record: [const { AtomicU64::new(0) }; REQUEST_WORDS],
                }
            }; SLOTS],
            len: AtomicU64::new(0),
        }
    }

    fn key(&self, i: usize) -> u64 {
        self.slots[i].key.load(Ordering::Relaxed)
    }

    fn record(&self, i: usize) -> Record {
        std::array::from_fn(|k| self.slots[i].record[k].load(Ordering::Relaxed))
    }

    fn put(&self, i: usize, key: u64, record: &Record) {
        self.slots[i].key.store(key, Ordering::Relaxed);
        for (word, &v) in self.slots[i].record.iter().zip(record) {
            word.store(v, Ordering::Relaxed);
        }
    }

    fn find(&self, key: u64) -> Option<usize> {
        let mut i = home(key);
        loop {
            match self.key(i) {
                k if k == key => return Some(i),
                0 => return None,
                _ => i = next(i),
            }
        }
    }

    fn insert(&self, key: u64, record: Record) {
        let mut i = home(key);
        loop {
            let k = self.key(i);
            if k == key {
                self.put(i, key, &record);
                return;
            }
            if k == 0 {
                let len = self.len.load(Ordering::Relaxed);
                if len >= pmpi::MAX_TRACKED {
                    return;
                }
                self.put(i, key, &record);
                self.len.store(len + 1, Ordering::Relaxed);
                return;
            }
            i = next(i);
        }
    }

    fn remove(&self, key: u64) {
        let Some(mut hole) = self.find(key) else {
            return;
        };
        self.slots[hole].key.store(0, Ordering::Relaxed);
        let len = self.len.load(Ordering::Relaxed);
        self.len.store(len.saturating_sub(1), Ordering::Relaxed);
        // Move back every later entry of the run that a search from its home would no
        // longer reach across the hole.
        let mut j = hole;
        loop {
            j = next(j);
            let key = self.key(j);
            if key == 0 {
                return;
            }
            let h = home(key);
            let reachable = if hole <= j {
                hole < h && h <= j
            } else {
                hole < h || h <= j
            };
            if !reachable {
                self.put(hole, key, &self.record(j));
                self.slots[j].key.store(0, Ordering::Relaxed);
                hole = j;
            }
        }
    }
}

/// Request `handle` was started with `record`.
pub(crate) fn started(handle: u64, record: Record) {
    if handle != 0 {
        let _serial = serial();
        TABLE.insert(handle, record);
    }
}

/// Requests `handles` completed or were freed: their handles may name other requests
/// later. (0 is no handle.)
pub(crate) fn forget(handles: impl Iterator<Item = u64>) {
    let _serial = serial();
    for handle in handles.filter(|&h| h != 0) {
        TABLE.remove(handle);
    }
}

/// The records a completion call publishes, read by the daemon at the address in
/// [`word::REQUEST_RECORDS`].
static PUBLISHED: [AtomicU64; pmpi::MAX_REQUESTS as usize * REQUEST_WORDS] =
    [const { AtomicU64::new(0) }; pmpi::MAX_REQUESTS as usize * REQUEST_WORDS];

/// Writes, inside a [`State::publish`], the records of the active ones of `handles`
/// (`null` is `MPI_REQUEST_NULL`).
pub(crate) fn publish(s: &State, handles: &[u64], null: u64) {
    let _serial = serial();
    let mut published = 0usize;
    let mut active = 0u64;
    for &handle in handles {
        if handle == null {
            continue;
        }
        active += 1;
        if published as u64 >= pmpi::MAX_REQUESTS {
            continue;
        }
        let record = TABLE.find(handle).map_or(UNSEEN, |i| TABLE.record(i));
        for (k, &w) in record.iter().enumerate() {
            PUBLISHED[published * REQUEST_WORDS + k].store(w, Ordering::Relaxed);
        }
        published += 1;
    }
    s.set(word::REQUESTS, published as u64);
    s.set(word::REQUEST_RECORDS, PUBLISHED.as_ptr() as u64);
    s.set(word::REQUESTS_ACTIVE, active);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh() -> Box<Table> {
        Box::new(Table::new())
    }

    #[test]
    fn requests_are_found_until_they_are_forgotten() {
        let t = fresh();
        // Keys that share a home, and keys around the wrap of the table.
        let keys: Vec<u64> = (1..=2000u64)
            .map(|k| k * 0x1_0000_0000 + 0x2c00_0000)
            .collect();
        for &k in &keys {
            t.insert(k, [k; REQUEST_WORDS]);
        }
        assert_eq!(t.len.load(Ordering::Relaxed), keys.len() as u64);
        for &k in keys.iter().step_by(3) {
            t.remove(k);
        }
        for (n, &k) in keys.iter().enumerate() {
            let found = t.find(k).map(|i| t.record(i)[0]);
            if n % 3 == 0 {
                assert_eq!(found, None, "{k:#x} was forgotten");
            } else {
                assert_eq!(found, Some(k), "{k:#x} is still pending");
            }
        }
    }

    #[test]
    fn the_table_is_bounded() {
        let t = fresh();
        for k in 1..=(pmpi::MAX_TRACKED + 10) {
            t.insert(k, [k; REQUEST_WORDS]);
        }
        assert_eq!(t.len.load(Ordering::Relaxed), pmpi::MAX_TRACKED);
        assert_eq!(
            t.find(pmpi::MAX_TRACKED + 5),
            None,
            "past the bound: not seen"
        );
        // A handle handed out again replaces its record.
        t.insert(7, [70; REQUEST_WORDS]);
        assert_eq!(t.record(t.find(7).unwrap())[0], 70);
    }
}
