//! The binary images of a target process (executable, shared libraries, vdso), parsed once
//! and shared: what the unwinder needs from them (CFI sections, PT_LOAD segments for the
//! load bias) and a raw symbol table for naming frames.
//!
//! Design constraints:
//! - This is the I/O side of unwinding: it opens files and reads the vdso from memory; the
//!   unwinder itself (`unwind.rs`) only looks at parsed [`Image`]s through an
//!   [`AddressSpace`], so that it runs on snapshots without touching `/proc`.
//! - Every thread of every rank is unwound at every sample, so a binary is parsed once per
//!   daemon ([`ImageCache`], keyed by the opened file's device, inode, size and mtime, or by
//!   build-id for the vdso), and an [`Image`] keeps its FDE lookup structures.
//! - Files are opened the way that finds the file the process really mapped:
//!   `/proc/PID/map_files/START-END` (still works when the binary was deleted or replaced
//!   since the process started), then `/proc/PID/root/PATH` (containers, chroots), then the
//!   plain path. A path ending in ` (deleted)` is never opened by name: that name now
//!   belongs to another file, or to none.
//! - Binaries can be garbage and processes exit at any moment: everything here returns an
//!   error or `None`, never panics.

use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::MetadataExt;
use std::sync::{Arc, Mutex, OnceLock};

use object::elf;
use object::read::elf::{ElfFile64, ProgramHeader as _};
use object::{Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, SymbolKind};

use crate::memory::MemoryReader;
use crate::procfs::{Mapping, Pid};

/// Why an image could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("cannot open {path}: {reason}")]
    Open { path: String, reason: String },
    #[error("{path} was deleted and /proc/PID/map_files is not readable")]
    Deleted { path: String },
    #[error("cannot read the vdso from memory: {0}")]
    Vdso(#[from] crate::memory::MemoryError),
    #[error("not a 64-bit little-endian ELF file: {0}")]
    Parse(String),
}

/// A section the unwinder reads: where it is in the image's bytes and its address (SVMA).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionRange {
    pub address: u64,
    pub bytes: Range<usize>,
}

/// One PT_LOAD program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    pub filesz: u64,
    pub align: u64,
    pub executable: bool,
}

#[derive(Clone, Debug)]
struct Symbol {
    address: u64,
    size: u64,
    /// 0 for a global symbol, 1 for a weak one, 2 for a local one: among aliases of the
    /// same size the lowest is named (see [`Image::symbol`]).
    binding: u8,
    name: Range<u32>,
}

/// An FDE's address range and where it starts in its section: the sorted table built once
/// for `.eh_frame` without a usable `.eh_frame_hdr`, and for `.debug_frame`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FdeEntry {
    pub start: u64,
    pub end: u64,
    pub offset: usize,
}

/// One parsed ELF object held in memory.
pub struct Image {
    /// The name it was loaded under (a path, or `[vdso]`).
    pub name: String,
    data: Vec<u8>,
    /// The GNU build-id, lowercase hex, if the image has one.
    pub build_id: Option<String>,
    /// The file's modification time (seconds, nanoseconds) when it was read from one:
    /// with its path and size, what identifies a binary without a build-id.
    pub modified: Option<(i64, i64)>,
    pub eh_frame: Option<SectionRange>,
    pub eh_frame_hdr: Option<SectionRange>,
    pub debug_frame: Option<SectionRange>,
    pub text: Option<u64>,
    pub got: Option<u64>,
    pub segments: Vec<Segment>,
    symbols: Vec<Symbol>,
    /// Sized data objects, by address (from `.dynsym`, else `.symtab`).
    data_symbols: Vec<Symbol>,
    /// The dynamic symbol each GOT slot is bound to (`.rela.plt`, `.rela.dyn`), by slot
    /// address: what a call through the PLT or the GOT calls.
    got_slots: Vec<(u64, String)>,
    symbol_names: String,
    /// Whether the symbols came from `.symtab` (else `.dynsym`, or none).
    pub has_symtab: bool,
    pub(crate) eh_frame_table: OnceLock<Vec<FdeEntry>>,
    pub(crate) debug_frame_table: OnceLock<Vec<FdeEntry>>,
}

impl fmt::Debug for Image {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Image")
            .field("name", &self.name)
            .field("len", &self.data.len())
            .field("build_id", &self.build_id)
            .field("symbols", &self.symbols.len())
            .finish_non_exhaustive()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Image {
    /// Parses an ELF image from its bytes (a file's contents, or the vdso read from memory).
    pub fn parse(name: impl Into<String>, data: Vec<u8>) -> Result<Image, ImageError> {
        let name = name.into();
        let bad = |e: object::Error| ImageError::Parse(format!("{name}: {e}"));
        let file = ElfFile64::<object::Endianness>::parse(&data[..]).map_err(bad)?;
        if !file.is_little_endian() {
            return Err(ImageError::Parse(format!("{name}: big-endian")));
        }
        let endian = file.endian();
        let section = |n: &str| -> Option<SectionRange> {
            let s = file.section_by_name(n)?;
            // A compressed .debug_frame would need decompression; without it the section
            // is ignored (eh_frame is never compressed).
            if s.compressed_file_range().ok()?.format != object::CompressionFormat::None {
                return None;
            }
            let (off, len) = s.file_range()?;
            let start = usize::try_from(off).ok()?;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            (end <= data.len()).then_some(SectionRange {
                address: s.address(),
                bytes: start..end,
            })
        };
        let segments = file
            .elf_program_headers()
            .iter()
            .filter(|p| p.p_type(endian) == elf::PT_LOAD)
            .map(|p| Segment {
                vaddr: p.p_vaddr(endian),
                memsz: p.p_memsz(endian),
                offset: p.p_offset(endian),
                filesz: p.p_filesz(endian),
                align: p.p_align(endian).max(1),
                executable: (p.p_flags(endian) & elf::PF_X).0 != 0,
            })
            .collect();
        let mut symbol_names = String::new();
        let mut collect = |syms: object::read::elf::ElfSymbolIterator<
            '_,
            '_,
            elf::FileHeader64<object::Endianness>,
        >,
                           kind: SymbolKind| {
            let mut out = Vec::new();
            for s in syms {
                if s.kind() != kind || !s.is_definition() || s.address() == 0 {
                    continue;
                }
                // A data symbol names what a pointer points into: it needs its extent.
                if kind == SymbolKind::Data && s.size() == 0 {
                    continue;
                }
                let Ok(n) = s.name_bytes() else { continue };
                let n = String::from_utf8_lossy(n);
                let start = symbol_names.len() as u32;
                symbol_names.push_str(&n);
                let binding = if s.is_weak() {
                    1
                } else if s.is_global() {
                    0
                } else {
                    2
                };
                out.push(Symbol {
                    address: s.address(),
                    size: s.size(),
                    binding,
                    name: start..symbol_names.len() as u32,
                });
            }
            out
        };
        let mut symbols = collect(file.symbols(), SymbolKind::Text);
        let has_symtab = !symbols.is_empty();
        if !has_symtab {
            symbols = collect(file.dynamic_symbols(), SymbolKind::Text);
        }
        // Global data (`ompi_mpi_comm_world`): what a pointer read in a variable points to,
        // as gdb prints `<symbol>` after it. Both tables: `.dynsym` has the exported
        // objects of a stripped library, `.symtab` the others (an executable's `.dynsym`
        // holds only copies of libraries' objects, `stdout`).
        let mut data_symbols = collect(file.symbols(), SymbolKind::Data);
        data_symbols.extend(collect(file.dynamic_symbols(), SymbolKind::Data));
        data_symbols.sort_by_key(|s| (s.address, s.binding));
        data_symbols.dedup_by_key(|s| s.address);
        // Sorted by address; among aliases at one address the one named comes first: the
        // sized symbol (zero-sized labels are less useful), then the global before the
        // weak before the local one, as elfutils (eu-stack) chooses. Open MPI's
        // `PMPI_Barrier` (global) thus names the frame, not its weak alias `MPI_Barrier`,
        // with or without DWARF (whose subprogram is `PMPI_Barrier` too); the name breaks
        // the last ties so that the choice never depends on the symbol table's order.
        //
        // One exception comes before the binding: a Fortran MPI binding is a global
        // implementation symbol (`ompi_barrier_f`) with weak aliases for every compiler's
        // mangling (`mpi_barrier_`, `mpi_barrier__`, `MPI_BARRIER`, ...). The one gfortran
        // and most compilers call, lowercase with one trailing underscore, names the frame:
        // it is what the program called and what "cut below MPI" recognises.
        symbols.sort_by(|a, b| {
            let name = |s: &Symbol| &symbol_names[s.name.start as usize..s.name.end as usize];
            let key = |s: &Symbol| {
                (
                    s.address,
                    std::cmp::Reverse(s.size),
                    !is_fortran_mpi_call(name(s)),
                    s.binding,
                )
            };
            key(a).cmp(&key(b)).then_with(|| name(a).cmp(name(b)))
        });
        let mut got_slots: Vec<(u64, String)> = Vec::new();
        if let Some(relocations) = file.dynamic_relocations() {
            let symbols = file.dynamic_symbol_table();
            for (slot, relocation) in relocations {
                let object::RelocationTarget::Symbol(index) = relocation.target() else {
                    continue;
                };
                let name = symbols
                    .as_ref()
                    .and_then(|t| t.symbol_by_index(index).ok())
                    .and_then(|s| s.name().ok())
                    .filter(|n| !n.is_empty());
                if let Some(name) = name {
                    got_slots.push((slot, name.to_string()));
                }
            }
        }
        got_slots.sort();
        let build_id = file.build_id().ok().flatten().map(hex);
        let eh_frame = section(".eh_frame");
        let eh_frame_hdr = section(".eh_frame_hdr");
        let debug_frame = section(".debug_frame");
        let text = file.section_by_name(".text").map(|s| s.address());
        let got = file.section_by_name(".got").map(|s| s.address());
        Ok(Image {
            name,
            build_id,
            modified: None,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            text,
            got,
            segments,
            symbols,
            data_symbols,
            got_slots,
            symbol_names,
            has_symtab,
            eh_frame_table: OnceLock::new(),
            debug_frame_table: OnceLock::new(),
            data,
        })
    }

    /// Reads and parses a file.
    pub fn open(name: impl Into<String>, mut file: File) -> Result<Image, ImageError> {
        let name = name.into();
        let mut data = Vec::new();
        let read = file.read_to_end(&mut data);
        let md = read
            .and_then(|_| file.metadata())
            .map_err(|e| ImageError::Open {
                path: name.clone(),
                reason: e.to_string(),
            })?;
        let mut image = Image::parse(name, data)?;
        image.modified = Some((md.mtime(), md.mtime_nsec()));
        Ok(image)
    }

    /// The bytes of a section.
    pub fn section_data(&self, s: &SectionRange) -> &[u8] {
        self.data.get(s.bytes.clone()).unwrap_or(&[])
    }

    /// The image's bytes at an SVMA, from the file contents of the PT_LOAD segment that
    /// holds it (code never changes at run time, so this saves a read of the process).
    pub fn bytes_at(&self, svma: u64, len: usize) -> Option<&[u8]> {
        let end = svma.checked_add(len as u64)?;
        let seg = self
            .segments
            .iter()
            .find(|s| svma >= s.vaddr && end <= s.vaddr.saturating_add(s.filesz))?;
        let at = usize::try_from(seg.offset + (svma - seg.vaddr)).ok()?;
        self.data.get(at..at.checked_add(len)?)
    }

    /// The bytes of the whole ELF file (for reading its debug sections).
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Whether the image has any function symbol (from `.symtab` or `.dynsym`).
    pub fn has_symbols(&self) -> bool {
        !self.symbols.is_empty()
    }

    /// The function symbols (address, size, name) in the order [`Image::symbol`] searches
    /// them: a debug index keeps them so, and answers as this image would.
    pub fn function_symbols(&self) -> impl Iterator<Item = (u64, u64, &str)> {
        self.symbols.iter().map(|s| {
            let name = &self.symbol_names[s.name.start as usize..s.name.end as usize];
            (s.address, s.size, name)
        })
    }

    /// The function symbol containing `svma`, and the offset into it.
    pub fn symbol(&self, svma: u64) -> Option<(&str, u64)> {
        let i = self.symbols.partition_point(|s| s.address <= svma);
        // Aliases share an address: of all symbols at the nearest address, the first in
        // sort order (the preferred alias) whose extent contains svma (a zero-sized one
        // counts only at its address).
        let nearest = self.symbols.get(i.checked_sub(1)?)?.address;
        let first = self.symbols[..i].partition_point(|s| s.address < nearest);
        self.symbols[first..i]
            .iter()
            .find(|s| svma < s.address + s.size.max(1))
            .map(|s| {
                let name = &self.symbol_names[s.name.start as usize..s.name.end as usize];
                (name, svma - s.address)
            })
    }

    /// The address of a symbol by name (tests, and naming frames in `strata dump`).
    /// The dynamic symbol bound to the GOT slot at `svma`, if a relocation binds one.
    pub fn got_symbol(&self, svma: u64) -> Option<&str> {
        let i = self
            .got_slots
            .binary_search_by_key(&svma, |(a, _)| *a)
            .ok()?;
        Some(&self.got_slots[i].1)
    }

    /// The data object containing `svma` (a global variable, exported or not), and the
    /// offset into it.
    pub fn data_symbol(&self, svma: u64) -> Option<(&str, u64)> {
        let i = self.data_symbols.partition_point(|s| s.address <= svma);
        let s = self.data_symbols.get(i.checked_sub(1)?)?;
        (svma < s.address + s.size).then(|| {
            let name = &self.symbol_names[s.name.start as usize..s.name.end as usize];
            (name, svma - s.address)
        })
    }

    /// The address of a data object by name (an exported variable, such as the PMPI
    /// library's state).
    pub fn data_symbol_address(&self, name: &str) -> Option<u64> {
        self.data_symbols
            .iter()
            .find(|s| &self.symbol_names[s.name.start as usize..s.name.end as usize] == name)
            .map(|s| s.address)
    }

    pub fn symbol_address(&self, name: &str) -> Option<u64> {
        self.symbols
            .iter()
            .find(|s| &self.symbol_names[s.name.start as usize..s.name.end as usize] == name)
            .map(|s| s.address)
    }

    /// The load bias of a mapping of this image: `mapping start - SVMA of its first byte`,
    /// from the PT_LOAD segment whose file range holds the mapping's file offset. Correct
    /// for PIE (segments at 0-based addresses) and non-PIE (bias 0) alike.
    pub fn bias(&self, start: u64, file_offset: u64) -> Option<u64> {
        let holds = |s: &&Segment| {
            // Mappings start at page boundaries (4 KiB on x86-64), segments need not.
            let first_page = s.offset & !0xfff;
            file_offset >= first_page && file_offset < s.offset + s.filesz.max(1)
        };
        let seg = self
            .segments
            .iter()
            .filter(holds)
            .max_by_key(|s| s.executable)?;
        let svma = seg.vaddr.wrapping_sub(seg.offset).wrapping_add(file_offset);
        Some(start.wrapping_sub(svma))
    }
}

/// Images parsed once per daemon, shared between all tasks mapping the same binary.
#[derive(Debug, Default)]
pub struct ImageCache {
    by_file: Mutex<HashMap<FileKey, Arc<Image>>>,
    by_build_id: Mutex<HashMap<String, Arc<Image>>>,
}

/// Identifies a file's contents: a binary rebuilt in place keeps its inode but not its
/// size and mtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileKey {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl ImageCache {
    pub fn new() -> ImageCache {
        ImageCache::default()
    }

    /// The number of distinct images parsed so far.
    pub fn len(&self) -> usize {
        self.by_file.lock().map(|m| m.len()).unwrap_or(0)
            + self.by_build_id.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The image of a file mapped by `pid`, opened as the module doc says.
    pub fn load_file(&self, pid: Pid, m: &Mapping) -> Result<Arc<Image>, ImageError> {
        let file = open_mapped(pid, m)?;
        let md = file.metadata().map_err(|e| ImageError::Open {
            path: m.path.clone(),
            reason: e.to_string(),
        })?;
        let key = FileKey {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime: (md.mtime(), md.mtime_nsec()),
        };
        if let Some(img) = self.by_file.lock().ok().and_then(|c| c.get(&key).cloned()) {
            return Ok(img);
        }
        // Parsed outside the lock: two threads may parse the same file once each, which is
        // cheaper than serialising every load behind one parse.
        let img = Arc::new(Image::open(m.path.clone(), file)?);
        if let Ok(mut c) = self.by_file.lock() {
            return Ok(c.entry(key).or_insert(img).clone());
        }
        Ok(img)
    }

    /// The vdso, read from the process's memory (it has no file), cached by build-id.
    pub fn load_vdso(
        &self,
        m: &Mapping,
        memory: &dyn MemoryReader,
    ) -> Result<Arc<Image>, ImageError> {
        let len = usize::try_from(m.end.saturating_sub(m.start))
            .ok()
            .filter(|&l| l <= 64 << 20)
            .ok_or_else(|| ImageError::Parse("vdso mapping too large".into()))?;
        let mut data = vec![0u8; len];
        memory.read(m.start, &mut data)?;
        let img = Image::parse("[vdso]", data)?;
        let Some(id) = img.build_id.clone() else {
            return Ok(Arc::new(img));
        };
        let mut c = match self.by_build_id.lock() {
            Ok(c) => c,
            Err(_) => return Ok(Arc::new(img)),
        };
        Ok(c.entry(id).or_insert_with(|| Arc::new(img)).clone())
    }
}

const DELETED: &str = " (deleted)";

fn open_mapped(pid: Pid, m: &Mapping) -> Result<File, ImageError> {
    let map_files = format!("/proc/{pid}/map_files/{:x}-{:x}", m.start, m.end);
    let first_err = match File::open(&map_files) {
        Ok(f) => return Ok(f),
        Err(e) => e,
    };
    if m.path.ends_with(DELETED) {
        return Err(ImageError::Deleted {
            path: m.path.clone(),
        });
    }
    let rooted = format!("/proc/{pid}/root{}", m.path);
    File::open(&rooted)
        .or_else(|_| File::open(&m.path))
        .map_err(|e| ImageError::Open {
            path: m.path.clone(),
            reason: format!("{e} (map_files: {first_err})"),
        })
}

/// One executable mapping of a process and the image behind it.
#[derive(Debug, Clone)]
pub struct MappedImage {
    pub start: u64,
    pub end: u64,
    /// The mapping's offset in its file.
    pub offset: u64,
    /// The path from `/proc/PID/maps` (`[vdso]`, or a path maybe ending in ` (deleted)`).
    pub path: String,
    /// `avma - bias` is the address in the image's own address space (SVMA). Without an
    /// image, `start - offset`: right for the usual layout where file offset and SVMA agree.
    pub bias: u64,
    /// The image, or why it could not be loaded.
    pub image: Result<Arc<Image>, String>,
}

impl MappedImage {
    /// The file name part of the path (`libc.so.6`), for display.
    pub fn short_name(&self) -> &str {
        let p = self.path.strip_suffix(DELETED).unwrap_or(&self.path);
        p.rsplit('/').next().unwrap_or(p)
    }

    pub fn image(&self) -> Option<&Arc<Image>> {
        self.image.as_ref().ok()
    }
}

/// The executable mappings of one process, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct AddressSpace {
    pub mappings: Vec<MappedImage>,
}

impl AddressSpace {
    /// The images of `pid`'s executable mappings (`maps` from `procfs::maps`); `memory`
    /// reads the vdso. Mappings whose image cannot be loaded are kept, with the reason, so
    /// that the unwinder can still fall back to frame pointers through them.
    pub fn load(
        pid: Pid,
        maps: &[Mapping],
        memory: &dyn MemoryReader,
        cache: &ImageCache,
    ) -> AddressSpace {
        let mut mappings: Vec<MappedImage> = maps
            .iter()
            .filter(|m| m.is_executable())
            .map(|m| {
                let image = if m.path == "[vdso]" {
                    cache.load_vdso(m, memory)
                } else if m.path.starts_with('/') {
                    cache.load_file(pid, m)
                } else {
                    Err(ImageError::Open {
                        path: m.path.clone(),
                        reason: "anonymous or special mapping".into(),
                    })
                };
                let image = image.map_err(|e| e.to_string());
                let bias = image
                    .as_ref()
                    .ok()
                    .and_then(|i| i.bias(m.start, m.offset))
                    .unwrap_or(m.start.wrapping_sub(m.offset));
                MappedImage {
                    start: m.start,
                    end: m.end,
                    offset: m.offset,
                    path: m.path.clone(),
                    bias,
                    image,
                }
            })
            .collect();
        mappings.sort_by_key(|m| m.start);
        AddressSpace { mappings }
    }

    /// The mapping containing `avma`, with its index in `mappings`.
    pub fn find_index(&self, avma: u64) -> Option<usize> {
        let i = self.mappings.partition_point(|m| m.start <= avma);
        let i = i.checked_sub(1)?;
        (avma < self.mappings[i].end).then_some(i)
    }

    pub fn find(&self, avma: u64) -> Option<&MappedImage> {
        self.find_index(avma).map(|i| &self.mappings[i])
    }

    /// The global variable `avma` points into, as gdb names it after a pointer's value
    /// (`ompi_mpi_comm_world`, `buffer+0x10`): the data symbol of the loaded image whose
    /// segments hold it. Data lives in writable mappings, which are not kept: an image's
    /// executable mapping gives its load bias, and its segments say what it spans.
    pub fn data_name(&self, avma: u64) -> Option<String> {
        self.mappings.iter().find_map(|m| {
            let image = m.image.as_ref().ok()?;
            let svma = avma.wrapping_sub(m.bias);
            image
                .segments
                .iter()
                .any(|s| svma >= s.vaddr && svma - s.vaddr < s.memsz)
                .then(|| image.data_symbol(svma))
                .flatten()
                .map(|(name, offset)| match offset {
                    0 => name.to_string(),
                    _ => format!("{name}+{offset:#x}"),
                })
        })
    }

    /// `libc.so.6!__clock_nanosleep+0x5a`, `prog!0x1234` (SVMA, no symbol), or `0x7f..`
    /// outside any executable mapping. Raw (mangled) names. The address is named as given:
    /// pass a frame's `lookup_pc` to name the call rather than what follows it.
    pub fn describe(&self, avma: u64) -> String {
        let Some(m) = self.find(avma) else {
            return format!("{avma:#x}");
        };
        let svma = avma.wrapping_sub(m.bias);
        match m.image().and_then(|i| i.symbol(svma)) {
            Some((name, 0)) => format!("{}!{name}", m.short_name()),
            Some((name, off)) => format!("{}!{name}+{off:#x}", m.short_name()),
            None => format!("{}!{svma:#x}", m.short_name()),
        }
    }
}

/// `mpi_barrier_`: an MPI routine as a Fortran program calls it (lowercase, one trailing
/// underscore), not `mpi_barrier__` or `pmpi_barrier_` (the profiling entry).
fn is_fortran_mpi_call(name: &str) -> bool {
    name.starts_with("mpi_")
        && name.ends_with('_')
        && !name.ends_with("__")
        && strata_filters::mpi::is_mpi_entry_name(name)
        && !name.bytes().any(|b| b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::ProcessMemory;

    fn own_space() -> (AddressSpace, ImageCache) {
        let pid = std::process::id() as Pid;
        let cache = ImageCache::new();
        let maps = crate::procfs::maps(pid).unwrap();
        let space = AddressSpace::load(pid, &maps, &ProcessMemory::new(pid), &cache);
        (space, cache)
    }

    #[test]
    fn loads_own_images_and_names_a_function() {
        let (space, cache) = own_space();
        let exe = crate::procfs::exe(std::process::id() as Pid).unwrap();
        let exe = exe.to_string_lossy();
        let main = space
            .mappings
            .iter()
            .find(|m| m.path == exe)
            .expect("test binary mapped");
        let img = main.image().expect("test binary parsed");
        assert!(img.eh_frame.is_some() && img.eh_frame_hdr.is_some());
        assert!(img.build_id.as_ref().is_some_and(|b| b.len() >= 16));
        let vdso = space.mappings.iter().find(|m| m.path == "[vdso]");
        let vdso = vdso.expect("a vdso mapping");
        assert!(vdso.image().is_some_and(|i| i.eh_frame.is_some()));
        // This very function, by its address: the bias is right and the symbol table works.
        let me = loads_own_images_and_names_a_function as fn() as usize as u64;
        let d = space.describe(me + 1);
        assert!(d.contains("loads_own_images_and_names_a_function"), "{d}");
        assert!(d.ends_with("+0x1"), "{d}");
        // Loading again parses nothing new: the same images come back.
        let pid = std::process::id() as Pid;
        let again = AddressSpace::load(
            pid,
            &crate::procfs::maps(pid).unwrap(),
            &ProcessMemory::new(pid),
            &cache,
        );
        let loaded = |s: &AddressSpace| -> Vec<*const Image> {
            s.mappings
                .iter()
                .filter_map(|m| m.image().map(Arc::as_ptr))
                .collect()
        };
        assert!(loaded(&space).len() >= 3, "exe, libc, vdso at least");
        assert_eq!(loaded(&space), loaded(&again));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(Image::parse("x", vec![]).is_err());
        assert!(Image::parse("x", b"\x7fELF\x02\x01\x01garbage".to_vec()).is_err());
        let mut elf = std::fs::read("/proc/self/exe").unwrap();
        elf.truncate(200);
        let _ = Image::parse("x", elf);
        assert!(AddressSpace::default().find(0x1000).is_none());
        assert_eq!(AddressSpace::default().describe(0x1000), "0x1000");
    }

    #[test]
    fn bias_for_pie_and_fixed_layouts() {
        let seg = |vaddr, offset, filesz, executable| Segment {
            vaddr,
            memsz: filesz,
            offset,
            filesz,
            align: 0x1000,
            executable,
        };
        let pie = Image {
            segments: vec![
                seg(0, 0, 0x600, false),
                seg(0x1000, 0x1000, 0x200, true),
                seg(0x3df0, 0x2df0, 0x230, false),
            ],
            ..Image::parse("self", std::fs::read("/proc/self/exe").unwrap()).unwrap()
        };
        assert_eq!(pie.bias(0x5555_5555_5000, 0x1000), Some(0x5555_5555_4000));
        // A data segment whose file offset is not page aligned: its mapping starts at the
        // page holding it, whose SVMA is the segment's vaddr less the same amount.
        assert_eq!(pie.bias(0x5555_5555_8000, 0x2000), Some(0x5555_5555_5000));
        let fixed = Image {
            segments: vec![
                seg(0x400000, 0, 0x600, false),
                seg(0x401000, 0x1000, 0x200, true),
            ],
            ..Image::parse("self", std::fs::read("/proc/self/exe").unwrap()).unwrap()
        };
        assert_eq!(fixed.bias(0x401000, 0x1000), Some(0));
        assert_eq!(fixed.bias(0x401000, 0x9000), None);
    }
}
