//! Reading CPython objects out of a target's memory: `str`, `bytes`, code objects. Every
//! read is bounded (a name or file name of more than [`MAX_TEXT`] characters, a table of
//! more than [`MAX_TABLE`] bytes, is refused as garbage) and every length checked: a
//! pointer into freed or foreign memory gives an error, never a panic or a huge copy.

use super::layout::{Instructions, Layout, StringLayout};
use super::linetable::{self, Format};
use crate::memory::{MemoryError, MemoryReader};

/// The longest name, qualified name or file name read.
pub const MAX_TEXT: i64 = 4096;
/// The longest line table read.
pub const MAX_TABLE: i64 = 1 << 20;

/// Why an object could not be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("object at {0:#x} is not a code object")]
    NotCode(u64),
    #[error("string at {addr:#x} has an impossible length {len}")]
    BadLength { addr: u64, len: i64 },
    #[error("string at {0:#x} is not a compact string")]
    NotCompact(u64),
    #[error("string at {0:#x} does not decode")]
    BadText(u64),
}

pub fn i32_at(mem: &dyn MemoryReader, addr: u64) -> Result<i32, MemoryError> {
    let mut b = [0u8; 4];
    mem.read(addr, &mut b)?;
    Ok(i32::from_le_bytes(b))
}

pub fn u8_at(mem: &dyn MemoryReader, addr: u64) -> Result<u8, MemoryError> {
    let mut b = [0u8; 1];
    mem.read(addr, &mut b)?;
    Ok(b[0])
}

/// A field of a structure copied in one read.
pub fn field_u64(block: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    Some(u64::from_le_bytes(block.get(at..at + 8)?.try_into().ok()?))
}

pub fn field_i32(block: &[u8], at: u64) -> Option<i32> {
    let at = usize::try_from(at).ok()?;
    Some(i32::from_le_bytes(block.get(at..at + 4)?.try_into().ok()?))
}

/// A compact `str` (every identifier and file name the compiler makes is one).
pub fn read_str(
    mem: &dyn MemoryReader,
    s: &StringLayout,
    addr: u64,
) -> Result<String, ObjectError> {
    let len = i64::from_le_bytes(read_array::<8>(mem, addr + s.unicode_length)?);
    if !(0..=MAX_TEXT).contains(&len) {
        return Err(ObjectError::BadLength { addr, len });
    }
    let state = u32::from_le_bytes(read_array::<4>(mem, addr + s.unicode_state)?);
    let kind = (state >> 2) & 7;
    let compact = state >> 5 & 1 == 1;
    let ascii = state >> 6 & 1 == 1;
    if !compact {
        return Err(ObjectError::NotCompact(addr));
    }
    let len = len as usize;
    if ascii {
        let mut buf = vec![0u8; len];
        mem.read(addr + s.ascii_data, &mut buf)?;
        return String::from_utf8(buf).map_err(|_| ObjectError::BadText(addr));
    }
    let width = match kind {
        1 | 2 | 4 => kind as usize,
        _ => return Err(ObjectError::BadText(addr)),
    };
    let mut buf = vec![0u8; len * width];
    mem.read(addr + s.compact_data, &mut buf)?;
    buf.chunks_exact(width)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..width].copy_from_slice(c);
            char::from_u32(u32::from_le_bytes(w))
        })
        .collect::<Option<String>>()
        .ok_or(ObjectError::BadText(addr))
}

/// A `bytes` object's contents, at most `max` bytes long.
pub fn read_bytes(
    mem: &dyn MemoryReader,
    s: &StringLayout,
    addr: u64,
    max: i64,
) -> Result<Vec<u8>, ObjectError> {
    let len = i64::from_le_bytes(read_array::<8>(mem, addr + s.bytes_size)?);
    if !(0..=max).contains(&len) {
        return Err(ObjectError::BadLength { addr, len });
    }
    let mut buf = vec![0u8; len as usize];
    mem.read(addr + s.bytes_data, &mut buf)?;
    Ok(buf)
}

fn read_array<const N: usize>(mem: &dyn MemoryReader, addr: u64) -> Result<[u8; N], MemoryError> {
    let mut b = [0u8; N];
    mem.read(addr, &mut b)?;
    Ok(b)
}

/// How much of a code object is copied in one read: every field strata uses lies in it
/// (checked for every layout by a test).
pub const CODE_HEADER: usize = 144;

/// What a code object says about the function it is the code of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Code {
    /// `co_qualname` (3.11+, `Class.method`), else `co_name`.
    pub name: String,
    pub filename: String,
    pub first_line: i32,
    pub table: Vec<u8>,
    /// Where the instructions start (3.11+: inside the code object).
    pub instructions: u64,
    /// The pointers read, which tell a code object from another at the same address (a
    /// code object freed and another made there) when a reader caches by address.
    pub identity: [u64; 4],
}

impl Code {
    /// The line of the instruction at byte offset `addr`.
    pub fn line(&self, minor: u32, addr: i64) -> Option<u32> {
        linetable::line_at(Format::of_minor(minor), &self.table, self.first_line, addr)
    }
}

/// The identity of the code object at `addr`: its header's pointers, read in one copy
/// (see [`Code::identity`]). `code_type` is `PyCode_Type`'s address when known.
pub fn code_identity(
    mem: &dyn MemoryReader,
    layout: &Layout,
    addr: u64,
    code_type: Option<u64>,
) -> Result<([u8; CODE_HEADER], [u64; 4]), ObjectError> {
    let header = read_array::<CODE_HEADER>(mem, addr)?;
    let bad = || ObjectError::NotCode(addr);
    if let Some(t) = code_type
        && field_u64(&header, 8) != Some(t)
    {
        return Err(bad());
    }
    let c = &layout.code;
    let identity = [
        field_u64(&header, c.filename).ok_or_else(bad)?,
        field_u64(&header, c.qualname.unwrap_or(c.name)).ok_or_else(bad)?,
        field_u64(&header, c.linetable).ok_or_else(bad)?,
        field_i32(&header, c.firstlineno).ok_or_else(bad)? as u64,
    ];
    Ok((header, identity))
}

/// Reads the code object at `addr` whose header [`code_identity`] copied.
pub fn read_code(
    mem: &dyn MemoryReader,
    layout: &Layout,
    addr: u64,
    header: &[u8; CODE_HEADER],
    identity: [u64; 4],
) -> Result<Code, ObjectError> {
    let c = &layout.code;
    let s = &layout.strings;
    let bad = || ObjectError::NotCode(addr);
    let [filename, name, table, _] = identity;
    let instructions = match c.instructions {
        Instructions::Inline(at) => addr + at,
        Instructions::Bytes(at) => field_u64(header, at).ok_or_else(bad)? + s.bytes_data,
    };
    Ok(Code {
        name: read_str(mem, s, name)?,
        filename: read_str(mem, s, filename)?,
        first_line: field_i32(header, c.firstlineno).ok_or_else(bad)?,
        table: read_bytes(mem, s, table, MAX_TABLE)?,
        instructions,
        identity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryCopy;

    fn ascii_object(text: &str, s: &StringLayout) -> Vec<u8> {
        let mut o = vec![0u8; s.ascii_data as usize];
        o[s.unicode_length as usize..][..8].copy_from_slice(&(text.len() as i64).to_le_bytes());
        // compact, ascii, kind 1
        o[s.unicode_state as usize..][..4]
            .copy_from_slice(&((1u32 << 2) | 1 << 5 | 1 << 6).to_le_bytes());
        o.extend_from_slice(text.as_bytes());
        o.push(0);
        o
    }

    #[test]
    fn every_layouts_code_fields_lie_in_the_header_copy() {
        for l in super::super::layout::LAYOUTS {
            let c = l.code;
            let mut ends = vec![
                c.filename + 8,
                c.name + 8,
                c.linetable + 8,
                c.firstlineno + 4,
            ];
            ends.extend(c.qualname.map(|q| q + 8));
            if let Instructions::Bytes(at) = c.instructions {
                ends.push(at + 8);
            }
            assert!(
                ends.iter().all(|&e| e <= CODE_HEADER as u64),
                "3.{}",
                l.minor
            );
        }
    }

    #[test]
    fn strings_decode_ascii_and_wide_and_refuse_garbage() {
        let layout = super::super::layout::Layout::for_minor(11).unwrap();
        let s = &layout.strings;
        let mem = MemoryCopy {
            base: 0x1000,
            bytes: ascii_object("train.py", s),
        };
        assert_eq!(read_str(&mem, s, 0x1000).unwrap(), "train.py");

        let mut wide = vec![0u8; s.compact_data as usize];
        wide[16..24].copy_from_slice(&2i64.to_le_bytes());
        wide[32..36].copy_from_slice(&((2u32 << 2) | 1 << 5).to_le_bytes());
        wide.extend_from_slice(&[0xbb, 0x03, 0x3c, 0x04]); // "λм" in UCS-2
        let mem = MemoryCopy {
            base: 0x2000,
            bytes: wide,
        };
        assert_eq!(read_str(&mem, s, 0x2000).unwrap(), "λм");

        let mut huge = ascii_object("x", s);
        huge[16..24].copy_from_slice(&(1i64 << 40).to_le_bytes());
        let mem = MemoryCopy {
            base: 0x3000,
            bytes: huge,
        };
        assert!(matches!(
            read_str(&mem, s, 0x3000),
            Err(ObjectError::BadLength { .. })
        ));
        assert!(read_str(&mem, s, 0x9000).is_err(), "unmapped");
    }
}
