//! Debug information read once per job, not once per daemon: the daemons name the debug
//! indexes they lack in their setup replies, the front end reads or builds each one once
//! (through its own index cache) and sends it down the tree in pieces, and every commnode
//! passes each piece to all its children, so a link carries an index once. This is STAT's
//! SBRS ("Lessons Learned at 208K: Towards Debugging Millions of Cores", 2008), which
//! relocated the binaries once and broadcast them instead of letting every daemon read
//! them from the shared file system.
//!
//! Cold, what goes down is partial: an index of the units the daemons' stacks hit when
//! they probed them at set-up, which costs a fraction of the whole one to build (a hung
//! job's stacks touch a few of libc's thousands of units); a daemon looks any other
//! address up in the DWARF itself, and the whole entry is built in the background.
//!
//! What goes down is the index, not the files: libc's index is 2.8 MB where its separate
//! debug file alone is larger and would still have to be parsed and indexed on every
//! node (`docs/PERFORMANCE.md` has the sizes). Daemons still read the binaries
//! themselves, for unwinding, as they map them anyway.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use strata_daemon::debug_index::IndexCache;
use strata_daemon::images::Image;
use strata_daemon::symbols::{SymbolOptions, Symbolizer};
use strata_proto::overlay::{IndexWant, MAX_CHUNK, MAX_PROVIDED, Provide};

/// Debug directories from `--debug-dir`, else the system's, and the index cache.
pub fn symbol_options(dirs: &[PathBuf], cache: Option<&Path>) -> SymbolOptions {
    let mut options = SymbolOptions::default();
    if !dirs.is_empty() {
        options.debug_dirs = dirs.to_vec();
    }
    options.cache = cache.map(|dir| IndexCache::new(dir.to_path_buf()));
    // Called in the strata binary only (the serial attach, dump, the root of a tree).
    options.builder = std::env::current_exe().ok();
    options
}

/// What the front end did for the tree, for `STRATA_TIMINGS` and the benches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// Indexes sent down the tree, and their bytes (each link carried them once).
    pub indexes: u32,
    pub bytes: u64,
    /// What reading them cost the front end: bytes of debug files and cache entries read,
    /// binaries indexed from their DWARF (0 with a warm cache), and of those how many
    /// partially (the units the stacks hit).
    pub read: u64,
    pub built: u32,
    pub partial: u32,
}

impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "debug indexes down the tree: {} sent, {:.1} MB; the front end read {:.1} MB of \
             debug files and indexes and indexed {} binaries ({} partially)",
            self.indexes,
            self.bytes as f64 / 1e6,
            self.read as f64 / 1e6,
            self.built,
            self.partial
        )
    }
}

/// The indexes to send, by key: for each want whose binary the front end has at the same
/// path (the same build-id and size), its index from the front end's cache; when the
/// cache lacks it, a partial index of the units covering the addresses the daemons' stacks
/// hit, built now, while a detached builder writes the whole entry for the next attach
/// (a want for the whole index is built whole and written, as a daemon would). A binary
/// the front end cannot see, or one too large to index during an attach, is left to the
/// daemons.
pub fn indexes(wants: &[IndexWant], options: SymbolOptions) -> (Vec<(String, Vec<u8>)>, Sent) {
    let symbolizer = Symbolizer::new(options);
    let found: Vec<(String, Vec<u8>)> = wants
        .iter()
        .filter_map(|want| {
            let file = File::open(&want.path).ok()?;
            let image = Arc::new(Image::open(want.path.clone(), file).ok()?);
            if Symbolizer::index_key(&image)? != want.key {
                return None;
            }
            let bytes = if want.whole || want.svmas.is_empty() {
                symbolizer.index_bytes(&image, &want.path)?
            } else {
                symbolizer.index_bytes_for(&image, &want.path, &want.svmas)?
            };
            (bytes.len() as u64 <= MAX_PROVIDED).then(|| (want.key.clone(), bytes))
        })
        .collect();
    let cost = symbolizer.load_stats();
    let sent = Sent {
        indexes: found.len() as u32,
        bytes: found.iter().map(|(_, b)| b.len() as u64).sum(),
        read: cost.bytes_read,
        built: cost.indexed,
        partial: cost.partial,
    };
    (found, sent)
}

/// The commands' worth of one index, in order: each piece fits a link's message.
pub fn pieces<'a>(key: &'a str, bytes: &'a [u8]) -> impl Iterator<Item = Provide> + 'a {
    // Room for the key and the framing inside a message of MAX_CHUNK plus 64 KiB.
    let piece = MAX_CHUNK;
    (0..bytes.len().div_ceil(piece)).map(move |i| {
        let start = i * piece;
        let data = &bytes[start..bytes.len().min(start + piece)];
        Provide {
            key: key.to_string(),
            total: bytes.len() as u64,
            offset: start as u64,
            data: data.to_vec(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_index_in_order() {
        let bytes: Vec<u8> = (0..(2 * MAX_CHUNK + 5)).map(|i| i as u8).collect();
        let all: Vec<Provide> = pieces("k", &bytes).collect();
        assert_eq!(all.len(), 3);
        let mut joined = Vec::new();
        for p in &all {
            assert_eq!(p.offset as usize, joined.len());
            assert_eq!(p.total as usize, bytes.len());
            joined.extend_from_slice(&p.data);
        }
        assert_eq!(joined, bytes);
        assert_eq!(pieces("k", &[]).count(), 0);
    }
}
