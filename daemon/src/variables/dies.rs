//! Small readers of DWARF debugging information entries (DIEs) that finding a variable and
//! its type share: names through abstract origins and specifications, the unit's language,
//! address ranges.

use gimli::{
    AttributeValue, DebuggingInformationEntry, Reader as _, UnitOffset, UnitRef, constants,
};

use crate::symbols::DwarfReader;

pub(super) type Unit<'a> = UnitRef<'a, DwarfReader>;
pub(super) type Die = DebuggingInformationEntry<DwarfReader>;
pub(super) type Offset = UnitOffset<usize>;

/// How deep reference chains (abstract origins, typedefs) and scopes are followed: deeper
/// is a cycle in bad DWARF.
pub(super) const MAX_CHAIN: usize = 32;

pub(super) fn is_fortran(unit: Unit<'_>) -> bool {
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

pub(super) fn is_declaration(entry: &Die) -> bool {
    matches!(
        entry.attr_value(constants::DW_AT_declaration),
        Some(AttributeValue::Flag(true))
    )
}

/// An attribute of `entry`, or of the DIE it is a concrete instance
/// (`DW_AT_abstract_origin`) or the definition (`DW_AT_specification`) of, and so on.
pub(super) fn follow(
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

pub(super) fn name_of(unit: Unit<'_>, entry: &Die) -> Option<String> {
    let v = follow(unit, entry, constants::DW_AT_name)?;
    let s = unit.attr_string(v).ok()?;
    Some(s.to_string_lossy().ok()?.into_owned())
}

pub(super) fn abstract_origin(unit: Unit<'_>, die: Offset) -> Option<Offset> {
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
pub(super) fn die_contains(
    unit: Unit<'_>,
    entry: &Die,
    pc: u64,
) -> Result<Option<bool>, gimli::Error> {
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
