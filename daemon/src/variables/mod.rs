//! Reading a program variable in live ranks: `variable` as seen from the innermost frame of
//! `function` on each rank's main-thread stack. This is what STAT's temporal order analysis
//! needs to order ranks inside one loop (paper section 4.2, loop-order variables): the
//! runtime value of the loop counter in every rank.
//!
//! How one rank is read:
//! 1. Before anything is stopped, the rank's address space and the DWARF of its images are
//!    loaded (cached per daemon; after a sample they are already there), so that the stop
//!    pays for none of it.
//! 2. The capture machinery stops the rank and keeps it stopped
//!    ([`Capturer::capture_and_hold`]) while its main thread is unwound and every request
//!    is evaluated, then lets it go at once. The hold's deadline and the
//!    [`Held`](crate::capture::Held) handle let the rank go whatever happens here; a rank
//!    is stopped only for its own reads. A rank that a `Hold` command already holds is
//!    read from that hold's capture instead ([`read_captured`]): the value is then the one
//!    of the held moment.
//! 3. Per request: the innermost frame whose function matches ([`function_matches`];
//!    inlined calls are frames of their own; a Fortran external's `solve_` answers to
//!    `solve` when nothing matches exactly), the variable's *plan* at that frame's address
//!    (below), its location evaluated with that frame's registers and CFA and the stopped
//!    process's memory, and the bytes decoded by the variable's type (a C++ reference by
//!    the value it refers to).
//!
//! A plan is what DWARF says about one variable at one address: which DIE it is (locals
//! and parameters of the scopes holding the address, innermost first, then the unit's
//! globals and statics, by bare name or qualified by C++ namespaces and Fortran modules; a
//! bare name that two namespaces define is refused as ambiguous, not guessed), its
//! location expression there (an exprloc, or the entry of a DWARF 4 `.debug_loc` / DWARF 5
//! `.debug_loclists` list covering the address), the function's frame base expression,
//! and its scalar type. It does not depend on the process (the load bias is applied during
//! evaluation), so every rank of one binary stopped at one address shares it:
//! [`VariableCache`] keeps plans per (image, address, inline depth, variable); the caller
//! owns it (next to its [`Sampler`]) and passes it to every read. The DWARF is
//! the symbolizer's, already loaded, its units parsed once
//! ([`Symbolizer::with_dwarf`](crate::symbols::Symbolizer::with_dwarf)).
//!
//! Never a wrong value: what cannot be evaluated exactly is an error, or `optimized_out`
//! where the value is gone (no location at this address, an empty location, a register the
//! callee did not save: gdb's `<optimized out>`, an entry value). A value is as right as
//! the compiler's DWARF: gfortran -O2 was seen to place a loop counter in a stack slot
//! whose stores it had removed (gdb shows the same stale value). Not supported yet, each
//! reported as such: thread-local variables, `DW_OP_call*`, implicit pointers, pieces
//! smaller than a byte, floating-point registers (strata captures the general-purpose
//! ones), references into other units (`DW_FORM_ref_addr`: LTO, dwz), non-scalar types,
//! C++ members through an implicit `this`.
//!
//! Nothing here panics on bad DWARF or unreadable memory: every failure is a one-line
//! error in the [`VariableValue`] of its request.
//!
//! Layout, each step its own module: `frames` (the source frames of the stack and which
//! one a request names, by `names`), `lookup` (the variable's DIE in the DWARF scopes,
//! read with `dies`), `location` and `types` (what DWARF says of its location and type),
//! `plan` (all of that at one address) and `cache` (plans shared by the ranks), `eval`
//! (a plan evaluated in one frame, the bytes decoded), `unreadable` (why a value is
//! missing), `python` (a request no native frame answers, looked for among a Python rank's
//! Python frames and read from the interpreter's objects). This module is the entry point:
//! it stops the ranks and answers the requests.

mod cache;
mod call_site;
mod dies;
mod eval;
mod frames;
mod location;
mod lookup;
mod names;
mod plan;
mod python;
mod types;
mod unreadable;

use std::time::{Duration, Instant};

use strata_proto::overlay::{VariableRequest, VariableValue};

use crate::capture::{CaptureError, CaptureOptions, Capturer, TaskCapture, ThreadError};
use crate::images::AddressSpace;
use crate::memory::{Layered, MemoryReader, ProcessMemory};
use crate::procfs::{self, Pid};
use crate::sampler::Sampler;
use crate::stacks::DEFAULT_MAX_FRAMES;
use crate::symbols::Symbolizer;
use crate::unwind::{UnwoundStack, WalkEnd, unwind};

pub use cache::VariableCache;
pub use names::function_matches;

use eval::read_value;
use frames::{SourceAt, find_frame, source_frames, stack_summary};

/// A rank is let go after this long even if its reads have not finished (they normally
/// take microseconds; the first read of a binary parses DWARF units while it is stopped).
const HOLD_LIMIT: Duration = Duration::from_secs(2);

/// Why nothing could be read in a rank (each request's own failure is in its
/// [`VariableValue`] instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RankReadError {
    /// The rank is gone (or going): no process, a zombie, or exited while stopped.
    #[error("rank exited")]
    Exited,
    /// The capture could not stop the rank (already traced, held, not permitted...).
    #[error(transparent)]
    Capture(CaptureError),
    #[error("the main thread was not captured (it exited?)")]
    NoMainThread,
    #[error("main thread: {0}")]
    MainThread(ThreadError),
    /// The hold's deadline let the rank run before the reads ended: memory read after
    /// that moment may not match the registers of the capture.
    #[error("the read took over {limit:?} and the rank ran meanwhile: read again")]
    RanDuringRead { limit: Duration },
}

impl From<CaptureError> for RankReadError {
    fn from(e: CaptureError) -> RankReadError {
        match e {
            CaptureError::NoSuchProcess(_)
            | CaptureError::Zombie(_)
            | CaptureError::ExitedDuringCapture { .. } => RankReadError::Exited,
            other => RankReadError::Capture(other),
        }
    }
}

/// One rank's reads.
#[derive(Clone, Debug)]
pub struct RankRead {
    /// One value per request, in request order; `Err` when nothing could be read (the rank
    /// exited, could not be stopped, its main thread has no registers).
    pub values: Result<Vec<VariableValue>, RankReadError>,
    /// How long the rank was kept from running, when it was stopped for this read.
    pub stopped_for: Option<Duration>,
}

/// Reads `requests` in each of `pids` (one after the other, each stopped once for all its
/// reads and let go at once), results in the order of `pids`. The agent's `ReadVariables`
/// runs this for the ranks no `Hold` holds.
pub fn read_variables(
    capturer: &Capturer,
    sampler: &mut Sampler,
    plans: &VariableCache,
    pids: &[Pid],
    requests: &[VariableRequest],
) -> Vec<RankRead> {
    pids.iter()
        .map(|&pid| read_rank(capturer, sampler, plans, pid, requests))
        .collect()
}

fn read_rank(
    capturer: &Capturer,
    sampler: &mut Sampler,
    plans: &VariableCache,
    pid: Pid,
    requests: &[VariableRequest],
) -> RankRead {
    prepare(sampler, pid);
    let held = match capturer.capture_and_hold(pid, &CaptureOptions::default(), HOLD_LIMIT) {
        Ok(held) => held,
        Err(e) => {
            return RankRead {
                values: Err(e.into()),
                stopped_for: None,
            };
        }
    };
    let read_start = Instant::now();
    let values = read_captured(sampler, plans, held.capture(), requests);
    let stopped_for = held.capture().stopped_for + read_start.elapsed();
    let values = match held.release() {
        Ok(_) => values,
        Err(_) => Err(RankReadError::RanDuringRead { limit: HOLD_LIMIT }),
    };
    RankRead {
        values,
        stopped_for: Some(stopped_for),
    }
}

/// Loads what a read of `pid` needs before it is stopped: its address space, the DWARF of
/// every image mapped as code, and the executable's location lists, so that naming its
/// frames and planning its variables parse nothing big while it is stopped. Measured on
/// the test fixture: a first read stopped the rank for 68 ms when libc's DWARF (from
/// /usr/lib/debug) was loaded during the stop, 0.4 ms with this. Each image loads once per
/// daemon, and a sample has usually loaded them already. A library's location lists are
/// read (during the stop) only when one of its variables is. Failures are left for the
/// read to report.
fn prepare(sampler: &mut Sampler, pid: Pid) {
    let Ok(maps) = procfs::maps(pid) else { return };
    let maps = std::sync::Arc::from(maps);
    let live = ProcessMemory::new(pid);
    let space = sampler.address_space(pid, &maps, &live);
    let exe = procfs::exe(pid).map(|p| p.to_string_lossy().into_owned());
    for m in &space.mappings {
        if exe.as_deref().is_ok_and(|exe| *exe == m.path) {
            sampler.symbolizer().with_dwarf(m, |_| ());
        } else {
            sampler.symbolizer().debug_source(m);
        }
    }
}

/// Reads `requests` in the main thread of a task that is stopped now and was captured
/// when it stopped (a held task): memory is read live, so the task must still be stopped
/// for the values to be those of the capture.
pub fn read_captured(
    sampler: &mut Sampler,
    plans: &VariableCache,
    capture: &TaskCapture,
    requests: &[VariableRequest],
) -> Result<Vec<VariableValue>, RankReadError> {
    let main = capture.main_thread().ok_or(RankReadError::NoMainThread)?;
    let snapshot = match &main.snapshot {
        Ok(s) => s,
        Err(ThreadError::Exited) => return Err(RankReadError::Exited),
        Err(e) => return Err(RankReadError::MainThread(e.clone())),
    };
    let live = ProcessMemory::new(capture.pid);
    let space = sampler.address_space(capture.pid, &capture.maps, &live);
    let memory = Layered {
        first: &snapshot.stack,
        second: &live,
    };
    let stack = unwind(&snapshot.regs, &memory, &space, DEFAULT_MAX_FRAMES);
    let frames = source_frames(sampler.symbolizer(), &space, &stack);
    // A Python rank's functions are its Python frames: read them (still stopped) only
    // when a request names a function no native frame has.
    let python_read = requests
        .iter()
        .any(|r| find_frame(&frames, &r.function).is_none())
        .then(|| sampler.read_python(capture.pid, &space, &live))
        .flatten();
    let python = python_read
        .as_ref()
        .map(|read| python::PythonStack::new(read, main.info.tid, snapshot.regs.fs_base));
    Ok(requests
        .iter()
        .map(|request| {
            let at = StoppedStack {
                space: &space,
                stack: &stack,
                memory: &memory,
                python: python.as_ref(),
            };
            read_request(sampler.symbolizer(), plans, &at, &frames, request)
        })
        .collect())
}

/// What a request is evaluated against.
struct StoppedStack<'a> {
    space: &'a AddressSpace,
    stack: &'a UnwoundStack,
    memory: &'a dyn MemoryReader,
    /// The Python frames, for a Python rank when a request needs them.
    python: Option<&'a python::PythonStack<'a>>,
}

fn read_request(
    symbolizer: &Symbolizer,
    plans: &VariableCache,
    at: &StoppedStack<'_>,
    frames: &[SourceAt],
    request: &VariableRequest,
) -> VariableValue {
    let failed = |message: String| VariableValue {
        error: Some(message),
        ..VariableValue::default()
    };
    if request.function.trim().is_empty() || request.variable.trim().is_empty() {
        return failed("a variable read needs a function and a variable name".into());
    }
    let Some(found) = find_frame(frames, &request.function) else {
        if let Some(value) = at.python.and_then(|p| p.read(at.memory, request)) {
            return value;
        }
        let python = at.python.map(|p| p.summary()).unwrap_or_default();
        let walk = match &at.stack.end {
            WalkEnd::Outermost => String::new(),
            WalkEnd::Truncated => {
                format!("; the walk stopped after {} frames", at.stack.frames.len())
            }
            WalkEnd::Error(e) => format!("; the walk ended early: {e}"),
        };
        return failed(format!(
            "no frame of {} on the main thread's stack ({}{walk}{python})",
            request.function,
            stack_summary(frames)
        ));
    };
    let frame = &at.stack.frames[found.physical];
    let mapped = &at.space.mappings[found.mapping];
    let mut value = VariableValue {
        function: found.source.function.clone(),
        file: found.source.file.clone(),
        line: found.source.line.unwrap_or(0),
        ..VariableValue::default()
    };
    let svma = frame.lookup_pc.wrapping_sub(mapped.bias);
    let read = plans
        .plan(symbolizer, mapped, svma, found, request.variable.trim())
        .and_then(|plan| {
            let (text, integer) = read_value(&plan, frame, at.memory, mapped.bias)?;
            let named = name_pointer(&plan, text, integer, at.space);
            // A call's argument that points into a global is an address, not a number.
            let integer = integer.filter(|_| !(plan.computes_value && named.contains(" <")));
            Ok((named, integer))
        });
    match read {
        Ok((text, integer)) => {
            value.text = Some(text);
            value.integer = integer;
        }
        Err(u) => {
            value.error = Some(u.message);
            value.optimized_out = u.optimized_out;
        }
    }
    value
}

/// A pointer's value with the global variable it points into, as gdb shows it
/// (`0x7f3a2c4e1d20 <ompi_mpi_comm_world>`): Open MPI's C handles are such pointers, and
/// the verdict recognises the world communicator by that name. A call's argument
/// (`@argN`) has no type: its value is named when it points into a global.
fn name_pointer(
    plan: &plan::Plan,
    text: String,
    integer: Option<i64>,
    space: &AddressSpace,
) -> String {
    let address = if plan.computes_value {
        integer.map(|v| v as u64)
    } else if matches!(plan.ty, types::Scalar::Pointer(_)) && plan.referent.is_none() {
        text.strip_prefix("0x")
            .and_then(|hex| u64::from_str_radix(hex, 16).ok())
    } else {
        None
    };
    match address.and_then(|a| space.data_name(a).map(|name| (a, name))) {
        Some((a, name)) if plan.computes_value => format!("{a:#x} <{name}>"),
        Some((_, name)) => format!("{text} <{name}>"),
        None => text,
    }
}
