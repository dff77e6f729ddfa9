//! From an instruction offset to a source line: CPython's three line-table formats, as
//! `PyCode_Addr2Line` of each version reads them. Offsets are in bytes from the start of
//! the code object's instructions; a line of `None` is an instruction without one
//! (compiler-generated code, which CPython reports as line -1).
//!
//! - 3.9 `co_lnotab`: (address increment, signed line increment) byte pairs.
//! - 3.10 `co_linetable` (PEP 626): (address delta, signed line delta) pairs, a line delta
//!   of -128 meaning "no line".
//! - 3.11+ `co_linetable`, the location table (CPython's `Objects/locations.md`): entries
//!   of a header byte (bit 7 set, a 4-bit code, the length in code units minus one) and
//!   varint-coded line and column data.

/// Which format a code object's table is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Lnotab,
    Pep626,
    Locations,
}

impl Format {
    /// The format of CPython 3.`minor`.
    pub fn of_minor(minor: u32) -> Format {
        match minor {
            ..=9 => Format::Lnotab,
            10 => Format::Pep626,
            _ => Format::Locations,
        }
    }
}

/// The line of the instruction at byte offset `addr` (negative: the frame has not started,
/// and reports its first line, as CPython does).
pub fn line_at(format: Format, table: &[u8], first_line: i32, addr: i64) -> Option<u32> {
    if addr < 0 {
        return u32::try_from(first_line).ok();
    }
    let line = match format {
        Format::Lnotab => lnotab(table, first_line, addr),
        Format::Pep626 => pep626(table, first_line, addr),
        Format::Locations => locations(table, first_line, addr),
    }?;
    u32::try_from(line).ok().filter(|&l| l > 0)
}

fn lnotab(table: &[u8], first_line: i32, addr: i64) -> Option<i32> {
    let mut line = first_line;
    let mut at: i64 = 0;
    for pair in table.chunks_exact(2) {
        at += i64::from(pair[0]);
        if at > addr {
            break;
        }
        line = line.wrapping_add(i32::from(pair[1] as i8));
    }
    Some(line)
}

fn pep626(table: &[u8], first_line: i32, addr: i64) -> Option<i32> {
    let mut end: i64 = 0;
    let mut computed = first_line;
    let mut line = None;
    let mut pairs = table.chunks_exact(2);
    while end <= addr {
        // A range: skip the empty ones, as `PyLineTable_NextAddressRange` does.
        loop {
            let pair = pairs.next()?;
            let start = end;
            end += i64::from(pair[0]);
            let delta = pair[1] as i8;
            if delta == -128 {
                line = None;
            } else {
                computed = computed.wrapping_add(i32::from(delta));
                line = Some(computed);
            }
            if end != start {
                break;
            }
        }
    }
    line
}

/// One entry's code (bits 3-6 of its header byte).
const NONE: u8 = 15;
const LONG: u8 = 14;
const NO_COLUMNS: u8 = 13;
const ONE_LINE0: u8 = 10;

fn locations(table: &[u8], first_line: i32, addr: i64) -> Option<i32> {
    let mut end: i64 = 0;
    let mut computed = first_line;
    let mut line = None;
    let mut at = 0usize;
    while end <= addr {
        let header = *table.get(at)?;
        if header & 0x80 == 0 {
            return None; // not at an entry: a corrupt table
        }
        let code = (header >> 3) & 15;
        let delta = match code {
            NONE => 0,
            LONG | NO_COLUMNS => signed_varint(table.get(at + 1..)?)?,
            ONE_LINE0..=12 => i32::from(code - ONE_LINE0),
            _ => 0,
        };
        computed = computed.wrapping_add(delta);
        line = (code != NONE).then_some(computed);
        end += (i64::from(header & 7) + 1) * 2;
        at += 1;
        while table.get(at).is_some_and(|b| b & 0x80 == 0) {
            at += 1;
        }
    }
    line
}

fn varint(bytes: &[u8]) -> Option<u32> {
    let mut value: u32 = 0;
    let mut shift = 0;
    for &b in bytes {
        value |= u32::from(b & 63).checked_shl(shift)?;
        if b & 64 == 0 {
            return Some(value);
        }
        shift += 6;
    }
    None
}

fn signed_varint(bytes: &[u8]) -> Option<i32> {
    let v = varint(bytes)?;
    let magnitude = (v >> 1) as i32;
    Some(if v & 1 == 1 { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnotab_pairs_accumulate_until_the_address() {
        // Lines 10 (bytes 0-5), 12 (6-13), 11 (14-).
        let t = [6, 2, 8, (-1i8) as u8];
        assert_eq!(line_at(Format::Lnotab, &t, 10, 0), Some(10));
        assert_eq!(line_at(Format::Lnotab, &t, 10, 5), Some(10));
        assert_eq!(line_at(Format::Lnotab, &t, 10, 6), Some(12));
        assert_eq!(line_at(Format::Lnotab, &t, 10, 14), Some(11));
        assert_eq!(line_at(Format::Lnotab, &t, 10, -1), Some(10));
    }

    #[test]
    fn pep626_ranges_skip_empty_ones_and_know_lines_without_code() {
        // [0,4) line 3, empty range to line 5, [4,8) line 5, [8,10) no line, [10,12) 6.
        let t = [4, 2, 0, 2, 4, 0, 2, 0x80, 2, 1];
        assert_eq!(line_at(Format::Pep626, &t, 1, 0), Some(3));
        assert_eq!(line_at(Format::Pep626, &t, 1, 4), Some(5));
        assert_eq!(line_at(Format::Pep626, &t, 1, 8), None);
        assert_eq!(line_at(Format::Pep626, &t, 1, 11), Some(6));
        assert_eq!(line_at(Format::Pep626, &t, 1, 12), None, "past the table");
    }

    #[test]
    fn location_entries_read_every_form() {
        let t = [
            0x80 | (NO_COLUMNS << 3), // 1 unit, line +1 (varint 2)
            2,
            0x80 | ((ONE_LINE0 + 2) << 3) | 1, // 2 units, line +2, two column bytes
            4,
            9,
            0x80 | (NONE << 3),     // 1 unit, no line
            0x80 | (LONG << 3) | 2, // 3 units, line -3 (varint 7), then columns
            7,
            0,
            1,
            2,
            0x80, // short form: same line, 1 unit
            5,
        ];
        assert_eq!(line_at(Format::Locations, &t, 20, 0), Some(21));
        assert_eq!(line_at(Format::Locations, &t, 20, 2), Some(23));
        assert_eq!(line_at(Format::Locations, &t, 20, 5), Some(23));
        assert_eq!(line_at(Format::Locations, &t, 20, 6), None);
        assert_eq!(line_at(Format::Locations, &t, 20, 8), Some(20));
        assert_eq!(line_at(Format::Locations, &t, 20, 13), Some(20));
        assert_eq!(line_at(Format::Locations, &t, 20, 14), Some(20));
        assert_eq!(
            line_at(Format::Locations, &t, 20, 16),
            None,
            "past the table"
        );
    }

    #[test]
    fn corrupt_tables_give_no_line() {
        assert_eq!(line_at(Format::Locations, &[0x05], 1, 0), None);
        assert_eq!(
            line_at(Format::Locations, &[0x80 | (LONG << 3), 0x40], 1, 0),
            None
        );
        assert_eq!(
            line_at(
                Format::Locations,
                &[0x80 | (LONG << 3), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x3f],
                1,
                0
            ),
            None
        );
    }
}
