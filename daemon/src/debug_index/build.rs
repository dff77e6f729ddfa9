//! Building a debug index from DWARF: one pass over every compilation unit's functions,
//! inlined calls and line program, written in the layout `format.rs` describes.
//!
//! The index answers "which source frames are at this address" exactly as addr2line's
//! lazily parsed context does (the symbolizer's other path, and the reference the tests
//! compare against): the same function ranges (low/high pc, size or range lists, empty
//! ranges dropped), the same name rules (linkage name first, then the name, then through
//! `DW_AT_abstract_origin`/`DW_AT_specification`, into the dwz file too, 16 levels at
//! most), the same inlined-call tree searched by depth, and the same line rows (a later
//! row at the same address replaces the earlier one). Where the two could differ is
//! where addr2line itself is unspecified: overlapping ranges of different functions.
//!
//! A unit that fails to parse is left out whole: addr2line would fail every lookup in it,
//! and the symbolizer then falls back to the symbol table, as it does here.

use std::collections::HashMap;

use gimli::ReaderOffset as _;

use super::format::{NONE, PARTIAL, Writer};
use super::index::{
    FRANGE_SIZE, FUNC_SIZE, INLINE_SIZE, Meta, ROW_SIZE, SEQ_SIZE, STRING_SIZE, SYMBOL_SIZE,
    UNINDEXED, UNIT_SIZE, URANGE_SIZE,
};

/// A symbol of the debug file's own table (address, size, name), in the order the
/// image's symbol lookup wants them (see `Image::symbol`).
pub type Symbol<'a> = (u64, u64, &'a str);

/// The index of `dwarf` (with its dwz file attached as `sup`, if any), the debug file's
/// symbols, and `meta`, as the bytes of an index file.
///
/// With `wanted` (sorted addresses), a partial index: only the units that cover one of
/// them, and every unit whose ranges overlap those (see `covering_units`), so that any
/// address a unit of the index covers has the answer the whole index would give. The
/// other units keep their (empty) records, and the header says `PARTIAL`.
pub fn build<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    symbols: &[Symbol<'_>],
    meta: &Meta,
    wanted: Option<&[u64]>,
) -> Vec<u8> {
    let mut b = Builder::default();
    let main = Units::parse(dwarf);
    let sup = dwarf.sup().map(Units::parse);
    let files = Files {
        main: &main,
        sup: sup.as_ref(),
    };
    let aranges = Aranges::parse(dwarf);
    let selected = wanted.map(|svmas| covering_units(dwarf, &main, &aranges, svmas));
    if let Some((chosen, ranges)) = &selected {
        // The ranges of the units left out, so that a lookup can tell "not indexed here"
        // from "no unit covers it" (code without DWARF, answered from the symbol table).
        let left_out = ranges.iter().filter(|r| !chosen[r.2]);
        b.uranges
            .extend(left_out.map(|&(begin, end, unit)| (begin, end, unit as u32, UNINDEXED)));
    }
    for (unit_id, (offset, unit)) in main.list.iter().enumerate() {
        let (franges, seqs) = (b.franges.len() as u32, b.seqs.len() as u32);
        // Every unit has a record (unit ids are list positions); only compile units have
        // functions, lines and address ranges.
        b.units.push((franges, 0, seqs, 0));
        let kind = unit.header.type_();
        if matches!(
            kind,
            gimli::UnitType::Partial
                | gimli::UnitType::Type { .. }
                | gimli::UnitType::SplitType { .. }
        ) {
            continue;
        }
        if selected
            .as_ref()
            .is_some_and(|(chosen, _)| !chosen[unit_id])
        {
            continue;
        }
        let unit_ref = gimli::UnitRef::new(dwarf, unit);
        // A unit that fails leaves nothing (addr2line would fail every lookup in it).
        let mark = b.mark();
        let added = b.add_unit(unit_ref, unit_id as u32, &files).and_then(|()| {
            b.units[unit_id] = (
                franges,
                b.franges.len() as u32 - franges,
                seqs,
                b.seqs.len() as u32 - seqs,
            );
            b.add_unit_ranges(unit_ref, offset.0.into_u64(), unit_id as u32, &aranges)
        });
        if added.is_err() {
            b.rewind(mark);
            b.units[unit_id] = (franges, 0, seqs, 0);
        }
    }
    for &(address, size, name) in symbols {
        let name = b.string(name);
        b.symbols.push((address, size, name));
    }
    let flags = if selected.is_some() { PARTIAL } else { 0 };
    b.write(meta, flags)
}

/// Which units a partial index for `svmas` must hold (and every unit's ranges, where it
/// could read them): every unit whose ranges hold one of
/// them, closed under overlap (a unit whose ranges overlap a chosen unit's is chosen
/// too, through any number of steps), and every unit whose ranges cannot be read before
/// its line program is (those are always in). Then an address that any chosen unit
/// covers is covered only by chosen units, and looking it up in the partial index
/// searches exactly the units the whole index would.
fn covering_units<R: gimli::Reader>(
    dwarf: &gimli::Dwarf<R>,
    main: &Units<R>,
    aranges: &Aranges,
    svmas: &[u64],
) -> (Vec<bool>, Vec<(u64, u64, usize)>) {
    let mut chosen = vec![false; main.list.len()];
    let mut ranges = Vec::new();
    for (unit_id, (offset, unit)) in main.list.iter().enumerate() {
        let unit_ref = gimli::UnitRef::new(dwarf, unit);
        match unit_ranges(unit_ref, offset.0.into_u64(), aranges) {
            Ok(found) if !found.is_empty() => {
                ranges.extend(found.into_iter().map(|(b, e)| (b, e, unit_id)));
            }
            _ => chosen[unit_id] = true,
        }
    }
    // Overlapping ranges, sorted by start, form runs that cover their span without a
    // gap; the units of a run, and of runs sharing a unit, are one group.
    ranges.sort_unstable_by_key(|r| (r.0, r.1));
    let mut group: Vec<usize> = (0..main.list.len()).collect();
    fn root(group: &mut [usize], mut u: usize) -> usize {
        while group[u] != u {
            group[u] = group[group[u]];
            u = group[u];
        }
        u
    }
    // Each run: its start, end and first unit.
    let mut runs: Vec<(u64, u64, usize)> = Vec::new();
    for &(begin, end, unit) in &ranges {
        match runs.last_mut() {
            Some(run) if begin < run.1 => {
                run.1 = run.1.max(end);
                let (a, b) = (root(&mut group, run.2), root(&mut group, unit));
                group[a] = b;
            }
            _ => runs.push((begin, end, unit)),
        }
    }
    let mut wanted_groups = std::collections::HashSet::new();
    for &svma in svmas {
        let i = runs.partition_point(|r| r.0 <= svma);
        if let Some(&(_, end, unit)) = i.checked_sub(1).map(|i| &runs[i])
            && svma < end
        {
            wanted_groups.insert(root(&mut group, unit));
        }
    }
    for (unit, chosen) in chosen.iter_mut().enumerate() {
        *chosen = *chosen || wanted_groups.contains(&root(&mut group, unit));
    }
    (chosen, ranges)
}

/// A unit's address ranges, chosen as addr2line chooses them to find the units that may
/// hold an address: `DW_AT_ranges`, else the unit's `.debug_aranges` set, else its
/// low/high pc. Empty when it has none of them (addr2line then uses its line sequences).
fn unit_ranges<R: gimli::Reader>(
    unit: gimli::UnitRef<'_, R>,
    offset: u64,
    aranges: &Aranges,
) -> Result<Vec<(u64, u64)>> {
    let mut entries = unit.entries_raw(None)?;
    let Some(abbrev) = entries.read_abbreviation()? else {
        return Ok(Vec::new());
    };
    let mut ranges = Ranges::default();
    for spec in abbrev.attributes() {
        let attr = entries.read_attribute(*spec)?;
        ranges.read(unit, &attr)?;
    }
    let mut found = Vec::new();
    if ranges.list.is_none()
        && let Some(set) = aranges.of(offset)
    {
        found.extend(set.map(|r| (r.begin, r.end)));
    }
    if found.is_empty() {
        ranges.each(unit, |b, e| found.push((b, e)))?;
    }
    Ok(found)
}

/// `.debug_aranges`: the address ranges of each unit that has a set there.
struct Aranges(Vec<(u64, Vec<gimli::Range>)>);

impl Aranges {
    fn parse<R: gimli::Reader>(dwarf: &gimli::Dwarf<R>) -> Aranges {
        let mut sets = Vec::new();
        let mut headers = dwarf.debug_aranges.headers();
        while let Ok(Some(header)) = headers.next() {
            let mut ranges = Vec::new();
            let mut entries = header.entries();
            loop {
                match entries.next() {
                    Ok(Some(arange)) if arange.length() != 0 => ranges.push(arange.range()),
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    // As addr2line: an entry that overflows is skipped (the iterator
                    // stops by itself on errors it cannot skip).
                    Err(_) => continue,
                }
            }
            sets.push((header.debug_info_offset().0.into_u64(), ranges));
        }
        sets.sort_by_key(|s| s.0);
        Aranges(sets)
    }

    /// The ranges of the unit at `offset`, if it has a set (or several).
    fn of(&self, offset: u64) -> Option<impl Iterator<Item = gimli::Range> + '_> {
        let first = self.0.partition_point(|s| s.0 < offset);
        let sets = &self.0[first..];
        let n = sets.iter().take_while(|s| s.0 == offset).count();
        (n > 0).then(|| sets[..n].iter().flat_map(|s| s.1.iter().copied()))
    }
}

/// A file's units by offset, for following references out of the unit at hand.
struct Units<R: gimli::Reader> {
    list: Vec<(gimli::DebugInfoOffset<R::Offset>, gimli::Unit<R>)>,
}

impl<R: gimli::Reader> Units<R> {
    fn parse(dwarf: &gimli::Dwarf<R>) -> Units<R> {
        let mut list = Vec::new();
        let mut headers = dwarf.units();
        while let Ok(Some(header)) = headers.next() {
            let Some(offset) = header.debug_info_offset() else {
                continue;
            };
            if let Ok(unit) = dwarf.unit(header) {
                list.push((offset, unit));
            }
        }
        Units { list }
    }

    /// The unit holding `at`, and `at` as an offset inside it.
    fn find(
        &self,
        at: gimli::DebugInfoOffset<R::Offset>,
    ) -> Option<(&gimli::Unit<R>, gimli::UnitOffset<R::Offset>)> {
        let i = self
            .list
            .partition_point(|(o, _)| o.0 <= at.0)
            .checked_sub(1)?;
        let unit = &self.list[i].1;
        let offset = at.to_unit_offset(&unit.header)?;
        Some((unit, offset))
    }
}

/// Where addr2line itself leaves the answer unspecified (functions with the same range:
/// the assembler's `__swapcontext` and `swapcontext` in libc, identical code folded), it
/// answers with the last entry of its sorted table whose start is at or before the
/// address. The index gives the same answer by sorting the same keys with the same
/// algorithm: `sort_unstable` orders ties by the element type's size and traits, so these
/// mirror addr2line's own types (not `Copy`, the same fields).
struct FunctionAddress {
    range: gimli::Range,
    function: usize,
}

/// See [`FunctionAddress`].
struct InlinedFunctionAddress {
    range: gimli::Range,
    call_depth: usize,
    function: usize,
}

/// See [`FunctionAddress`].
struct LineSequence {
    start: u64,
    end: u64,
    rows: Box<[(u32, u32, u32)]>,
}

struct Files<'a, R: gimli::Reader> {
    main: &'a Units<R>,
    sup: Option<&'a Units<R>>,
}

#[derive(Default)]
struct Builder {
    strings: Vec<(u32, u32)>,
    blob: Vec<u8>,
    interned: HashMap<Vec<u8>, u32>,
    /// File id -> string id.
    files: Vec<u32>,
    file_ids: HashMap<u32, u32>,
    /// (name, language, unit, first inline, inline count).
    funcs: Vec<(u32, u32, u32, u32, u32)>,
    /// (begin, end, function).
    franges: Vec<(u64, u64, u32)>,
    /// (begin, end, depth, name, call file, call line).
    inlines: Vec<(u64, u64, u32, u32, u32, u32)>,
    /// (start, end, unit, first row, row count).
    seqs: Vec<(u64, u64, u32, u32, u32)>,
    /// (offset from the sequence's start, file, line).
    rows: Vec<(u32, u32, u32)>,
    symbols: Vec<(u64, u64, u32)>,
    /// Per unit: (first function range, count, first line sequence, count).
    units: Vec<(u32, u32, u32, u32)>,
    /// The units' address ranges: (begin, end, unit, flags: `UNINDEXED` for a unit a
    /// partial index left out).
    uranges: Vec<(u64, u64, u32, u32)>,
}

/// Table lengths, to undo a unit's additions (strings and files stay: harmless).
#[derive(Clone, Copy)]
struct Mark {
    funcs: usize,
    franges: usize,
    inlines: usize,
    seqs: usize,
    rows: usize,
    uranges: usize,
}

type Result<T> = std::result::Result<T, gimli::Error>;

/// The address ranges of a DIE, as its attributes give them.
struct Ranges<R: gimli::Reader> {
    low_pc: Option<u64>,
    high_pc: Option<u64>,
    size: Option<u64>,
    list: Option<gimli::RangeListsOffset<R::Offset>>,
}

impl<R: gimli::Reader> Default for Ranges<R> {
    fn default() -> Self {
        Ranges {
            low_pc: None,
            high_pc: None,
            size: None,
            list: None,
        }
    }
}

impl<R: gimli::Reader> Ranges<R> {
    /// Reads `attr` if it is one of the range attributes; true if it was.
    fn read(&mut self, unit: gimli::UnitRef<'_, R>, attr: &gimli::Attribute<R>) -> Result<bool> {
        match (attr.name(), attr.value()) {
            (gimli::DW_AT_low_pc, gimli::AttributeValue::Addr(v)) => self.low_pc = Some(v),
            (gimli::DW_AT_low_pc, gimli::AttributeValue::DebugAddrIndex(i)) => {
                self.low_pc = Some(unit.address(i)?)
            }
            (gimli::DW_AT_high_pc, gimli::AttributeValue::Addr(v)) => self.high_pc = Some(v),
            (gimli::DW_AT_high_pc, gimli::AttributeValue::DebugAddrIndex(i)) => {
                self.high_pc = Some(unit.address(i)?)
            }
            (gimli::DW_AT_high_pc, gimli::AttributeValue::Udata(v)) => self.size = Some(v),
            (gimli::DW_AT_ranges, v) => self.list = unit.attr_ranges_offset(v)?,
            (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc, _) => {}
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Every non-empty range (a range list wins over low/high pc; a -1 tombstone's
    /// size overflows and is dropped as empty).
    fn each(&self, unit: gimli::UnitRef<'_, R>, mut f: impl FnMut(u64, u64)) -> Result<bool> {
        let mut any = false;
        let mut add = |begin: u64, end: u64| {
            if begin < end {
                f(begin, end);
                any = true;
            }
        };
        if let Some(offset) = self.list {
            let mut list = unit.ranges(offset)?;
            while let Some(r) = list.next()? {
                add(r.begin, r.end);
            }
        } else if let (Some(begin), Some(end)) = (self.low_pc, self.high_pc) {
            add(begin, end);
        } else if let (Some(begin), Some(size)) = (self.low_pc, self.size) {
            add(begin, begin.wrapping_add(size));
        }
        Ok(any)
    }
}

impl Builder {
    fn mark(&self) -> Mark {
        Mark {
            funcs: self.funcs.len(),
            franges: self.franges.len(),
            inlines: self.inlines.len(),
            seqs: self.seqs.len(),
            rows: self.rows.len(),
            uranges: self.uranges.len(),
        }
    }

    /// The unit's address ranges ([`unit_ranges`]), else its line sequences.
    fn add_unit_ranges<R: gimli::Reader>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
        offset: u64,
        unit_id: u32,
        aranges: &Aranges,
    ) -> Result<()> {
        let mut found = unit_ranges(unit, offset, aranges)?;
        if found.is_empty() {
            let (first, count) = (
                self.units[unit_id as usize].2,
                self.units[unit_id as usize].3,
            );
            let seqs = &self.seqs[first as usize..(first + count) as usize];
            found.extend(seqs.iter().map(|s| (s.0, s.1)));
        }
        self.uranges
            .extend(found.into_iter().map(|(b, e)| (b, e, unit_id, 0)));
        Ok(())
    }

    fn rewind(&mut self, m: Mark) {
        self.funcs.truncate(m.funcs);
        self.franges.truncate(m.franges);
        self.inlines.truncate(m.inlines);
        self.seqs.truncate(m.seqs);
        self.rows.truncate(m.rows);
        self.uranges.truncate(m.uranges);
    }

    fn string_bytes(&mut self, s: &[u8]) -> u32 {
        if let Some(&id) = self.interned.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push((self.blob.len() as u32, s.len() as u32));
        self.blob.extend_from_slice(s);
        self.interned.insert(s.to_vec(), id);
        id
    }

    fn string(&mut self, s: &str) -> u32 {
        self.string_bytes(s.as_bytes())
    }

    fn file(&mut self, path: &str) -> u32 {
        let s = self.string(path);
        let next = self.files.len() as u32;
        let id = *self.file_ids.entry(s).or_insert(next);
        if id == next {
            self.files.push(s);
        }
        id
    }

    fn add_unit<R: gimli::Reader>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
        unit_id: u32,
        files: &Files<'_, R>,
    ) -> Result<()> {
        let language = unit_language(unit)?;
        // The unit's file table, rendered as addr2line renders it, as file ids.
        let file_ids = match &unit.line_program {
            Some(program) => {
                let header = program.header();
                let mut ids = Vec::new();
                match header.file(0) {
                    Some(f) => ids.push(self.file(&render_file(unit, f, header)?)),
                    None => ids.push(self.file("")),
                }
                let mut i = 1;
                while let Some(f) = header.file(i) {
                    ids.push(self.file(&render_file(unit, f, header)?));
                    i += 1;
                }
                Some(ids)
            }
            None => None,
        };
        let file_of = |index: u64| -> u32 {
            file_ids
                .as_ref()
                .and_then(|ids| ids.get(index as usize).copied())
                .unwrap_or(NONE)
        };
        self.add_lines(unit, unit_id, &file_of)?;

        // Every subprogram with an address, then each one's inlined calls.
        let mut subprograms = Vec::new();
        let mut entries = unit.entries_raw(None)?;
        while !entries.is_empty() {
            let offset = entries.next_offset();
            let Some(abbrev) = entries.read_abbreviation()? else {
                continue;
            };
            if abbrev.tag() != gimli::DW_TAG_subprogram {
                entries.skip_attributes(abbrev.attributes())?;
                continue;
            }
            let mut ranges = Ranges::default();
            for spec in abbrev.attributes() {
                let attr = entries.read_attribute(*spec)?;
                ranges.read(unit, &attr)?;
            }
            let mut found = Vec::new();
            if ranges.each(unit, |b, e| found.push((b, e)))? {
                subprograms.push((offset, found));
            }
        }
        let mut addresses = Vec::new();
        for (offset, ranges) in subprograms {
            let function = self.funcs.len();
            let (name, inlines) = self.function(unit, offset, files, &file_of)?;
            let start = self.inlines.len() as u32;
            let count = inlines.len() as u32;
            self.inlines.extend(inlines);
            self.funcs.push((name, language, unit_id, start, count));
            for (begin, end) in ranges {
                let range = gimli::Range { begin, end };
                addresses.push(FunctionAddress { range, function });
            }
        }
        // addr2line's order, so that functions with one range come out in its order.
        addresses.sort_unstable_by_key(|x| x.range.begin);
        let franges = addresses
            .iter()
            .map(|a| (a.range.begin, a.range.end, a.function as u32));
        self.franges.extend(franges);
        Ok(())
    }

    /// The unit's line sequences, rows at one address merged (the last wins) and then
    /// consecutive rows of one file and line merged (the first stays: lookups are the
    /// same, the table smaller).
    fn add_lines<R: gimli::Reader>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
        unit_id: u32,
        file_of: &dyn Fn(u64) -> u32,
    ) -> Result<()> {
        let Some(program) = unit.line_program.clone() else {
            return Ok(());
        };
        let mut rows = program.rows();
        let mut current: Vec<(u64, u32, u32)> = Vec::new();
        let mut sequences = Vec::new();
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                let end = row.address();
                if let Some(&(start, ..)) = current.first()
                    && start < end
                    && end - start <= u64::from(u32::MAX)
                {
                    let mut merged = Vec::new();
                    let mut last: Option<(u32, u32)> = None;
                    for &(address, file, line) in &current {
                        if last == Some((file, line)) {
                            continue;
                        }
                        last = Some((file, line));
                        merged.push(((address - start) as u32, file, line));
                    }
                    let rows = merged.into_boxed_slice();
                    sequences.push(LineSequence { start, end, rows });
                }
                current.clear();
                continue;
            }
            let address = row.address();
            let file = file_of(row.file_index());
            let line = row.line().map_or(0, |l| l.get() as u32);
            match current.last_mut() {
                Some(last) if last.0 == address => *last = (address, file, line),
                // Rows go forward inside a sequence; one that does not is bad DWARF, and
                // the lookup's binary search needs them sorted.
                Some(last) if address < last.0 => {
                    return Err(gimli::Error::AddressOverflow);
                }
                _ => current.push((address, file, line)),
            }
        }
        // addr2line's order (see `FunctionAddress`).
        sequences.sort_unstable_by_key(|x| x.start);
        for seq in sequences {
            let first = self.rows.len() as u32;
            self.rows.extend(seq.rows.iter().copied());
            let count = seq.rows.len() as u32;
            self.seqs.push((seq.start, seq.end, unit_id, first, count));
        }
        Ok(())
    }

    /// A subprogram's name and its inlined calls, sorted by depth then start (so that a
    /// lookup finds the call at each depth by binary search).
    #[allow(clippy::type_complexity)]
    fn function<R: gimli::Reader>(
        &mut self,
        unit: gimli::UnitRef<'_, R>,
        offset: gimli::UnitOffset<R::Offset>,
        files: &Files<'_, R>,
        file_of: &dyn Fn(u64) -> u32,
    ) -> Result<(u32, Vec<(u64, u64, u32, u32, u32, u32)>)> {
        let mut entries = unit.entries_raw(Some(offset))?;
        let depth = entries.next_depth();
        let abbrev = entries
            .read_abbreviation()?
            .ok_or(gimli::Error::NoEntryAtGivenOffset(offset.0.into_u64()))?;
        let mut name: Option<R> = None;
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            read_name(&mut name, unit, &attr, files)?;
        }
        let name = self.name(name)?;
        let mut inlines = Vec::new();
        self.children(&mut entries, unit, depth, 0, files, file_of, &mut inlines)?;
        // addr2line's order (see `FunctionAddress`): by depth, then start.
        let mut addresses: Vec<InlinedFunctionAddress> = (inlines.iter().enumerate())
            .map(|(function, i)| InlinedFunctionAddress {
                range: gimli::Range {
                    begin: i.0,
                    end: i.1,
                },
                call_depth: i.2 as usize,
                function,
            })
            .collect();
        addresses.sort_unstable_by(|r1, r2| {
            (r1.call_depth.cmp(&r2.call_depth)).then(r1.range.begin.cmp(&r2.range.begin))
        });
        Ok((
            name,
            addresses.iter().map(|a| inlines[a.function]).collect(),
        ))
    }

    fn name<R: gimli::Reader>(&mut self, name: Option<R>) -> Result<u32> {
        Ok(match name {
            Some(r) => {
                let bytes = r.to_slice()?;
                self.string_bytes(&String::from_utf8_lossy(&bytes).into_owned().into_bytes())
            }
            None => NONE,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn children<R: gimli::Reader>(
        &mut self,
        entries: &mut gimli::EntriesRaw<'_, R>,
        unit: gimli::UnitRef<'_, R>,
        depth: isize,
        inlined_depth: u32,
        files: &Files<'_, R>,
        file_of: &dyn Fn(u64) -> u32,
        out: &mut Vec<(u64, u64, u32, u32, u32, u32)>,
    ) -> Result<()> {
        loop {
            let next_depth = entries.next_depth();
            if next_depth <= depth {
                return Ok(());
            }
            let Some(abbrev) = entries.read_abbreviation()? else {
                continue;
            };
            match abbrev.tag() {
                // A nested function is a function of its own (found by the unit's scan).
                gimli::DW_TAG_subprogram => {
                    entries.skip_attributes(abbrev.attributes())?;
                    while entries.next_depth() > next_depth {
                        if let Some(a) = entries.read_abbreviation()? {
                            entries.skip_attributes(a.attributes())?;
                        }
                    }
                }
                gimli::DW_TAG_inlined_subroutine => {
                    let mut ranges = Ranges::default();
                    let mut name = None;
                    let (mut call_file, mut call_line) = (NONE, 0);
                    for spec in abbrev.attributes() {
                        let attr = entries.read_attribute(*spec)?;
                        if ranges.read(unit, &attr)? {
                            continue;
                        }
                        match attr.name() {
                            gimli::DW_AT_call_file => {
                                // DWARF 5 numbers files from 0; before, 0 meant none.
                                if let gimli::AttributeValue::FileIndex(fi) = attr.value()
                                    && (fi > 0 || unit.header.version() >= 5)
                                {
                                    call_file = file_of(fi);
                                }
                            }
                            gimli::DW_AT_call_line => {
                                call_line = attr.udata_value().unwrap_or(0) as u32;
                            }
                            _ => read_name(&mut name, unit, &attr, files)?,
                        }
                    }
                    let name = self.name(name)?;
                    ranges.each(unit, |b, e| {
                        out.push((b, e, inlined_depth, name, call_file, call_line));
                    })?;
                    self.children(
                        entries,
                        unit,
                        next_depth,
                        inlined_depth + 1,
                        files,
                        file_of,
                        out,
                    )?;
                }
                _ => entries.skip_attributes(abbrev.attributes())?,
            }
        }
    }

    fn write(mut self, meta: &Meta, flags: u32) -> Vec<u8> {
        // addr2line's unit search order: by end, then unit.
        self.uranges.sort_unstable_by_key(|r| (r.1, r.2));
        let mut w = Writer::default();
        meta.write(&mut w);
        w.table(self.strings.len(), STRING_SIZE);
        for &(off, len) in &self.strings {
            w.u32(off);
            w.u32(len);
        }
        w.table(self.blob.len(), 1);
        w.bytes.extend_from_slice(&self.blob);
        w.align();
        w.table(self.files.len(), 4);
        for &f in &self.files {
            w.u32(f);
        }
        w.align();
        w.table(self.funcs.len(), FUNC_SIZE);
        for &(name, lang, unit, start, count) in &self.funcs {
            for v in [name, lang, unit, start, count] {
                w.u32(v);
            }
        }
        w.align();
        w.table(self.franges.len(), FRANGE_SIZE);
        for &(begin, end, func) in &self.franges {
            w.u64(begin);
            w.u64(end);
            w.u32(func);
            w.u32(0);
        }
        w.table(self.inlines.len(), INLINE_SIZE);
        for &(begin, end, depth, name, file, line) in &self.inlines {
            w.u64(begin);
            w.u64(end);
            for v in [depth, name, file, line] {
                w.u32(v);
            }
        }
        w.table(self.seqs.len(), SEQ_SIZE);
        for &(start, end, unit, first, count) in &self.seqs {
            w.u64(start);
            w.u64(end);
            for v in [unit, first, count, 0] {
                w.u32(v);
            }
        }
        w.table(self.rows.len(), ROW_SIZE);
        for &(delta, file, line) in &self.rows {
            for v in [delta, file, line] {
                w.u32(v);
            }
        }
        w.align();
        w.table(self.units.len(), UNIT_SIZE);
        for &(franges, nf, seqs, ns) in &self.units {
            for v in [franges, nf, seqs, ns] {
                w.u32(v);
            }
        }
        // Each range with the least begin of it and every range after it: the unit
        // search stops once an address is below that.
        w.table(self.uranges.len(), URANGE_SIZE);
        let mut min_begin = vec![0; self.uranges.len()];
        let mut min = u64::MAX;
        for (i, r) in self.uranges.iter().enumerate().rev() {
            min = min.min(r.0);
            min_begin[i] = min;
        }
        for (&(begin, end, unit, flags), min) in self.uranges.iter().zip(min_begin) {
            w.u64(begin);
            w.u64(end);
            w.u64(min);
            w.u32(unit);
            w.u32(flags);
        }
        w.table(self.symbols.len(), SYMBOL_SIZE);
        for &(address, size, name) in &self.symbols {
            w.u64(address);
            w.u64(size);
            w.u32(name);
            w.u32(0);
        }
        w.finish(flags)
    }
}

/// The unit's `DW_AT_language`, as a u32 (0: none).
fn unit_language<R: gimli::Reader>(unit: gimli::UnitRef<'_, R>) -> Result<u32> {
    let mut entries = unit.entries_raw(None)?;
    let Some(abbrev) = entries.read_abbreviation()? else {
        return Ok(0);
    };
    let mut language = 0;
    for spec in abbrev.attributes() {
        let attr = entries.read_attribute(*spec)?;
        if let gimli::AttributeValue::Language(l) = attr.value() {
            language = u32::from(l.0);
        }
    }
    Ok(language)
}

/// Applies one attribute to a function's name: the linkage name wins, then the name, then
/// the name of what the DIE is an instance or definition of.
fn read_name<R: gimli::Reader>(
    name: &mut Option<R>,
    unit: gimli::UnitRef<'_, R>,
    attr: &gimli::Attribute<R>,
    files: &Files<'_, R>,
) -> Result<()> {
    match attr.name() {
        gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
            if let Ok(v) = unit.attr_string(attr.value()) {
                *name = Some(v);
            }
        }
        gimli::DW_AT_name if name.is_none() => {
            *name = unit.attr_string(attr.value()).ok();
        }
        gimli::DW_AT_abstract_origin | gimli::DW_AT_specification if name.is_none() => {
            *name = name_of(attr.value(), unit, files, false, 16)?;
        }
        _ => {}
    }
    Ok(())
}

/// The name of the DIE a reference points to, following its own references.
fn name_of<R: gimli::Reader>(
    value: gimli::AttributeValue<R>,
    unit: gimli::UnitRef<'_, R>,
    files: &Files<'_, R>,
    in_sup: bool,
    limit: usize,
) -> Result<Option<R>> {
    if limit == 0 {
        return Ok(None);
    }
    let (dwarf, target_unit, offset, in_sup) = match value {
        gimli::AttributeValue::UnitRef(offset) => (unit.dwarf, unit.unit, offset, in_sup),
        gimli::AttributeValue::DebugInfoRef(at) => {
            let units = if in_sup { files.sup } else { Some(files.main) };
            let Some((u, o)) = units.and_then(|u| u.find(at)) else {
                return Err(gimli::Error::NoEntryAtGivenOffset(at.0.into_u64()));
            };
            (unit.dwarf, u, o, in_sup)
        }
        gimli::AttributeValue::DebugInfoRefSup(at) => {
            let (Some(sup_dwarf), Some(sup)) = (unit.dwarf.sup(), files.sup) else {
                return Ok(None);
            };
            let Some((u, o)) = sup.find(at) else {
                return Err(gimli::Error::NoEntryAtGivenOffset(at.0.into_u64()));
            };
            (sup_dwarf, u, o, true)
        }
        _ => return Ok(None),
    };
    let unit = gimli::UnitRef::new(dwarf, target_unit);
    let mut entries = unit.entries_raw(Some(offset))?;
    let abbrev = entries
        .read_abbreviation()?
        .ok_or(gimli::Error::NoEntryAtGivenOffset(offset.0.into_u64()))?;
    let (mut name, mut next) = (None, None);
    for spec in abbrev.attributes() {
        let attr = entries.read_attribute(*spec)?;
        match attr.name() {
            gimli::DW_AT_linkage_name | gimli::DW_AT_MIPS_linkage_name => {
                if let Ok(v) = unit.attr_string(attr.value()) {
                    return Ok(Some(v));
                }
            }
            gimli::DW_AT_name => {
                if let Ok(v) = unit.attr_string(attr.value()) {
                    name = Some(v);
                }
            }
            gimli::DW_AT_abstract_origin | gimli::DW_AT_specification => next = Some(attr.value()),
            _ => {}
        }
    }
    if name.is_some() {
        return Ok(name);
    }
    match next {
        Some(next) => name_of(next, unit, files, in_sup, limit - 1),
        None => Ok(None),
    }
}

/// A file's path as addr2line renders it: the unit's directory, the file's directory
/// (index 0 is the unit's), then its name, an absolute part replacing what came before.
fn render_file<R: gimli::Reader>(
    unit: gimli::UnitRef<'_, R>,
    file: &gimli::FileEntry<R, R::Offset>,
    header: &gimli::LineProgramHeader<R, R::Offset>,
) -> Result<String> {
    let mut path = match &unit.comp_dir {
        Some(dir) => dir.to_string_lossy()?.into_owned(),
        None => String::new(),
    };
    if file.directory_index() != 0
        && let Some(dir) = file.directory(header)
    {
        push_path(&mut path, &unit.attr_string(dir)?.to_string_lossy()?);
    }
    push_path(
        &mut path,
        &unit.attr_string(file.path_name())?.to_string_lossy()?,
    );
    Ok(path)
}

fn push_path(path: &mut String, p: &str) {
    let rooted = |p: &str| {
        p.starts_with('/') || p.starts_with('\\') || matches!(p.get(1..3), Some(":/" | ":\\"))
    };
    if rooted(p) {
        *path = p.to_string();
        return;
    }
    let windows = path.starts_with('\\') || path.get(1..3) == Some(":\\");
    let separator = if windows { '\\' } else { '/' };
    if !path.is_empty() && !path.ends_with(separator) {
        path.push(separator);
    }
    path.push_str(p);
}
