//! What is MPI in a stack: the one definition every part of strata uses.
//!
//! A frame is MPI's when its code is in an MPI library ([`is_mpi_library`], by the file's
//! name), and the *call* a stack is in is named by its outermost MPI frame: the program
//! called it; any deeper MPI name is the library calling itself. That call is read in every
//! spelling a library or compiler gives it and named by its C binding ([`call_named`]):
//! `PMPI_Recv` (the profiling name Open MPI and MPICH alias `MPI_Recv` to), the Fortran
//! bindings `mpi_recv_`, `mpi_recv__`, `MPI_RECV`, `mpi_recv_f08`, Open MPI's `ompi_recv_f`,
//! and the internals some entries reach by a tail call, so that their entry frame is not on
//! the stack (Open MPI's `PMPI_Finalize` jumps to `ompi_mpi_finalize`). A stripped library's
//! entry that jumps into unnamed internals is named by the daemon from the caller's call
//! instruction, as a frame of its own ([`crate::CodeFrame::is_recovered_call`]).
//!
//! The MPI runtime's own threads (progress engines, event loops) are told from the
//! program's by the library their first function is in ([`is_runtime_library`],
//! [`crate::view::runtime_threads`]).
//!
//! "Cut below MPI" and the canonical names of the views ([`mod@crate::view`]), `strata watch`'s
//! "inside MPI", the progress order and the verdict all ask this module, so a new library
//! (another binding's spelling, another stand-in) means widening this module only.

use serde::Serialize;

/// What an MPI call does, as far as who waits for whom.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// Every member of a communicator takes part (`MPI_Allreduce`, `MPI_Comm_split`, the
    /// non-blocking `MPI_Ibarrier`, ...).
    Collective,
    /// A message between two ranks (`MPI_Send`, `MPI_Recv`, `MPI_Probe`, `MPI_Isend`, ...).
    PointToPoint,
    /// Waiting for or testing requests (`MPI_Wait`, `MPI_Waitall`, `MPI_Test`, ...).
    Completion,
    /// One-sided communication and its synchronisation (`MPI_Win_fence`, `MPI_Win_lock`,
    /// `MPI_Put`, ...).
    OneSided,
    /// `MPI_Init`, `MPI_Init_thread`, `MPI_Finalize`.
    InitFinalize,
    /// Anything else (`MPI_Comm_rank`, `MPI_Wtime`, `MPI_Abort`, a name strata does not
    /// know): local calls that wait for no other rank.
    Other,
}

impl CallKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Collective => "collective",
            CallKind::PointToPoint => "point_to_point",
            CallKind::Completion => "completion",
            CallKind::OneSided => "one_sided",
            CallKind::InitFinalize => "init_finalize",
            CallKind::Other => "other",
        }
    }
}

/// An MPI call, by its C name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct MpiCall {
    /// The C binding's name, whatever the frame spelled (`mpi_recv_` and `PMPI_Recv` are
    /// both `MPI_Recv`).
    pub name: String,
    pub kind: CallKind,
    /// Whether the call can wait for another rank (`MPI_Recv`, `MPI_Barrier`, `MPI_Wait`),
    /// as opposed to starting an operation or testing one (`MPI_Irecv`, `MPI_Test`), which
    /// returns at once. A rank seen in a call that cannot block, sample after sample, is
    /// polling.
    pub blocking: bool,
}

/// Collective calls that block, by their name after `MPI_`, lower case.
const COLLECTIVE: &[&str] = &[
    "barrier",
    "bcast",
    "gather",
    "gatherv",
    "scatter",
    "scatterv",
    "allgather",
    "allgatherv",
    "alltoall",
    "alltoallv",
    "alltoallw",
    "reduce",
    "allreduce",
    "reduce_scatter",
    "reduce_scatter_block",
    "scan",
    "exscan",
    "neighbor_allgather",
    "neighbor_allgatherv",
    "neighbor_alltoall",
    "neighbor_alltoallv",
    "neighbor_alltoallw",
];

/// Calls that are collective over a communicator without moving data: creating and freeing
/// communicators, windows and files, and the collective file accesses.
const COLLECTIVE_MANAGEMENT: &[&str] = &[
    "comm_split",
    "comm_split_type",
    "comm_dup",
    "comm_dup_with_info",
    "comm_create",
    "comm_create_group",
    "comm_free",
    "comm_accept",
    "comm_connect",
    "comm_spawn",
    "comm_spawn_multiple",
    "intercomm_create",
    "intercomm_merge",
    "cart_create",
    "cart_sub",
    "graph_create",
    "dist_graph_create",
    "dist_graph_create_adjacent",
    "win_create",
    "win_allocate",
    "win_allocate_shared",
    "win_create_dynamic",
    "win_free",
    "file_open",
    "file_close",
    "file_set_view",
    "file_set_size",
    "file_preallocate",
    "file_sync",
    "file_read_all",
    "file_write_all",
    "file_read_at_all",
    "file_write_at_all",
    "file_read_ordered",
    "file_write_ordered",
];

/// Point-to-point calls that can wait for the peer.
const P2P_BLOCKING: &[&str] = &[
    "send",
    "ssend",
    "rsend",
    "recv",
    "sendrecv",
    "sendrecv_replace",
    "probe",
    "mprobe",
    "mrecv",
];

/// Point-to-point calls that return at once (a buffered send copies and returns).
const P2P_STARTING: &[&str] = &[
    "bsend",
    "isend",
    "issend",
    "ibsend",
    "irsend",
    "irecv",
    "iprobe",
    "improbe",
    "imrecv",
    "send_init",
    "ssend_init",
    "bsend_init",
    "rsend_init",
    "recv_init",
];

const COMPLETION_BLOCKING: &[&str] = &["wait", "waitall", "waitany", "waitsome"];
const COMPLETION_TESTING: &[&str] = &[
    "test",
    "testall",
    "testany",
    "testsome",
    "request_get_status",
];

/// One-sided synchronisation that can wait for other ranks.
const RMA_BLOCKING: &[&str] = &[
    "win_fence",
    "win_lock",
    "win_lock_all",
    "win_unlock",
    "win_unlock_all",
    "win_start",
    "win_complete",
    "win_wait",
    "win_flush",
    "win_flush_all",
    "win_flush_local",
    "win_flush_local_all",
];

/// One-sided calls that return at once.
const RMA_STARTING: &[&str] = &[
    "win_post",
    "win_test",
    "win_sync",
    "put",
    "get",
    "accumulate",
    "get_accumulate",
    "fetch_and_op",
    "compare_and_swap",
    "rput",
    "rget",
    "raccumulate",
    "rget_accumulate",
];

const INIT_FINALIZE: &[&str] = &["init", "init_thread", "finalize"];

/// Library internals that an entry reaches by a tail call, so that the entry's own frame is
/// gone from the stack: (internal name, the call it stands for).
const TAIL_CALLED: &[(&str, &str)] = &[
    // Open MPI 4: `PMPI_Finalize` ends in `jmp ompi_mpi_finalize`.
    ("ompi_mpi_finalize", "finalize"),
    ("ompi_mpi_init", "init"),
];

/// The MPI call a function name stands for, if it is an MPI entry point (or an internal
/// that stands in for one: Open MPI's `ompi_mpi_finalize`). Unknown `MPI_` names are calls of kind
/// [`CallKind::Other`]: a new MPI version's call is still an MPI call.
pub fn call_named(function: &str) -> Option<MpiCall> {
    let base = base_name(function)?;
    let (kind, blocking) = kind_of(&base);
    Some(MpiCall {
        name: c_name(&base),
        kind,
        blocking,
    })
}

/// Whether `function` names an MPI call ([`call_named`] is `Some`), without building the
/// call's name.
pub fn is_call_name(function: &str) -> bool {
    is_mpi_entry_name(function) || (function.starts_with("ompi_") && call_named(function).is_some())
}

/// The call's name after `MPI_`, lower case, in whatever binding `function` spells it.
fn base_name(function: &str) -> Option<String> {
    let lower = function.to_ascii_lowercase();
    if let Some(&(_, call)) = TAIL_CALLED.iter().find(|(name, _)| *name == lower) {
        return Some(call.to_string());
    }
    // Open MPI's Fortran bindings are aliases of `ompi_<call>_f`; the symbolizer names the
    // program's spelling, but a library without the aliases would show this one.
    if let Some(call) = lower
        .strip_prefix("ompi_")
        .and_then(|rest| rest.strip_suffix("_f"))
        && is_known(call)
    {
        return Some(call.to_string());
    }
    if !is_mpi_entry_name(function) {
        return None;
    }
    let rest = lower
        .strip_prefix("pmpi_")
        .or_else(|| lower.strip_prefix("mpi_"))?;
    // Fortran: trailing underscores (one or two, by compiler), the 2008 bindings' suffix.
    let rest = rest.trim_end_matches('_');
    let rest = rest
        .strip_suffix("_f08ts")
        .or_else(|| rest.strip_suffix("_f08"))
        .unwrap_or(rest);
    (!rest.is_empty()).then(|| rest.to_string())
}

fn is_known(base: &str) -> bool {
    kind_of(base).0 != CallKind::Other
}

fn kind_of(base: &str) -> (CallKind, bool) {
    let has = |list: &[&str]| list.contains(&base);
    if has(COLLECTIVE) || has(COLLECTIVE_MANAGEMENT) {
        return (CallKind::Collective, true);
    }
    // Non-blocking (`MPI_Ibcast`) and persistent (`MPI_Bcast_init`) collectives.
    let started = base
        .strip_prefix('i')
        .or_else(|| base.strip_suffix("_init"));
    if started.is_some_and(|b| COLLECTIVE.contains(&b)) || base == "comm_idup" {
        return (CallKind::Collective, false);
    }
    if has(P2P_BLOCKING) {
        return (CallKind::PointToPoint, true);
    }
    if has(P2P_STARTING) {
        return (CallKind::PointToPoint, false);
    }
    if has(COMPLETION_BLOCKING) {
        return (CallKind::Completion, true);
    }
    if has(COMPLETION_TESTING) {
        return (CallKind::Completion, false);
    }
    if has(RMA_BLOCKING) {
        return (CallKind::OneSided, true);
    }
    if has(RMA_STARTING) {
        return (CallKind::OneSided, false);
    }
    if has(INIT_FINALIZE) {
        return (CallKind::InitFinalize, true);
    }
    (CallKind::Other, false)
}

/// `comm_split` -> `MPI_Comm_split`: the C bindings capitalise the first letter only.
fn c_name(base: &str) -> String {
    let mut name = String::with_capacity(base.len() + 4);
    name.push_str("MPI_");
    let mut chars = base.chars();
    if let Some(first) = chars.next() {
        name.push(first.to_ascii_uppercase());
    }
    name.extend(chars);
    name
}

/// `MPI_Recv`, `PMPI_Allreduce`: the C bindings' names (the prefix in capitals, then a
/// capital letter), which no Fortran compiler produces from a lower-case name.
pub fn is_c_binding_name(name: &str) -> bool {
    let rest = name
        .strip_prefix("MPI_")
        .or_else(|| name.strip_prefix("PMPI_"));
    rest.is_some_and(|r| r.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// Whether `name` is spelled as an MPI binding: `MPI_X`, `PMPI_X` and the Fortran bindings
/// `mpi_x_`, `pmpi_x_` (any case). Library internals (`MPIR_`, `ompi_`, `opal_`) are not.
pub fn is_mpi_entry_name(name: &str) -> bool {
    let lower = name.as_bytes();
    let rest = if lower.len() > 4 && lower[..4].eq_ignore_ascii_case(b"mpi_") {
        &lower[4..]
    } else if lower.len() > 5 && lower[..5].eq_ignore_ascii_case(b"pmpi_") {
        &lower[5..]
    } else {
        return false;
    };
    rest[0].is_ascii_alphabetic() && rest.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_')
}

/// Whether a binary is an MPI library, by its file name: `libmpi.so*`, `libmpi_*.so*`
/// (Open MPI's Fortran and C++ bindings, Cray's `libmpi_cray`, IBM's `libmpi_ibm`),
/// `libmpich*.so*`, `libmpifort.so*` (MPICH, Intel MPI). Its frames are MPI's whatever
/// their names, and a process that maps one is a rank (discovery). Only MPI libraries
/// proper: `libopen-pal` or `libpmix` are mapped by mpirun and orted too, which are not
/// ranks.
pub fn is_mpi_library(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some(rest) = name.strip_prefix("libmpi") else {
        return false;
    };
    let known = rest.starts_with(['.', '_', '-'])
        || ["ch", "fort", "cxx", "f08", "f90", "f77"]
            .iter()
            .any(|p| rest.starts_with(p));
    known && name.contains(".so")
}

/// Libraries of the MPI runtime besides MPI's own ([`is_mpi_library`]), by the start of
/// their file names: Open MPI's portability and run-time layers and PRRTE, PMIx, UCX,
/// libfabric, PSM2 and Mellanox's collectives. Their threads are the runtime's: progress
/// engines, event loops, connection managers.
const RUNTIME_LIBRARIES: &[&str] = &[
    "libopen-pal",
    "libopen-rte",
    "libprrte",
    "libpmix",
    "libucs",
    "libucp",
    "libuct",
    "libucm",
    "libfabric",
    "libpsm2",
    "libpsm_infinipath",
    "libhcoll",
    "libsharp",
];

/// Whether a binary is part of the MPI runtime: an MPI library or one of the libraries it
/// runs on (Open MPI's `libopen-pal` and PRRTE, PMIx, UCX, libfabric, PSM2, HCOLL, SHARP).
pub fn is_runtime_library(path: &str) -> bool {
    if is_mpi_library(path) {
        return true;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    name.contains(".so")
        && RUNTIME_LIBRARIES.iter().any(|lib| {
            name.strip_prefix(lib)
                .is_some_and(|rest| rest.starts_with(['.', '-', '_']))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binding_names_the_c_call() {
        for spelling in [
            "MPI_Recv",
            "PMPI_Recv",
            "mpi_recv_",
            "mpi_recv__",
            "MPI_RECV",
            "pmpi_recv_",
            "mpi_recv_f08",
            "ompi_recv_f",
        ] {
            let call = call_named(spelling).unwrap_or_else(|| panic!("{spelling}"));
            assert_eq!(call.name, "MPI_Recv", "{spelling}");
            assert!(is_call_name(spelling), "{spelling}");
            assert_eq!(call.kind, CallKind::PointToPoint);
            assert!(call.blocking);
        }
        assert_eq!(
            call_named("PMPI_Comm_split").map(|c| (c.name, c.kind)),
            Some(("MPI_Comm_split".to_string(), CallKind::Collective))
        );
    }

    #[test]
    fn kinds_and_blocking() {
        let k = |name: &str| call_named(name).map(|c| (c.kind, c.blocking));
        assert_eq!(k("MPI_Allreduce"), Some((CallKind::Collective, true)));
        assert_eq!(k("MPI_Ibarrier"), Some((CallKind::Collective, false)));
        assert_eq!(k("MPI_Bcast_init"), Some((CallKind::Collective, false)));
        assert_eq!(k("MPI_Ssend"), Some((CallKind::PointToPoint, true)));
        assert_eq!(k("MPI_Irecv"), Some((CallKind::PointToPoint, false)));
        assert_eq!(k("MPI_Iprobe"), Some((CallKind::PointToPoint, false)));
        assert_eq!(k("MPI_Waitall"), Some((CallKind::Completion, true)));
        assert_eq!(k("MPI_Testsome"), Some((CallKind::Completion, false)));
        assert_eq!(k("MPI_Win_fence"), Some((CallKind::OneSided, true)));
        assert_eq!(k("MPI_Put"), Some((CallKind::OneSided, false)));
        assert_eq!(k("MPI_Finalize"), Some((CallKind::InitFinalize, true)));
        assert_eq!(k("ompi_mpi_finalize"), Some((CallKind::InitFinalize, true)));
        assert_eq!(k("MPI_Comm_rank"), Some((CallKind::Other, false)));
        assert_eq!(k("MPI_Future_call"), Some((CallKind::Other, false)));
        // Library internals and the program's own names are no MPI calls.
        for name in [
            "MPIR_Wait_impl",
            "ompi_request_default_wait",
            "opal_progress",
            "main",
        ] {
            assert_eq!(call_named(name), None, "{name}");
            assert!(!is_call_name(name), "{name}");
        }
        assert_eq!(
            call_named("ompi_comm_rank_f"),
            None,
            "a local call is no stand-in"
        );
    }

    #[test]
    fn mpi_libraries_are_known_by_their_file_names() {
        for path in [
            "/usr/lib/x86_64-linux-gnu/libmpi.so.40",
            "/opt/venv/lib/libmpi.so.12",
            "/usr/lib/x86_64-linux-gnu/libmpich.so.12.3.0",
            "/usr/lib/libmpi_mpifh.so.40",
            "/opt/intel/lib/libmpifort.so.12",
            "libmpi_abi.so.0",
        ] {
            assert!(is_mpi_library(path), "{path}");
        }
        for path in [
            "/usr/lib/libc.so.6",
            "/usr/lib/libmpfr.so.6",
            "/opt/libmpix.so",
        ] {
            assert!(!is_mpi_library(path), "{path}");
        }
    }

    #[test]
    fn runtime_libraries_are_mpis_and_those_it_runs_on() {
        for path in [
            "/usr/lib/x86_64-linux-gnu/libopen-pal.so.40.30.2",
            "/usr/lib/x86_64-linux-gnu/libpmix.so.2.6.2",
            "/opt/ompi5/lib/libprrte.so.3",
            "/usr/lib/libucs.so.0",
            "/usr/lib/libfabric.so.1",
            "/usr/lib/libmpi.so.40",
        ] {
            assert!(is_runtime_library(path), "{path}");
        }
        for path in [
            "/usr/lib/libc.so.6",
            "/usr/lib/libgomp.so.1",
            "/usr/lib/libevent_core-2.1.so.7",
            "/home/u/libucsx.so",
            "/home/u/solver",
        ] {
            assert!(!is_runtime_library(path), "{path}");
        }
    }

    #[test]
    fn mpi_entries_in_c_and_fortran() {
        for yes in [
            "MPI_Barrier",
            "PMPI_Waitall",
            "mpi_barrier_",
            "pmpi_allreduce__",
            "MPI_BARRIER",
        ] {
            assert!(is_mpi_entry_name(yes), "{yes}");
        }
        for no in [
            "MPIR_Barrier_impl",
            "ompi_barrier_f",
            "opal_progress",
            "MPI_",
            "mpi",
            "main",
        ] {
            assert!(!is_mpi_entry_name(no), "{no}");
        }
    }
}
