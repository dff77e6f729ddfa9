//! The MPI library below this one: its functions (looked up once each) and the values its
//! ABI gives the handles and constants the state translates.
//!
//! Open MPI's handles are pointers to its objects (`MPI_COMM_WORLD` is
//! `&ompi_mpi_comm_world`); MPICH's and Intel MPI's are `int`s with fixed values
//! (`0x44000000`). Which one is loaded is told by Open MPI's world communicator symbol.

use std::ffi::{CStr, c_char, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

// glibc's dynamic linker interface (in libc.so.6 since glibc 2.34): declared here, not
// taken from the libc crate, so that the library builds with rustc alone (frontend/build.rs).
unsafe extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}
/// Look a symbol up in the objects loaded after the caller's.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
/// Look a symbol up in the global scope.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

/// The constants of the loaded MPI's ABI.
#[derive(Debug)]
pub(crate) struct Abi {
    /// Handles are pointers (Open MPI), else `int`s.
    pub pointers: bool,
    pub comm_world: u64,
    pub comm_self: u64,
    pub comm_null: u64,
    pub request_null: u64,
    pub any_source: i32,
    pub proc_null: i32,
}

/// The loaded MPI's ABI, decided at the first wrapped call.
pub(crate) fn abi() -> &'static Abi {
    static ABI: OnceLock<Abi> = OnceLock::new();
    ABI.get_or_init(|| {
        let symbol = |name: &CStr| {
            // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a
            // symbol up.
            unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) as u64 }
        };
        let world = symbol(c"ompi_mpi_comm_world");
        if world != 0 {
            Abi {
                pointers: true,
                comm_world: world,
                comm_self: symbol(c"ompi_mpi_comm_self"),
                comm_null: symbol(c"ompi_mpi_comm_null"),
                request_null: symbol(c"ompi_request_null"),
                any_source: -1,
                proc_null: -2,
            }
        } else {
            Abi {
                pointers: false,
                comm_world: 0x4400_0000,
                comm_self: 0x4400_0001,
                comm_null: 0x0400_0000,
                request_null: 0x2c00_0000,
                any_source: -2,
                proc_null: -1,
            }
        }
    })
}

impl Abi {
    /// A handle argument received as a 64-bit word: an `int` handle is its low 32 bits
    /// (the upper ones are whatever the caller left).
    pub fn handle(&self, raw: u64) -> u64 {
        if self.pointers {
            raw
        } else {
            raw as u32 as u64
        }
    }

    /// Request handle `i` of the program's array `requests` (8 bytes each where handles are
    /// pointers, 4 where they are `int`s).
    ///
    /// # Safety
    /// `requests` points to at least `i + 1` request handles, as an MPI call taking an
    /// array of requests is passed.
    pub unsafe fn request(&self, requests: u64, i: usize) -> u64 {
        // SAFETY: the caller's contract; handles may sit unaligned in a Fortran array.
        unsafe {
            if self.pointers {
                (requests as *const u64).add(i).read_unaligned()
            } else {
                u64::from((requests as *const u32).add(i).read_unaligned())
            }
        }
    }
}

/// An `int` argument received as a 64-bit word: its low 32 bits, sign-extended.
pub(crate) fn int(raw: u64) -> i32 {
    raw as u32 as i32
}

/// The MPI library's own function `name` (a `PMPI_` name, or the `MPI_` one a wrapper
/// forwards to), looked up once into `slot`. Called only from a wrapper, that is, by a
/// program that calls MPI: if no library below this one defines it, the program could not
/// run without this library either, and it stops saying so.
#[inline]
pub(crate) fn function(name: &CStr, slot: &AtomicUsize, next: bool) -> usize {
    let known = slot.load(Ordering::Relaxed);
    if known != 0 {
        return known;
    }
    look_up(name, slot, next)
}

/// [`function`]'s first call: out of line, so that the known address is a load.
#[cold]
#[inline(never)]
fn look_up(name: &CStr, slot: &AtomicUsize, next: bool) -> usize {
    let scope = if next { RTLD_NEXT } else { RTLD_DEFAULT };
    // SAFETY: dlsym with a pseudo-handle and a NUL-terminated name only looks a symbol up
    // (RTLD_NEXT: in the objects loaded after this one).
    let found = unsafe { dlsym(scope, name.as_ptr()) } as usize;
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
