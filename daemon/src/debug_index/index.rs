//! An opened debug index: where its DWARF came from (the meta), and lookups from an
//! address to its source frames, read in place from the file's bytes.

use super::format::{self, FormatError, NONE, Reader, Table, Writer};

pub const STRING_SIZE: usize = 8;
pub const FUNC_SIZE: usize = 20;
pub const FRANGE_SIZE: usize = 24;
pub const INLINE_SIZE: usize = 32;
pub const SEQ_SIZE: usize = 32;
pub const ROW_SIZE: usize = 12;
pub const SYMBOL_SIZE: usize = 24;
pub const UNIT_SIZE: usize = 16;
pub const URANGE_SIZE: usize = 32;
/// A unit range's flag: its unit is not indexed (a partial index left it out).
pub const UNINDEXED: u32 = 1;

/// A file an index was built from, as it was then: an index whose inputs changed is
/// stale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub path: String,
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
}

impl Input {
    /// The file at `path` as it is now, if it can be stat'ed.
    pub fn of(path: &std::path::Path) -> Option<Input> {
        let m = std::fs::metadata(path).ok()?;
        use std::os::unix::fs::MetadataExt;
        Some(Input {
            path: path.to_string_lossy().into_owned(),
            size: m.size(),
            mtime_ns: m.mtime() * 1_000_000_000 + m.mtime_nsec(),
        })
    }

    /// Whether the file is still what it was.
    pub fn unchanged(&self) -> bool {
        Input::of(std::path::Path::new(&self.path)).as_ref() == Some(self)
    }
}

/// What an index says about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The cache key: the image's build-id and size.
    pub key: String,
    /// Where the DWARF came from: 0 embedded in the image, 1 a file found by build-id,
    /// 2 a file found by `.gnu_debuglink` (the symbolizer's `DebugSource`).
    pub source: u32,
    /// That file's path (empty when embedded).
    pub source_path: String,
    /// Debug files found and refused while locating it.
    pub notes: Vec<String>,
    /// The separate files it was built from (the debug file, the dwz file).
    pub inputs: Vec<Input>,
}

impl Meta {
    pub fn write(&self, w: &mut Writer) {
        w.str(&self.key);
        w.u32(self.source);
        w.str(&self.source_path);
        w.u32(self.notes.len() as u32);
        for n in &self.notes {
            w.str(n);
        }
        w.u32(self.inputs.len() as u32);
        for i in &self.inputs {
            w.str(&i.path);
            w.u64(i.size);
            w.i64(i.mtime_ns);
        }
        w.align();
    }

    fn read(r: &mut Reader<'_>) -> Result<Meta, FormatError> {
        let key = r.str()?.to_string();
        let source = r.u32()?;
        let source_path = r.str()?.to_string();
        let notes = (0..r.u32()?)
            .map(|_| r.str().map(str::to_string))
            .collect::<Result<_, _>>()?;
        let inputs = (0..r.u32()?)
            .map(|_| {
                Ok(Input {
                    path: r.str()?.to_string(),
                    size: r.u64()?,
                    mtime_ns: r.i64()?,
                })
            })
            .collect::<Result<_, FormatError>>()?;
        r.align()?;
        Ok(Meta {
            key,
            source,
            source_path,
            notes,
            inputs,
        })
    }
}

/// Where a table's records are in the file.
#[derive(Clone, Copy, Debug, Default)]
struct At {
    start: usize,
    len: usize,
    size: usize,
}

/// A debug index, checked and ready for lookups. It owns the file's bytes as read: an
/// index is as large as its binary's DWARF (82 MB for a release build of strata), and a
/// copy into another buffer would double the daemon's peak memory while it loads.
pub struct DebugIndex {
    file: Vec<u8>,
    meta: Meta,
    strings: At,
    blob: At,
    files: At,
    funcs: At,
    franges: At,
    inlines: At,
    seqs: At,
    rows: At,
    units: At,
    uranges: At,
    symbols: At,
}

impl std::fmt::Debug for DebugIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DebugIndex")
            .field("key", &self.meta.key)
            .field("bytes", &self.file.len())
            .field("functions", &self.funcs.len)
            .field("rows", &self.rows.len)
            .finish_non_exhaustive()
    }
}

/// One source frame of a lookup, before demangling: names are raw (linkage names), with
/// the language of the function's unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawFrame<'a> {
    pub name: Option<&'a str>,
    /// `DW_LANG_*`, if the unit said.
    pub language: Option<u16>,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

impl DebugIndex {
    /// Opens an index file's bytes: header, checksum, meta and every table's bounds.
    pub fn open(file: Vec<u8>) -> Result<DebugIndex, FormatError> {
        let body = format::body(&file)?;
        let base = format::HEADER_LEN;
        let mut r = Reader::new(body);
        let meta = Meta::read(&mut r)?;
        let at = |r: &mut Reader<'_>, size: usize| -> Result<At, FormatError> {
            let t = r.table(size)?;
            let end = base + r.at;
            let len = t.len();
            let at = At {
                start: end - len * size,
                len,
                size,
            };
            r.align()?;
            Ok(at)
        };
        let strings = at(&mut r, STRING_SIZE)?;
        let blob = at(&mut r, 1)?;
        let files = at(&mut r, 4)?;
        let funcs = at(&mut r, FUNC_SIZE)?;
        let franges = at(&mut r, FRANGE_SIZE)?;
        let inlines = at(&mut r, INLINE_SIZE)?;
        let seqs = at(&mut r, SEQ_SIZE)?;
        let rows = at(&mut r, ROW_SIZE)?;
        let units = at(&mut r, UNIT_SIZE)?;
        let uranges = at(&mut r, URANGE_SIZE)?;
        let symbols = at(&mut r, SYMBOL_SIZE)?;
        let index = DebugIndex {
            file,
            meta,
            strings,
            blob,
            files,
            funcs,
            franges,
            inlines,
            seqs,
            rows,
            units,
            uranges,
            symbols,
        };
        index.check()?;
        Ok(index)
    }

    /// References between tables stay inside them, so that lookups index without
    /// panicking on a file that passed its checksum but was written wrong.
    fn check(&self) -> Result<(), FormatError> {
        let bad = |what| Err(FormatError::Malformed(what));
        let strings = self.table(self.strings);
        for i in 0..strings.len() {
            let (off, len) = (strings.u32(i, 0) as usize, strings.u32(i, 4) as usize);
            if off + len > self.blob.len {
                return bad("a string runs past the blob");
            }
        }
        let string_ok = |s: u32| s == NONE || (s as usize) < self.strings.len;
        let files = self.table(self.files);
        if (0..files.len()).any(|i| !string_ok(files.u32(i, 0))) {
            return bad("a file's name");
        }
        let file_ok = |f: u32| f == NONE || (f as usize) < self.files.len;
        let funcs = self.table(self.funcs);
        for i in 0..funcs.len() {
            let (start, count) = (funcs.u32(i, 12) as usize, funcs.u32(i, 16) as usize);
            if !string_ok(funcs.u32(i, 0)) || start + count > self.inlines.len {
                return bad("a function's name or inlined calls");
            }
        }
        let franges = self.table(self.franges);
        if (0..franges.len()).any(|i| franges.u32(i, 16) as usize >= self.funcs.len) {
            return bad("a function range's function");
        }
        let inlines = self.table(self.inlines);
        if (0..inlines.len())
            .any(|i| !string_ok(inlines.u32(i, 20)) || !file_ok(inlines.u32(i, 24)))
        {
            return bad("an inlined call's name or file");
        }
        let seqs = self.table(self.seqs);
        for i in 0..seqs.len() {
            let (first, count) = (seqs.u32(i, 20) as usize, seqs.u32(i, 24) as usize);
            if count == 0 || first + count > self.rows.len {
                return bad("a line sequence's rows");
            }
        }
        let rows = self.table(self.rows);
        if (0..rows.len()).any(|i| !file_ok(rows.u32(i, 4))) {
            return bad("a line row's file");
        }
        let units = self.table(self.units);
        for i in 0..units.len() {
            let f = units.u32(i, 0) as usize + units.u32(i, 4) as usize;
            let s = units.u32(i, 8) as usize + units.u32(i, 12) as usize;
            if f > self.franges.len || s > self.seqs.len {
                return bad("a unit's functions or lines");
            }
        }
        let uranges = self.table(self.uranges);
        if (0..uranges.len()).any(|i| uranges.u32(i, 24) as usize >= self.units.len) {
            return bad("a unit range's unit");
        }
        let symbols = self.table(self.symbols);
        if (0..symbols.len()).any(|i| !string_ok(symbols.u32(i, 16))) {
            return bad("a symbol's name");
        }
        Ok(())
    }

    fn table(&self, at: At) -> Table<'_> {
        Table::new(&self.file[at.start..at.start + at.len * at.size], at.size)
    }

    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The file's size in bytes.
    pub fn len(&self) -> usize {
        self.file.len()
    }

    pub fn is_empty(&self) -> bool {
        self.file.is_empty()
    }

    /// The file's bytes (to write it to the cache, or send it).
    pub fn bytes(&self) -> &[u8] {
        &self.file
    }

    /// Whether only some units are indexed (see `format::PARTIAL`): an address none of
    /// them covers ([`DebugIndex::covers`]) must be looked up in the DWARF.
    pub fn is_partial(&self) -> bool {
        format::flags(&self.file) & format::PARTIAL != 0
    }

    /// Whether the index answers for `svma` as the whole index would: no unit left out
    /// of a partial index covers it (true for an address no unit covers at all: the
    /// symbol table answers there, as it would with the whole index).
    pub fn covers(&self, svma: u64) -> bool {
        let uranges = self.table(self.uranges);
        self.ranges_at(svma)
            .all(|i| uranges.u32(i, 28) & UNINDEXED == 0)
    }

    /// Functions and line rows indexed.
    pub fn counts(&self) -> (usize, usize) {
        (self.funcs.len, self.rows.len)
    }

    fn string(&self, id: u32) -> Option<&str> {
        if id == NONE {
            return None;
        }
        let strings = self.table(self.strings);
        let (off, len) = (
            strings.u32(id as usize, 0) as usize,
            strings.u32(id as usize, 4) as usize,
        );
        let start = self.blob.start + off;
        std::str::from_utf8(&self.file[start..start + len]).ok()
    }

    fn file_name(&self, id: u32) -> Option<&str> {
        if id == NONE {
            return None;
        }
        self.string(self.table(self.files).u32(id as usize, 0))
    }

    /// The source frames at `svma`, innermost inlined call first and the physical
    /// function last, as addr2line's `find_frames` gives them: the first unit (in its
    /// search order) with a function or a line there answers; the innermost frame takes
    /// the line table's location, each outer one the call site of the frame inside it.
    /// Without a function, only a location; empty when DWARF covers nothing here.
    pub fn frames(&self, svma: u64) -> Vec<RawFrame<'_>> {
        for unit in self.units_at(svma) {
            let location = self.location_at(unit, svma);
            match self.function_at(unit, svma) {
                Some(func) => return self.function_frames(func, location, svma),
                None => {
                    if let Some((file, line)) = location {
                        let frame = RawFrame {
                            name: None,
                            language: None,
                            file,
                            line,
                        };
                        return vec![frame];
                    }
                }
            }
        }
        Vec::new()
    }

    /// The units whose ranges hold `svma`, in addr2line's order (by range end, then
    /// unit; a unit may come more than once).
    fn units_at(&self, svma: u64) -> impl Iterator<Item = usize> + '_ {
        let uranges = self.table(self.uranges);
        self.ranges_at(svma)
            .map(move |i| uranges.u32(i, 24) as usize)
    }

    /// The unit ranges (their rows) holding `svma`, in that order.
    fn ranges_at(&self, svma: u64) -> impl Iterator<Item = usize> + '_ {
        let uranges = self.table(self.uranges);
        let from = uranges.partition_point(0..uranges.len(), |i| uranges.u64(i, 8) <= svma);
        (from..uranges.len())
            .take_while(move |&i| svma.saturating_add(1) > uranges.u64(i, 16))
            .filter(move |&i| uranges.u64(i, 0) <= svma && svma < uranges.u64(i, 8))
    }

    /// The frames of a function: its inlined calls holding `svma`, then itself.
    #[allow(clippy::type_complexity)]
    fn function_frames<'a>(
        &'a self,
        func: usize,
        location: Option<(Option<&'a str>, Option<u32>)>,
        svma: u64,
    ) -> Vec<RawFrame<'a>> {
        let funcs = self.table(self.funcs);
        let language = match funcs.u32(func, 4) {
            0 => None,
            l => Some(l as u16),
        };
        let inlines = self.table(self.inlines);
        let (start, count) = (funcs.u32(func, 12) as usize, funcs.u32(func, 16) as usize);
        // The inlined calls containing svma, outermost first: at each depth, the last
        // call (by depth, then start) starting at or before svma, if it holds it.
        let mut chain = Vec::new();
        let mut from = start;
        let end = start + count;
        loop {
            let depth = chain.len() as u32;
            let i = inlines.partition_point(from..end, |i| {
                let d = inlines.u32(i, 16);
                d < depth || (d == depth && inlines.u64(i, 0) <= svma)
            });
            if i == from {
                break;
            }
            let j = i - 1;
            let contains = inlines.u32(j, 16) == depth
                && inlines.u64(j, 0) <= svma
                && svma < inlines.u64(j, 8);
            if !contains {
                break;
            }
            chain.push(j);
            from = j + 1;
        }
        let mut frames = Vec::with_capacity(chain.len() + 1);
        let mut next = location;
        for &i in chain.iter().rev() {
            let (file, line) = next.take().unwrap_or((None, None));
            frames.push(RawFrame {
                name: self.string(inlines.u32(i, 20)),
                language,
                file,
                line,
            });
            let call_line = inlines.u32(i, 28);
            next = Some((
                self.file_name(inlines.u32(i, 24)),
                (call_line != 0).then_some(call_line),
            ));
        }
        let (file, line) = next.unwrap_or((None, None));
        frames.push(RawFrame {
            name: self.string(funcs.u32(func, 0)),
            language,
            file,
            line,
        });
        frames
    }

    /// The unit's function whose range holds `svma`: as addr2line, only the last range
    /// starting at or before it is looked at.
    fn function_at(&self, unit: usize, svma: u64) -> Option<usize> {
        let units = self.table(self.units);
        let first = units.u32(unit, 0) as usize;
        let franges = self.table(self.franges);
        let range = first..first + units.u32(unit, 4) as usize;
        let i = franges.partition_point(range, |i| franges.u64(i, 0) <= svma);
        let j = i.checked_sub(1).filter(|&j| j >= first)?;
        (svma < franges.u64(j, 8)).then(|| franges.u32(j, 16) as usize)
    }

    /// The unit's line table's file and line at `svma`.
    #[allow(clippy::type_complexity)]
    fn location_at(&self, unit: usize, svma: u64) -> Option<(Option<&str>, Option<u32>)> {
        let units = self.table(self.units);
        let first = units.u32(unit, 8) as usize;
        let seqs = self.table(self.seqs);
        let range = first..first + units.u32(unit, 12) as usize;
        let i = seqs.partition_point(range, |i| seqs.u64(i, 0) <= svma);
        let s = i.checked_sub(1).filter(|&s| s >= first)?;
        if svma >= seqs.u64(s, 8) {
            return None;
        }
        let rows = self.table(self.rows);
        let (first, count) = (seqs.u32(s, 20) as usize, seqs.u32(s, 24) as usize);
        let delta = svma - seqs.u64(s, 0);
        let r = rows.partition_point(first..first + count, |r| u64::from(rows.u32(r, 0)) <= delta);
        let r = r.checked_sub(1).filter(|&r| r >= first)?;
        let line = rows.u32(r, 8);
        Some((self.file_name(rows.u32(r, 4)), (line != 0).then_some(line)))
    }

    /// The debug file's function symbol at `svma` and the offset into it, chosen as
    /// `Image::symbol` chooses among aliases (the first in table order at the nearest
    /// address whose extent holds svma).
    pub fn symbol(&self, svma: u64) -> Option<(&str, u64)> {
        let symbols = self.table(self.symbols);
        let n = symbols.len();
        let i = symbols.partition_point(0..n, |i| symbols.u64(i, 0) <= svma);
        let nearest = symbols.u64(i.checked_sub(1)?, 0);
        let first = symbols.partition_point(0..i, |i| symbols.u64(i, 0) < nearest);
        (first..i)
            .find(|&s| svma < symbols.u64(s, 0) + symbols.u64(s, 8).max(1))
            .and_then(|s| Some((self.string(symbols.u32(s, 16))?, svma - symbols.u64(s, 0))))
    }

    /// Whether it carries a symbol table of its own.
    pub fn has_symbols(&self) -> bool {
        self.symbols.len > 0
    }
}
