//! The scalar types a value can be shown as, found from a variable's DWARF type (through
//! typedefs and qualifiers), and decoding a value's bytes by its type into text and, for
//! integer-like types, a number.

use gimli::{AttributeValue, constants};

use super::dies::{Die, MAX_CHAIN, Offset, Unit, name_of};
use super::unreadable::{Unreadable, bad_dwarf, error};

/// The types a value can be shown as.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Scalar {
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
    pub(super) fn size(&self) -> usize {
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
    pub(super) fn decode(&self, bytes: &[u8]) -> (String, Option<i64>) {
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
pub(super) fn scalar_type(unit: Unit<'_>, die: Offset) -> Result<Scalar, Unreadable> {
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
pub(super) fn referent_type(unit: Unit<'_>, die: Offset) -> Option<Scalar> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
