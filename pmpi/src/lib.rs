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
//! what they started, the persistent `MPI_Send_init` (and its `Ssend`, `Bsend`, `Rsend`
//! forms) and `MPI_Recv_init` what they made, and `MPI_Ibarrier`, `MPI_Ibcast`,
//! `MPI_Ireduce` and `MPI_Iallreduce` the collective; the completion calls (`MPI_Wait`, `MPI_Waitall`, `MPI_Waitany`,
//! `MPI_Waitsome` and the four `MPI_Test` calls) publish the records of the requests they
//! are passed. `MPI_Waitall` is the one call whose behaviour the library shapes: it is made
//! of the MPI library's `MPI_Testall`, polled (as the MPI libraries' own waits poll), so
//! that a wait that lasts can publish the requests still pending (looked at with
//! `MPI_Request_get_status` after 1, 2, 4 ... up to every 64 ms); a waitall that completes
//! at once is one `MPI_Testall`.
//!
//! History ([`history`]): each outermost call is counted at its call site (the return
//! address the program called it from, which an exported trampoline passes to the wrapper),
//! the transition from the thread's previous call is timed, and the call joins a ring of the
//! last calls. A Fortran program's calls are counted at the site in the MPI library's
//! Fortran binding that called `PMPI_`: one site per MPI function.
//!
//! Not yet: more than one thread in MPI at a time (`MPI_THREAD_MULTIPLE`: the last thread
//! to enter is recorded; counts of two threads at once may lose one).
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

/// Exports `$symbol`, a trampoline that calls `$body(site, ...)`: the return address it was
/// called with (the program's call site), then the program's arguments as they were, up to
/// eight (x86-64 System V: six in registers, the others on the stack). The body returns
/// the call's `int`. Rust has no stable way for a function to know its return address;
/// this is the one piece written in assembly, with call frame information so that every
/// unwinder (strata's own, gdb's) walks through it.
macro_rules! trampoline {
    ($symbol:ident => $body:path) => {
        /// The MPI function of this name: a trampoline into its wrapper (see the crate's
        /// doc); it takes that function's arguments.
        ///
        /// # Safety
        /// Called by the program as the MPI function of this name, with its arguments.
        #[unsafe(naked)]
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $symbol() -> i32 {
            core::arch::naked_asm!(
                ".cfi_startproc",
                "push rbp",
                ".cfi_adjust_cfa_offset 8",
                ".cfi_offset rbp, -16",
                "mov rbp, rsp",
                ".cfi_def_cfa_register rbp",
                // Three stack arguments for the body, the stack kept 16-byte aligned: the
                // program's sixth (it moves to the stack), seventh and eighth (read from the
                // caller's frame, which is there whatever the function's arity).
                "sub rsp, 32",
                "mov rax, [rbp + 24]",
                "mov [rsp + 16], rax",
                "mov rax, [rbp + 16]",
                "mov [rsp + 8], rax",
                "mov [rsp], r9",
                "mov r9, r8",
                "mov r8, rcx",
                "mov rcx, rdx",
                "mov rdx, rsi",
                "mov rsi, rdi",
                "mov rdi, [rbp + 8]",
                "call {body}",
                "leave",
                ".cfi_def_cfa rsp, 8",
                ".cfi_restore rbp",
                "ret",
                ".cfi_endproc",
                body = sym $body,
            )
        }
    };
}

pub mod abi;
pub mod comms;
pub mod guard;
pub mod history;
pub mod nonblocking;
pub mod requests;
pub mod state;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use strata_pmpi_layout::{self as pmpi, NONE, comm, word};

use state::strata_pmpi_state;

thread_local! {
    /// Under `MPI_THREAD_MULTIPLE`: how deep this thread is in wrapped calls (only the
    /// outermost one is the program's), and its previous call.
    static THREAD: history::Thread = const { history::Thread::new() };
}

/// Runs `f` on the calling thread's [`history::Thread`]: its own under
/// `MPI_THREAD_MULTIPLE`, else the one shared by the threads that take turns in MPI.
fn with_thread<R>(f: impl FnOnce(&history::Thread) -> R) -> R {
    if requests::multiple() {
        THREAD.with(f)
    } else {
        f(&history::SHARED)
    }
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

/// A call being made: noted in the history when made, and completed when dropped; the
/// state says it is the call the rank is in once [`Call::publish`]ed.
pub(crate) struct Call {
    pub outermost: bool,
    /// The call was a poll that found nothing (counted in [`word::FOUND_NOTHING`]).
    pub found_nothing: bool,
    /// Its peer and tag for the history's event (`history::peer_tag`).
    pub peer_tag: u64,
    index: u64,
    published: bool,
    /// `None` in a nested call, or when recording stopped.
    entry: Option<history::Entry>,
}

impl Call {
    /// A call from the call site `site` (its return address), published with its `args`.
    pub(crate) fn enter(index: u64, site: u64, args: &Args) -> Call {
        Call::begin(index, site, Some(args))
    }

    /// A call counted and noted in the history, but not published as the call the rank
    /// is in (one that returns at once, whose state writes would double its cost).
    pub(crate) fn quiet(index: u64, site: u64) -> Call {
        Call::begin(index, site, None)
    }

    fn begin(index: u64, site: u64, args: Option<&Args>) -> Call {
        let (depth, previous) = with_thread(history::Thread::enter);
        let mut call = Call {
            outermost: depth == 0,
            found_nothing: false,
            peer_tag: history::peer_tag(NONE, NONE),
            index,
            published: false,
            entry: None,
        };
        if call.outermost {
            // One guarded step for the history and the state.
            guard::guarded(|| {
                let entry = history::entered(index, site, previous);
                call.entry = Some(entry);
                if let Some(args) = args {
                    call.peer_tag = record(index, entry.at, args);
                    call.published = true;
                }
            });
        }
        call
    }

    /// Publishes the call as the one the rank is in.
    pub(crate) fn publish(&mut self, args: &Args) {
        let Some(entry) = self.entry.filter(|_| self.outermost && !self.published) else {
            return;
        };
        let (index, mut peer_tag) = (self.index, self.peer_tag);
        guard::guarded(|| peer_tag = record(index, entry.at, args));
        self.peer_tag = peer_tag;
        self.published = true;
    }
}

/// Publishes the call a rank enters; returns its peer and tag as the history's event word.
fn record(index: u64, entered_at: u64, args: &Args) -> u64 {
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
        s.set(word::ENTERED_AT, entered_at);
        match args.requests {
            Some(handles) => requests::publish(s, handles, abi::abi().request_null),
            None => s.set(word::REQUESTS, 0),
        }
        s.add(word::ENTERED, 1);
    });
    history::peer_tag(t.peer, t.tag)
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.outermost {
            with_thread(|t| t.leave(None));
            return;
        }
        let mut previous = None;
        guard::guarded(|| {
            if self.published {
                strata_pmpi_state.publish(|s| {
                    s.set(word::CALL, 0);
                    s.add(word::COMPLETED, 1);
                    if self.found_nothing {
                        s.add(word::FOUND_NOTHING, 1);
                    }
                });
            } else {
                strata_pmpi_state.add(word::ENTERED, 1);
                strata_pmpi_state.add(word::COMPLETED, 1);
                if self.found_nothing {
                    strata_pmpi_state.add(word::FOUND_NOTHING, 1);
                }
            }
            if let Some(entry) = self.entry {
                previous = Some(history::returned(
                    self.index,
                    entry,
                    self.found_nothing,
                    self.peer_tag,
                ));
            }
        });
        with_thread(|t| t.leave(previous));
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
        #[allow(non_snake_case)]
        mod $symbol {
            use super::*;

            /// The wrapper: the call site, then the program's arguments.
            ///
            /// # Safety
            /// Called by the trampoline of this name, with the program's arguments.
            pub(super) unsafe extern "C" fn body(site: u64, $($arg: u64),*) -> i32 {
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
                let mut call = Call::enter(INDEX, site, &Args { peer: $peer, tag: $tag, comm: $comm, requests: None });
                // SAFETY: the program's own arguments, passed on unchanged.
                let rc = unsafe { forward($($arg),*) };
                call.found_nothing = crate::found_nothing(rc, $found);
                rc
            }
        }
        trampoline!($symbol => $symbol::body);
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
wrap!(MPI_Start / PMPI_Start(request) peer = None, tag = None, comm = None);
wrap!(MPI_Startall / PMPI_Startall(count, requests) peer = None, tag = None, comm = None);

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

trampoline!(MPI_Comm_free => comm_free_c);
trampoline!(PMPI_Comm_free => comm_free_fortran);

/// `MPI_Comm_free(MPI_Comm *comm)`: forwarded, then the communicator forgotten (MPICH
/// hands its handle out again).
///
/// # Safety
/// Called by the `MPI_Comm_free` trampoline, with a pointer to a communicator handle.
unsafe extern "C" fn comm_free_c(site: u64, comm: *mut u64) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { comm_free(c"MPI_Comm_free", &REAL, site, comm) }
}

/// `PMPI_Comm_free`, which Fortran bindings call: as `MPI_Comm_free`.
///
/// # Safety
/// Called by the `PMPI_Comm_free` trampoline, with a pointer to a communicator handle.
unsafe extern "C" fn comm_free_fortran(site: u64, comm: *mut u64) -> i32 {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    // SAFETY: the caller's contract, passed on.
    unsafe { comm_free(c"PMPI_Comm_free", &REAL, site, comm) }
}

/// # Safety
/// `comm` points to a communicator handle, as `MPI_Comm_free` takes it.
unsafe fn comm_free(name: &std::ffi::CStr, slot: &AtomicUsize, site: u64, comm: *mut u64) -> i32 {
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
            site,
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
