//! A variable's *plan*: what DWARF says about one variable at one address (which DIE, its
//! location expression there, the function's frame base, its type), made once and shared
//! by every rank stopped at that address. It does not depend on the process: the load
//! bias is applied during evaluation.

use gimli::{AttributeValue, UnitOffset, ValueType, constants};

use crate::symbols::DwarfView;

use super::dies::{Offset, follow, is_fortran};
use super::frames::SourceAt;
use super::location::{constant_bytes, location_at, operands};
use super::lookup::find_variable;
use super::types::{Scalar, referent_type, scalar_type};
use super::unreadable::{OPTIMIZED_OUT, Unreadable, bad_dwarf, error, optimized};

/// What DWARF says about one variable at one address (see the module doc).
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) encoding: gimli::Encoding,
    pub(super) value: Source,
    /// The expression computes the value itself (a call-site parameter's
    /// `DW_AT_call_value`), not where it is: an address it yields is the value.
    pub(super) computes_value: bool,
    /// The physical function's `DW_AT_frame_base` at this address, if it has one.
    pub(super) frame_base: Option<Vec<u8>>,
    pub(super) ty: Scalar,
    /// For a reference to a scalar (C++ `const int &`), that scalar: the value shown is
    /// the one referred to.
    pub(super) referent: Option<Scalar>,
    /// The base types that typed operations of the expressions name (`DW_OP_convert`...).
    pub(super) base_types: Vec<(UnitOffset<usize>, ValueType)>,
    /// `DW_OP_addrx` / `DW_OP_constx` operands, resolved through `.debug_addr`.
    pub(super) indexed: Vec<(usize, u64)>,
}

/// Where the value comes from.
#[derive(Debug)]
pub(super) enum Source {
    /// A location expression.
    Expression(Vec<u8>),
    /// `DW_AT_const_value`: the value itself (little-endian bytes).
    Constant(Vec<u8>),
}

/// Finds `variable` for the source frame `at` in the DWARF and makes its plan.
pub(super) fn resolve(
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

    if let Some(n) = super::call_site::argument_index(variable) {
        // A register's worth, signed: the reader of an `int` takes its low half.
        let call = super::call_site::resolve(view, unit, physical, svma, n)?;
        return Ok(Plan {
            encoding: unit.encoding(),
            value: Source::Expression(call.value),
            computes_value: true,
            frame_base: call.frame_base,
            ty: Scalar::Signed(8),
            referent: None,
            base_types: call.base_types,
            indexed: call.indexed,
        });
    }
    let chosen = find_variable(unit, scope, svma, variable, fold_case)?;
    let where_ = match (&at.source.file, at.source.line) {
        (Some(file), Some(line)) => format!(" at {}:{line}", file_name(file)),
        (Some(file), None) => format!(" in {}", file_name(file)),
        _ => String::new(),
    };
    let Some(die) = chosen else {
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
        computes_value: false,
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
