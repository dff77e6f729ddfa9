//! The words a rank publishes ([`strata_pmpi_state`]), and how they are written.

use std::sync::atomic::{AtomicU64, Ordering};
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

    pub(crate) fn set(&self, i: usize, v: u64) {
        self.0[i].store(v, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, i: usize, v: u64) {
        self.0[i].fetch_add(v, Ordering::Relaxed);
    }

    /// Writes under the sequence lock: odd while writing, even again after, so that a
    /// reader's copy is whole or known torn.
    pub(crate) fn publish(&self, write: impl FnOnce(&State)) {
        self.0[word::SEQUENCE].fetch_add(1, Ordering::AcqRel);
        write(self);
        self.0[word::SEQUENCE].fetch_add(1, Ordering::AcqRel);
    }
}
