//! `libstrata_pmpi.so`: strata's optional PMPI library, loaded into the ranks with
//! `LD_PRELOAD`. It wraps MPI calls, forwards each to the MPI library's own (found with
//! `dlsym(RTLD_NEXT, ...)`), and publishes the call a rank is in, with its arguments, in
//! the rank's memory ([`state::strata_pmpi_state`], laid out as `strata_pmpi_layout`
//! says), where a daemon reads it without stopping the rank.
//!
//! * [`state`]: the published words and the sequence lock they are written under.
//! * [`abi`]: the MPI library below: its functions and its ABI's handles and constants.
//! * [`comms`]: communicators as world, self, or their members' world ranks.
//! * [`requests`]: what each nonblocking call started, until it completes, and the
//!   records of the requests a completion call is passed.
//! * [`guard`]: a panic in recording stops the recording, never the program.
//!
//! What a call records: its name; its peer as a rank of its communicator (the source of a
//! receive, the destination of a send, the root of a rooted collective; `MPI_ANY_SOURCE`
//! and `MPI_PROC_NULL` whatever the library's values), its tag, its communicator, and
//! counts of calls entered and completed. Only the outermost wrapped call of a thread is
//! recorded (a library calling itself is not the program's call).
//!
//! Inert where MPI is not: nothing runs when the library loads, so a launcher, a proxy or a
//! shell that `LD_PRELOAD` reaches too only carries the exported symbols, which nothing
//! calls.
//!
//! Each call is wrapped under its `MPI_` name, for C programs, and its `PMPI_` name, which
//! Fortran bindings call.
//!
//! Requests: `MPI_Isend`, `MPI_Issend`, `MPI_Ibsend`, `MPI_Irsend` and `MPI_Irecv` note
//! what they started; the completion calls (`MPI_Wait`, `MPI_Waitall`, `MPI_Waitany`,
//! `MPI_Waitsome` and the four `MPI_Test` calls) publish the records of the requests they
//! are passed. `MPI_Waitall` is the one call whose behaviour the library shapes: it is made
//! of the MPI library's `MPI_Testall`, polled (as the MPI libraries' own waits poll), so
//! that a wait that lasts can publish the requests still pending (looked at with
//! `MPI_Request_get_status` after 1, 2, 4 ... up to every 64 ms); a waitall that completes
//! at once is one `MPI_Testall`.
//!
//! Not yet: per-call-site counters, more than one thread in MPI at a time
//! (`MPI_THREAD_MULTIPLE`: the last thread to enter is recorded).
//!
//! This crate is the workspace's exception to `unsafe_code = "deny"`: wrapping C functions
//! is calling and being called through raw function pointers. Each `unsafe` block says why
//! it holds. No panic can unwind into C: recording runs under `catch_unwind` ([`guard`]),
//! and a recording step that panics stops the recording, while the wrappers go on
//! forwarding every call.
#![allow(unsafe_code)]

/// The address of the MPI library's own function named as the wrapper `$symbol`, looked
/// up once (`abi::function`, in the objects loaded after this one).
macro_rules! next_function {
    ($symbol:ident) => {{
        static REAL: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        const NAME: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
            concat!(stringify!($symbol), "\0").as_bytes(),
        ) {
            Ok(name) => name,
            Err(_) => panic!("a name without NUL"),
        };
        $crate::abi::function(NAME, &REAL, true)
    }};
}

pub mod abi;
pub mod comms;
pub mod guard;
pub mod nonblocking;
pub mod requests;
pub mod state;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use strata_pmpi_layout::{self as pmpi, NONE, comm, word};

use state::strata_pmpi_state;

thread_local! {
    /// How deep this thread is in wrapped calls: only the outermost one is the program's.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// The arguments of a call that the state records, as received.
#[derive(Default)]
pub(crate) struct Args<'a> {
    pub peer: Option<u64>,
    pub tag: Option<u64>,
    pub comm: Option<u64>,
    /// A completion call's request handles, as passed.
    pub requests: Option<&'a [u64]>,
}

/// [`Args`] as the state words say them.
pub(crate) struct Translated {
    pub peer: u64,
    pub tag: u64,
    pub handle: Option<u64>,
    pub described: Option<comms::Described>,
}

pub(crate) fn translate(args: &Args) -> Translated {
    let abi = abi::abi();
    let peer = args.peer.map_or(NONE, |raw| match abi::int(raw) {
        r if r == abi.any_source => pmpi::ANY_SOURCE,
        r if r == abi.proc_null => pmpi::PROC_NULL,
        r => i64::from(r) as u64,
    });
    let handle = args.comm.map(|raw| abi.handle(raw));
    Translated {
        peer,
        tag: args.tag.map_or(NONE, |t| i64::from(abi::int(t)) as u64),
        handle,
        // The world without a call: most calls are on it.
        described: handle.map(|h| {
            if h == abi.comm_world {
                comms::WORLD
            } else {
                comms::describe(h)
            }
        }),
    }
}

/// A call being made: recorded when made, marked completed when dropped.
pub(crate) struct Call {
    pub outermost: bool,
    /// The call was a poll that found nothing (counted in [`word::FOUND_NOTHING`]).
    pub found_nothing: bool,
}

impl Call {
    pub(crate) fn enter(index: u64, args: &Args) -> Call {
        let depth = DEPTH.with(|d| {
            let v = d.get();
            d.set(v + 1);
            v
        });
        let outermost = depth == 0;
        if outermost {
            guard::guarded(|| record(index, args));
        }
        Call {
            outermost,
            found_nothing: false,
        }
    }
}

/// Publishes the call a rank enters.
fn record(index: u64, args: &Args) {
    record_world_rank();
    let t = translate(args);
    let described = t.described;
    strata_pmpi_state.publish(|s| {
        s.set(word::CALL, index);
        s.set(word::PEER, t.peer);
        s.set(word::TAG, t.tag);
        s.set(word::COMM, t.handle.unwrap_or(0));
        s.set(word::COMM_KIND, described.map_or(comm::NONE, |d| d.kind));
        s.set(word::COMM_SIZE, described.map_or(0, |d| d.size));
        s.set(word::COMM_MEMBERS, described.map_or(0, |d| d.members));
        match args.requests {
            Some(handles) => requests::publish(s, handles, abi::abi().request_null),
            None => s.set(word::REQUESTS, 0),
        }
        s.add(word::ENTERED, 1);
    });
}

impl Drop for Call {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
        if self.outermost {
            guard::guarded(|| {
                strata_pmpi_state.publish(|s| {
                    s.set(word::CALL, 0);
                    s.add(word::COMPLETED, 1);
                    if self.found_nothing {
                        s.add(word::FOUND_NOTHING, 1);
                    }
                })
            });
        }
    }
}

/// The rank's world rank, asked once, at its first wrapped call (MPI is initialised then:
/// every wrapped call needs it).
fn record_world_rank() {
    static DONE: AtomicBool = AtomicBool::new(false);
    // A plain load on every call; the swap (a locked instruction) only until it is done.
    if DONE.load(Ordering::Relaxed) || DONE.swap(true, Ordering::Relaxed) {
        return;
    }
    static RANK: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the MPI library's PMPI_Comm_rank(MPI_Comm, int *), the handle as a word.
    let rank_of: unsafe extern "C" fn(u64, *mut i32) -> i32 =
        unsafe { std::mem::transmute(abi::function(c"PMPI_Comm_rank", &RANK, false)) };
    let mut rank = -1;
    // SAFETY: the world communicator and a pointer to a local integer.
    if unsafe { rank_of(abi::abi().comm_world, &mut rank) } == 0 && rank >= 0 {
        strata_pmpi_state.publish(|s| s.set(word::WORLD_RANK, rank as u64));
    }
}

/// Defines the wrappers of one MPI call: `MPI_X` for C programs and `PMPI_X`, which
/// Fortran bindings call (Open MPI's `mpi_recv_` calls `PMPI_Recv`), each forwarding to the
/// library's own function of its name. Their C parameters are received as 64-bit words (an
/// `int` in a register or a stack slot as a pointer would be: x86-64 System V passes both
/// in one 64-bit place each, and none of these calls takes a floating-point argument); the
/// state records the call by its `MPI_` name with the arguments named.
macro_rules! wrap {
    ($name:ident / $profiling:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:expr) => {
        wrap!($name / $profiling ( $($arg),* ) peer = $peer, tag = $tag, comm = $comm, found_nothing = |_| false);
    };
    ($name:ident / $profiling:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:expr, found_nothing = $found:expr) => {
        wrap!(@one $name, $name ( $($arg),* ) peer = $peer, tag = $tag, comm = $comm, found_nothing = $found);
        wrap!(@one $profiling, $name ( $($arg),* ) peer = $peer, tag = $tag, comm = $comm, found_nothing = $found);
    };
    (@one $symbol:ident, $call:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:expr, found_nothing = $found:expr) => {
        #[unsafe(no_mangle)]
        /// # Safety
        /// Called by the program as the MPI function of this name, with its arguments.
        pub unsafe extern "C" fn $symbol($($arg: u64),*) -> i32 {
            // Looked up by the compiler: a name the layout does not list does not build.
            const INDEX: u64 = match pmpi::call_index(stringify!($call)) {
                Some(index) => index,
                None => panic!("a wrapped call the layout does not list"),
            };
            let address = next_function!($symbol);
            // SAFETY: `address` is the MPI library's function of the same name, whose C
            // signature takes these arguments in these places and returns an `int`.
            let forward: unsafe extern "C" fn($($arg: u64),*) -> i32 =
                unsafe { std::mem::transmute::<usize, _>(address) };
            let mut call = Call::enter(INDEX, &Args { peer: $peer, tag: $tag, comm: $comm, requests: None });
            // SAFETY: the program's own arguments, passed on unchanged.
            let rc = unsafe { forward($($arg),*) };
            call.found_nothing = crate::found_nothing(rc, $found);
            rc
        }
    };
}

wrap!(MPI_Send / PMPI_Send(buf, count, datatype, dest, tag, comm) peer = Some(dest), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Ssend / PMPI_Ssend(buf, count, datatype, dest, tag, comm) peer = Some(dest), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Recv / PMPI_Recv(buf, count, datatype, source, tag, comm, status) peer = Some(source), tag = Some(tag), comm = Some(comm));
wrap!(MPI_Iprobe / PMPI_Iprobe(source, tag, comm, flag, status) peer = Some(source), tag = Some(tag), comm = Some(comm), found_nothing = |rc| rc == 0 && unsafe { zero(flag) });
wrap!(MPI_Barrier / PMPI_Barrier(comm) peer = None, tag = None, comm = Some(comm));
wrap!(MPI_Bcast / PMPI_Bcast(buf, count, datatype, root, comm) peer = Some(root), tag = None, comm = Some(comm));
wrap!(MPI_Reduce / PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm) peer = Some(root), tag = None, comm = Some(comm));
wrap!(MPI_Allreduce / PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm) peer = None, tag = None, comm = Some(comm));
wrap!(MPI_Finalize / PMPI_Finalize() peer = None, tag = None, comm = None);

/// Whether a call that returned `rc` was a poll that found nothing, as `check` tells.
pub(crate) fn found_nothing(rc: i32, check: impl FnOnce(i32) -> bool) -> bool {
    check(rc)
}

/// Whether the `int` a call wrote through the program's pointer `flag` is 0 (a test or a
/// probe that found nothing).
///
/// # Safety
/// `flag` is the pointer to an `int` the program passed to a call that succeeded.
pub(crate) unsafe fn zero(flag: u64) -> bool {
    // SAFETY: the caller's contract.
    flag != 0 && unsafe { (flag as *const i32).read_unaligned() } == 0
}

/// `MPI_Init_thread` for C programs: forwarded; a program given `MPI_THREAD_MULTIPLE` has
/// the request table used under a lock from then on.
///
/// # Safety
/// Called by the program as `MPI_Init_thread`, with its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Init_thread(
    argc: u64,
    argv: u64,
    required: u64,
    provided: *mut i32,
) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { init_thread(c"MPI_Init_thread", &REAL, argc, argv, required, provided) }
}

/// `PMPI_Init_thread`, which Fortran bindings call: as [`MPI_Init_thread`].
///
/// # Safety
/// Called as `PMPI_Init_thread`, with its arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PMPI_Init_thread(
    argc: u64,
    argv: u64,
    required: u64,
    provided: *mut i32,
) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { init_thread(c"PMPI_Init_thread", &REAL, argc, argv, required, provided) }
}

/// `MPI_THREAD_MULTIPLE`, the same in every MPI ABI strata reads.
const THREAD_MULTIPLE: i32 = 3;

/// # Safety
/// The arguments of `MPI_Init_thread`: `provided` points to an `int`.
unsafe fn init_thread(
    name: &std::ffi::CStr,
    slot: &AtomicUsize,
    argc: u64,
    argv: u64,
    required: u64,
    provided: *mut i32,
) -> i32 {
    let address = abi::function(name, slot, true);
    // SAFETY: the MPI library's function of that name, with the same arguments.
    let forward: unsafe extern "C" fn(u64, u64, u64, *mut i32) -> i32 =
        unsafe { std::mem::transmute(address) };
    // SAFETY: the program's own arguments, passed on unchanged.
    let rc = unsafe { forward(argc, argv, required, provided) };
    // SAFETY: the call succeeded, so it wrote the level at the program's `provided`.
    if rc == 0 && !provided.is_null() && unsafe { provided.read() } == THREAD_MULTIPLE {
        requests::serialise();
        guard::guarded(|| strata_pmpi_state.publish(|s| s.set(word::THREAD_MULTIPLE, 1)));
    }
    rc
}

/// `MPI_Comm_free(MPI_Comm *comm)`: forwarded, then the communicator forgotten (MPICH
/// hands its handle out again).
///
/// # Safety
/// Called by the program as `MPI_Comm_free`, with a pointer to a communicator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut u64) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { comm_free(c"MPI_Comm_free", &REAL, comm) }
}

/// `PMPI_Comm_free`, which Fortran bindings call: as [`MPI_Comm_free`].
///
/// # Safety
/// Called as `PMPI_Comm_free`, with a pointer to a communicator handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn PMPI_Comm_free(comm: *mut u64) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { comm_free(c"PMPI_Comm_free", &REAL, comm) }
}

/// # Safety
/// `comm` points to a communicator handle, as `MPI_Comm_free` takes it.
unsafe fn comm_free(name: &std::ffi::CStr, slot: &AtomicUsize, comm: *mut u64) -> i32 {
    let address = abi::function(name, slot, true);
    // SAFETY: the MPI library's function of that name, which takes the same pointer.
    let forward: unsafe extern "C" fn(*mut u64) -> i32 = unsafe { std::mem::transmute(address) };
    let abi = abi::abi();
    // SAFETY: the program's pointer to its handle, valid for the call: an `int` handle is
    // read as the 4 bytes it is, a pointer handle as 8.
    let handle = unsafe {
        if abi.pointers {
            comm.read_unaligned()
        } else {
            u64::from((comm as *const u32).read_unaligned())
        }
    };
    const INDEX: u64 = match pmpi::call_index("MPI_Comm_free") {
        Some(index) => index,
        None => panic!("MPI_Comm_free is listed"),
    };
    let rc = {
        let _call = Call::enter(
            INDEX,
            &Args {
                comm: Some(handle),
                ..Args::default()
            },
        );
        // SAFETY: the program's own argument, passed on unchanged.
        unsafe { forward(comm) }
    };
    comms::forget(handle);
    rc
}
