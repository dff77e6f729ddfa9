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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gimli::{
    AttributeValue, DebuggingInformationEntry, EndianSlice, EvaluationResult, Expression,
    LittleEndian, Location, Operation, Reader as _, UnitOffset, UnitRef, Value, ValueType,
    constants,
};
use strata_proto::overlay::{VariableRequest, VariableValue};

use crate::capture::{CaptureError, CaptureOptions, Capturer, TaskCapture, ThreadError};
use crate::images::{AddressSpace, MappedImage};
use crate::memory::{Layered, MemoryReader, ProcessMemory, Registers};
use crate::procfs::{self, Pid};
use crate::sampler::Sampler;
use crate::stacks::DEFAULT_MAX_FRAMES;
use crate::symbols::{DwarfReader, DwarfView, SourceFrame, Symbolizer};
use crate::unwind::{FrameKind, Recovery, UnwoundFrame, UnwoundStack, WalkEnd, unwind};

/// A rank is let go after this long even if its reads have not finished (they normally
/// take microseconds; the first read of a binary parses DWARF units while it is stopped).
const HOLD_LIMIT: Duration = Duration::from_secs(2);

/// Plans kept at most (distinct address and variable pairs); the cache starts over beyond.
const MAX_PLANS: usize = 100_000;

/// How deep reference chains (abstract origins, typedefs) and scopes are followed: deeper
/// is a cycle in bad DWARF.
const MAX_CHAIN: usize = 32;

/// One rank's reads.
#[derive(Clone, Debug)]
pub struct RankRead {
    /// One value per request, in request order; `Err` when nothing could be read (the rank
    /// exited, could not be stopped, its main thread has no registers).
    pub values: Result<Vec<VariableValue>, String>,
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
                values: Err(capture_error(&e)),
                stopped_for: None,
            };
        }
    };
    let read_start = Instant::now();
    let values = read_captured(sampler, plans, held.capture(), requests);
    let stopped_for = held.capture().stopped_for + read_start.elapsed();
    let values = match held.release() {
        Ok(_) => values,
        // The deadline let the rank run before the reads ended: memory read after that
        // moment may not match the registers of the capture.
        Err(_) => Err(format!(
            "the read took over {HOLD_LIMIT:?} and the rank ran meanwhile: read again"
        )),
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

/// What a failed capture means for a variable read, in one line.
fn capture_error(e: &CaptureError) -> String {
    match e {
        CaptureError::NoSuchProcess(_)
        | CaptureError::Zombie(_)
        | CaptureError::ExitedDuringCapture { .. } => "rank exited".to_string(),
        other => other.to_string(),
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
) -> Result<Vec<VariableValue>, String> {
    let main = capture
        .main_thread()
        .ok_or("the main thread was not captured (it exited?)")?;
    let snapshot = match &main.snapshot {
        Ok(s) => s,
        Err(ThreadError::Exited) => return Err("rank exited".into()),
        Err(e) => return Err(format!("main thread: {e}")),
    };
    let live = ProcessMemory::new(capture.pid);
    let space = sampler.address_space(capture.pid, &capture.maps, &live);
    let memory = Layered {
        first: &snapshot.stack,
        second: &live,
    };
    let stack = unwind(&snapshot.regs, &memory, &space, DEFAULT_MAX_FRAMES);
    let frames = source_frames(sampler.symbolizer(), &space, &stack);
    Ok(requests
        .iter()
        .map(|request| {
            let at = Frame {
                space: &space,
                stack: &stack,
                memory: &memory,
            };
            read_request(sampler.symbolizer(), plans, &at, &frames, request)
        })
        .collect())
}

/// One source-level frame of the unwound stack: physical frame `physical`, the `depth`-th
/// of its source frames (inlined calls first, the function last).
struct SourceAt {
    physical: usize,
    mapping: usize,
    depth: usize,
    source: SourceFrame,
}

/// Every source frame of the stack, innermost first. Frames outside any mapping (JIT
/// code) have no name to match and are left out.
fn source_frames(
    symbolizer: &Symbolizer,
    space: &AddressSpace,
    stack: &UnwoundStack,
) -> Vec<SourceAt> {
    let mut out = Vec::new();
    for (physical, frame) in stack.frames.iter().enumerate() {
        let Some(mapping) = frame.mapping else {
            continue;
        };
        let Some(mapped) = space.mappings.get(mapping) else {
            continue;
        };
        let svma = frame.lookup_pc.wrapping_sub(mapped.bias);
        for (depth, source) in symbolizer.symbolize(mapped, svma).iter().enumerate() {
            out.push(SourceAt {
                physical,
                mapping,
                depth,
                source: source.clone(),
            });
        }
    }
    out
}

/// What a request is evaluated against.
struct Frame<'a> {
    space: &'a AddressSpace,
    stack: &'a UnwoundStack,
    memory: &'a dyn MemoryReader,
}

fn read_request(
    symbolizer: &Symbolizer,
    plans: &VariableCache,
    at: &Frame<'_>,
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
    let named = |matches: fn(&str, &str) -> bool| {
        frames.iter().find(|f| {
            f.source
                .function
                .as_deref()
                .is_some_and(|name| matches(name, &request.function))
        })
    };
    // A Fortran external is named with the compiler's trailing underscore (`solve_`) where
    // no DWARF names it: taken only when no frame matches exactly, so that a C `solve`
    // deeper in the stack still wins over a `solve_` above it.
    let found = named(function_matches).or_else(|| named(fortran_external_matches));
    let Some(found) = found else {
        let walk = match &at.stack.end {
            WalkEnd::Outermost => String::new(),
            WalkEnd::Truncated => {
                format!("; the walk stopped after {} frames", at.stack.frames.len())
            }
            WalkEnd::Error(e) => format!("; the walk ended early: {e}"),
        };
        return failed(format!(
            "no frame of {} on the main thread's stack ({}{walk})",
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
    let read = plan(
        symbolizer,
        plans,
        mapped,
        svma,
        found,
        request.variable.trim(),
    )
    .and_then(|plan| {
        let state = FrameState {
            frame,
            memory: at.memory,
            bias: mapped.bias,
            plan: &plan,
        };
        let bytes = state.value_bytes()?;
        let (text, integer) = plan.ty.decode(&bytes);
        match &plan.referent {
            // A C++ reference reads as what it refers to (gdb's `@0x...: 3` without the
            // address).
            Some(referent) => {
                let address = u64::from_le_bytes(sized(bytes, 8)?.try_into().unwrap_or_default());
                let mut target = vec![0u8; referent.size()];
                at.memory
                    .read(address, &mut target)
                    .map_err(|_| error(format!("cannot read the referenced value at {text}")))?;
                Ok(referent.decode(&target))
            }
            None => Ok((text, integer)),
        }
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

/// The innermost few function names, for "no frame of f" (`pause < wait < main`).
fn stack_summary(frames: &[SourceAt]) -> String {
    const SHOWN: usize = 6;
    if frames.is_empty() {
        return "no frame could be named".into();
    }
    let names: Vec<&str> = frames
        .iter()
        .take(SHOWN)
        .map(|f| f.source.function.as_deref().unwrap_or("??"))
        .collect();
    let more = if frames.len() > SHOWN { " < ..." } else { "" };
    format!("it is in {}{more}", names.join(" < "))
}

/// Whether a frame's (demangled) function `name` is the `wanted` one: the whole name, the
/// name without its parameters (`ns::S<int>::run`), or its last `::` component without
/// parameters (`run`); ASCII case-insensitive, as Fortran names are.
pub fn function_matches(name: &str, wanted: &str) -> bool {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return false;
    }
    let bare = without_parameters(name);
    name.eq_ignore_ascii_case(wanted)
        || bare.eq_ignore_ascii_case(wanted)
        || last_component(bare).eq_ignore_ascii_case(wanted)
}

/// Whether `name` is the external symbol a Fortran compiler makes of `wanted`: one
/// trailing underscore added (`SOLVE` -> `solve_`), any case.
fn fortran_external_matches(name: &str, wanted: &str) -> bool {
    let wanted = wanted.trim();
    !wanted.is_empty()
        && !wanted.ends_with('_')
        && name
            .strip_suffix('_')
            .is_some_and(|n| n.eq_ignore_ascii_case(wanted))
}

/// `ns::f<int>(int, char) const` without its parameter list: up to the `(` matching the
/// last `)`. Names without parameters come back unchanged.
fn without_parameters(name: &str) -> &str {
    let Some(close) = name.rfind(')') else {
        return name;
    };
    let mut depth = 0usize;
    for (i, c) in name[..=close].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return name[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    name
}

/// The part after the last `::` outside template arguments (`a::B<c::d>::run` -> `run`).
fn last_component(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    &name[start..]
}

// ----- Plans -------------------------------------------------------------------------

/// Why a variable has no value, as its `VariableValue` says it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unreadable {
    message: String,
    optimized_out: bool,
}

fn error(message: impl Into<String>) -> Unreadable {
    Unreadable {
        message: message.into(),
        optimized_out: false,
    }
}

fn optimized(message: impl Into<String>) -> Unreadable {
    Unreadable {
        message: message.into(),
        optimized_out: true,
    }
}

const OPTIMIZED_OUT: &str = "optimized out at this pc";

fn bad_dwarf(e: gimli::Error) -> Unreadable {
    error(format!("unreadable DWARF: {e}"))
}

/// Plans by (image, address in the image, inline depth, variable name), shared by every
/// rank of a daemon. Failures are kept too: they depend on the DWARF alone. Owned by the
/// caller of the reads (the daemon keeps one beside its sampler), not by the sampler:
/// sampling knows nothing of variables.
#[derive(Default)]
pub struct VariableCache {
    plans: Mutex<HashMap<PlanKey, Result<Arc<Plan>, Unreadable>>>,
}

impl fmt::Debug for VariableCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VariableCache")
            .field("plans", &self.len())
            .finish()
    }
}

impl VariableCache {
    /// How many plans (and failures) are cached.
    pub fn len(&self) -> usize {
        self.plans.lock().map(|p| p.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct PlanKey {
    image: u32,
    svma: u64,
    depth: usize,
    variable: String,
}

/// What DWARF says about one variable at one address (see the module doc).
#[derive(Debug)]
struct Plan {
    encoding: gimli::Encoding,
    value: Source,
    /// The physical function's `DW_AT_frame_base` at this address, if it has one.
    frame_base: Option<Vec<u8>>,
    ty: Scalar,
    /// For a reference to a scalar (C++ `const int &`), that scalar: the value shown is
    /// the one referred to.
    referent: Option<Scalar>,
    /// The base types that typed operations of the expressions name (`DW_OP_convert`...).
    base_types: Vec<(UnitOffset<usize>, ValueType)>,
    /// `DW_OP_addrx` / `DW_OP_constx` operands, resolved through `.debug_addr`.
    indexed: Vec<(usize, u64)>,
}

/// Where the value comes from.
#[derive(Debug)]
enum Source {
    /// A location expression.
    Expression(Vec<u8>),
    /// `DW_AT_const_value`: the value itself (little-endian bytes).
    Constant(Vec<u8>),
}

/// The plan of `variable` in source frame `at` (at `svma` of `mapped`), from the cache or
/// from DWARF.
fn plan(
    symbolizer: &Symbolizer,
    plans: &VariableCache,
    mapped: &MappedImage,
    svma: u64,
    at: &SourceAt,
    variable: &str,
) -> Result<Arc<Plan>, Unreadable> {
    let no_debug = || {
        error(format!(
            "no debug information for {} (build with -g)",
            mapped.path
        ))
    };
    let image = symbolizer.image_id(mapped).ok_or_else(no_debug)?;
    let key = PlanKey {
        image,
        svma,
        depth: at.depth,
        variable: variable.to_string(),
    };
    let cache = &plans.plans;
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return hit;
    }
    let planned = symbolizer
        .with_dwarf(mapped, |view| {
            resolve(view, svma, at, variable, &mapped.path)
        })
        .unwrap_or_else(|| Err(no_debug()))
        .map(Arc::new);
    if let Ok(mut c) = cache.lock() {
        if c.len() >= MAX_PLANS {
            c.clear();
        }
        c.insert(key, planned.clone());
    }
    planned
}

type Unit<'a> = UnitRef<'a, DwarfReader>;
type Die = DebuggingInformationEntry<DwarfReader>;
type Offset = UnitOffset<usize>;

/// Finds `variable` for the source frame `at` in the DWARF and makes its plan.
fn resolve(
    view: DwarfView<'_>,
    svma: u64,
    at: &SourceAt,
    variable: &str,
    path: &str,
) -> Result<Plan, Unreadable> {
    let function = at.source.function.as_deref().unwrap_or("??");
    let no_debug = || {
        error(format!(
            "no debug information for {function} in {path} (build with -g)"
        ))
    };
    let unit = view
        .context
        .find_dwarf_and_unit(svma)
        .skip_all_loads()
        .ok_or_else(no_debug)?;
    // The DIEs of the source frames at svma, innermost first, as the symbolizer listed
    // them: the `depth`-th is this frame's scope, the last one the physical function.
    let mut dies: Vec<Option<Offset>> = Vec::new();
    if let Ok(mut frames) = view.context.find_frames(svma).skip_all_loads() {
        while let Ok(Some(f)) = frames.next() {
            dies.push(f.dw_die_offset);
        }
    }
    let scope = dies.get(at.depth).copied().flatten().ok_or_else(no_debug)?;
    let physical = dies.last().copied().flatten().unwrap_or(scope);
    let fold_case = is_fortran(unit);
    let frame_base = match unit.entry(physical) {
        Ok(f) => location_at(view, unit, &f, constants::DW_AT_frame_base, svma)
            .ok()
            .flatten()
            .filter(|b| !b.is_empty()),
        Err(_) => None,
    };

    let mut chosen: Option<(Unit<'_>, Offset)> = None;
    // Locals and parameters, innermost scope first.
    for level in scopes(unit, scope, svma).map_err(bad_dwarf)? {
        for &die in &level {
            let entry = unit.entry(die).map_err(bad_dwarf)?;
            if is_declaration(&entry) {
                continue; // `extern int x;` in a function: the global, found below
            }
            if name_of(unit, &entry).is_some_and(|n| names_equal(&n, variable, fold_case)) {
                chosen = Some((unit, die));
                break;
            }
        }
        if chosen.is_some() {
            break;
        }
    }
    // A variable of the function that has no DIE at this instance (only in the abstract
    // instance of an inlined function) exists but was optimized away.
    if chosen.is_none()
        && let Some(origin) = abstract_origin(unit, scope)
        && subtree_has_variable(unit, origin, variable, fold_case)
    {
        return Err(optimized(OPTIMIZED_OUT));
    }
    if chosen.is_none() {
        match find_global(unit, variable, fold_case).map_err(bad_dwarf)? {
            Global::One(die) => chosen = Some((unit, die)),
            Global::Ambiguous(names) => {
                return Err(error(format!(
                    "'{variable}' is ambiguous: {}; qualify it",
                    names.join(", ")
                )));
            }
            Global::None => {}
        }
    }
    let where_ = match (&at.source.file, at.source.line) {
        (Some(file), Some(line)) => format!(" at {}:{line}", file_name(file)),
        (Some(file), None) => format!(" in {}", file_name(file)),
        _ => String::new(),
    };
    let Some((unit, die)) = chosen else {
        return Err(error(format!(
            "no variable '{variable}' in {function}{where_} (parameters and locals in scope, globals of its unit)"
        )));
    };
    let entry = unit.entry(die).map_err(bad_dwarf)?;
    let (ty, referent) = match follow(unit, &entry, constants::DW_AT_type) {
        Some(AttributeValue::UnitRef(t)) => (scalar_type(unit, t)?, referent_type(unit, t)),
        Some(_) => {
            return Err(error(format!(
                "the type of '{variable}' is in another unit (unsupported)"
            )));
        }
        None => return Err(error(format!("'{variable}' has no type in DWARF"))),
    };
    let value = match location_at(view, unit, &entry, constants::DW_AT_location, svma)? {
        Some(bytes) if bytes.is_empty() => return Err(optimized(OPTIMIZED_OUT)),
        Some(bytes) => Source::Expression(bytes),
        None => match follow(unit, &entry, constants::DW_AT_const_value) {
            Some(v) => Source::Constant(constant_bytes(unit, v, ty.size())?),
            None => return Err(optimized(OPTIMIZED_OUT)),
        },
    };
    let encoding = unit.encoding();
    let mut base_types = Vec::new();
    let mut indexed = Vec::new();
    let expressions = [
        match &value {
            Source::Expression(e) => Some(e),
            Source::Constant(_) => None,
        },
        frame_base.as_ref(),
    ];
    for bytes in expressions.into_iter().flatten() {
        operands(unit, bytes, encoding, &mut base_types, &mut indexed);
    }
    Ok(Plan {
        encoding,
        value,
        frame_base,
        ty,
        referent,
        base_types,
        indexed,
    })
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn is_fortran(unit: Unit<'_>) -> bool {
    let Ok(root) = unit.entry(unit.header.root_offset()) else {
        return false;
    };
    matches!(
        root.attr_value(constants::DW_AT_language),
        Some(AttributeValue::Language(
            constants::DW_LANG_Fortran77
                | constants::DW_LANG_Fortran90
                | constants::DW_LANG_Fortran95
                | constants::DW_LANG_Fortran03
                | constants::DW_LANG_Fortran08
                | constants::DW_LANG_Fortran18
        ))
    )
}

fn names_equal(name: &str, wanted: &str, fold_case: bool) -> bool {
    if fold_case {
        name.eq_ignore_ascii_case(wanted)
    } else {
        name == wanted
    }
}

fn is_declaration(entry: &Die) -> bool {
    matches!(
        entry.attr_value(constants::DW_AT_declaration),
        Some(AttributeValue::Flag(true))
    )
}

/// An attribute of `entry`, or of the DIE it is a concrete instance
/// (`DW_AT_abstract_origin`) or the definition (`DW_AT_specification`) of, and so on.
fn follow(
    unit: Unit<'_>,
    entry: &Die,
    attr: constants::DwAt,
) -> Option<AttributeValue<DwarfReader>> {
    let mut current = entry.clone();
    for _ in 0..MAX_CHAIN {
        if let Some(v) = current.attr_value(attr) {
            return Some(v);
        }
        let next = current
            .attr_value(constants::DW_AT_abstract_origin)
            .or_else(|| current.attr_value(constants::DW_AT_specification));
        match next {
            Some(AttributeValue::UnitRef(o)) => current = unit.entry(o).ok()?,
            _ => return None,
        }
    }
    None
}

fn name_of(unit: Unit<'_>, entry: &Die) -> Option<String> {
    let v = follow(unit, entry, constants::DW_AT_name)?;
    let s = unit.attr_string(v).ok()?;
    Some(s.to_string_lossy().ok()?.into_owned())
}

fn abstract_origin(unit: Unit<'_>, die: Offset) -> Option<Offset> {
    match unit
        .entry(die)
        .ok()?
        .attr_value(constants::DW_AT_abstract_origin)
    {
        Some(AttributeValue::UnitRef(o)) => Some(o),
        _ => None,
    }
}

/// Whether `pc` is in the address ranges of a DIE; `None` when it has none.
fn die_contains(unit: Unit<'_>, entry: &Die, pc: u64) -> Result<Option<bool>, gimli::Error> {
    let mut ranges = unit.die_ranges(entry)?;
    let mut any = false;
    while let Some(r) = ranges.next()? {
        any = true;
        if r.begin <= pc && pc < r.end {
            return Ok(Some(true));
        }
    }
    Ok(any.then_some(false))
}

/// The variable and parameter DIEs of `scope` and of its lexical blocks holding `pc`,
/// innermost scope first. Inlined calls inside it are frames of their own: not entered. A
/// block without address ranges (its code was optimized away, or the compiler left them
/// out) is entered only when no block with ranges holds `pc`: its variables then have no
/// location, which says "optimized out" rather than "no such variable".
fn scopes(unit: Unit<'_>, scope: Offset, pc: u64) -> Result<Vec<Vec<Offset>>, gimli::Error> {
    let mut levels = Vec::new();
    let mut at = scope;
    for _ in 0..MAX_CHAIN {
        let mut tree = unit.entries_tree(Some(at))?;
        let root = tree.root()?;
        let mut vars = Vec::new();
        let (mut holding, mut rangeless) = (None, None);
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                constants::DW_TAG_variable | constants::DW_TAG_formal_parameter => {
                    vars.push(e.offset())
                }
                constants::DW_TAG_lexical_block if holding.is_none() => {
                    match die_contains(unit, e, pc)? {
                        Some(true) => holding = Some(e.offset()),
                        Some(false) => {}
                        None => {
                            rangeless.get_or_insert(e.offset());
                        }
                    }
                }
                _ => {}
            }
        }
        levels.push(vars);
        match holding.or(rangeless) {
            Some(inner) => at = inner,
            None => break,
        }
    }
    levels.reverse();
    Ok(levels)
}

/// Whether a variable or parameter called `name` is anywhere under `die` (lexical blocks
/// included, inlined calls not).
fn subtree_has_variable(unit: Unit<'_>, die: Offset, name: &str, fold_case: bool) -> bool {
    fn walk(
        unit: Unit<'_>,
        node: gimli::EntriesTreeNode<'_, '_, DwarfReader>,
        name: &str,
        fold_case: bool,
        depth: usize,
    ) -> Result<bool, gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            let found = match e.tag() {
                constants::DW_TAG_variable | constants::DW_TAG_formal_parameter => {
                    name_of(unit, e).is_some_and(|n| names_equal(&n, name, fold_case))
                }
                constants::DW_TAG_lexical_block if depth < MAX_CHAIN => {
                    walk(unit, child, name, fold_case, depth + 1)?
                }
                _ => false,
            };
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
    let Ok(mut tree) = unit.entries_tree(Some(die)) else {
        return false;
    };
    let Ok(root) = tree.root() else { return false };
    walk(unit, root, name, fold_case, 0).unwrap_or(false)
}

/// What a search of a unit's globals found.
#[derive(Debug, PartialEq, Eq)]
enum Global {
    None,
    One(Offset),
    /// A bare name that several namespaces or modules define (their qualified names).
    Ambiguous(Vec<String>),
}

/// A variable of the unit's top level that has a location or a constant value (a global
/// or file static of the unit), by its qualified name (`ns::name` inside C++ namespaces,
/// `module::name` inside Fortran modules) or, when only one namespace defines it, by its
/// bare name. A declaration alone (`extern int x;`, defined in another unit) is not a
/// value this unit can read. C++ puts a namespace's variable's definition at the top level
/// with `DW_AT_specification` pointing at its declaration inside the namespace: the
/// declaration gives the qualified name.
fn find_global(unit: Unit<'_>, name: &str, fold_case: bool) -> Result<Global, gimli::Error> {
    #[derive(Default)]
    struct Found {
        /// Declarations' qualified names, for the definitions that point at them.
        declared: HashMap<Offset, String>,
        defined: Vec<(String, Offset)>,
    }
    fn walk(
        unit: Unit<'_>,
        node: gimli::EntriesTreeNode<'_, '_, DwarfReader>,
        prefix: &str,
        depth: usize,
        found: &mut Found,
    ) -> Result<(), gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                constants::DW_TAG_variable => {
                    let Some(n) = name_of(unit, e) else { continue };
                    let has_value = e.attr(constants::DW_AT_location).is_some()
                        || e.attr(constants::DW_AT_const_value).is_some();
                    if !has_value {
                        found.declared.insert(e.offset(), format!("{prefix}{n}"));
                        continue;
                    }
                    let qualified = match e.attr_value(constants::DW_AT_specification) {
                        Some(AttributeValue::UnitRef(d)) => found.declared.get(&d).cloned(),
                        _ => None,
                    };
                    let qualified = qualified.unwrap_or_else(|| format!("{prefix}{n}"));
                    found.defined.push((qualified, e.offset()));
                }
                constants::DW_TAG_namespace | constants::DW_TAG_module if depth < MAX_CHAIN => {
                    let inner = match name_of(unit, e) {
                        Some(n) => format!("{prefix}{n}::"),
                        None => prefix.to_string(), // an anonymous namespace
                    };
                    walk(unit, child, &inner, depth + 1, found)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
    let mut found = Found::default();
    let mut tree = unit.entries_tree(None)?;
    walk(unit, tree.root()?, "", 0, &mut found)?;
    let defined = found.defined;
    if let Some((_, die)) = defined
        .iter()
        .find(|(q, _)| names_equal(q, name, fold_case))
    {
        return Ok(Global::One(*die));
    }
    let mut bare: Vec<&(String, Offset)> = defined
        .iter()
        .filter(|(q, _)| names_equal(last_component(q), name, fold_case))
        .collect();
    bare.dedup_by(|a, b| a.0 == b.0);
    Ok(match bare.as_slice() {
        [] => Global::None,
        [(_, die)] => Global::One(*die),
        several => Global::Ambiguous(several.iter().map(|(q, _)| q.clone()).collect()),
    })
}

/// A location attribute (`DW_AT_location`, `DW_AT_frame_base`) at `pc`: the expression's
/// bytes (empty: no location), `None` without the attribute, optimized out when a location
/// list has no entry for `pc`.
fn location_at(
    view: DwarfView<'_>,
    unit: Unit<'_>,
    entry: &Die,
    attr: constants::DwAt,
    pc: u64,
) -> Result<Option<Vec<u8>>, Unreadable> {
    let bytes = |r: &DwarfReader| r.to_slice().map(|s| s.to_vec()).map_err(bad_dwarf);
    let offset = match entry.attr_value(attr) {
        None => return Ok(None),
        Some(AttributeValue::Exprloc(Expression(r)) | AttributeValue::Block(r)) => {
            return bytes(&r).map(Some);
        }
        Some(AttributeValue::LocationListsRef(offset)) => offset,
        Some(AttributeValue::DebugLocListsIndex(index)) => view
            .locations
            .get_offset(unit.encoding(), unit.loclists_base, index)
            .map_err(|e| error(format!("location list unreadable: {e}")))?,
        Some(other) => {
            return Err(error(format!("unsupported location form {other:?}")));
        }
    };
    let unreadable = |e: gimli::Error| error(format!("location list unreadable: {e}"));
    let mut list = view
        .locations
        .locations(
            offset,
            unit.encoding(),
            unit.low_pc,
            &unit.dwarf.debug_addr,
            unit.addr_base,
        )
        .map_err(unreadable)?;
    while let Some(entry) = list.next().map_err(unreadable)? {
        if entry.range.begin <= pc && pc < entry.range.end {
            return bytes(&entry.data.0).map(Some);
        }
    }
    Err(optimized(OPTIMIZED_OUT))
}

/// `DW_AT_const_value` as `size` little-endian bytes.
fn constant_bytes(
    unit: Unit<'_>,
    value: AttributeValue<DwarfReader>,
    size: usize,
) -> Result<Vec<u8>, Unreadable> {
    let word = |v: u64| v.to_le_bytes()[..size.min(8)].to_vec();
    match value {
        AttributeValue::Sdata(v) => Ok(word(v as u64)),
        AttributeValue::Udata(v) => Ok(word(v)),
        AttributeValue::Data1(v) => Ok(word(v.into())),
        AttributeValue::Data2(v) => Ok(word(v.into())),
        AttributeValue::Data4(v) => Ok(word(v.into())),
        AttributeValue::Data8(v) => Ok(word(v)),
        AttributeValue::Block(r) => r.to_slice().map(|s| s.to_vec()).map_err(bad_dwarf),
        other => Err(error(format!(
            "unsupported constant form {:?} in unit at {:?}",
            other.udata_value(),
            unit.header.offset()
        ))),
    }
}

/// The base types and `.debug_addr` entries the operations of an expression refer to,
/// resolved now (the evaluation asks for them without the unit at hand). Unresolvable ones
/// are left out: the evaluation then says which it missed.
fn operands(
    unit: Unit<'_>,
    bytes: &[u8],
    encoding: gimli::Encoding,
    base_types: &mut Vec<(Offset, ValueType)>,
    indexed: &mut Vec<(usize, u64)>,
) {
    let mut reader = EndianSlice::new(bytes, LittleEndian);
    while !reader.is_empty() {
        let Ok(op) = Operation::parse(&mut reader, encoding) else {
            return;
        };
        match op {
            Operation::Deref { base_type, .. }
            | Operation::RegisterOffset { base_type, .. }
            | Operation::TypedLiteral { base_type, .. }
            | Operation::Convert { base_type }
            | Operation::Reinterpret { base_type }
                if base_type.0 != 0 =>
            {
                if let Some(t) = base_value_type(unit, base_type) {
                    base_types.push((base_type, t));
                }
            }
            Operation::AddressIndex { index } | Operation::ConstantIndex { index } => {
                if let Ok(a) = unit.address(index) {
                    indexed.push((index.0, a));
                }
            }
            _ => {}
        }
    }
}

fn base_value_type(unit: Unit<'_>, die: Offset) -> Option<ValueType> {
    let e = unit.entry(die).ok()?;
    let Some(AttributeValue::Encoding(encoding)) = e.attr_value(constants::DW_AT_encoding) else {
        return None;
    };
    let size = e.attr_value(constants::DW_AT_byte_size)?.udata_value()?;
    ValueType::from_encoding(encoding, size)
}

// ----- Types ---------------------------------------------------------------------------

/// The types a value can be shown as.
#[derive(Clone, Debug, PartialEq)]
enum Scalar {
    Signed(usize),
    Unsigned(usize),
    Bool(usize),
    Char {
        size: usize,
        signed: bool,
    },
    Float(usize),
    /// x87 80-bit extended precision (`long double`), stored in 16 bytes.
    Extended,
    Enum {
        size: usize,
        signed: bool,
        names: Vec<(i64, String)>,
    },
    Pointer(usize),
}

impl Scalar {
    fn size(&self) -> usize {
        match *self {
            Scalar::Signed(s)
            | Scalar::Unsigned(s)
            | Scalar::Bool(s)
            | Scalar::Char { size: s, .. }
            | Scalar::Float(s)
            | Scalar::Enum { size: s, .. }
            | Scalar::Pointer(s) => s,
            Scalar::Extended => 16,
        }
    }

    /// The text and, for integer-like types, the number of a value's bytes (exactly
    /// `size()` of them).
    fn decode(&self, bytes: &[u8]) -> (String, Option<i64>) {
        let mut word = [0u8; 8];
        let n = bytes.len().min(8);
        word[..n].copy_from_slice(&bytes[..n]);
        let unsigned = u64::from_le_bytes(word);
        let signed = |size: usize| {
            let shift = 64 - 8 * size.clamp(1, 8) as u32;
            ((unsigned << shift) as i64) >> shift
        };
        match self {
            Scalar::Signed(size) => {
                let v = signed(*size);
                (v.to_string(), Some(v))
            }
            Scalar::Unsigned(_) => (unsigned.to_string(), i64::try_from(unsigned).ok()),
            Scalar::Bool(_) => {
                let text = match unsigned {
                    0 => "false".to_string(),
                    1 => "true".to_string(),
                    other => format!("true ({other})"),
                };
                (text, Some((unsigned != 0) as i64))
            }
            Scalar::Char { size, signed: s } => {
                let v = if *s {
                    signed(*size)
                } else {
                    i64::try_from(unsigned).unwrap_or(i64::MAX)
                };
                let shown = u32::try_from(v)
                    .ok()
                    .and_then(char::from_u32)
                    .filter(|c| !c.is_control());
                let text = match shown {
                    Some(c) => format!("{v} '{c}'"),
                    None => v.to_string(),
                };
                (text, Some(v))
            }
            Scalar::Float(4) => (f32::from_bits(unsigned as u32).to_string(), None),
            Scalar::Float(_) => (f64::from_bits(unsigned).to_string(), None),
            Scalar::Extended => (x87_to_f64(bytes).to_string(), None),
            Scalar::Enum {
                size,
                signed: s,
                names,
            } => {
                let v = if *s { signed(*size) } else { unsigned as i64 };
                let text = names
                    .iter()
                    .find(|(value, _)| *value == v)
                    .map_or_else(|| v.to_string(), |(_, name)| name.clone());
                (text, Some(v))
            }
            Scalar::Pointer(_) => (format!("{unsigned:#x}"), None),
        }
    }
}

/// An x87 extended-precision number (64-bit mantissa with explicit integer bit, 15-bit
/// exponent, sign), rounded to the nearest f64.
fn x87_to_f64(bytes: &[u8]) -> f64 {
    let mut m = [0u8; 8];
    m.copy_from_slice(&bytes[..8]);
    let mantissa = u64::from_le_bytes(m);
    let se = u16::from_le_bytes([bytes[8], bytes[9]]);
    let sign = if se & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exponent = i32::from(se & 0x7fff);
    if exponent == 0x7fff {
        return if mantissa << 1 == 0 {
            sign * f64::INFINITY
        } else {
            f64::NAN
        };
    }
    // value = mantissa * 2^(exponent - 16383 - 63); powi in two steps keeps the
    // intermediate in range for subnormal and huge exponents.
    let e = exponent.max(1) - 16383 - 63;
    sign * mantissa as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2)
}

/// The scalar type `die` is, through typedefs and qualifiers; an error naming it when it
/// is something else (a struct, an array).
fn scalar_type(unit: Unit<'_>, die: Offset) -> Result<Scalar, Unreadable> {
    scalar_type_in(unit, die, true)
}

/// [`scalar_type`]; `enums` false for an enum's underlying type (which bad DWARF could make
/// the enum itself: no endless recursion).
fn scalar_type_in(unit: Unit<'_>, die: Offset, enums: bool) -> Result<Scalar, Unreadable> {
    let mut at = die;
    for _ in 0..MAX_CHAIN {
        let e = unit.entry(at).map_err(bad_dwarf)?;
        let size = e
            .attr_value(constants::DW_AT_byte_size)
            .and_then(|v| v.udata_value())
            .and_then(|s| usize::try_from(s).ok());
        match e.tag() {
            constants::DW_TAG_typedef
            | constants::DW_TAG_const_type
            | constants::DW_TAG_volatile_type
            | constants::DW_TAG_restrict_type
            | constants::DW_TAG_atomic_type => match e.attr_value(constants::DW_AT_type) {
                Some(AttributeValue::UnitRef(t)) => at = t,
                _ => return Err(error("type void is not a scalar")),
            },
            constants::DW_TAG_base_type => return base_scalar(unit, &e, size),
            constants::DW_TAG_enumeration_type if enums => {
                return enum_scalar(unit, at, &e, size);
            }
            constants::DW_TAG_pointer_type
            | constants::DW_TAG_reference_type
            | constants::DW_TAG_rvalue_reference_type => {
                let address = usize::from(unit.encoding().address_size);
                return Ok(Scalar::Pointer(size.unwrap_or(address)));
            }
            _ => {
                return Err(error(format!(
                    "type {} is not a scalar",
                    type_name(unit, at, 0)
                )));
            }
        }
    }
    Err(error("type chain too deep (bad DWARF?)"))
}

/// The scalar a reference type (through typedefs and qualifiers) refers to; `None` for
/// other types, and for references to non-scalars (shown as their address).
fn referent_type(unit: Unit<'_>, die: Offset) -> Option<Scalar> {
    let mut at = die;
    for _ in 0..MAX_CHAIN {
        let e = unit.entry(at).ok()?;
        let next = match e.attr_value(constants::DW_AT_type) {
            Some(AttributeValue::UnitRef(t)) => t,
            _ => return None,
        };
        match e.tag() {
            constants::DW_TAG_typedef
            | constants::DW_TAG_const_type
            | constants::DW_TAG_volatile_type
            | constants::DW_TAG_restrict_type
            | constants::DW_TAG_atomic_type => at = next,
            constants::DW_TAG_reference_type | constants::DW_TAG_rvalue_reference_type => {
                return scalar_type(unit, next).ok();
            }
            _ => return None,
        }
    }
    None
}

fn base_scalar(unit: Unit<'_>, e: &Die, size: Option<usize>) -> Result<Scalar, Unreadable> {
    let name = name_of(unit, e).unwrap_or_else(|| "?".into());
    let size = size.ok_or_else(|| error(format!("base type {name} has no size")))?;
    let Some(AttributeValue::Encoding(encoding)) = e.attr_value(constants::DW_AT_encoding) else {
        return Err(error(format!("base type {name} has no encoding")));
    };
    let integer = matches!(size, 1 | 2 | 4 | 8);
    let unsupported = || error(format!("type {name} ({size} bytes) is not supported"));
    match encoding {
        constants::DW_ATE_signed if integer => Ok(Scalar::Signed(size)),
        constants::DW_ATE_unsigned if integer => Ok(Scalar::Unsigned(size)),
        constants::DW_ATE_boolean if integer => Ok(Scalar::Bool(size)),
        constants::DW_ATE_signed_char if integer => Ok(Scalar::Char { size, signed: true }),
        constants::DW_ATE_unsigned_char | constants::DW_ATE_UTF if integer => Ok(Scalar::Char {
            size,
            signed: false,
        }),
        constants::DW_ATE_float if size == 4 || size == 8 => Ok(Scalar::Float(size)),
        // x86-64's long double; not __float128, which is also 16 bytes.
        constants::DW_ATE_float if size == 16 && name.contains("long double") => {
            Ok(Scalar::Extended)
        }
        constants::DW_ATE_complex_float => Err(error(format!("type {name} is not a scalar"))),
        _ => Err(unsupported()),
    }
}

fn enum_scalar(
    unit: Unit<'_>,
    at: Offset,
    e: &Die,
    size: Option<usize>,
) -> Result<Scalar, Unreadable> {
    let mut names = Vec::new();
    let mut any_negative = false;
    if let Ok(mut tree) = unit.entries_tree(Some(at))
        && let Ok(root) = tree.root()
    {
        let mut children = root.children();
        while let Ok(Some(child)) = children.next() {
            let c = child.entry();
            if c.tag() != constants::DW_TAG_enumerator {
                continue;
            }
            let value = match c.attr_value(constants::DW_AT_const_value) {
                Some(AttributeValue::Sdata(v)) => v,
                Some(v) => match v.udata_value() {
                    Some(u) => u as i64,
                    None => continue,
                },
                None => continue,
            };
            any_negative |= value < 0;
            if let Some(name) = name_of(unit, c) {
                names.push((value, name));
            }
        }
    }
    // The underlying type says whether it is signed; without one (older DWARF), a
    // negative enumerator does.
    let underlying = match e.attr_value(constants::DW_AT_type) {
        Some(AttributeValue::UnitRef(t)) => scalar_type_in(unit, t, false).ok(),
        _ => None,
    };
    let (size, signed) = match underlying {
        Some(Scalar::Signed(s))
        | Some(Scalar::Char {
            size: s,
            signed: true,
        }) => (s, true),
        Some(Scalar::Unsigned(s))
        | Some(Scalar::Bool(s))
        | Some(Scalar::Char {
            size: s,
            signed: false,
        }) => (s, false),
        _ => (size.unwrap_or(4), any_negative),
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(error(format!("enum of {size} bytes is not supported")));
    }
    Ok(Scalar::Enum {
        size,
        signed,
        names,
    })
}

/// A type's name for messages: `struct grid`, `double[]`, `int *`.
fn type_name(unit: Unit<'_>, die: Offset, depth: usize) -> String {
    let Ok(e) = unit.entry(die) else {
        return "?".into();
    };
    let name = name_of(unit, &e);
    let inner = || match e.attr_value(constants::DW_AT_type) {
        Some(AttributeValue::UnitRef(t)) if depth < 8 => type_name(unit, t, depth + 1),
        _ => "void".into(),
    };
    let tagged = |kind: &str| format!("{kind} {}", name.clone().unwrap_or_else(|| "{...}".into()));
    match e.tag() {
        constants::DW_TAG_structure_type => tagged("struct"),
        constants::DW_TAG_class_type => tagged("class"),
        constants::DW_TAG_union_type => tagged("union"),
        constants::DW_TAG_array_type => format!("{}[]", inner()),
        constants::DW_TAG_pointer_type => format!("{} *", inner()),
        constants::DW_TAG_subroutine_type => "function".into(),
        _ => name.unwrap_or_else(inner),
    }
}

// ----- Evaluation ------------------------------------------------------------------------

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// A plan evaluated in one frame of one process.
struct FrameState<'a> {
    frame: &'a UnwoundFrame,
    memory: &'a dyn MemoryReader,
    /// The image's load bias (added to `DW_OP_addr` addresses).
    bias: u64,
    plan: &'a Plan,
}

impl FrameState<'_> {
    /// The variable's bytes (as many as its type has).
    fn value_bytes(&self) -> Result<Vec<u8>, Unreadable> {
        let size = self.plan.ty.size();
        let expression = match &self.plan.value {
            Source::Constant(bytes) => return sized(bytes.clone(), size),
            Source::Expression(e) => e,
        };
        let pieces = self.evaluate(expression, 0)?;
        match pieces.as_slice() {
            [] => Err(optimized(OPTIMIZED_OUT)),
            [one] if one.size_in_bits.is_none() => self.piece_bytes(&one.location, size),
            several => {
                let mut out = Vec::with_capacity(size);
                for p in several {
                    let bits = p.size_in_bits.unwrap_or(0);
                    if bits == 0 || bits % 8 != 0 || p.bit_offset.is_some_and(|o| o != 0) {
                        return Err(error("the value is split into bit pieces (unsupported)"));
                    }
                    if p.location.is_empty() {
                        return Err(optimized("partly optimized out at this pc"));
                    }
                    let len = usize::try_from(bits / 8)
                        .ok()
                        .filter(|&len| out.len() + len <= size)
                        .ok_or_else(|| error("the pieces are larger than the type (bad DWARF?)"))?;
                    out.extend(self.piece_bytes(&p.location, len)?);
                }
                sized(out, size)
            }
        }
    }

    /// `want` bytes of one piece's location.
    fn piece_bytes(
        &self,
        location: &Location<Slice<'_>>,
        want: usize,
    ) -> Result<Vec<u8>, Unreadable> {
        match location {
            Location::Empty => Err(optimized(OPTIMIZED_OUT)),
            Location::Register { register } => {
                sized(self.register(register.0)?.to_le_bytes().to_vec(), want)
            }
            Location::Address { address } => {
                let mut buf = vec![0u8; want];
                self.memory
                    .read(*address, &mut buf)
                    .map_err(|_| error(format!("cannot read {want} bytes at {address:#x}")))?;
                Ok(buf)
            }
            Location::Value { value } => sized(value_bits(*value).to_le_bytes().to_vec(), want),
            Location::Bytes { value } => sized(value.to_vec(), want),
            Location::ImplicitPointer { .. } => Err(optimized(
                "an implicit pointer: what it points to was optimized out",
            )),
        }
    }

    /// A register of this frame. One the unwinder did not recover in a caller was not
    /// saved by its callees (caller-saved: the value is gone, gdb's `<optimized out>`),
    /// unless the frame was found without CFI, which recovers nothing but rip, rsp, rbp.
    fn register(&self, reg: u16) -> Result<u64, Unreadable> {
        if let Some(v) = self.frame.reg(reg) {
            return Ok(v);
        }
        let name = register_name(reg);
        if self.frame.kind == FrameKind::Innermost {
            // Every general-purpose register of the stopped thread is known.
            return Err(error(format!(
                "the value is in {name}, which strata does not capture"
            )));
        }
        if matches!(self.frame.how, Recovery::FramePointer | Recovery::StackScan) {
            return Err(error(format!(
                "{name} is unknown in this frame (unwound without CFI)"
            )));
        }
        Err(optimized(format!(
            "optimized out: {name} is not saved in this frame"
        )))
    }

    /// Runs a DWARF expression to its pieces. `depth` counts frame-base evaluations
    /// nested in it (a frame base that needs a frame base is bad DWARF).
    fn evaluate<'e>(
        &self,
        bytes: &'e [u8],
        depth: u32,
    ) -> Result<Vec<gimli::Piece<Slice<'e>>>, Unreadable> {
        let expression = Expression(EndianSlice::new(bytes, LittleEndian));
        let mut eval = expression.evaluation(self.plan.encoding);
        eval.set_max_iterations(10_000);
        let bad = |e: gimli::Error| error(format!("location expression failed: {e}"));
        let mut state = eval.evaluate().map_err(bad)?;
        loop {
            state = match state {
                EvaluationResult::Complete => break,
                EvaluationResult::RequiresMemory {
                    address,
                    size,
                    base_type,
                    ..
                } => {
                    let size = usize::from(size).min(8);
                    let mut b = [0u8; 8];
                    self.memory
                        .read(address, &mut b[..size])
                        .map_err(|_| error(format!("cannot read {size} bytes at {address:#x}")))?;
                    let value = if base_type.0 == 0 {
                        Value::Generic(u64::from_le_bytes(b))
                    } else {
                        let ty = self.base_type(base_type)?;
                        Value::parse(ty, EndianSlice::new(&b[..size], LittleEndian)).map_err(bad)?
                    };
                    eval.resume_with_memory(value).map_err(bad)?
                }
                EvaluationResult::RequiresRegister {
                    register,
                    base_type,
                } => {
                    let raw = self.register(register.0)?;
                    let value = if base_type.0 == 0 {
                        Value::Generic(raw)
                    } else {
                        Value::from_u64(self.base_type(base_type)?, raw).map_err(bad)?
                    };
                    eval.resume_with_register(value).map_err(bad)?
                }
                EvaluationResult::RequiresFrameBase => {
                    let base = self.frame_base(depth)?;
                    eval.resume_with_frame_base(base).map_err(bad)?
                }
                EvaluationResult::RequiresCallFrameCfa => {
                    let cfa = self
                        .frame
                        .cfa
                        .ok_or_else(|| error("the frame's CFA is unknown (unwound without CFI)"))?;
                    eval.resume_with_call_frame_cfa(cfa).map_err(bad)?
                }
                EvaluationResult::RequiresRelocatedAddress(address) => eval
                    .resume_with_relocated_address(address.wrapping_add(self.bias))
                    .map_err(bad)?,
                EvaluationResult::RequiresIndexedAddress { index, relocate } => {
                    let address = self
                        .plan
                        .indexed
                        .iter()
                        .find(|(i, _)| *i == index.0)
                        .map(|(_, a)| *a)
                        .ok_or_else(|| error("a .debug_addr entry could not be read"))?;
                    let address = if relocate {
                        address.wrapping_add(self.bias)
                    } else {
                        address
                    };
                    eval.resume_with_indexed_address(address).map_err(bad)?
                }
                EvaluationResult::RequiresBaseType(offset) => {
                    let ty = self.base_type(offset)?;
                    eval.resume_with_base_type(ty).map_err(bad)?
                }
                EvaluationResult::RequiresEntryValue(_)
                | EvaluationResult::RequiresParameterRef(_) => {
                    return Err(optimized("optimized out: entry value not recoverable"));
                }
                EvaluationResult::RequiresTls(_) => {
                    return Err(error("thread-local variables are not supported yet"));
                }
                EvaluationResult::RequiresAtLocation(_) => {
                    return Err(error("DW_OP_call in a location (unsupported)"));
                }
                EvaluationResult::RequiresWasmLocal { .. }
                | EvaluationResult::RequiresWasmGlobal { .. }
                | EvaluationResult::RequiresWasmStack { .. } => {
                    return Err(error("WebAssembly locations are not supported"));
                }
            };
        }
        Ok(eval.result())
    }

    /// The physical function's frame base at this pc: usually `DW_OP_call_frame_cfa`, or
    /// a register (`DW_OP_reg6`: the frame base is rbp's value).
    fn frame_base(&self, depth: u32) -> Result<u64, Unreadable> {
        let bytes = self
            .plan
            .frame_base
            .as_deref()
            .ok_or_else(|| error("the function has no frame base at this pc"))?;
        if depth > 0 {
            return Err(error("a frame base that needs a frame base (bad DWARF)"));
        }
        let pieces = self.evaluate(bytes, depth + 1)?;
        match pieces.as_slice() {
            [one] => match &one.location {
                Location::Register { register } => self.register(register.0),
                Location::Address { address } => Ok(*address),
                Location::Value { value } => Ok(value_bits(*value)),
                _ => Err(error("unsupported frame base")),
            },
            _ => Err(error("unsupported frame base")),
        }
    }

    fn base_type(&self, offset: UnitOffset<usize>) -> Result<ValueType, Unreadable> {
        self.plan
            .base_types
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|(_, t)| *t)
            .ok_or_else(|| error("a typed DWARF operation names an unreadable base type"))
    }
}

/// Exactly `size` bytes of `bytes` (a register or value holds 8; the type may want fewer).
fn sized(mut bytes: Vec<u8>, size: usize) -> Result<Vec<u8>, Unreadable> {
    if bytes.len() < size {
        return Err(error(format!(
            "the location holds {} bytes, the type needs {size}",
            bytes.len()
        )));
    }
    bytes.truncate(size);
    Ok(bytes)
}

/// A DWARF stack value's bits (floats as their IEEE bits, integers sign-extended).
fn value_bits(value: Value) -> u64 {
    match value {
        Value::F32(f) => u64::from(f.to_bits()),
        Value::F64(f) => f.to_bits(),
        other => other.to_u64(u64::MAX).unwrap_or(0),
    }
}

/// x86-64 DWARF register names, general-purpose and beyond.
fn register_name(reg: u16) -> String {
    match reg {
        0..=16 => Registers::name(reg).to_string(),
        17..=32 => format!("xmm{}", reg - 17),
        33..=40 => format!("st{}", reg - 33),
        41..=48 => format!("mm{}", reg - 41),
        _ => format!("DWARF register {reg}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_match_whole_bare_or_last_component() {
        assert!(function_matches("get_norm", "get_norm"));
        assert!(function_matches("get_norm", "GET_NORM"));
        assert!(function_matches("solver::get_norm", "get_norm"));
        assert!(function_matches("solver::get_norm", "solver::get_norm"));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "sweep"
        ));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "ns::Grid<int>::sweep"
        ));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "ns::Grid<int>::sweep(int, double) const"
        ));
        assert!(function_matches("a::B<c::d>::run()", "run"));
        assert!(function_matches("mymod::solve", "SOLVE"));
        assert!(!function_matches("get_norm2", "get_norm"));
        assert!(!function_matches("solver::get_norm", "solver"));
        assert!(!function_matches("a::B<c::run>::go()", "run"));
        assert!(!function_matches("main", ""));
        assert!(!function_matches("main", "  "));
        // Fortran externals, only when nothing matches exactly (see read_request).
        assert!(!function_matches("solve_", "solve"));
        assert!(fortran_external_matches("solve_", "SOLVE"));
        assert!(!fortran_external_matches("solve__", "solve"));
        assert!(!fortran_external_matches("solve_", "solve_"));
        assert!(!fortran_external_matches("solve_", ""));
        // Odd names do not panic.
        for odd in ["", ")", "(", "::", "a::", "f(()", "f)(", "<<::>>"] {
            let _ = function_matches(odd, "f");
            let _ = without_parameters(odd);
            let _ = last_component(odd);
        }
    }

    #[test]
    fn integers_decode_with_their_size_and_sign() {
        let d = |t: Scalar, b: &[u8]| t.decode(b);
        assert_eq!(
            d(Scalar::Signed(4), &(-7i32).to_le_bytes()),
            ("-7".into(), Some(-7))
        );
        assert_eq!(d(Scalar::Signed(1), &[0xfb]), ("-5".into(), Some(-5)));
        assert_eq!(
            d(Scalar::Signed(2), &[0xff, 0x7f]),
            ("32767".into(), Some(32767))
        );
        assert_eq!(
            d(Scalar::Signed(8), &i64::MIN.to_le_bytes()),
            (i64::MIN.to_string(), Some(i64::MIN))
        );
        assert_eq!(
            d(Scalar::Unsigned(2), &[0xe8, 0xfd]),
            ("65000".into(), Some(65000))
        );
        // Beyond i64: text only.
        assert_eq!(
            d(Scalar::Unsigned(8), &u64::MAX.to_le_bytes()),
            (u64::MAX.to_string(), None)
        );
        assert_eq!(d(Scalar::Bool(1), &[0]), ("false".into(), Some(0)));
        assert_eq!(d(Scalar::Bool(1), &[1]), ("true".into(), Some(1)));
        assert_eq!(
            d(Scalar::Bool(4), &[2, 0, 0, 0]),
            ("true (2)".into(), Some(1))
        );
        assert_eq!(
            d(
                Scalar::Char {
                    size: 1,
                    signed: true
                },
                b"A"
            ),
            ("65 'A'".into(), Some(65))
        );
        assert_eq!(
            d(
                Scalar::Char {
                    size: 1,
                    signed: true
                },
                &[0xff]
            ),
            ("-1".into(), Some(-1))
        );
        assert_eq!(
            d(
                Scalar::Char {
                    size: 1,
                    signed: false
                },
                &[0x0a]
            ),
            ("10".into(), Some(10))
        );
    }

    #[test]
    fn floats_enums_and_pointers_read_as_text() {
        assert_eq!(Scalar::Float(8).decode(&2.5f64.to_le_bytes()).0, "2.5");
        assert_eq!(
            Scalar::Float(8).decode(&0.0078125f64.to_le_bytes()),
            ("0.0078125".into(), None)
        );
        assert_eq!(Scalar::Float(4).decode(&(-1.5f32).to_le_bytes()).0, "-1.5");
        // 1.5 as x87 extended: mantissa 0xC000..., exponent 16383.
        let mut x = 0xC000_0000_0000_0000u64.to_le_bytes().to_vec();
        x.extend([0xff, 0x3f, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Scalar::Extended.decode(&x).0, "1.5");
        let e = Scalar::Enum {
            size: 4,
            signed: true,
            names: vec![
                (0, "SETUP".into()),
                (1, "SOLVE".into()),
                (-1, "FAILED".into()),
            ],
        };
        assert_eq!(e.decode(&1i32.to_le_bytes()), ("SOLVE".into(), Some(1)));
        assert_eq!(
            e.decode(&(-1i32).to_le_bytes()),
            ("FAILED".into(), Some(-1))
        );
        assert_eq!(e.decode(&7i32.to_le_bytes()), ("7".into(), Some(7)));
        assert_eq!(
            Scalar::Pointer(8).decode(&0x7ffc_1234u64.to_le_bytes()),
            ("0x7ffc1234".into(), None)
        );
    }

    /// A frame whose registers are all known but rbx, as an outer frame's are.
    fn frame(kind: FrameKind) -> UnwoundFrame {
        let mut regs = Registers::default();
        regs.values[Registers::RBP as usize] = 0x1000;
        regs.values[Registers::RSP as usize] = 0xff0;
        let mut known = crate::unwind::KnownRegs::ALL;
        known.0 &= !(1 << Registers::RBX);
        UnwoundFrame {
            pc: 0x401000,
            lookup_pc: 0x400fff,
            kind,
            how: crate::unwind::Recovery::Cfi,
            cfa: Some(0x1010),
            regs,
            known,
            mapping: None,
            offset: 0x400fff,
        }
    }

    fn plan(ty: Scalar, expression: &[u8], frame_base: Option<&[u8]>) -> Plan {
        Plan {
            encoding: gimli::Encoding {
                format: gimli::Format::Dwarf32,
                version: 5,
                address_size: 8,
            },
            value: Source::Expression(expression.to_vec()),
            frame_base: frame_base.map(<[u8]>::to_vec),
            ty,
            referent: None,
            base_types: vec![],
            indexed: vec![],
        }
    }

    /// Memory: a stack at 0xf00..0x1100 whose byte at `a` is `a % 256`, and a global int
    /// 42 at 0x500010.
    fn memory() -> [crate::memory::MemoryCopy; 2] {
        [
            crate::memory::MemoryCopy {
                base: 0xf00,
                bytes: (0..512u32).map(|i| i as u8).collect(),
            },
            crate::memory::MemoryCopy {
                base: 0x50_0010,
                bytes: 42i32.to_le_bytes().to_vec(),
            },
        ]
    }

    fn eval(p: &Plan, kind: FrameKind) -> Result<Vec<u8>, Unreadable> {
        let f = frame(kind);
        let m = memory();
        FrameState {
            frame: &f,
            memory: &&m[..],
            bias: 0x10_0000,
            plan: p,
        }
        .value_bytes()
    }

    #[test]
    fn locations_evaluate_against_the_frame() {
        let int = Scalar::Signed(4);
        // DW_OP_fbreg -16 with frame base DW_OP_call_frame_cfa: cfa 0x1010 - 16 = 0x1000.
        let p = plan(int.clone(), &[0x91, 0x70], Some(&[0x9c]));
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), vec![0, 1, 2, 3]);
        // The same with frame base DW_OP_reg6 (rbp = 0x1000): 0x1000 - 16 = 0xff0.
        let p = plan(int.clone(), &[0x91, 0x70], Some(&[0x56]));
        assert_eq!(
            eval(&p, FrameKind::Call).unwrap(),
            vec![0xf0, 0xf1, 0xf2, 0xf3]
        );
        // DW_OP_addr 0x400010, relocated by the bias 0x100000.
        let mut addr = vec![0x03];
        addr.extend(0x40_0010u64.to_le_bytes());
        let p = plan(int.clone(), &addr, None);
        assert_eq!(int.decode(&eval(&p, FrameKind::Call).unwrap()).1, Some(42));
        // DW_OP_reg6 (rbp), and DW_OP_lit5 DW_OP_stack_value.
        let p = plan(Scalar::Unsigned(8), &[0x56], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), 0x1000u64.to_le_bytes());
        let p = plan(int.clone(), &[0x35, 0x9f], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), 5i32.to_le_bytes());
        // Two 2-byte pieces: DW_OP_lit1 DW_OP_stack_value DW_OP_piece 2, DW_OP_reg6 DW_OP_piece 2.
        let p = plan(int.clone(), &[0x31, 0x9f, 0x93, 2, 0x56, 0x93, 2], None);
        assert_eq!(eval(&p, FrameKind::Call).unwrap(), vec![1, 0, 0, 0x10]);
    }

    #[test]
    fn what_cannot_be_known_is_optimized_out_or_an_error_never_a_value() {
        let int = Scalar::Signed(4);
        // rbx (DW_OP_reg3) not recovered in a caller: optimized out, as gdb says.
        let e = eval(&plan(int.clone(), &[0x53], None), FrameKind::Call).unwrap_err();
        assert!(e.optimized_out && e.message.contains("rbx"), "{e:?}");
        // xmm0 (DW_OP_regx 17) in the innermost frame: not captured, an error.
        let e = eval(
            &plan(Scalar::Float(8), &[0x90, 17], None),
            FrameKind::Innermost,
        )
        .unwrap_err();
        assert!(!e.optimized_out && e.message.contains("xmm0"), "{e:?}");
        // DW_OP_entry_value(DW_OP_reg5) DW_OP_stack_value.
        let e = eval(
            &plan(int.clone(), &[0xa3, 1, 0x55, 0x9f], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(
            e.optimized_out && e.message.contains("entry value"),
            "{e:?}"
        );
        // An empty piece, a bit piece, DW_OP_fbreg without a frame base, unreadable memory.
        let e = eval(&plan(int.clone(), &[0x93, 4], None), FrameKind::Call).unwrap_err();
        assert!(e.optimized_out, "{e:?}");
        let e = eval(
            &plan(int.clone(), &[0x56, 0x9d, 3, 0], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(
            !e.optimized_out && e.message.contains("bit pieces"),
            "{e:?}"
        );
        let e = eval(&plan(int.clone(), &[0x91, 0x70], None), FrameKind::Call).unwrap_err();
        assert!(e.message.contains("frame base"), "{e:?}");
        let e = eval(
            &plan(int.clone(), &[0x30, 0x06, 0x9f], None),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(e.message.contains("cannot read"), "{e:?}");
        // A piece of 4 GiB: refused before anything is allocated for it.
        let e = eval(
            &plan(
                int.clone(),
                &[0x56, 0x93, 0xff, 0xff, 0xff, 0xff, 0x0f],
                None,
            ),
            FrameKind::Call,
        )
        .unwrap_err();
        assert!(e.message.contains("larger than the type"), "{e:?}");
        // Garbage bytecode and truncated operands are errors.
        for garbage in [
            &[0xff][..],
            &[0x03, 1, 2],
            &[0x91],
            &[0x2f, 0xff, 0xff],
            &[],
        ] {
            let r = eval(&plan(int.clone(), garbage, None), FrameKind::Call);
            assert!(r.is_err(), "{garbage:?} gave {r:?}");
        }
    }
}
