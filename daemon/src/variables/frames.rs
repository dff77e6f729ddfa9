//! The source-level frames of a stopped thread's stack (inlined calls are frames of their
//! own) and which of them a request names.

use crate::images::AddressSpace;
use crate::symbols::{SourceFrame, Symbolizer};
use crate::unwind::UnwoundStack;

use super::names::{fortran_external_matches, function_matches};

/// One source-level frame of the unwound stack: physical frame `physical`, the `depth`-th
/// of its source frames (inlined calls first, the function last).
pub(super) struct SourceAt {
    pub(super) physical: usize,
    /// Index of the frame's mapping in the address space.
    pub(super) mapping: usize,
    pub(super) depth: usize,
    pub(super) source: SourceFrame,
}

/// Every source frame of the stack, innermost first. Frames outside any mapping (JIT
/// code) have no name to match and are left out.
pub(super) fn source_frames(
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

/// The innermost frame of `function`. A Fortran external is named with the compiler's
/// trailing underscore (`solve_`) where no DWARF names it: taken only when no frame matches
/// exactly, so that a C `solve` deeper in the stack still wins over a `solve_` above it.
pub(super) fn find_frame<'a>(frames: &'a [SourceAt], function: &str) -> Option<&'a SourceAt> {
    let named = |matches: fn(&str, &str) -> bool| {
        frames.iter().find(|f| {
            f.source
                .function
                .as_deref()
                .is_some_and(|name| matches(name, function))
        })
    };
    named(function_matches).or_else(|| named(fortran_external_matches))
}

/// The innermost few function names, for "no frame of f" (`pause < wait < main`).
pub(super) fn stack_summary(frames: &[SourceAt]) -> String {
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
