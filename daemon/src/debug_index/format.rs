//! The byte layout of a debug index, and the little-endian writer and reader of it.
//!
//! A file is a 32-byte header and a body:
//!
//! ```text
//! header  magic "STRATAIX", version u32, flags u32 (bit 0: PARTIAL), body length u64,
//!         CRC32 of the body u32, reserved u32 (0)
//! body    meta         (variable: counted strings and numbers, see `index.rs`)
//!         strings      count u32, then per string: offset u32, length u32; blob length
//!                      u32 and the blob
//!         tables       each: count u32, record size u32, then the fixed-size records,
//!                      the first byte of the records aligned to 8 in the body
//! ```
//!
//! Fixed-size records are read in place, never decoded into vectors: opening an index
//! costs one read, one CRC and a walk over the table headers, whatever its size.

/// The file's first eight bytes.
pub const MAGIC: &[u8; 8] = b"STRATAIX";
/// Bumped whenever the layout or the meaning of a field changes: other versions are
/// foreign and rebuilt.
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 32;
/// "No string", "no file": a u32 field's absent value.
pub const NONE: u32 = u32::MAX;
/// Header flag: only some units are indexed (those covering the addresses an attach
/// needed); an address no indexed unit covers must be looked up in the DWARF itself.
/// Such an index is sent down the tree for one attach and never cached.
pub const PARTIAL: u32 = 1;

/// Why bytes are not a usable index.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("not a strata debug index (bad magic)")]
    Foreign,
    #[error("debug index version {0}, this strata reads version {VERSION}")]
    Version(u32),
    #[error("truncated debug index ({0} bytes, the header says {1})")]
    Truncated(usize, usize),
    #[error("debug index checksum mismatch (stored {stored:08x}, computed {computed:08x})")]
    Checksum { stored: u32, computed: u32 },
    #[error("malformed debug index: {0}")]
    Malformed(&'static str),
}

/// Appends little-endian fields to a body.
#[derive(Debug, Default)]
pub struct Writer {
    pub bytes: Vec<u8>,
}

impl Writer {
    pub fn u16(&mut self, v: u16) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    pub fn i64(&mut self, v: i64) {
        self.bytes.extend_from_slice(&v.to_le_bytes());
    }
    /// A counted string (meta only; names go in the string table).
    pub fn str(&mut self, s: &str) {
        self.u32(s.len() as u32);
        self.bytes.extend_from_slice(s.as_bytes());
    }
    /// Zero bytes up to the next multiple of 8 (records start aligned, which keeps the
    /// reader's offsets simple to check, not because reads need it).
    pub fn align(&mut self) {
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0);
        }
    }
    /// A table header; the caller then writes `count` records of `size` bytes.
    pub fn table(&mut self, count: usize, size: usize) {
        self.u32(count as u32);
        self.u32(size as u32);
        self.align();
    }

    /// The whole file: header (with `flags`), then this body.
    pub fn finish(self, flags: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + self.bytes.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(self.bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(&self.bytes).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&self.bytes);
        out
    }
}

/// The body of a file whose header checks out (magic, version, length, checksum).
pub fn body(file: &[u8]) -> Result<&[u8], FormatError> {
    if file.len() < HEADER_LEN || &file[..8] != MAGIC {
        return Err(FormatError::Foreign);
    }
    let u32_at = |at: usize| u32::from_le_bytes(file[at..at + 4].try_into().expect("4 bytes"));
    let version = u32_at(8);
    if version != VERSION {
        return Err(FormatError::Version(version));
    }
    let len = u64::from_le_bytes(file[16..24].try_into().expect("8 bytes"));
    let want = usize::try_from(len)
        .ok()
        .and_then(|l| l.checked_add(HEADER_LEN))
        .unwrap_or(usize::MAX);
    if file.len() != want {
        return Err(FormatError::Truncated(file.len(), want));
    }
    let body = &file[HEADER_LEN..];
    let stored = u32_at(24);
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(FormatError::Checksum { stored, computed });
    }
    Ok(body)
}

/// The header's flags of a file whose header checked out (`body`).
pub fn flags(file: &[u8]) -> u32 {
    file.get(12..16)
        .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// Reads fields in order from a body, every read bounds-checked.
#[derive(Debug)]
pub struct Reader<'a> {
    pub bytes: &'a [u8],
    pub at: usize,
}

const SHORT: FormatError = FormatError::Malformed("a field runs past the end");

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        let end = self.at.checked_add(n).ok_or(SHORT)?;
        let s = self.bytes.get(self.at..end).ok_or(SHORT)?;
        self.at = end;
        Ok(s)
    }
    pub fn u16(&mut self) -> Result<u16, FormatError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2")))
    }
    pub fn u32(&mut self) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    pub fn u64(&mut self) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    pub fn i64(&mut self) -> Result<i64, FormatError> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    pub fn str(&mut self) -> Result<&'a str, FormatError> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?)
            .map_err(|_| FormatError::Malformed("a string is not UTF-8"))
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], FormatError> {
        self.take(n)
    }
    pub fn align(&mut self) -> Result<(), FormatError> {
        let pad = (8 - self.at % 8) % 8;
        self.take(pad).map(|_| ())
    }
    /// A table header written by [`Writer::table`], checked against the record size this
    /// reader expects; the records are skipped and returned as a [`Table`].
    pub fn table(&mut self, size: usize) -> Result<Table<'a>, FormatError> {
        let count = self.u32()? as usize;
        let stored = self.u32()? as usize;
        if stored != size {
            return Err(FormatError::Malformed("a table's record size"));
        }
        self.align()?;
        let len = count.checked_mul(size).ok_or(SHORT)?;
        let bytes = self.take(len)?;
        Ok(Table { bytes, size })
    }
}

/// Fixed-size records in place.
#[derive(Clone, Copy, Debug)]
pub struct Table<'a> {
    bytes: &'a [u8],
    size: usize,
}

impl<'a> Table<'a> {
    /// Records of `size` bytes (the caller checked that `bytes` holds whole records).
    pub fn new(bytes: &'a [u8], size: usize) -> Table<'a> {
        Table { bytes, size }
    }
    pub fn len(&self) -> usize {
        self.bytes.len() / self.size
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    /// Record `i`'s field at byte `field`.
    pub fn u32(&self, i: usize, field: usize) -> u32 {
        let at = i * self.size + field;
        u32::from_le_bytes(self.bytes[at..at + 4].try_into().expect("4"))
    }
    pub fn u64(&self, i: usize, field: usize) -> u64 {
        let at = i * self.size + field;
        u64::from_le_bytes(self.bytes[at..at + 8].try_into().expect("8"))
    }
    /// The first record index in `range` for which `pred` is false, `pred` being true
    /// then false along the range (a binary search, as `slice::partition_point`).
    pub fn partition_point(
        &self,
        range: std::ops::Range<usize>,
        pred: impl Fn(usize) -> bool,
    ) -> usize {
        let (mut lo, mut hi) = (range.start, range.end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(mid) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_round_trips_and_damage_is_named() {
        let mut w = Writer::default();
        w.str("key");
        w.table(2, 8);
        w.u64(7);
        w.u64(9);
        let file = w.finish(PARTIAL);
        assert_eq!(flags(&file), PARTIAL);
        let body = body(&file).unwrap();
        let mut r = Reader::new(body);
        assert_eq!(r.str().unwrap(), "key");
        let t = r.table(8).unwrap();
        assert_eq!((t.len(), t.u64(0, 0), t.u64(1, 0)), (2, 7, 9));

        let mut flipped = file.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(
            super::body(&flipped),
            Err(FormatError::Checksum { .. })
        ));
        assert!(matches!(
            super::body(&file[..file.len() - 1]),
            Err(FormatError::Truncated(..))
        ));
        assert_eq!(
            super::body(b"ELF\0junkjunkjunkjunkjunkjunkjunkjunk"),
            Err(FormatError::Foreign)
        );
        let mut other = file.clone();
        other[8] = 99;
        assert_eq!(super::body(&other), Err(FormatError::Version(99)));
        // A table whose count runs past the body is an error, not a panic.
        let mut r = Reader::new(&[5, 0, 0, 0, 8, 0, 0, 0]);
        assert!(r.table(8).is_err());
    }
}
