//! Symbolization: from an address in a binary image to its source frames (the inlined
//! calls at that address, innermost first, then the physical function), with demangled
//! names and file:line.
//!
//! Design constraints:
//! - **Debug information is read a number of times that does not grow with the number of
//!   tasks.** Each binary's debug information is located and loaded once per daemon,
//!   cached by build-id and file size (N ranks of one binary share one load; stripped
//!   variants of one build do not, see `ImageKey`; a binary without build-id
//!   is cached by its parsed [`Image`], which the [`crate::images::ImageCache`] already
//!   shares between tasks), and every distinct address is symbolized once: the result
//!   is cached per (image, address). Inside a binary, addr2line parses lazily: only the
//!   units whose address ranges are hit get their lines and functions parsed.
//! - **Lines cost (almost) nothing more than function names.** One lookup gives both: the
//!   line table of a unit is parsed the first time any address in it is asked for, and
//!   then serves every other address. STAT paid 9x for line views because it re-read the
//!   line information per sample; here lines are always computed, cached with the names,
//!   so a line-level view is a different rendering of the same data, switchable after
//!   sampling.
//! - **Where debug information lives**, in the order gdb and elfutils look: DWARF embedded
//!   in the image; `<debug_dir>/.build-id/xx/rest.debug`; the `.gnu_debuglink` name in the
//!   image's directory, its `.debug/` subdirectory and `<debug_dir>/<image's directory>/`,
//!   accepted only with the right CRC32; and the dwz supplementary file named by
//!   `.gnu_debugaltlink` (by its path, then by its build-id), loaded as gimli's `sup`.
//!   Without DWARF, names come from `.symtab`/`.dynsym` (the separate debug file's
//!   `.symtab` when the image only has `.dynsym`). Paths are read in the daemon's mount
//!   namespace: a containerized task's separate debug files must be visible there.
//! - **Names read well in a tree and keep MPI detectable**: C++ without return types
//!   (they do not tell overloads apart, the parameters do), Rust without the hash,
//!   gfortran module procedures as `module::procedure`, and plain Fortran/C externals
//!   (`mpi_barrier_`, `PMPI_Barrier`) untouched. Among symbol aliases at one address the
//!   global one wins (see [`Image::symbol`]), so Open MPI's entries read `PMPI_X`.
//! - **Nothing here panics on bad input**: a debug file that cannot be parsed, or whose
//!   CRC or build-id does not match, is skipped with a note ([`Symbolizer::debug_notes`]);
//!   DWARF errors during a lookup fall back to the symbol table.
//! - Send + Sync: the sampler symbolizes from several threads. An addr2line context is
//!   not `Sync` (its lazy cells), so each binary's context sits behind its own mutex;
//!   threads working on different binaries do not wait for each other, and the result
//!   cache answers repeated addresses without taking that mutex.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use strata_filters::mpi::is_mpi_entry_name;

use object::{Object, ObjectSection};

use crate::debug_index::{self, DebugIndex, IndexCache, Input, Lookup, Meta};
use crate::images::{Image, MappedImage};

/// Where to look for separate debug files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolOptions {
    /// Global debug directories, searched for `.build-id/xx/rest.debug`, for
    /// `.gnu_debuglink` files under the image's directory, and for dwz files.
    pub debug_dirs: Vec<PathBuf>,
    /// Where debug indexes are kept between attaches and shared between daemons (see
    /// [`crate::debug_index`]); `None`: each symbolizer loads DWARF for itself, lazily.
    pub cache: Option<IndexCache>,
    /// Binaries with more DWARF than this (bytes of `.debug_info` and `.debug_line`) are
    /// not indexed while an attach waits: a full index of a large binary costs seconds
    /// where addr2line's lazy parse of the few units the stacks hit costs milliseconds.
    /// They are read lazily, and their index is built for the next attach by a detached
    /// process (see [`Self::builder`]).
    pub inline_limit: u64,
    /// The strata binary, which builds the indexes of large binaries in a detached, idle
    /// process (`strata index-debug-info`); `None`: large binaries are not indexed.
    pub builder: Option<PathBuf>,
}

/// See [`SymbolOptions::inline_limit`]: libc's DWARF is 7 MB, built into an index in
/// about 0.15 s (release build); a debug build of strata itself has 83 MB.
pub const INLINE_INDEX_LIMIT: u64 = 32 << 20;

impl Default for SymbolOptions {
    fn default() -> SymbolOptions {
        SymbolOptions {
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            cache: None,
            inline_limit: INLINE_INDEX_LIMIT,
            builder: None,
        }
    }
}

/// One source-level frame at an address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceFrame {
    /// The demangled function name.
    pub function: Option<String>,
    /// The source file, as DWARF says (the unit's directory joined in front of a relative
    /// name).
    pub file: Option<String>,
    pub line: Option<u32>,
    /// An inlined call inside the frame that follows it.
    pub inlined: bool,
}

use locate::Reader;

/// The reader of the DWARF sections the symbolizer keeps (for [`Symbolizer::with_dwarf`]).
pub type DwarfReader = Reader;

/// A symbolized address, shared by every frame at it.
type Frames = Arc<[SourceFrame]>;

/// What loading debug information has cost a symbolizer so far: the measure of "each
/// binary's debug information read once" (the 208K paper's SBRS problem: every daemon
/// reading the same files).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    /// Binaries whose DWARF was loaded and indexed (by addr2line, or into a debug index).
    pub indexed: u32,
    /// Binaries whose debug index came from the cache, DWARF not read at all.
    pub cache_hits: u32,
    /// Bytes of separate debug files and cached indexes read (embedded DWARF is in the
    /// binary, which is read anyway, and not counted).
    pub bytes_read: u64,
    /// Time spent locating, reading, decompressing and indexing, all binaries.
    pub micros: u64,
    /// The build-ids of the binaries indexed or taken from the cache (as the image gives
    /// them), each once.
    pub build_ids: Vec<String>,
    /// Cache entries ignored (corrupt, foreign, unreadable) or not written, one line each.
    pub cache_warnings: Vec<String>,
    /// Binaries over the inline limit, read lazily, their index left to a background
    /// build (see [`SymbolOptions::inline_limit`]).
    pub deferred: u32,
    /// Debug indexes received down the tree ([`Symbolizer::provide`]) and used.
    pub provided: u32,
    /// Partial indexes built ([`Symbolizer::index_bytes_for`]), of the binaries indexed.
    pub partial: u32,
}

/// One image's DWARF, lent to a variable reader by [`Symbolizer::with_dwarf`] (the
/// context's lock is held meanwhile).
#[derive(Clone, Copy)]
pub struct DwarfView<'a> {
    /// The image's small id in this symbolizer (a cache key, as for symbolized addresses).
    pub image: u32,
    pub context: &'a addr2line::Context<Reader>,
    /// The location lists, which the context's `Dwarf` does not carry.
    pub locations: &'a gimli::LocationLists<Reader>,
}

impl fmt::Debug for DwarfView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DwarfView")
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

/// One binary known to the symbolizer.
struct Entry {
    /// Small id that keys the result cache (cheaper to hash than a build-id).
    id: u32,
    debug: OnceLock<DebugInfo>,
    /// The image's debug index, with a cache configured (None without one, or without
    /// DWARF to index).
    index: OnceLock<Option<DebugIndex>>,
    /// Keeps the image alive when the entry is keyed by its pointer, so that the address
    /// cannot be reused by another image.
    image: Arc<Image>,
}

/// Which binary an image is. The build-id names a build, but stripped variants of one
/// build share it while their symbol tables (and embedded DWARF) differ: the file size
/// tells them apart without parsing anything (this key is computed on every lookup), so
/// that a stripped copy seen first does not leave the unstripped one without names, nor
/// the other way round. Two processes of one binary have the same build-id and size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ImageKey {
    BuildId(String, usize),
    Pointer(usize),
}

/// Symbolizes addresses of binary images, with interior caches (see the module doc).
pub struct Symbolizer {
    options: SymbolOptions,
    entries: Mutex<HashMap<ImageKey, Arc<Entry>>>,
    results: RwLock<HashMap<(u32, u64), Frames>>,
    loads: AtomicUsize,
    load_stats: Mutex<LoadStats>,
    /// Debug indexes received down the tree, by cache key, until a binary asks for one.
    provided: Mutex<HashMap<String, DebugIndex>>,
}

impl fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbolizer")
            .field("options", &self.options)
            .field("images_loaded", &self.images_loaded())
            .field("addresses", &self.addresses_cached())
            .finish_non_exhaustive()
    }
}

impl Symbolizer {
    pub fn new(options: SymbolOptions) -> Symbolizer {
        Symbolizer {
            options,
            entries: Mutex::new(HashMap::new()),
            results: RwLock::new(HashMap::new()),
            loads: AtomicUsize::new(0),
            load_stats: Mutex::new(LoadStats::default()),
            provided: Mutex::new(HashMap::new()),
        }
    }

    /// The cache key of `image`'s debug index when this daemon would have to read it from
    /// a file system: a cache is configured, the binary has a key, its index is not
    /// loaded or provided here yet, the cache has no entry for it or lives on a network
    /// file system, and it may have DWARF at all ([`may_have_dwarf`]). The front end reads
    /// such indexes once and sends them down the tree ([`Self::provide`]), as STAT's SBRS
    /// sent the binaries.
    pub fn wants_index(&self, image: &Arc<Image>, path: &str) -> Option<String> {
        let cache = self.options.cache.as_ref()?;
        let key = Self::index_key(image)?;
        let provided = self.provided.lock().unwrap_or_else(|e| e.into_inner());
        if provided.contains_key(&key) || self.entry(image).index.get().is_some() {
            return None;
        }
        drop(provided);
        let lacks = !cache.has(&key) || !cache.is_node_local();
        (lacks && may_have_dwarf(image, path, &self.options.debug_dirs)).then_some(key)
    }

    /// A debug index received down the tree, used instead of the cache's entry or the
    /// DWARF when a binary with its key is symbolized (written to a node-local cache that
    /// lacks it, for the next attach).
    pub fn provide(&self, index: DebugIndex) {
        let key = index.meta().key.clone();
        let mut provided = self.provided.lock().unwrap_or_else(|e| e.into_inner());
        provided.insert(key, index);
    }

    /// The bytes of `image`'s debug index (mapped from `path`), from the cache or built
    /// now and written there, as [`Self::symbolize`] would get it: what the front end sends
    /// down the tree. None where symbolization would have no index either.
    pub fn index_bytes(&self, image: &Arc<Image>, path: &str) -> Option<Vec<u8>> {
        let entry = self.entry(image);
        self.index(&entry, image, path).map(|i| i.bytes().to_vec())
    }

    /// The bytes of an index of `image` good for an attach whose stacks hit `wanted`
    /// (sorted addresses in the image): the cache's whole entry when it has one; else a
    /// partial index of the units covering them, built now (a fraction of the whole
    /// one's cost: libc has thousands of units, a hung job's stacks hit a few), with the
    /// whole entry left to the detached builder, at idle priority, for the next attach.
    /// A large binary, or no cache, goes as [`Self::index_bytes`].
    pub fn index_bytes_for(
        &self,
        image: &Arc<Image>,
        path: &str,
        wanted: &[u64],
    ) -> Option<Vec<u8>> {
        let (Some(cache), Some(key)) = (self.options.cache.as_ref(), Self::index_key(image)) else {
            return self.index_bytes(image, path);
        };
        let entry = self.entry(image);
        if entry.index.get().is_some()
            || cache.has(&key)
            || self.too_large_to_index_now(&entry, image, path)
        {
            return self.index_bytes(image, path);
        }
        let partial = self.build_index(&entry, image, path, &key, Some(wanted))?;
        let mut warnings = Vec::new();
        // Unless a builder is at work on it already (it holds the lock).
        if let Some(lock) = cache.try_lock(&key) {
            drop(lock);
            self.defer_index(cache, &entry, path, &key, &mut warnings);
        }
        let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.partial += 1;
        stats.cache_warnings.extend(warnings);
        Some(partial.bytes().to_vec())
    }

    /// Where it looks for separate debug files.
    pub fn options(&self) -> &SymbolOptions {
        &self.options
    }

    /// The source frames at `svma` (an address in the image's own address space: a frame's
    /// lookup_pc - bias) of `mapped`'s image: the inlined calls innermost first, then the
    /// physical function last (`inlined: false`). Never empty: without DWARF the one frame
    /// comes from .symtab/.dynsym, and without any symbol its function is None.
    /// Cached per (image, svma): each distinct address is symbolized once per daemon.
    pub fn symbolize(&self, mapped: &MappedImage, svma: u64) -> Arc<[SourceFrame]> {
        let Some(image) = mapped.image() else {
            return Arc::from([SourceFrame::unknown()]);
        };
        let entry = self.entry(image);
        let key = (entry.id, svma);
        if let Some(hit) = self.results.read().ok().and_then(|r| r.get(&key).cloned()) {
            return hit;
        }
        let frames = match self.index(&entry, image, &mapped.path) {
            // A partial index answers for the units it holds; the DWARF for the rest.
            Some(index) if !index.is_partial() || index.covers(svma) => {
                lookup_indexed(index, image, svma)
            }
            _ => lookup(self.debug(&entry, image, &mapped.path), image, svma),
        };
        let frames: Arc<[SourceFrame]> = Arc::from(frames);
        match self.results.write() {
            Ok(mut r) => r.entry(key).or_insert(frames).clone(),
            Err(_) => frames,
        }
    }

    /// Where this image's debug information comes from (for "rank without debug info"
    /// messages). Loads it if that was not done yet.
    pub fn debug_source(&self, mapped: &MappedImage) -> DebugSource {
        match mapped.image() {
            Some(image) => {
                let entry = self.entry(image);
                if let Some(index) = self.index(&entry, image, &mapped.path) {
                    return indexed_source(index.meta());
                }
                self.debug(&entry, image, &mapped.path).source.clone()
            }
            None => DebugSource::Nothing,
        }
    }

    /// Separate debug files found for this image but refused (bad CRC, other build-id,
    /// unreadable DWARF), one line each.
    pub fn debug_notes(&self, mapped: &MappedImage) -> Vec<String> {
        match mapped.image() {
            Some(image) => {
                let entry = self.entry(image);
                if let Some(index) = self.index(&entry, image, &mapped.path) {
                    return index.meta().notes.clone();
                }
                self.debug(&entry, image, &mapped.path).notes.clone()
            }
            None => Vec::new(),
        }
    }

    /// The small id this symbolizer gives `mapped`'s image (a cache key for what is
    /// computed from its debug information), without loading anything.
    pub fn image_id(&self, mapped: &MappedImage) -> Option<u32> {
        mapped.image().map(|image| self.entry(image).id)
    }

    /// Runs `f` on the DWARF of `mapped`'s image (loaded once, shared with symbolization:
    /// variables are read from the same context), holding that image's lock; `None` when
    /// the image has no DWARF. The location lists are read from the debug file on the
    /// first call for an image.
    pub fn with_dwarf<T>(
        &self,
        mapped: &MappedImage,
        f: impl FnOnce(DwarfView<'_>) -> T,
    ) -> Option<T> {
        let image = mapped.image()?;
        let entry = self.entry(image);
        let debug = self.debug(&entry, image, &mapped.path);
        let context = debug.context()?;
        let locations = debug
            .locations
            .get_or_init(|| load_locations(&debug.source, image));
        let context = context.lock().unwrap_or_else(|e| e.into_inner());
        Some(f(DwarfView {
            image: entry.id,
            context: &context,
            locations,
        }))
    }

    /// How many binaries' debug information has been loaded (each once).
    pub fn images_loaded(&self) -> usize {
        self.loads.load(Ordering::Relaxed)
    }

    /// What loading debug information has cost so far.
    pub fn load_stats(&self) -> LoadStats {
        self.load_stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// How many distinct addresses have been symbolized.
    pub fn addresses_cached(&self) -> usize {
        self.results.read().map(|r| r.len()).unwrap_or(0)
    }

    fn entry(&self, image: &Arc<Image>) -> Arc<Entry> {
        let key = match &image.build_id {
            Some(id) => ImageKey::BuildId(id.clone(), image.data().len()),
            None => ImageKey::Pointer(Arc::as_ptr(image) as usize),
        };
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let next = entries.len() as u32;
        entries
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Entry {
                    id: next,
                    debug: OnceLock::new(),
                    index: OnceLock::new(),
                    image: image.clone(),
                })
            })
            .clone()
    }

    /// The entry's debug information, loaded by the first caller outside the entries lock
    /// (other binaries stay available meanwhile); concurrent callers for the same binary
    /// wait for that one load instead of repeating it.
    fn debug<'e>(&self, entry: &'e Entry, image: &Image, path: &str) -> &'e DebugInfo {
        entry.debug.get_or_init(|| {
            self.loads.fetch_add(1, Ordering::Relaxed);
            let started = std::time::Instant::now();
            let info = load_debug_info(image, path, &self.options.debug_dirs);
            let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
            stats.bytes_read += info.bytes_read;
            stats.micros += started.elapsed().as_micros() as u64;
            if info.has_dwarf() {
                stats.indexed += 1;
                stats.build_ids.extend(identity(image));
            }
            info
        })
    }

    /// The entry's debug index, with a cache configured: the cache's entry if it has a
    /// valid one, else (after waiting a bounded while for any other daemon building it)
    /// built from the DWARF and written there. None without a cache, a key or DWARF,
    /// for a large binary (see [`SymbolOptions::inline_limit`]) and while another process
    /// still builds it: the DWARF is then read lazily.
    fn index<'e>(&self, entry: &'e Entry, image: &Image, path: &str) -> Option<&'e DebugIndex> {
        let index = entry.index.get_or_init(|| {
            let cache = self.options.cache.as_ref()?;
            let key = Self::index_key(image)?;
            let started = std::time::Instant::now();
            let mut warnings = Vec::new();
            let hit = |lookup: Lookup, warnings: &mut Vec<String>| match lookup {
                Lookup::Hit(index, read) => {
                    let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
                    stats.cache_hits += 1;
                    stats.bytes_read += read;
                    stats.build_ids.extend(identity(image));
                    stats.micros += started.elapsed().as_micros() as u64;
                    Some(*index)
                }
                Lookup::Miss => None,
                Lookup::Unusable(why) => {
                    warnings.push(why);
                    None
                }
            };
            if let Some(index) = self.take_provided(cache, &key, image, &mut warnings) {
                return Some(index);
            }
            let found = hit(cache.get(&key), &mut warnings).or_else(|| {
                let building = cache.lock(&key);
                if building.is_ok() {
                    // Another daemon may have built it while this one waited.
                    if let Some(index) = hit(cache.get(&key), &mut warnings) {
                        return Some(index);
                    }
                }
                if self.too_large_to_index_now(entry, image, path) {
                    self.count_deferred();
                    // Unless a builder is at work on it already (it holds the lock).
                    if let Ok(lock) = building {
                        drop(lock);
                        self.defer_index(cache, entry, path, &key, &mut warnings);
                    }
                    return None;
                }
                // Another process still builds it past the wait: lazily, meanwhile.
                let _building = building.ok()?;
                let built = self.build_index(entry, image, path, &key, None)?;
                if let Err(e) = cache.put(&key, &built) {
                    warnings.push(format!("{}: not written: {e}", cache.dir().display()));
                }
                Some(built)
            });
            if !warnings.is_empty() {
                let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
                warnings.dedup();
                stats.cache_warnings.extend(warnings);
            }
            found
        });
        index.as_ref()
    }

    /// The index provided for `key`, if one was, counted as such; written to a node-local
    /// cache that has no entry for it (nobody else writing it), so that the next attach
    /// there needs no tree.
    fn take_provided(
        &self,
        cache: &IndexCache,
        key: &str,
        image: &Image,
        warnings: &mut Vec<String>,
    ) -> Option<DebugIndex> {
        let index = self
            .provided
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)?;
        if cache.is_node_local()
            && !index.is_partial()
            && !cache.has(key)
            && let Some(_lock) = cache.try_lock(key)
            && let Err(e) = cache.put(key, &index)
        {
            warnings.push(format!("{}: not written: {e}", cache.dir().display()));
        }
        let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.provided += 1;
        stats.build_ids.extend(identity(image));
        Some(index)
    }

    /// Whether the entry's DWARF is over the inline limit (loading it, lazily, to know).
    fn too_large_to_index_now(&self, entry: &Entry, image: &Image, path: &str) -> bool {
        let debug = self.debug(entry, image, path);
        debug
            .dwarf
            .as_ref()
            .is_some_and(|d| dwarf_bytes(d) > self.options.inline_limit)
    }

    fn count_deferred(&self) {
        let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.deferred += 1;
    }

    /// Leaves the index of a large binary to a detached builder (the caller held the
    /// entry's lock a moment ago: no builder is at work on it).
    fn defer_index(
        &self,
        cache: &IndexCache,
        entry: &Entry,
        path: &str,
        key: &str,
        warnings: &mut Vec<String>,
    ) {
        let Some(builder) = &self.options.builder else {
            return;
        };
        let request = debug_index::detached::Request {
            builder,
            key,
            cache: cache.dir(),
            debug_dirs: &self.options.debug_dirs,
            name: path,
        };
        if let Err(e) = request.spawn(&entry.image) {
            warnings.push(format!(
                "{}: cannot start its builder: {e}",
                builder.display()
            ));
        }
    }

    /// The key of `image`'s cache entry: its build-id and size; without a build-id, a
    /// checksum of its path with its size and modification time (a rebuild changes them).
    /// None for an image read from memory without a build-id.
    pub fn index_key(image: &Image) -> Option<String> {
        let len = image.data().len();
        match (&image.build_id, image.modified) {
            (Some(id), _) => Some(format!("{id}-{len}")),
            (None, Some((secs, nanos))) => Some(format!(
                "path-{:08x}-{len}-{secs}.{nanos:09}",
                crc32fast::hash(image.name.as_bytes())
            )),
            (None, None) => None,
        }
    }

    /// Builds and writes the cache entry of `image` (mapped from `path`) now, whatever
    /// its size, unless it is there already: the work of the detached builder, which
    /// holds the entry's lock. Returns what it did, in words.
    pub fn build_cache_entry(&self, image: &Arc<Image>, path: &str) -> Result<String, String> {
        let cache = self
            .options
            .cache
            .as_ref()
            .ok_or("no index cache configured")?;
        let key = Self::index_key(image).ok_or("the binary has no build-id nor file")?;
        if let Lookup::Hit(..) = cache.get(&key) {
            return Ok(format!("{key}: in the cache already"));
        }
        let entry = self.entry(image);
        let built = self
            .build_index(&entry, image, path, &key, None)
            .ok_or_else(|| format!("{key}: no DWARF to index"))?;
        cache
            .put(&key, &built)
            .map_err(|e| format!("{}: not written: {e}", cache.dir().display()))?;
        Ok(format!("{key}: built"))
    }

    /// Loads the entry's DWARF and indexes all of it, or with `wanted` the units covering
    /// those addresses (None without DWARF).
    fn build_index(
        &self,
        entry: &Entry,
        image: &Image,
        path: &str,
        key: &str,
        wanted: Option<&[u64]>,
    ) -> Option<DebugIndex> {
        let debug = self.debug(entry, image, path);
        let dwarf = debug.dwarf.as_ref()?;
        let started = std::time::Instant::now();
        let (source, source_path) = match &debug.source {
            DebugSource::Embedded => (0, String::new()),
            DebugSource::BuildIdFile(p) => (1, p.to_string_lossy().into_owned()),
            DebugSource::DebugLink(p) => (2, p.to_string_lossy().into_owned()),
            DebugSource::SymbolsOnly | DebugSource::Nothing => return None,
        };
        let meta = Meta {
            key: key.to_string(),
            source,
            source_path,
            notes: debug.notes.clone(),
            inputs: debug.inputs.iter().filter_map(|p| Input::of(p)).collect(),
        };
        let symbols: Vec<_> = debug
            .debug_symbols
            .as_ref()
            .map(|i| i.function_symbols().collect())
            .unwrap_or_default();
        let index =
            DebugIndex::open(debug_index::build::build(dwarf, &symbols, &meta, wanted)).ok();
        let mut stats = self.load_stats.lock().unwrap_or_else(|e| e.into_inner());
        stats.micros += started.elapsed().as_micros() as u64;
        index
    }
}

/// What names the binary in the load statistics: its build-id, else its cache key.
fn identity(image: &Image) -> Option<String> {
    image
        .build_id
        .clone()
        .or_else(|| Symbolizer::index_key(image))
}

/// The size of what a full index reads: every unit's entries and line program.
fn dwarf_bytes(dwarf: &gimli::Dwarf<Reader>) -> u64 {
    use gimli::{Reader as _, Section};
    (dwarf.debug_info.reader().len() + dwarf.debug_line.reader().len()) as u64
}

/// The debug source an index records.
fn indexed_source(meta: &Meta) -> DebugSource {
    match meta.source {
        1 => DebugSource::BuildIdFile(PathBuf::from(&meta.source_path)),
        2 => DebugSource::DebugLink(PathBuf::from(&meta.source_path)),
        _ => DebugSource::Embedded,
    }
}

impl SourceFrame {
    fn unknown() -> SourceFrame {
        SourceFrame {
            function: None,
            file: None,
            line: None,
            inlined: false,
        }
    }
}

/// The frames at `svma`: DWARF's, with the symbol table's name for a physical function
/// DWARF does not name (or does not cover).
fn lookup(debug: &DebugInfo, image: &Image, svma: u64) -> Vec<SourceFrame> {
    let mut frames = Vec::new();
    if let Some(context) = debug.context() {
        let context = context.lock().unwrap_or_else(|e| e.into_inner());
        dwarf_frames(&context, svma, &mut frames);
    }
    let from_debug = |svma| debug.debug_symbols.as_ref()?.symbol(svma).map(|(n, _)| n);
    name_physical(frames, image, svma, from_debug)
}

/// [`lookup`] answered from a debug index, which carries the debug file's symbols too.
fn lookup_indexed(index: &DebugIndex, image: &Image, svma: u64) -> Vec<SourceFrame> {
    let frames = index
        .frames(svma)
        .into_iter()
        .map(|f| SourceFrame {
            function: f.name.map(|n| demangle(n, f.language.map(gimli::DwLang))),
            file: f.file.map(str::to_string),
            line: f.line,
            inlined: true,
        })
        .collect();
    name_physical(frames, image, svma, |svma| {
        index.symbol(svma).map(|(n, _)| n)
    })
}

/// Marks the physical frame and names it from the symbol tables where DWARF does not,
/// or where they name it better (see the comments inside).
fn name_physical<'a>(
    mut frames: Vec<SourceFrame>,
    image: &Image,
    svma: u64,
    debug_symbol: impl FnOnce(u64) -> Option<&'a str>,
) -> Vec<SourceFrame> {
    if frames.is_empty() {
        frames.push(SourceFrame::unknown());
    }
    let last = frames.len() - 1;
    for (i, f) in frames.iter_mut().enumerate() {
        f.inlined = i != last;
    }
    let physical = &mut frames[last];
    let own = image.symbol(svma);
    if physical.function.is_none() {
        physical.function = own
            .map(|(name, _)| name)
            .or_else(|| debug_symbol(svma))
            .map(|name| demangle(name, None));
    } else if let Some((alias, _)) = own
        && is_mpi_entry_name(alias)
        && !physical.function.as_deref().is_some_and(is_mpi_entry_name)
    {
        // An MPI library's function is named for its implementation in DWARF (Open MPI's
        // Fortran `mpi_barrier_` is `ompi_barrier_f`) while the symbol table also has the
        // name the program called. The MPI name is what users look for and what "cut
        // below MPI" recognises, with or without the library's debug information.
        physical.function = Some(alias.to_string());
    } else if let (Some((sym, _)), Some(short)) = (own, physical.function.as_deref())
        && let Some(full) = qualified(&demangle(sym, None), short)
    {
        // Reduced debug information (Rust's line-tables-only, gcc -g1) names functions
        // without their path (`rank_main`); the symbol table has the qualified name.
        physical.function = Some(full);
    }
    frames
}

/// `full` when it is `short` qualified by a path (`a::b::short`, `C::short(int)`).
fn qualified(full: &str, short: &str) -> Option<String> {
    if full == short || short.contains("::") {
        return None;
    }
    let at = full.rfind(&format!("::{short}"))?;
    let rest = &full[at + 2 + short.len()..];
    (rest.is_empty() || rest.starts_with('(')).then(|| full.to_string())
}

/// addr2line's frames at `svma`, innermost first. Stops at the first DWARF error, keeping
/// what it had: a partial inline chain is better than none, and the physical function
/// then falls back to the symbol table.
fn dwarf_frames(context: &addr2line::Context<Reader>, svma: u64, out: &mut Vec<SourceFrame>) {
    // Split DWARF (.dwo) is not loaded: skip_all_loads answers from the skeleton units.
    let Ok(mut iter) = context.find_frames(svma).skip_all_loads() else {
        return;
    };
    while let Ok(Some(frame)) = iter.next() {
        let function = frame.function.as_ref().and_then(|f| {
            let raw = f.raw_name().ok()?;
            Some(demangle(&raw, f.language))
        });
        let (file, line) = match frame.location {
            Some(l) => (l.file.map(str::to_string), l.line),
            None => (None, None),
        };
        out.push(SourceFrame {
            function,
            file,
            line,
            inlined: true,
        });
    }
}

/// A readable name for a raw symbol or DWARF linkage name (see the module doc): the
/// language's scheme when DWARF says which, else by the name's shape. Names that are not
/// mangled come back unchanged.
pub fn demangle(name: &str, language: Option<gimli::DwLang>) -> String {
    let rust = || {
        rustc_demangle::try_demangle(name)
            .ok()
            .map(|d| format!("{d:#}"))
    };
    let cpp = || {
        if !name.starts_with("_Z") {
            return None;
        }
        // No return types: `Sorter<int>::run(int)` rather than `int Sorter<int>::run(int)`.
        // Parameters stay, they tell overloads apart (and eu-stack/gdb print them).
        let options = cpp_demangle::DemangleOptions::new().no_return_type();
        cpp_demangle::Symbol::new(name)
            .ok()?
            .demangle_with_options(&options)
            .ok()
    };
    let demangled = match language {
        Some(gimli::DW_LANG_Rust) => rust(),
        Some(
            gimli::DW_LANG_C_plus_plus
            | gimli::DW_LANG_C_plus_plus_03
            | gimli::DW_LANG_C_plus_plus_11
            | gimli::DW_LANG_C_plus_plus_14
            | gimli::DW_LANG_C_plus_plus_17
            | gimli::DW_LANG_C_plus_plus_20,
        ) => cpp(),
        // Rust's legacy mangling is a subset of the C++ one's shape: try Rust first (it
        // only accepts names with Rust's hash or v0 names), then C++.
        _ => rust().or_else(cpp),
    };
    demangled
        .or_else(|| fortran_module_procedure(name))
        .unwrap_or_else(|| name.to_string())
}

/// gfortran names a module procedure `__<module>_MOD_<procedure>`: `module::procedure`.
/// External procedures (`solve_`, `mpi_barrier_`) are left alone, so that MPI entries
/// stay recognizable by their usual names.
fn fortran_module_procedure(name: &str) -> Option<String> {
    let rest = name.strip_prefix("__")?;
    let (module, procedure) = rest.split_once("_MOD_")?;
    let ident = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    };
    (ident(module) && ident(procedure)).then(|| format!("{module}::{procedure}"))
}

/// The location lists of an image's debug information, read again from where its DWARF
/// came from (the image's bytes, or the separate debug file). Empty when they cannot be
/// read: a variable with a location list then reports that its list is unreadable.
fn load_locations(source: &DebugSource, image: &Image) -> gimli::LocationLists<Reader> {
    let file_data;
    let data = match source {
        DebugSource::Embedded => image.data(),
        DebugSource::BuildIdFile(path) | DebugSource::DebugLink(path) => {
            file_data = std::fs::read(path).unwrap_or_default();
            &file_data[..]
        }
        DebugSource::SymbolsOnly | DebugSource::Nothing => &[],
    };
    let file = object::File::parse(data).ok();
    let endian = match &file {
        Some(f) if !f.is_little_endian() => gimli::RunTimeEndian::Big,
        _ => gimli::RunTimeEndian::Little,
    };
    let section = |name: &str| -> Reader {
        let bytes: Arc<[u8]> = file
            .as_ref()
            .and_then(|f| f.section_by_name(name))
            .and_then(|s| s.uncompressed_data().ok())
            .map_or_else(|| Arc::from(&[][..]), |d| Arc::from(&*d));
        gimli::EndianReader::new(bytes, endian)
    };
    gimli::LocationLists::new(
        section(".debug_loc").into(),
        section(".debug_loclists").into(),
    )
}

mod locate;
use locate::{DebugInfo, load_debug_info};
pub use locate::{DebugSource, may_have_dwarf};

#[cfg(test)]
mod tests;
