//! The arguments of the call a frame is making, from DWARF call-site information: what an
//! optimised caller passed even when its variables are `<optimized out>`.
//!
//! At -O1 and above, GCC and Clang describe each call in the caller's DWARF
//! (`DW_TAG_call_site`, DWARF 4's `DW_TAG_GNU_call_site`) with one
//! `DW_TAG_call_site_parameter` per argument they can still compute after the call: its
//! register (`DW_AT_location`, `DW_OP_reg5` for the first argument on x86-64) and an
//! expression for its value in the caller's frame (`DW_AT_call_value`, typically a
//! callee-saved register, a stack slot or a constant). A caller blocked in the call has not
//! moved since, so that expression, evaluated with the caller frame's registers (the
//! unwinder recovered its callee-saved ones), gives the argument's value.
//!
//! The request names the argument by position: `@arg4` is the fourth (the `source` of
//! `MPI_Recv`), in the System V x86-64 argument registers, so the first six only. The call
//! is the one whose return address is the frame's pc. Without such a call site (-O0 emits
//! none) or parameter, the value is reported unknown, never guessed.

use gimli::{AttributeValue, Expression, Reader as _, constants};

use crate::symbols::{DwarfReader, DwarfView};

use super::dies::{Offset, Unit};
use super::location::{location_at, operands};
use super::unreadable::{Unreadable, bad_dwarf, optimized};

/// The DWARF numbers of the System V x86-64 integer argument registers, in order: rdi,
/// rsi, rdx, rcx, r8, r9.
const ARGUMENT_REGISTERS: [u16; 6] = [5, 4, 1, 2, 8, 9];

/// `@argN` (1 to 6): the index, else `None` (an ordinary variable).
pub(super) fn argument_index(variable: &str) -> Option<usize> {
    let n: usize = variable.strip_prefix("@arg")?.parse().ok()?;
    (1..=ARGUMENT_REGISTERS.len()).contains(&n).then_some(n)
}

/// What evaluating a call-site parameter's value takes: its expression (which computes the
/// value, not a location), the caller's frame base, and the operands resolved ahead.
pub(super) struct CallValue {
    pub(super) value: Vec<u8>,
    pub(super) frame_base: Option<Vec<u8>>,
    pub(super) base_types: Vec<(Offset, gimli::ValueType)>,
    pub(super) indexed: Vec<(usize, u64)>,
}

/// Argument `n` of the call that returns to `svma + 1` (`svma` being the caller frame's
/// lookup address, one before its return address), in the physical function `physical` of
/// `unit`.
pub(super) fn resolve(
    view: DwarfView<'_>,
    unit: Unit<'_>,
    physical: Offset,
    svma: u64,
    n: usize,
) -> Result<CallValue, Unreadable> {
    let return_pc = svma.wrapping_add(1);
    let register = ARGUMENT_REGISTERS[n - 1];
    let Some(value) = find_parameter(unit, physical, return_pc, register).map_err(bad_dwarf)?
    else {
        return Err(optimized(format!(
            "argument {n}: no DWARF call-site value for it at this call (built at -O0, or the \
             compiler could not keep it)"
        )));
    };
    let frame_base = unit.entry(physical).ok().and_then(|f| {
        location_at(view, unit, &f, constants::DW_AT_frame_base, svma)
            .ok()
            .flatten()
            .filter(|b| !b.is_empty())
    });
    let encoding = unit.encoding();
    let mut base_types = Vec::new();
    let mut indexed = Vec::new();
    for bytes in [Some(&value), frame_base.as_ref()].into_iter().flatten() {
        operands(unit, bytes, encoding, &mut base_types, &mut indexed);
    }
    Ok(CallValue {
        value,
        frame_base,
        base_types,
        indexed,
    })
}

/// The value expression of the call-site parameter in `register` of the call returning to
/// `return_pc`, among the call sites of `physical` (inlined bodies included).
fn find_parameter(
    unit: Unit<'_>,
    physical: Offset,
    return_pc: u64,
    register: u16,
) -> Result<Option<Vec<u8>>, gimli::Error> {
    let mut cursor = unit.entries_at_offset(physical)?;
    let mut first = true;
    // Depth of the matching call site while its children are read.
    let mut in_call: Option<isize> = None;
    while let Some(entry) = cursor.next_dfs()? {
        // Depths are relative to the function's DIE: back at 0, its subtree is done.
        let depth = entry.depth();
        if !first && depth <= 0 {
            break;
        }
        first = false;
        if in_call.is_some_and(|d| depth <= d) {
            // Past the matching call site's parameters: it has none for this register.
            return Ok(None);
        }
        match entry.tag() {
            constants::DW_TAG_call_site | constants::DW_TAG_GNU_call_site => {
                let pc = entry
                    .attr_value(constants::DW_AT_call_return_pc)
                    .or_else(|| entry.attr_value(constants::DW_AT_low_pc))
                    .and_then(|v| unit.attr_address(v).ok().flatten());
                if pc == Some(return_pc) {
                    in_call = Some(depth);
                }
            }
            constants::DW_TAG_call_site_parameter | constants::DW_TAG_GNU_call_site_parameter
                if in_call.is_some() =>
            {
                let Some(AttributeValue::Exprloc(Expression(location))) =
                    entry.attr_value(constants::DW_AT_location)
                else {
                    continue;
                };
                if single_register(&location.to_slice()?) != Some(register) {
                    continue;
                }
                let value = entry
                    .attr_value(constants::DW_AT_call_value)
                    .or_else(|| entry.attr_value(constants::DW_AT_GNU_call_site_value));
                return Ok(match value {
                    Some(AttributeValue::Exprloc(Expression(r))) => Some(expression_bytes(&r)?),
                    _ => None,
                });
            }
            _ => {}
        }
    }
    Ok(None)
}

fn expression_bytes(r: &DwarfReader) -> Result<Vec<u8>, gimli::Error> {
    Ok(r.to_slice()?.to_vec())
}

/// The register a location of exactly one `DW_OP_regN` / `DW_OP_regx` names.
fn single_register(bytes: &[u8]) -> Option<u16> {
    match bytes {
        [op] if (0x50..=0x6f).contains(op) => Some(u16::from(op - 0x50)),
        [0x90, rest @ ..] => {
            // DW_OP_regx: one ULEB128 operand, and nothing after it.
            let mut value: u64 = 0;
            for (i, b) in rest.iter().enumerate() {
                value |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    return (i + 1 == rest.len())
                        .then(|| u16::try_from(value).ok())
                        .flatten();
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_named_by_position_up_to_six() {
        assert_eq!(argument_index("@arg1"), Some(1));
        assert_eq!(argument_index("@arg6"), Some(6));
        assert_eq!(argument_index("@arg7"), None);
        assert_eq!(argument_index("@arg0"), None);
        assert_eq!(argument_index("arg1"), None);
    }

    #[test]
    fn a_location_is_one_register_or_none() {
        assert_eq!(single_register(&[0x55]), Some(5));
        assert_eq!(single_register(&[0x90, 0x11]), Some(17));
        assert_eq!(single_register(&[0x90, 0x91, 0x01]), Some(145));
        assert_eq!(single_register(&[0x55, 0x9f]), None);
        assert_eq!(single_register(&[0x91, 0x08]), None, "DW_OP_fbreg");
    }
}
