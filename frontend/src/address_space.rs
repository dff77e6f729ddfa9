//! Living within an address-space limit (`ulimit -v`, `RLIMIT_AS`).
//!
//! glibc gives each thread that allocates its own malloc arena and reserves 64 MiB of
//! address space for each (on 64-bit machines), used or not. A strata process has a handful
//! of threads (the async runtime's workers, capture threads), so it reserved about 380 MiB
//! while using under 50 MiB, and under `ulimit -v 200000` a daemon aborted with "memory
//! allocation of 4 bytes failed". Under a limit, every thread shares one arena instead
//! (a little lock contention; no address space wasted). Below [`FLOOR_KIB`] strata cannot
//! start its runtime at all, so it says so at once instead of aborting later.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::exit::Exit;
use crate::failure::Failure;

/// The soft limit in KiB, once [`fit`] has seen one (0: none).
static LIMIT_KIB: AtomicU64 = AtomicU64::new(0);

/// The smallest limit strata starts under: its binary, one arena, its threads' stacks and
/// the runtime. Measured (`docs/RELIABILITY.md`): a session on a small job works under
/// 100 MiB; large debug information needs more.
pub const FLOOR_KIB: u64 = 100 * 1024;

/// Adapts the allocator to the address-space limit, if there is one; fails when the limit
/// is below [`FLOOR_KIB`].
#[allow(unsafe_code)] // getrlimit and mallopt, as documented above each block
pub fn fit() -> Result<(), Failure> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the limit into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0
        || limit.rlim_cur == libc::RLIM_INFINITY
    {
        return Ok(());
    }
    let soft = limit.rlim_cur;
    // SAFETY: mallopt only sets a tunable of glibc's allocator; it is called before any
    // thread of ours exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
    let kib = soft / 1024;
    LIMIT_KIB.store(kib, Ordering::Relaxed);
    if kib < FLOOR_KIB {
        return Err(Failure::new(
            Exit::Internal,
            format!(
                "the address-space limit (ulimit -v) is {kib} KiB: strata needs at least \
                 {FLOOR_KIB} KiB; raise it (ulimit -v {FLOOR_KIB}, or unlimited)"
            ),
        ));
    }
    Ok(())
}

/// The system allocator, which names the address-space limit when an allocation fails
/// under one. Rust then aborts with "memory allocation of N bytes failed", which says
/// nothing of why; this line before it says what to change. Written without allocating.
#[derive(Debug)]
pub struct NamesTheLimit;

#[allow(unsafe_code)] // a GlobalAlloc forwarding to System, as its contract requires
// SAFETY: every method forwards to `System` with the caller's arguments unchanged.
unsafe impl GlobalAlloc for NamesTheLimit {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, forwarded.
        let p = unsafe { System.alloc(layout) };
        if p.is_null() {
            say_out_of_memory(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, forwarded.
        let p = unsafe { System.alloc_zeroed(layout) };
        if p.is_null() {
            say_out_of_memory(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's pointer and layout, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's arguments, forwarded.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if p.is_null() {
            say_out_of_memory(new_size);
        }
        p
    }
}

/// One line on stderr, formatted on the stack (the heap just failed).
fn say_out_of_memory(bytes: usize) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let limit = LIMIT_KIB.load(Ordering::Relaxed);
    // No limit of ours to name (Rust's own message says the rest), or said already by
    // another thread that failed at the same time.
    if limit == 0 || SAID.swap(true, Ordering::Relaxed) {
        return;
    }
    let mut line = StackLine::default();
    let _ = std::fmt::Write::write_fmt(
        &mut line,
        format_args!(
            "strata: out of memory: {bytes} bytes could not be allocated under the \
             address-space limit of {limit} KiB (ulimit -v); raise it, or remove it\n"
        ),
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), line.text());
}

/// A line of text in a fixed buffer (truncated when longer).
struct StackLine {
    buf: [u8; 256],
    len: usize,
}

impl Default for StackLine {
    fn default() -> Self {
        StackLine {
            buf: [0; 256],
            len: 0,
        }
    }
}

impl StackLine {
    fn text(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for StackLine {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.buf.len() - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}
