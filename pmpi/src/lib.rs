//! `libstrata_pmpi.so`: strata's optional PMPI library, loaded into the ranks with
//! `LD_PRELOAD`. It wraps MPI calls, forwards each to the MPI library's own (found with
//! `dlsym(RTLD_NEXT, ...)`), and publishes the call a rank is in, with its arguments as
//! passed, in the rank's memory ([`strata_pmpi_state`], laid out as
//! `strata_proto::pmpi` says), where a daemon reads it without stopping the rank.
//!
//! Inert where MPI is not: nothing runs when the library loads, so a launcher, a proxy or a
//! shell that `LD_PRELOAD` reaches too only carries the exported symbols, which nothing
//! calls.
//!
//! So far (the first part of the library): the blocking calls of `strata_proto::pmpi::CALLS`
//! from C, by their `MPI_` names. Not yet: the `PMPI_` entries that Fortran bindings call,
//! peers translated to world ranks, communicator membership, requests, per-call-site
//! counters, a thread other than the first one in MPI at a time (`MPI_THREAD_MULTIPLE`).
//!
//! This crate is the workspace's exception to `unsafe_code = "deny"`: wrapping C functions
//! is calling and being called through raw function pointers. Each `unsafe` block says why
//! it holds. No panic can unwind into C: recording never panics (atomic stores only), and
//! an `extern "C"` function that panicked would abort, not unwind.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::CStr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use strata_proto::pmpi::{self, NONE, word};

/// The words the daemon reads (see `strata_proto::pmpi`). Its name is the contract: the
/// daemon finds it in the library's dynamic symbol table.
#[allow(non_upper_case_globals)]
#[unsafe(no_mangle)]
pub static strata_pmpi_state: State = State::new();

/// The state's words, one cache line apart from anything else.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct State([AtomicU64; pmpi::WORDS]);

impl State {
    const fn new() -> State {
        let mut words = [const { AtomicU64::new(0) }; pmpi::WORDS];
        words[word::MAGIC] = AtomicU64::new(pmpi::MAGIC);
        words[word::VERSION] = AtomicU64::new(pmpi::VERSION);
        State(words)
    }

    fn set(&self, i: usize, v: u64) {
        self.0[i].store(v, Ordering::Relaxed);
    }

    /// Writes under the sequence lock: odd while writing, even again after.
    fn publish(&self, write: impl FnOnce(&State)) {
        self.0[word::SEQUENCE].fetch_add(1, Ordering::AcqRel);
        write(self);
        self.0[word::SEQUENCE].fetch_add(1, Ordering::AcqRel);
    }
}

thread_local! {
    /// How deep this thread is in wrapped calls: only the outermost one is the program's.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The arguments of a call that the state records.
struct Args {
    peer: Option<u64>,
    tag: Option<u64>,
    comm: Option<u64>,
}

/// A call being made: recorded when made, marked completed when dropped.
struct Call {
    outermost: bool,
}

impl Call {
    fn enter(index: u64, args: Args) -> Call {
        let depth = DEPTH.with(|d| {
            let v = d.get();
            d.set(v + 1);
            v
        });
        let outermost = depth == 0;
        if outermost {
            strata_pmpi_state.publish(|s| {
                s.set(word::CALL, index);
                s.set(word::PEER, args.peer.map_or(NONE, int));
                s.set(word::TAG, args.tag.map_or(NONE, int));
                s.set(word::COMM, args.comm.map_or(0, handle));
                s.0[word::ENTERED].fetch_add(1, Ordering::Relaxed);
            });
        }
        Call { outermost }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if self.outermost {
            strata_pmpi_state.publish(|s| {
                s.set(word::CALL, 0);
                s.0[word::COMPLETED].fetch_add(1, Ordering::Relaxed);
            });
        }
    }
}

/// An `int` argument as received in a 64-bit register or stack slot: the low 32 bits are
/// the value (the upper ones are whatever the caller left), sign-extended.
fn int(raw: u64) -> u64 {
    raw as u32 as i32 as i64 as u64
}

/// A handle argument (`MPI_Comm`): a pointer in Open MPI, an `int` in MPICH and Intel MPI,
/// told apart by the library loaded (Open MPI's world communicator is a symbol).
fn handle(raw: u64) -> u64 {
    static POINTERS: AtomicUsize = AtomicUsize::new(0); // 0 unknown, 1 pointers, 2 ints
    let mut kind = POINTERS.load(Ordering::Relaxed);
    if kind == 0 {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
        let ompi = unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"ompi_mpi_comm_world".as_ptr()) };
        kind = if ompi.is_null() { 2 } else { 1 };
        POINTERS.store(kind, Ordering::Relaxed);
    }
    if kind == 1 { raw } else { raw as u32 as u64 }
}

/// The MPI library's own function `name`, looked up once into `slot`. Called only from a
/// wrapper, that is, by a program that calls MPI: if no library below this one defines it,
/// the program could not run without this library either, and it stops with that message.
fn real(name: &CStr, slot: &AtomicUsize) -> usize {
    let known = slot.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only looks a symbol up in the
    // objects loaded after this one.
    let found = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    if found == 0 {
        eprintln!(
            "libstrata_pmpi: {} is not defined by any library loaded after it: \
             the program is not an MPI program linked dynamically",
            name.to_string_lossy()
        );
        std::process::abort();
    }
    slot.store(found, Ordering::Relaxed);
    found
}

/// Defines the wrapper of one MPI call: its C parameters, received as 64-bit words (an
/// `int` in a register or a stack slot as a pointer would be: x86-64 System V passes both
/// in one 64-bit place each, and none of these calls takes a floating-point argument), and
/// which of them the state records.
macro_rules! wrap {
    ($name:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:expr) => {
        #[unsafe(no_mangle)]
        /// # Safety
        /// Called by the program as the MPI function of this name, with its arguments.
        pub unsafe extern "C" fn $name($($arg: u64),*) -> i32 {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let index = pmpi::call_index(stringify!($name)).expect("a wrapped call is listed");
            let address = real(
                // SAFETY: the literal ends in the NUL that concat! adds.
                unsafe { CStr::from_bytes_with_nul_unchecked(concat!(stringify!($name), "\0").as_bytes()) },
                &REAL,
            );
            // SAFETY: `address` is the MPI library's function of the same name, whose C
            // signature takes these arguments in these places and returns an `int`.
            let forward: unsafe extern "C" fn($($arg: u64),*) -> i32 =
                unsafe { std::mem::transmute::<usize, _>(address) };
            let _call = Call::enter(index, Args { peer: $peer, tag: $tag, comm: $comm });
            // SAFETY: the program's own arguments, passed on unchanged.
            unsafe { forward($($arg),*) }
        }
    };
}

wrap!(MPI_Send(buf, count, datatype, dest, tag, comm) peer = Some(dest), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Ssend(buf, count, datatype, dest, tag, comm) peer = Some(dest), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Recv(buf, count, datatype, source, tag, comm, status) peer = Some(source), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Wait(request, status) peer = None, tag = None, comm = None);
wrap!(MPI_Waitall(count, requests, statuses) peer = None, tag = None, comm = None);
wrap!(MPI_Barrier(comm) peer = None, tag = None, comm = Some(comm));
wrap!(MPI_Bcast(buf, count, datatype, root, comm) peer = Some(root), tag = None, comm = Some(comm));
wrap!(MPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm) peer = Some(root), tag = None, comm = Some(comm));
wrap!(MPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm) peer = None, tag = None, comm = Some(comm));
wrap!(MPI_Finalize() peer = None, tag = None, comm = None);
