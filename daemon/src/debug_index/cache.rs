//! The persistent cache of debug indexes: one file per binary (build-id and size) in a
//! directory that may be node-local or on a shared file system for a whole cluster.
//!
//! - **Concurrent writers** never leave a half-written entry: an entry is written to a
//!   temporary file in the same directory and renamed over the final name, which POSIX
//!   makes atomic. Daemons that miss on one binary at the same moment take an exclusive
//!   `flock` on the entry's lock file: one builds, the others wait and then read what it
//!   wrote (one index build per job, not per daemon).
//! - **Damage is survived**: a truncated, foreign (another format or version) or corrupt
//!   (checksum) entry is ignored with a warning and rebuilt; an entry whose input files
//!   changed (a reinstalled debug package) is stale and rebuilt.
//! - **Bounded**: after each write the least recently used entries (a hit renews an
//!   entry's modification time) go until the directory is under its size limit.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use super::index::DebugIndex;

/// The cache's default size limit.
pub const DEFAULT_MAX_BYTES: u64 = 2 << 30;
/// How long a daemon waits for another one building the same entry before it reads the
/// binary's DWARF lazily instead: a builder that is stopped, hung on its file system or
/// slow must not stall the others past the session's 10 s silence limit (they would be
/// declared lost). libc's index builds in about 0.1 s. The waiters do not build it
/// themselves: 512 emulated daemons on 2 cores starved the one builder past the wait,
/// and 511 more builds made a 25 s attach take 92 s.
const LOCK_WAIT: Duration = Duration::from_secs(3);
/// Temporary files older than this were left by a writer that died.
const STALE_TEMP: Duration = Duration::from_secs(600);
/// Subdirectory per format version: another strata's entries never collide with ours.
const SUBDIR: &str = "v1";

/// A cache directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexCache {
    dir: PathBuf,
    max_bytes: u64,
    /// Said to be on a file system the nodes share, whatever its type looks like.
    shared: bool,
}

/// What the cache had for a key.
#[derive(Debug)]
pub enum Lookup {
    /// A valid entry, and the bytes read to get it.
    Hit(Box<DebugIndex>, u64),
    Miss,
    /// An entry that cannot be used, and why (a one-line warning).
    Unusable(String),
}

/// An exclusive claim on building one entry, released when dropped.
#[derive(Debug)]
pub struct BuildLock {
    _lock: Option<Flock<fs::File>>,
}

/// Another process builds the entry (see [`IndexCache::lock`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

const DETACHED_MARK: &[u8] = b"detached\n";

impl BuildLock {
    /// Says in the lock file that its holder is a detached builder (see
    /// [`super::detached`]): daemons do not wait for it, they read that binary lazily.
    pub fn mark_detached(&self) {
        if let Some(lock) = &self._lock {
            let _ = lock.set_len(0);
            let _ = lock.write_all_at(DETACHED_MARK, 0);
        }
    }
}

fn held_by_detached_builder(file: &fs::File) -> bool {
    let mut mark = [0u8; DETACHED_MARK.len()];
    file.read_exact_at(&mut mark, 0).is_ok() && mark == DETACHED_MARK
}

impl IndexCache {
    pub fn new(dir: PathBuf) -> IndexCache {
        IndexCache {
            dir,
            max_bytes: DEFAULT_MAX_BYTES,
            shared: false,
        }
    }

    /// Treats the cache as on a file system the nodes share even where its type does not
    /// say so (`--debug-cache-shared`: a parallel file system strata does not recognize).
    pub fn shared(mut self, shared: bool) -> IndexCache {
        self.shared = shared;
        self
    }

    pub fn with_max_bytes(mut self, max: u64) -> IndexCache {
        self.max_bytes = max;
        self
    }

    /// The directory a user's cache lives in when none is configured:
    /// `$XDG_CACHE_HOME/strata/debug-index`, else `~/.cache/strata/debug-index`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|h| PathBuf::from(h).join(".cache"))
            })?;
        Some(base.join("strata").join("debug-index"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry_path(&self, key: &str) -> PathBuf {
        self.dir.join(SUBDIR).join(format!("{key}.idx"))
    }

    /// Whether an entry for `key` is there (not checked: a cheap look before asking the
    /// tree for it).
    pub fn has(&self, key: &str) -> bool {
        self.entry_path(key).is_file()
    }

    /// Whether the cache lives on this node's own disks: reading an entry from a network
    /// file system on every daemon is the 208K paper's problem, so daemons with such a
    /// cache take indexes from the tree instead. Judged by the file-system type of the
    /// directory (or its nearest existing parent); unknown counts as local.
    pub fn is_node_local(&self) -> bool {
        if self.shared {
            return false;
        }
        let mut dir = self.dir.as_path();
        loop {
            match nix::sys::statfs::statfs(dir) {
                // `f_type` is 64 bits on x86_64, 32 on some other targets.
                #[allow(clippy::unnecessary_cast)]
                Ok(fs) => return !is_network_fs(fs.filesystem_type().0 as i64),
                Err(_) => match dir.parent() {
                    Some(parent) => dir = parent,
                    None => return true,
                },
            }
        }
    }

    /// The entry for `key`, checked (header, checksum, tables, the key it says it is,
    /// its input files unchanged).
    pub fn get(&self, key: &str) -> Lookup {
        let path = self.entry_path(key);
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Lookup::Miss,
            Err(e) => return Lookup::Unusable(format!("{}: {e}", path.display())),
        };
        let read = bytes.len() as u64;
        match DebugIndex::open(bytes) {
            Ok(index) if index.is_partial() => Lookup::Unusable(format!(
                "{}: a partial index, which is never cached; rebuilding it",
                path.display()
            )),
            Ok(index) if index.meta().key != key => Lookup::Unusable(format!(
                "{}: holds {}, not {key}; rebuilding it",
                path.display(),
                index.meta().key
            )),
            Ok(index) => match index.meta().inputs.iter().find(|i| !i.unchanged()) {
                // A reinstalled debug package: not damage, no warning.
                Some(_) => Lookup::Miss,
                None => {
                    // Used: the size bound removes the least recently used entries.
                    let now = std::time::SystemTime::now();
                    let _ = fs::File::options()
                        .append(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(now));
                    Lookup::Hit(Box::new(index), read)
                }
            },
            Err(e) => Lookup::Unusable(format!("{}: {e}; rebuilding it", path.display())),
        }
    }

    /// Waits (up to a bound) for the right to build `key`'s entry. `Err(Busy)` when
    /// another process still holds it when the wait runs out, or at once when that is a
    /// detached builder of a large binary (see [`BuildLock::mark_detached`]): the caller
    /// reads the DWARF lazily meanwhile. A lock file that cannot be made (the directory
    /// is not writable) gives a lock that holds nothing: building goes ahead, and the
    /// write's failure is the caller's warning.
    pub fn lock(&self, key: &str) -> Result<BuildLock, Busy> {
        let Some(mut file) = self.lock_file(key) else {
            return Ok(BuildLock { _lock: None });
        };
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
                Ok(lock) => {
                    // This holder builds while others wait: no detached mark.
                    let _ = lock.set_len(0);
                    return Ok(BuildLock { _lock: Some(lock) });
                }
                Err((f, nix::errno::Errno::EWOULDBLOCK)) => {
                    if Instant::now() >= deadline || held_by_detached_builder(&f) {
                        return Err(Busy);
                    }
                    file = f;
                    std::thread::sleep(Duration::from_millis(5));
                }
                // flock refused otherwise (a file system without locks): build unlocked.
                Err(_) => return Ok(BuildLock { _lock: None }),
            }
        }
    }

    /// `key`'s build lock if nobody holds it (None if somebody does, or the cache cannot
    /// be written): for work that is pointless while another process does it.
    pub fn try_lock(&self, key: &str) -> Option<BuildLock> {
        let lock = Flock::lock(self.lock_file(key)?, FlockArg::LockExclusiveNonblock).ok()?;
        Some(BuildLock { _lock: Some(lock) })
    }

    fn lock_file(&self, key: &str) -> Option<fs::File> {
        let path = self.dir.join(SUBDIR).join(format!("{key}.lock"));
        fs::create_dir_all(path.parent().unwrap_or(&self.dir))
            .and_then(|()| {
                fs::OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .read(true)
                    .write(true)
                    .open(&path)
            })
            .ok()
    }

    /// Writes `index` as `key`'s entry (temporary file, then rename), then trims the
    /// cache to its size limit. A partial index is refused.
    pub fn put(&self, key: &str, index: &DebugIndex) -> std::io::Result<()> {
        if index.is_partial() {
            // It answers for some units only: another attach's stacks need others.
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a partial debug index is not cached",
            ));
        }
        let path = self.entry_path(key);
        let dir = path.parent().unwrap_or(&self.dir);
        fs::create_dir_all(dir)?;
        let temp = dir.join(format!(
            ".{key}.{}.{:x}.tmp",
            std::process::id(),
            fastrand_u64()
        ));
        let written = fs::File::create(&temp).and_then(|mut f| {
            f.write_all(index.bytes())?;
            f.sync_data()
        });
        if let Err(e) = written.and_then(|()| fs::rename(&temp, &path)) {
            let _ = fs::remove_file(&temp);
            return Err(e);
        }
        self.trim(dir);
        Ok(())
    }

    /// Removes the oldest entries until the directory holds at most `max_bytes`, and
    /// temporary files a dead writer left.
    fn trim(&self, dir: &Path) {
        let Ok(listing) = fs::read_dir(dir) else {
            return;
        };
        let mut entries = Vec::new();
        let mut total = 0u64;
        for e in listing.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(meta) = e.metadata() else { continue };
            let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            if name.ends_with(".tmp") {
                if modified.elapsed().is_ok_and(|age| age > STALE_TEMP) {
                    let _ = fs::remove_file(e.path());
                }
                continue;
            }
            if name.ends_with(".idx") {
                total += meta.len();
                entries.push((modified, meta.len(), e.path()));
            }
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= len;
                let _ = fs::remove_file(path.with_extension("lock"));
            }
        }
    }
}

/// File systems whose files live on other machines (`statfs(2)`'s `f_type`): NFS, SMB and
/// CIFS, AFS, Ceph, Lustre, GPFS, BeeGFS, PanFS, and FUSE (sshfs and most cluster clients).
fn is_network_fs(magic: i64) -> bool {
    const NETWORK: [i64; 12] = [
        0x6969,     // NFS
        0x517b,     // SMB
        0xff534d42, // CIFS
        0xfe534d42, // SMB2
        0x5346414f, // AFS
        0x6b414653, // kAFS
        0x00c36400, // Ceph
        0x0bd00bd0, // Lustre
        0x47504653, // GPFS
        0x19830326, // BeeGFS
        0xaad7aaea, // PanFS
        0x65735546, // FUSE
    ];
    NETWORK.contains(&magic)
}

/// A random number for temporary names (no dependency: the clock and the pid's address
/// space are enough to keep two writers apart, the pid already is).
fn fastrand_u64() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let here = &nanos as *const u64 as u64;
    nanos ^ here.rotate_left(17)
}
