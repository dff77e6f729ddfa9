//! The words a rank publishes ([`strata_pmpi_state`]), and how they are written.

use std::sync::atomic::{AtomicU64, Ordering, fence};
use strata_pmpi_layout::{self as pmpi, word};

/// The words the daemon reads (see `strata_pmpi_layout`). Its name is the contract: the
/// daemon finds it in the library's dynamic symbol table.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static strata_pmpi_state: State = State::new();

/// The state's words, on cache lines of their own.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct State([AtomicU64; pmpi::WORDS]);

impl State {
    const fn new() -> State {
        let mut words = [const { AtomicU64::new(0) }; pmpi::WORDS];
        words[word::MAGIC] = AtomicU64::new(pmpi::MAGIC);
        words[word::VERSION] = AtomicU64::new(pmpi::VERSION);
        words[word::WORLD_RANK] = AtomicU64::new(pmpi::NONE);
        State(words)
    }

    /// Marks the state as no longer recorded (see [`crate::guard`]): no call, an even
    /// sequence whatever write was cut short, and the stop word set.
    pub(crate) fn stop(&self) {
        self.set(word::CALL, 0);
        self.set(word::STOPPED, 1);
        let sequence = &self.0[word::SEQUENCE];
        let now = sequence.load(Ordering::Relaxed);
        sequence.store(now.wrapping_add(now % 2 + 2), Ordering::Release);
    }

    /// A copy of the words, as a reader sees them (tests).
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> Vec<u8> {
        self.0
            .iter()
            .flat_map(|w| w.load(Ordering::Relaxed).to_le_bytes())
            .collect()
    }

    pub(crate) fn get(&self, i: usize) -> u64 {
        self.0[i].load(Ordering::Relaxed)
    }

    pub(crate) fn set(&self, i: usize, v: u64) {
        self.0[i].store(v, Ordering::Relaxed);
    }

    /// Adds to a counter. A load and a store, not a locked read-modify-write (which costs
    /// tens of cycles on every MPI call): the rank's thread in MPI is its only writer, and
    /// two threads in MPI at once (`MPI_THREAD_MULTIPLE`) may lose a count, never tear one.
    pub(crate) fn add(&self, i: usize, v: u64) {
        let word = &self.0[i];
        word.store(
            word.load(Ordering::Relaxed).wrapping_add(v),
            Ordering::Relaxed,
        );
    }

    /// Writes under the sequence lock: odd while writing, even again after, so that a
    /// reader's copy is whole or known torn. Plain stores and fences (free on x86-64) for
    /// the same reason as [`State::add`].
    pub(crate) fn publish(&self, write: impl FnOnce(&State)) {
        let sequence = &self.0[word::SEQUENCE];
        let before = sequence.load(Ordering::Relaxed);
        sequence.store(before.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        write(self);
        sequence.store(before.wrapping_add(2), Ordering::Release);
    }
}
