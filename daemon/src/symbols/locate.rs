//! Where an image's debug information lives, and loading it: embedded DWARF, a separate
//! file by build-id, by `.gnu_debuglink` (CRC checked), and the dwz supplementary file,
//! in the order gdb and elfutils look (see the parent module's doc).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use object::{Object, ObjectSection};

use crate::images::Image;

/// Where an image's debug information comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DebugSource {
    /// DWARF in the image itself.
    Embedded,
    /// A separate file found by build-id.
    BuildIdFile(PathBuf),
    /// A separate file found through `.gnu_debuglink` (CRC checked).
    DebugLink(PathBuf),
    /// No DWARF: function names from `.symtab`/`.dynsym`, no lines.
    SymbolsOnly,
    /// Neither DWARF nor symbols (or no image at all).
    Nothing,
}

pub(super) type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// What one binary's debug information gave, loaded once.
pub(super) struct DebugInfo {
    pub(super) source: DebugSource,
    /// addr2line's context, built from `dwarf` by the first lookup that needs one
    /// ([`DebugInfo::context`]): building a debug index needs none, and the context
    /// parses every unit up front (a third of a cold front end's work on libc).
    context: OnceLock<Option<Mutex<addr2line::Context<Reader>>>>,
    /// The separate debug file's symbols, when the image itself only has `.dynsym`
    /// (a stripped library): they name the functions DWARF does not cover.
    pub(super) debug_symbols: Option<Image>,
    /// Debug files that were found and refused, and why.
    pub(super) notes: Vec<String>,
    /// `.debug_loc` and `.debug_loclists`, read on the first variable read only (see
    /// `parse_debug_object`, which leaves them out).
    pub(super) locations: OnceLock<gimli::LocationLists<Reader>>,
    /// Bytes of separate debug files (and dwz files) read to find and load it, refused
    /// candidates included.
    pub(super) bytes_read: u64,
    /// The DWARF the context was built from, kept to build a debug index from.
    pub(super) dwarf: Option<Arc<gimli::Dwarf<Reader>>>,
    /// The separate files the DWARF came from (debug file, dwz file).
    pub(super) inputs: Vec<PathBuf>,
}

impl DebugInfo {
    /// addr2line's context for lookups (None without DWARF), built on the first call.
    pub(super) fn context(&self) -> Option<&Mutex<addr2line::Context<Reader>>> {
        self.context
            .get_or_init(|| {
                let dwarf = self.dwarf.as_ref()?;
                addr2line::Context::from_arc_dwarf(dwarf.clone())
                    .ok()
                    .map(Mutex::new)
            })
            .as_ref()
    }

    /// Whether it has DWARF to look addresses up in or index.
    pub(super) fn has_dwarf(&self) -> bool {
        self.dwarf.is_some()
    }
}

/// What addr2line's context refuses a file for when it is made (unit headers and
/// `.debug_aranges` headers that do not parse), checked at load, without parsing every
/// unit, so that such DWARF is reported unusable as before the context became lazy.
fn headers_parse(dwarf: &gimli::Dwarf<Reader>) -> gimli::Result<()> {
    let mut units = dwarf.units();
    while units.next()?.is_some() {}
    let mut aranges = dwarf.debug_aranges.headers();
    while aranges.next()?.is_some() {}
    Ok(())
}

/// A parsed debug object: its DWARF sections, copied out of the file so that gimli's
/// readers own them (`Arc`), decompressed where needed.
pub(super) struct DebugObject {
    dwarf: gimli::Dwarf<Reader>,
    /// `.gnu_debugaltlink`: the dwz file's path and build-id.
    altlink: Option<(PathBuf, Vec<u8>)>,
    build_id: Option<Vec<u8>>,
}

fn has_dwarf(file: &object::File<'_>) -> bool {
    // --only-keep-debug and strip --strip-debug keep section headers consistent: a
    // .debug_info with contents means DWARF (NOBITS ones have no file data).
    file.section_by_name(".debug_info")
        .is_some_and(|s| s.file_range().is_some_and(|(_, len)| len > 0))
}

pub(super) fn parse_debug_object(data: &[u8]) -> Result<DebugObject, String> {
    let file = object::File::parse(data).map_err(|e| format!("not an ELF file: {e}"))?;
    if !has_dwarf(&file) {
        return Err("no DWARF".into());
    }
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let dwarf = gimli::Dwarf::load(|id| -> Result<Reader, String> {
        // Location lists (variables' whereabouts) are the largest sections addr2line never
        // reads: not decompressing and copying them saves a good part of a cold load.
        let unused = matches!(
            id,
            gimli::SectionId::DebugLoc | gimli::SectionId::DebugLocLists
        );
        let bytes: Arc<[u8]> = match file.section_by_name(id.name()).filter(|_| !unused) {
            Some(s) => {
                let d = s
                    .uncompressed_data()
                    .map_err(|e| format!("{}: {e}", id.name()))?;
                Arc::from(&*d)
            }
            None => Arc::from(&[][..]),
        };
        Ok(gimli::EndianReader::new(bytes, endian))
    })?;
    let altlink = file
        .gnu_debugaltlink()
        .ok()
        .flatten()
        .map(|(path, id)| (PathBuf::from(bytes_to_path(path)), id.to_vec()));
    let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    Ok(DebugObject {
        dwarf,
        altlink,
        build_id,
    })
}

fn bytes_to_path(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `<dir>/.build-id/xx/rest<suffix>` for each debug directory.
pub(super) fn build_id_paths(dirs: &[PathBuf], id: &[u8], suffix: &str) -> Vec<PathBuf> {
    let Some((first, rest)) = id.split_first() else {
        return Vec::new();
    };
    dirs.iter()
        .map(|d| {
            d.join(".build-id")
                .join(format!("{first:02x}"))
                .join(format!("{}{suffix}", hex(rest)))
        })
        .collect()
}

/// Where `.gnu_debuglink`'s `name` may be for a binary at `path`: beside it, in its
/// `.debug` folder, and under each debug directory (never the binary itself).
fn debuglink_paths(dirs: &[PathBuf], path: &str, name: &str) -> Vec<PathBuf> {
    let image_path = Path::new(path.strip_suffix(" (deleted)").unwrap_or(path));
    let dir = image_path.parent().unwrap_or(Path::new("/"));
    let relative = dir.strip_prefix("/").unwrap_or(dir);
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    candidates.extend(dirs.iter().map(|d| d.join(relative).join(name)));
    candidates.retain(|c| c != image_path);
    candidates
}

/// Whether `image` (mapped from `path`) may have DWARF, by the metadata of the places the
/// loader (`locate_and_load`) reads, reading no debug file: embedded, or a separate file
/// by its build-id or `.gnu_debuglink` exists. False for most system libraries, whose
/// debug packages are not installed: asking anyone else to index them would be wasted.
pub fn may_have_dwarf(image: &Image, path: &str, dirs: &[PathBuf]) -> bool {
    let Ok(file) = object::File::parse(image.data()) else {
        return false;
    };
    if has_dwarf(&file) {
        return true;
    }
    let exists = |p: &PathBuf| p.is_file();
    if let Some(id) = file.build_id().ok().flatten()
        && build_id_paths(dirs, id, ".debug").iter().any(exists)
    {
        return true;
    }
    file.gnu_debuglink()
        .ok()
        .flatten()
        .is_some_and(|(name, _)| {
            debuglink_paths(dirs, path, &bytes_to_path(name))
                .iter()
                .any(exists)
        })
}

/// Finds and loads the debug information of `image`, mapped from `path`.
pub(super) fn load_debug_info(image: &Image, path: &str, dirs: &[PathBuf]) -> DebugInfo {
    let mut read = 0;
    let mut info = locate_and_load(image, path, dirs, &mut read);
    info.bytes_read = read;
    info
}

/// [`load_debug_info`], adding the bytes of every file it reads to `read`.
fn locate_and_load(image: &Image, path: &str, dirs: &[PathBuf], read: &mut u64) -> DebugInfo {
    let mut notes = Vec::new();
    let symbols_only = |notes| DebugInfo {
        source: if image.has_symbols() {
            DebugSource::SymbolsOnly
        } else {
            DebugSource::Nothing
        },
        context: OnceLock::new(),
        debug_symbols: None,
        notes,
        locations: OnceLock::new(),
        bytes_read: 0,
        dwarf: None,
        inputs: Vec::new(),
    };
    let Ok(file) = object::File::parse(image.data()) else {
        return symbols_only(notes);
    };
    // 1. Embedded DWARF.
    if has_dwarf(&file) {
        match parse_debug_object(image.data()) {
            Ok(obj) => {
                let dir = Path::new(path).parent().map(Path::to_path_buf);
                return finish(obj, DebugSource::Embedded, None, dir, dirs, notes, read);
            }
            Err(e) => notes.push(format!("{path}: embedded DWARF unusable: {e}")),
        }
    }
    let own_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    // 2. By build-id.
    if let Some(id) = &own_id {
        for candidate in build_id_paths(dirs, id, ".debug") {
            let Ok(data) = std::fs::read(&candidate) else {
                continue;
            };
            *read += data.len() as u64;
            match parse_debug_object(&data) {
                Ok(obj) if obj.build_id.as_deref() == Some(id) => {
                    let source = DebugSource::BuildIdFile(candidate.clone());
                    let dir = candidate.parent().map(Path::to_path_buf);
                    let syms = debug_symbols(image, data);
                    return finish(obj, source, syms, dir, dirs, notes, read);
                }
                Ok(_) => notes.push(format!("{}: other build-id", candidate.display())),
                Err(e) => notes.push(format!("{}: {e}", candidate.display())),
            }
        }
    }
    // 3. By .gnu_debuglink, CRC checked: the name alone could find a stale file from
    // another build.
    if let Ok(Some((name, crc))) = file.gnu_debuglink() {
        for candidate in debuglink_paths(dirs, path, &bytes_to_path(name)) {
            let Ok(data) = std::fs::read(&candidate) else {
                continue;
            };
            *read += data.len() as u64;
            let actual = crc32fast::hash(&data);
            if actual != crc {
                notes.push(format!(
                    "{}: CRC {actual:08x}, .gnu_debuglink wants {crc:08x}",
                    candidate.display()
                ));
                continue;
            }
            match parse_debug_object(&data) {
                Ok(obj) => {
                    let source = DebugSource::DebugLink(candidate.clone());
                    let dir = candidate.parent().map(Path::to_path_buf);
                    let syms = debug_symbols(image, data);
                    return finish(obj, source, syms, dir, dirs, notes, read);
                }
                Err(e) => notes.push(format!("{}: {e}", candidate.display())),
            }
        }
    }
    symbols_only(notes)
}

/// The separate debug file's symbol table, kept when the image has no `.symtab` of its
/// own (a stripped library keeps `.dynsym` only; its debug file has the full table).
fn debug_symbols(image: &Image, data: Vec<u8>) -> Option<Image> {
    if image.has_symtab {
        return None;
    }
    Image::parse("debug file", data)
        .ok()
        .filter(|i| i.has_symtab)
}

/// Attaches the dwz supplementary file if the debug object names one, and builds the
/// addr2line context. `dir` is the debug object's directory (relative altlink paths are
/// relative to it).
fn finish(
    mut obj: DebugObject,
    source: DebugSource,
    debug_symbols: Option<Image>,
    dir: Option<PathBuf>,
    dirs: &[PathBuf],
    mut notes: Vec<String>,
    read: &mut u64,
) -> DebugInfo {
    let mut inputs = Vec::new();
    if let DebugSource::BuildIdFile(p) | DebugSource::DebugLink(p) = &source {
        inputs.push(p.clone());
    }
    if let Some((alt_path, alt_id)) = obj.altlink.take() {
        let mut candidates = Vec::new();
        match (&dir, alt_path.is_absolute()) {
            (_, true) => candidates.push(alt_path.clone()),
            (Some(d), false) => candidates.push(d.join(&alt_path)),
            (None, false) => {}
        }
        candidates.extend(build_id_paths(dirs, &alt_id, ".debug"));
        let mut found = false;
        for candidate in candidates {
            let Ok(data) = std::fs::read(&candidate) else {
                continue;
            };
            *read += data.len() as u64;
            match parse_debug_object(&data) {
                Ok(sup) if sup.build_id.as_deref() == Some(&alt_id[..]) => {
                    obj.dwarf.set_sup(sup.dwarf);
                    inputs.push(candidate);
                    found = true;
                    break;
                }
                Ok(_) => notes.push(format!("{}: other build-id", candidate.display())),
                Err(e) => notes.push(format!("{}: {e}", candidate.display())),
            }
        }
        if !found {
            // Names and lines of the units that do not reach into the dwz file still
            // resolve; the rest fall back to symbols.
            notes.push(format!(
                "dwz file {} (build-id {}) not found",
                alt_path.display(),
                hex(&alt_id)
            ));
        }
    }
    let dwarf = Arc::new(obj.dwarf);
    match headers_parse(&dwarf) {
        Ok(()) => DebugInfo {
            source,
            context: OnceLock::new(),
            debug_symbols,
            notes,
            locations: OnceLock::new(),
            bytes_read: 0,
            dwarf: Some(dwarf),
            inputs,
        },
        Err(e) => {
            notes.push(format!("DWARF unusable: {e}"));
            DebugInfo {
                source: DebugSource::SymbolsOnly,
                context: OnceLock::new(),
                debug_symbols,
                notes,
                locations: OnceLock::new(),
                bytes_read: 0,
                dwarf: None,
                inputs,
            }
        }
    }
}
