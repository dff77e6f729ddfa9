//! The nonblocking calls: those that start a request note what it was started with
//! ([`crate::requests`]), and those that complete requests publish the records of the ones
//! they are passed, then forget the ones they completed.
//!
//! `MPI_Waitall` is polled through the MPI library's `MPI_Testall` (see the crate's doc):
//! a request that completes while others stay pending leaves no trace in the MPI calls the
//! program makes, so only looking again (`MPI_Request_get_status`, which changes nothing)
//! keeps the published records to the requests still pending.

use crate::state::strata_pmpi_state;
use crate::{Args, Call, abi, guard, history, requests, translate, zero};
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};
use strata_pmpi_layout as pmpi;

/// The index of `name` in the layout's calls, for a `const`.
const fn index(name: &str) -> u64 {
    match pmpi::call_index(name) {
        Some(index) => index,
        None => panic!("a wrapped call the layout does not list"),
    }
}

/// The program's request handles, copied before the call (the call may overwrite them with
/// `MPI_REQUEST_NULL`): on the stack for the usual few.
struct Handles {
    inline: [u64; 8],
    heap: Vec<u64>,
    len: usize,
}

impl Handles {
    /// # Safety
    /// `requests` points to `count` request handles.
    unsafe fn copy(count: u64, requests: u64) -> Handles {
        let len = usize::try_from(abi::int(count).max(0)).unwrap_or(0);
        let mut h = Handles {
            inline: [0; 8],
            heap: Vec::new(),
            len,
        };
        if len > h.inline.len() {
            h.heap = vec![0; len];
        }
        let abi = abi::abi();
        let slots = h.slots_mut();
        for (i, slot) in slots.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *slot = unsafe { abi.request(requests, i) };
        }
        h
    }

    fn slots_mut(&mut self) -> &mut [u64] {
        if self.len > self.inline.len() {
            &mut self.heap
        } else {
            &mut self.inline[..self.len]
        }
    }

    fn slots(&self) -> &[u64] {
        if self.len > self.inline.len() {
            &self.heap
        } else {
            &self.inline[..self.len]
        }
    }
}

/// Forgets the requests of `before` whose handle the call set to `MPI_REQUEST_NULL`
/// (completed, or freed): a persistent request, left inactive, stays.
///
/// # Safety
/// `requests` points to as many request handles as `before` holds.
unsafe fn forget_completed(before: &Handles, requests: u64) {
    guard::guarded(|| {
        let abi = abi::abi();
        requests::forget(
            before
                .slots()
                .iter()
                .enumerate()
                .filter_map(|(i, &handle)| {
                    // SAFETY: the caller's contract.
                    let now = unsafe { abi.request(requests, i) };
                    (handle != abi.request_null && now == abi.request_null).then_some(handle)
                }),
        );
    });
}

/// Wrappers of a call that starts a request, or makes a persistent one (`MPI_Send_init`):
/// `peer`, `tag`, `comm` and `request` name what the request's record keeps and where the
/// call writes the new handle.
macro_rules! wrap_start {
    ($name:ident / $profiling:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:ident, request = $request:ident) => {
        wrap_start!(@one $name, $name ( $($arg),* ) peer = $peer, tag = $tag, comm = $comm, request = $request);
        wrap_start!(@one $profiling, $name ( $($arg),* ) peer = $peer, tag = $tag, comm = $comm, request = $request);
    };
    (@one $symbol:ident, $call:ident ( $($arg:ident),* ) peer = $peer:expr, tag = $tag:expr, comm = $comm:ident, request = $request:ident) => {
        #[allow(non_snake_case)]
        mod $symbol {
            use super::*;

            /// The wrapper: the call site, then the program's arguments.
            ///
            /// # Safety
            /// Called by the trampoline of this name, with the program's arguments.
            #[allow(clippy::too_many_arguments)]
            pub(super) unsafe extern "C" fn body(site: u64, $($arg: u64),*) -> i32 {
                const INDEX: u64 = index(stringify!($call));
                let address = next_function!($symbol);
                // SAFETY: the MPI library's function of the same name, whose C signature
                // takes these arguments in these places and returns an `int`.
                let forward: unsafe extern "C" fn($($arg: u64),*) -> i32 =
                    unsafe { std::mem::transmute::<usize, _>(address) };
                // Not published as the call the rank is in (it returns at once, and the
                // state's writes would double the wrapper's cost): counted, in the history,
                // and its request noted.
                let mut call = Call::quiet(INDEX, site);
                // SAFETY: the program's own arguments, passed on unchanged.
                let rc = unsafe { forward($($arg),*) };
                if !call.outermost {
                    return rc;
                }
                guard::guarded(|| {
                    let t = translate(&Args {
                        peer: $peer,
                        tag: $tag,
                        comm: Some($comm),
                        requests: None,
                    });
                    call.peer_tag = history::peer_tag(t.peer, t.tag);
                    if rc != 0 {
                        return;
                    }
                    // SAFETY: the call succeeded, so it wrote the new request's handle at
                    // the program's `request`.
                    let handle = unsafe { abi::abi().request($request, 0) };
                    let described = t.described.unwrap_or(crate::comms::UNKNOWN);
                    requests::started(handle, requests::record(INDEX, t.peer, t.tag, described));
                });
                rc
            }
        }
        trampoline!($symbol => $symbol::body);
    };
}

wrap_start!(MPI_Isend / PMPI_Isend(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Issend / PMPI_Issend(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Ibsend / PMPI_Ibsend(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Irsend / PMPI_Irsend(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Irecv / PMPI_Irecv(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
// Persistent requests: made inactive, started by MPI_Start, left inactive (not freed) by the
// call that completes them, so their records stay until `MPI_Request_free`.
wrap_start!(MPI_Send_init / PMPI_Send_init(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Ssend_init / PMPI_Ssend_init(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Bsend_init / PMPI_Bsend_init(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Rsend_init / PMPI_Rsend_init(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
wrap_start!(MPI_Recv_init / PMPI_Recv_init(buf, count, datatype, peer, tag, comm, request) peer = Some(peer), tag = Some(tag), comm = comm, request = request);
// Nonblocking collectives: their records name the collective, its root and communicator.
wrap_start!(MPI_Ibarrier / PMPI_Ibarrier(comm, request) peer = None, tag = None, comm = comm, request = request);
wrap_start!(MPI_Ibcast / PMPI_Ibcast(buf, count, datatype, root, comm, request) peer = Some(root), tag = None, comm = comm, request = request);
wrap_start!(MPI_Ireduce / PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request) peer = Some(root), tag = None, comm = comm, request = request);
wrap_start!(MPI_Iallreduce / PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request) peer = None, tag = None, comm = comm, request = request);

/// Wrappers of a call that completes (or frees) requests and returns with those it
/// completed set to `MPI_REQUEST_NULL`. `count` and `requests` name the parameters that
/// hold the count and the array (a single request is a count of one); `publish` says
/// whether the call publishes its requests' records (a wait or a test does; freeing does
/// not wait).
macro_rules! wrap_complete {
    ($name:ident / $profiling:ident ( $($arg:ident),* ) count = $count:expr, requests = $requests:ident, publish = $publish:expr, found_nothing = $found:expr) => {
        wrap_complete!(@one $name, $name ( $($arg),* ) count = $count, requests = $requests, publish = $publish, found_nothing = $found);
        wrap_complete!(@one $profiling, $name ( $($arg),* ) count = $count, requests = $requests, publish = $publish, found_nothing = $found);
    };
    (@one $symbol:ident, $call:ident ( $($arg:ident),* ) count = $count:expr, requests = $requests:ident, publish = $publish:expr, found_nothing = $found:expr) => {
        #[allow(non_snake_case)]
        mod $symbol {
            use super::*;

            /// The wrapper: the call site, then the program's arguments.
            ///
            /// # Safety
            /// Called by the trampoline of this name, with the program's arguments.
            pub(super) unsafe extern "C" fn body(site: u64, $($arg: u64),*) -> i32 {
                const INDEX: u64 = index(stringify!($call));
                let address = next_function!($symbol);
                // SAFETY: the MPI library's function of the same name, whose C signature
                // takes these arguments in these places and returns an `int`.
                let forward: unsafe extern "C" fn($($arg: u64),*) -> i32 =
                    unsafe { std::mem::transmute::<usize, _>(address) };
                // SAFETY: the program passes `count` handles at `requests`, as the call
                // takes.
                let before = unsafe { Handles::copy($count, $requests) };
                let rc = {
                    let args = Args {
                        requests: $publish.then_some(before.slots()),
                        ..Args::default()
                    };
                    let mut call = Call::enter(INDEX, site, &args);
                    // SAFETY: the program's own arguments, passed on unchanged.
                    let rc = unsafe { forward($($arg),*) };
                    call.found_nothing = crate::found_nothing(rc, $found);
                    rc
                };
                // SAFETY: the same array, after the call.
                unsafe { forget_completed(&before, $requests) };
                rc
            }
        }
        trampoline!($symbol => $symbol::body);
    };
}

// A test found nothing when it sets its flag to 0 (`MPI_Testsome`: an outcount of 0).
// SAFETY (each `zero`): the flag or outcount pointer of a call that succeeded.
wrap_complete!(MPI_Wait / PMPI_Wait(request, status) count = 1, requests = request, publish = true, found_nothing = |_| false);
wrap_complete!(MPI_Waitany / PMPI_Waitany(count, requests, index, status) count = count, requests = requests, publish = true, found_nothing = |_| false);
wrap_complete!(MPI_Waitsome / PMPI_Waitsome(count, requests, outcount, indices, statuses) count = count, requests = requests, publish = true, found_nothing = |_| false);
wrap_complete!(MPI_Test / PMPI_Test(request, flag, status) count = 1, requests = request, publish = true, found_nothing = |rc| rc == 0 && unsafe { zero(flag) });
wrap_complete!(MPI_Testall / PMPI_Testall(count, requests, flag, statuses) count = count, requests = requests, publish = true, found_nothing = |rc| rc == 0 && unsafe { zero(flag) });
wrap_complete!(MPI_Testany / PMPI_Testany(count, requests, index, flag, status) count = count, requests = requests, publish = true, found_nothing = |rc| rc == 0 && unsafe { zero(flag) });
wrap_complete!(MPI_Testsome / PMPI_Testsome(count, requests, outcount, indices, statuses) count = count, requests = requests, publish = true, found_nothing = |rc| rc == 0 && unsafe { zero(outcount) });
wrap_complete!(MPI_Request_free / PMPI_Request_free(request) count = 1, requests = request, publish = false, found_nothing = |_| false);

// `MPI_Waitall(count, requests, statuses)` for C programs, and `PMPI_Waitall`, which Fortran
// bindings call: both made of the MPI library's `PMPI_Testall`.
trampoline!(MPI_Waitall => waitall);
trampoline!(PMPI_Waitall => waitall);

/// Testall polls between two looks at the clock.
const POLLS: usize = 16;
/// The first look again at the pending requests, and the longest time between two.
const FIRST_LOOK: Duration = Duration::from_millis(1);
const LONGEST_LOOK: Duration = Duration::from_millis(64);

/// The wrapper of `MPI_Waitall`: the call site, then the program's arguments.
///
/// # Safety
/// Called by a waitall trampoline: `requests` points to `count` request handles and
/// `statuses` is what `MPI_Waitall` takes for them.
unsafe extern "C" fn waitall(site: u64, count: u64, requests: u64, statuses: u64) -> i32 {
    static TESTALL: AtomicUsize = AtomicUsize::new(0);
    const INDEX: u64 = index("MPI_Waitall");
    // The MPI library's own, below this one (this library wraps `PMPI_Testall` too).
    let address = abi::function(c"PMPI_Testall", &TESTALL, true);
    // SAFETY: `int PMPI_Testall(int, MPI_Request *, int *flag, MPI_Status *)`, the flag
    // an `int` the library writes through its pointer.
    let testall: unsafe extern "C" fn(u64, u64, *mut i32, u64) -> i32 =
        unsafe { std::mem::transmute::<usize, _>(address) };
    // SAFETY: the caller's contract.
    let before = unsafe { Handles::copy(count, requests) };
    let mut flag = 0i32;
    // SAFETY: the program's arguments, and a flag of our own: `MPI_Testall` completes
    // all of them (as `MPI_Waitall` would) or none, leaving them as they were.
    let poll = |flag: &mut i32| unsafe { testall(count, requests, flag, statuses) };
    // A waitall that completes at once is one `MPI_Testall`, counted but not published
    // (publishing its requests would cost more than the call).
    let mut call = Call::quiet(INDEX, site);
    let mut rc = poll(&mut flag);
    if rc == 0 && flag == 0 {
        call.publish(&Args {
            requests: Some(before.slots()),
            ..Args::default()
        });
        let (mut interval, mut look) = (FIRST_LOOK, None);
        'wait: loop {
            for _ in 0..POLLS {
                rc = poll(&mut flag);
                if rc != 0 || flag != 0 {
                    break 'wait;
                }
            }
            let now = Instant::now();
            let look = look.get_or_insert(now + FIRST_LOOK);
            if now >= *look {
                if call.outermost {
                    guard::guarded(|| publish_pending(before.slots()));
                }
                interval = (interval * 2).min(LONGEST_LOOK);
                *look = now + interval;
            }
        }
    }
    drop(call);
    // SAFETY: the same array, after the call.
    unsafe { forget_completed(&before, requests) };
    rc
}

/// Publishes the records of the requests of `handles` still pending, asked of the MPI
/// library with `MPI_Request_get_status` (which neither completes nor frees them).
fn publish_pending(handles: &[u64]) {
    static GET_STATUS: AtomicUsize = AtomicUsize::new(0);
    let address = abi::function(c"PMPI_Request_get_status", &GET_STATUS, false);
    // SAFETY: `int PMPI_Request_get_status(MPI_Request, int *flag, MPI_Status *)`, the
    // request a handle taken as a word.
    let get_status: unsafe extern "C" fn(u64, *mut i32, *mut u64) -> i32 =
        unsafe { std::mem::transmute::<usize, _>(address) };
    let abi = abi::abi();
    let mut pending = Vec::with_capacity(handles.len());
    for &handle in handles {
        if handle == abi.request_null {
            continue;
        }
        let mut flag = 0i32;
        // Room for any ABI's MPI_Status (20 to 32 bytes).
        let mut status = [0u64; 8];
        // SAFETY: a request of the program's, still allocated (the Testall that did not
        // complete them all left every one as it was), and our own flag and status.
        let rc = unsafe { get_status(handle, &mut flag, status.as_mut_ptr()) };
        if rc != 0 || flag == 0 {
            pending.push(handle);
        }
    }
    strata_pmpi_state.publish(|s| requests::publish(s, &pending, abi.request_null));
}
