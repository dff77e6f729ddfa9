//! Python values as strata shows them (`--var` on a Python rank): `int`, `bool`, `float`,
//! `str`, `None`, through a closure's cell, read out of a stopped process's memory.
//!
//! A value is decoded only when its type is the interpreter's own built-in (a static type
//! named `int`, `bool`, `float`, `str`, `NoneType` or `cell`): an instance of a subclass or
//! of anything else is refused with its type's name, never decoded by a guess. Ints are
//! read with 30-bit digits (CPython's build on 64-bit Linux; the layout test checks the
//! headers say so), up to 120 bits.

use super::layout::Layout;
use super::objects::{field_i32, field_u64, read_str};
use crate::memory::MemoryReader;

/// A value read: as Python would print it (`repr`), and as a number when it is an int that
/// fits 64 bits (for ordering ranks).
#[derive(Clone, Debug, PartialEq)]
pub struct PyValue {
    pub text: String,
    pub integer: Option<i64>,
}

/// `Py_TPFLAGS_HEAPTYPE`: a class made at run time (any `class` statement), never one of
/// the built-in types strata decodes.
const HEAP_TYPE: u64 = 1 << 9;
/// The longest type name read.
const TYPE_NAME_MAX: usize = 64;
/// A string longer than this is shown cut, with `...`.
const SHOWN_CHARS: usize = 80;
/// Ints of more digits than this are not shown (over 120 bits).
const MAX_DIGITS: u64 = 4;

/// The value of the object at `object` (not null).
pub fn value(mem: &dyn MemoryReader, layout: &Layout, object: u64) -> Result<PyValue, String> {
    value_at_depth(mem, layout, object, 0)
}

fn value_at_depth(
    mem: &dyn MemoryReader,
    layout: &Layout,
    object: u64,
    depth: u8,
) -> Result<PyValue, String> {
    let o = &layout.objects;
    let mut head = [0u8; 48];
    mem.read(object, &mut head)
        .map_err(|e| format!("cannot read the object: {e}"))?;
    let ty = field_u64(&head, 8).unwrap_or(0);
    let name = type_name(mem, layout, ty)?;
    let mut ty_flags = [0u8; 8];
    mem.read(ty + o.type_flags, &mut ty_flags)
        .map_err(|e| format!("cannot read its type: {e}"))?;
    if u64::from_le_bytes(ty_flags) & HEAP_TYPE != 0 {
        return Err(unshown(&name));
    }
    let text = |text: String| {
        Ok(PyValue {
            text,
            integer: None,
        })
    };
    match name.as_str() {
        "int" => {
            let v = int(mem, layout, object, &head)?;
            Ok(PyValue {
                text: v.to_string(),
                integer: i64::try_from(v).ok(),
            })
        }
        "bool" => {
            let v = int(mem, layout, object, &head)?;
            // Shown as Python shows it: no number (a bool counts no iterations).
            text(if v != 0 { "True" } else { "False" }.to_string())
        }
        "float" => {
            let bits = field_u64(&head, o.float_value).ok_or("a float out of reach")?;
            text(float_repr(f64::from_bits(bits)))
        }
        "str" => match read_str(mem, &layout.strings, object) {
            Ok(s) => text(str_repr(&s)),
            Err(e) => Err(format!("a str that does not read: {e}")),
        },
        "NoneType" => text("None".to_string()),
        "cell" if depth == 0 => match field_u64(&head, o.cell_ref).unwrap_or(0) {
            0 => Err("a closure's variable with no value yet".to_string()),
            inner => value_at_depth(mem, layout, inner, depth + 1),
        },
        _ => Err(unshown(&name)),
    }
}

fn unshown(type_name: &str) -> String {
    format!("a {type_name} object: strata shows ints, bools, floats, strs and None")
}

/// The name of the type object at `ty` (`tp_name`, a C string).
fn type_name(mem: &dyn MemoryReader, layout: &Layout, ty: u64) -> Result<String, String> {
    let pointer = mem
        .read_u64(ty + layout.objects.type_name)
        .map_err(|e| format!("cannot read its type: {e}"))?;
    let mut buf = [0u8; TYPE_NAME_MAX];
    // A name near the end of a mapping: read what is there, byte runs at a time.
    let mut got = 0;
    for chunk in [TYPE_NAME_MAX, 16, 8] {
        if mem.read(pointer, &mut buf[..chunk]).is_ok() {
            got = chunk;
            break;
        }
    }
    let name = &buf[..got];
    let end = name
        .iter()
        .position(|&b| b == 0)
        .ok_or("its type has no readable name")?;
    std::str::from_utf8(&name[..end])
        .map(str::to_string)
        .map_err(|_| "its type's name does not decode".to_string())
}

/// The value of the int object at `object` (a thread's id, as `threading` keys them).
pub fn int_at(mem: &dyn MemoryReader, layout: &Layout, object: u64) -> Result<i128, String> {
    let mut head = [0u8; 48];
    mem.read(object, &mut head)
        .map_err(|e| format!("cannot read the int: {e}"))?;
    let ty = field_u64(&head, 8).unwrap_or(0);
    match type_name(mem, layout, ty)?.as_str() {
        "int" => int(mem, layout, object, &head),
        other => Err(unshown(other)),
    }
}

/// An int's value from its header copy `head` (digits past it are read).
fn int(mem: &dyn MemoryReader, layout: &Layout, object: u64, head: &[u8]) -> Result<i128, String> {
    let o = &layout.objects;
    let word = field_u64(head, o.long_size).ok_or("an int out of reach")?;
    let (negative, digits) = if o.long_tagged {
        match word & 3 {
            0 => (false, word >> 3),
            1 => return Ok(0),
            2 => (true, word >> 3),
            _ => return Err("an int with an impossible sign".to_string()),
        }
    } else {
        let size = word as i64;
        (size < 0, size.unsigned_abs())
    };
    if digits > MAX_DIGITS {
        return Err(format!("an int of {digits} 30-bit digits, too big to show"));
    }
    let mut buf = [0u8; 4 * MAX_DIGITS as usize];
    let len = 4 * digits as usize;
    mem.read(object + o.long_digits, &mut buf[..len])
        .map_err(|e| format!("cannot read the int's digits: {e}"))?;
    let mut value: i128 = 0;
    for i in (0..digits as usize).rev() {
        let digit = field_i32(&buf, 4 * i as u64).unwrap_or(0) as u32;
        if digit >= 1 << 30 {
            return Err("an int whose digits do not read right".to_string());
        }
        value = (value << 30) | i128::from(digit);
    }
    Ok(if negative { -value } else { value })
}

/// A float as Python's `repr` prints it (`2.5`, `1.0`, `1e+20`, `nan`, `inf`).
pub fn float_repr(v: f64) -> String {
    if v.is_nan() {
        return "nan".to_string();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    // Rust's shortest round-trip digits, as Python's; only the exponent's form differs.
    let text = format!("{v:?}");
    match text.split_once('e') {
        Some((mantissa, exponent)) if !exponent.starts_with('-') => {
            format!("{mantissa}e+{exponent:0>2}")
        }
        Some((mantissa, exponent)) => {
            format!("{mantissa}e-{:0>2}", exponent.trim_start_matches('-'))
        }
        None => text,
    }
}

/// A str as Python's `repr` prints it, cut after 80 characters (`SHOWN_CHARS`).
pub fn str_repr(s: &str) -> String {
    let mut out = String::from("'");
    for (i, c) in s.chars().enumerate() {
        if i == SHOWN_CHARS {
            out.push_str("...");
            break;
        }
        match c {
            '\'' => out.push_str("\\'"),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_as_python_prints_them() {
        assert_eq!(float_repr(2.5), "2.5");
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(-0.0), "-0.0");
        assert_eq!(float_repr(1e20), "1e+20");
        assert_eq!(float_repr(1.5e-7), "1.5e-07");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(f64::NAN), "nan");
        assert_eq!(float_repr(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn strings_read_as_python_prints_them_and_long_ones_are_cut() {
        assert_eq!(str_repr("phase-2"), "'phase-2'");
        assert_eq!(str_repr("it's\n"), "'it\\'s\\n'");
        let long = "x".repeat(200);
        let shown = str_repr(&long);
        assert_eq!(shown.len(), SHOWN_CHARS + 5);
        assert!(shown.ends_with("...'"));
    }
}
