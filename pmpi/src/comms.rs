//! Communicators as the state records them: the world, self, or the world ranks of their
//! members, asked of the MPI library once per communicator and kept until the program
//! frees it (`MPI_Comm_free`, whose handle MPICH hands out again).

use crate::abi::{self, Abi};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use strata_pmpi_layout::comm;

/// What the state says of a communicator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Described {
    pub kind: u64,
    pub size: u64,
    /// The address of `size` world ranks (with [`comm::MEMBERS`]).
    pub members: u64,
}

pub(crate) const WORLD: Described = Described {
    kind: comm::WORLD,
    size: 0,
    members: 0,
};
const SELF: Described = Described {
    kind: comm::SELF,
    size: 0,
    members: 0,
};
pub(crate) const UNKNOWN: Described = Described {
    kind: comm::UNKNOWN,
    size: 0,
    members: 0,
};

/// A communicator's members as world ranks; `None` when they could not be asked.
type Members = Option<Box<[u32]>>;

/// The communicators seen so far, by handle, with their members. The arrays stay put
/// while their entry lives: the state points into them.
static KNOWN: Mutex<Option<HashMap<u64, Members>>> = Mutex::new(None);

/// What the state says of the communicator `handle` (already masked to its ABI's width).
pub(crate) fn describe(handle: u64) -> Described {
    let abi = abi::abi();
    if handle == abi.comm_world {
        return WORLD;
    }
    if handle == abi.comm_self {
        return SELF;
    }
    if handle == abi.comm_null {
        return UNKNOWN;
    }
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    let members = known
        .get_or_insert_with(HashMap::new)
        .entry(handle)
        .or_insert_with(|| members(abi, handle));
    match members {
        Some(m) => Described {
            kind: comm::MEMBERS,
            size: m.len() as u64,
            members: m.as_ptr() as u64,
        },
        None => UNKNOWN,
    }
}

/// Forgets the communicator `handle` (freed: the handle may name another one later).
pub(crate) fn forget(handle: u64) {
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(map) = known.as_mut() {
        map.remove(&handle);
    }
}

/// The world ranks of the members of the intracommunicator `handle`, asked of the MPI
/// library; `None` for an intercommunicator (its peers are in the remote group) or when a
/// question fails.
fn members(abi: &Abi, handle: u64) -> Members {
    type TestInter = unsafe extern "C" fn(u64, *mut i32) -> i32;
    type Size = unsafe extern "C" fn(u64, *mut i32) -> i32;
    type Group = unsafe extern "C" fn(u64, *mut u64) -> i32;
    type Translate = unsafe extern "C" fn(u64, i32, *const i32, u64, *mut i32) -> i32;
    type GroupFree = unsafe extern "C" fn(*mut u64) -> i32;
    static TEST_INTER: AtomicUsize = AtomicUsize::new(0);
    static SIZE: AtomicUsize = AtomicUsize::new(0);
    static GROUP: AtomicUsize = AtomicUsize::new(0);
    static TRANSLATE: AtomicUsize = AtomicUsize::new(0);
    static GROUP_FREE: AtomicUsize = AtomicUsize::new(0);
    // SAFETY (the five transmutes): each address is the MPI library's function of that
    // name, whose C signature is the type's once handles are taken as 64-bit words (an
    // `int` handle is read from the low half of its register; an `int` handle written
    // through a pointer to a zeroed word is that word's value).
    let (test_inter, size, group, translate, group_free) = unsafe {
        (
            std::mem::transmute::<usize, TestInter>(abi::function(
                c"PMPI_Comm_test_inter",
                &TEST_INTER,
                false,
            )),
            std::mem::transmute::<usize, Size>(abi::function(c"PMPI_Comm_size", &SIZE, false)),
            std::mem::transmute::<usize, Group>(abi::function(c"PMPI_Comm_group", &GROUP, false)),
            std::mem::transmute::<usize, Translate>(abi::function(
                c"PMPI_Group_translate_ranks",
                &TRANSLATE,
                false,
            )),
            std::mem::transmute::<usize, GroupFree>(abi::function(
                c"PMPI_Group_free",
                &GROUP_FREE,
                false,
            )),
        )
    };
    let (mut inter, mut n) = (0i32, 0i32);
    // SAFETY: a valid communicator (the program passed it to an MPI call) and pointers to
    // local integers.
    if unsafe { test_inter(handle, &mut inter) } != 0 || inter != 0 {
        return None;
    }
    // SAFETY: as above.
    if unsafe { size(handle, &mut n) } != 0 || n <= 0 {
        return None;
    }
    let (mut local, mut world) = (0u64, 0u64);
    // SAFETY: valid communicators and pointers to zeroed words for the groups.
    if unsafe { group(handle, &mut local) } != 0 {
        return None;
    }
    // SAFETY: as above.
    if unsafe { group(abi.comm_world, &mut world) } != 0 {
        // SAFETY: the group just made.
        unsafe { group_free(&mut local) };
        return None;
    }
    let ranks: Vec<i32> = (0..n).collect();
    let mut out = vec![-1i32; n as usize];
    // SAFETY: two valid groups, and `n` ranks in and `n` out.
    let rc = unsafe { translate(local, n, ranks.as_ptr(), world, out.as_mut_ptr()) };
    // SAFETY: the groups made above, freed once each.
    unsafe {
        group_free(&mut local);
        group_free(&mut world);
    }
    if rc != 0 || out.iter().any(|&r| r < 0) {
        return None;
    }
    Some(out.into_iter().map(|r| r as u32).collect())
}
