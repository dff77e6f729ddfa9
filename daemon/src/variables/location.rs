//! A variable's location as DWARF states it at one address: the expression of an exprloc
//! or of the DWARF 4 `.debug_loc` / DWARF 5 `.debug_loclists` entry covering the address,
//! a `DW_AT_const_value`, and the operands an expression needs resolved ahead of its
//! evaluation (base types, `.debug_addr` entries).

use gimli::{
    AttributeValue, EndianSlice, Expression, LittleEndian, Operation, Reader as _, ValueType,
    constants,
};

use crate::symbols::{DwarfReader, DwarfView};

use super::dies::{Die, Offset, Unit};
use super::unreadable::{OPTIMIZED_OUT, Unreadable, bad_dwarf, error, optimized};

/// A location attribute (`DW_AT_location`, `DW_AT_frame_base`) at `pc`: the expression's
/// bytes (empty: no location), `None` without the attribute, optimized out when a location
/// list has no entry for `pc`.
pub(super) fn location_at(
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
pub(super) fn constant_bytes(
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
pub(super) fn operands(
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
