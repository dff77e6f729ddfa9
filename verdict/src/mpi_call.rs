//! Which MPI call a stack is in, and where the program called it.
//!
//! This is the one place that reads MPI out of frames. Everything else in the verdict asks
//! [`locate`] and works with the [`MpiCall`] it returns, so reading a new MPI library (a
//! stripped one whose `PMPI_` frames are missing, a jump stub, an internal reached by a
//! tail call) means widening this module only.
//!
//! A stack is in the MPI call named by its *outermost* MPI frame: the application called
//! it; any deeper `MPI_` name is the library calling itself. The frame just above it is
//! where the program made the call (its file and line are the call site). Names are read in
//! every spelling a library or compiler gives them: C (`MPI_Recv`, and the profiling name
//! `PMPI_Recv` that Open MPI and MPICH alias it to), Fortran (`mpi_recv_`, `mpi_recv__`,
//! `MPI_RECV`, the 2008 bindings' `mpi_recv_f08`), and the internals some entries reach by a
//! tail call, so that their entry frame is not on the stack (Open MPI's `PMPI_Finalize`
//! jumps to `ompi_mpi_finalize`).

use serde::Serialize;
use strata_filters::Frame;

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
    if !strata_filters::frame::is_mpi_entry_name(function) {
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

/// A place in the program: the function and, with debug information, its file and line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Place {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl Place {
    /// The place a frame stands for; `None` for a special frame (`[task exited]`).
    pub fn of(frame: &Frame) -> Option<Place> {
        let c = frame.code()?;
        Some(Place {
            function: Some(frame.name()),
            file: c.file.clone(),
            line: c.line,
        })
    }

    /// `file:line`, else the function's name.
    pub fn short(&self) -> String {
        match (&self.file, self.line, &self.function) {
            (Some(file), Some(line), _) => {
                let base = file.rsplit('/').next().unwrap_or(file);
                format!("{base}:{line}")
            }
            (_, _, Some(function)) => function.clone(),
            _ => "??".to_string(),
        }
    }
}

/// A stack's MPI call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub call: MpiCall,
    /// Index of the call's entry frame in the path (outermost first).
    pub entry: usize,
    /// Where the program called it: the frame above the entry, when there is one.
    pub call_site: Option<Place>,
}

/// The MPI call `path` (outermost frame first) is in, if any: see the module's doc.
pub fn locate(path: &[&Frame]) -> Option<Located> {
    let (entry, call) = path.iter().enumerate().find_map(|(i, frame)| {
        let code = frame.code()?;
        let function = code.function.as_deref()?;
        // An MPI name in the program itself (a Fortran program called `mpi_matrix`) is not
        // a call into MPI.
        if !code.may_be_mpi(function) {
            return None;
        }
        call_named(function).map(|call| (i, call))
    })?;
    let call_site = entry
        .checked_sub(1)
        .and_then(|caller| Place::of(path[caller]));
    Some(Located {
        call,
        entry,
        call_site,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_filters::CodeFrame;

    fn code(function: &str, line: Option<u32>) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(function.to_string()),
            file: line.map(|_| "/src/app.c".to_string()),
            line,
            ..CodeFrame::default()
        })
    }

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
        }
        assert_eq!(
            call_named("ompi_comm_rank_f"),
            None,
            "a local call is no stand-in"
        );
    }

    #[test]
    fn the_outermost_entry_and_its_caller() {
        let path = [
            code("main", Some(40)),
            code("exchange", Some(17)),
            code("PMPI_Sendrecv", None),
            code("PMPI_Wait", None),
            code("opal_progress", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call.name, "MPI_Sendrecv");
        assert_eq!(at.entry, 2);
        let site = at.call_site.expect("a caller");
        assert_eq!(site.function.as_deref(), Some("exchange"));
        assert_eq!(site.line, Some(17));
        assert_eq!(site.short(), "app.c:17");
    }

    #[test]
    fn open_mpi_finalize_reached_by_a_tail_call() {
        let path = [
            code("main", Some(30)),
            code("ompi_mpi_finalize", None),
            code("usleep", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call.name, "MPI_Finalize");
        assert_eq!(at.call_site.and_then(|s| s.line), Some(30));
        let outside = [code("main", Some(3)), code("compute", Some(9))];
        let refs: Vec<&Frame> = outside.iter().collect();
        assert_eq!(locate(&refs), None);
    }
}
