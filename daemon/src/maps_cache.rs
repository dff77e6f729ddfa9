//! `/proc/PID/maps`, read again only when the address space may have changed.
//!
//! Reading a rank's mappings is most of what a capture costs the daemon when the stack
//! itself is short: the kernel formats every mapping (a path lookup each; an MPI rank has
//! a few hundred) and the daemon parses them, measured at about a quarter of the daemon's
//! CPU time under `strata watch`, which captures each rank a few times a second. The
//! mappings of a running program seldom change, and when they do (a library loaded, a
//! thread's stack mapped, the heap grown by `mmap`) its virtual size almost always changes
//! with them. So the mappings are kept per task with the virtual size and start time of
//! `/proc/PID/stat` (which every capture reads anyway) and read again when either differs,
//! or when the copy is older than [`MAX_AGE`]: the rare change that keeps the size (a
//! library unloaded and another of the same size loaded in its place) is seen within
//! that long.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::procfs::{self, Mapping, Pid, Stat};

/// How long a task's mappings are trusted while its virtual size stays the same.
pub const MAX_AGE: Duration = Duration::from_secs(2);

/// Tasks remembered before the ones not read for the maximum age are forgotten.
const PRUNE_AT: usize = 4096;

#[derive(Debug)]
pub struct MapsCache {
    tasks: HashMap<Pid, Known>,
    max_age: Duration,
}

impl Default for MapsCache {
    fn default() -> Self {
        MapsCache::with_max_age(MAX_AGE)
    }
}

#[derive(Debug)]
struct Known {
    start_time: u64,
    vsize: u64,
    read_at: Instant,
    maps: Arc<[Mapping]>,
}

impl MapsCache {
    pub fn with_max_age(max_age: Duration) -> MapsCache {
        MapsCache {
            tasks: HashMap::new(),
            max_age,
        }
    }

    /// `pid`'s mappings, as of no earlier than the moment `stat` was read when its virtual
    /// size or start time changed since the last read. Empty when they cannot be read.
    pub fn get(&mut self, pid: Pid, stat: &Stat) -> Arc<[Mapping]> {
        let now = Instant::now();
        if let Some(k) = self.tasks.get(&pid)
            && k.start_time == stat.start_time
            && k.vsize == stat.vsize
            && now.duration_since(k.read_at) < self.max_age
        {
            return k.maps.clone();
        }
        let Ok(maps) = procfs::maps(pid) else {
            self.tasks.remove(&pid);
            return Arc::from(Vec::new());
        };
        let maps: Arc<[Mapping]> = Arc::from(maps);
        if self.tasks.len() >= PRUNE_AT {
            let max_age = self.max_age;
            self.tasks
                .retain(|_, k| now.duration_since(k.read_at) < max_age);
        }
        self.tasks.insert(
            pid,
            Known {
                start_time: stat.start_time,
                vsize: stat.vsize,
                // Read after `stat`: a mapping made in between is in these maps, and the
                // next stat's size differs from the one kept, so they are read again.
                read_at: now,
                maps: maps.clone(),
            },
        );
        maps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> (Pid, Stat) {
        let pid = std::process::id() as Pid;
        (pid, procfs::stat(pid).unwrap())
    }

    fn covers(maps: &[Mapping], addr: u64) -> bool {
        maps.iter().any(|m| m.start <= addr && addr < m.end)
    }

    /// On this test's own process: a new mapping (a 64 MiB allocation, which the
    /// allocator maps on its own) grows the virtual size, and the next read sees it.
    #[test]
    fn mappings_are_kept_until_the_size_changes() {
        let mut cache = MapsCache::with_max_age(Duration::from_secs(600));
        let (pid, stat) = me();
        let first = cache.get(pid, &stat);
        assert!(!first.is_empty());
        assert!(Arc::ptr_eq(&first, &cache.get(pid, &stat)), "read again");
        let block = vec![1u8; 64 << 20];
        let addr = block.as_ptr() as u64;
        assert!(!covers(&first, addr));
        let (_, grown) = me();
        assert_ne!(grown.vsize, stat.vsize);
        let again = cache.get(pid, &grown);
        assert!(covers(&again, addr), "the new mapping is missing");
        drop(block);
    }

    /// A copy older than the maximum age is read again even when the size is the same.
    #[test]
    fn old_mappings_are_read_again() {
        let mut cache = MapsCache::with_max_age(Duration::from_millis(1));
        let (pid, stat) = me();
        let first = cache.get(pid, &stat);
        std::thread::sleep(Duration::from_millis(5));
        assert!(!Arc::ptr_eq(&first, &cache.get(pid, &stat)));
    }

    /// Another process with the same pid (a different start time) is read afresh.
    #[test]
    fn a_reused_pid_is_read_again() {
        let mut cache = MapsCache::with_max_age(Duration::from_secs(600));
        let (pid, stat) = me();
        let first = cache.get(pid, &stat);
        let reused = Stat {
            start_time: stat.start_time + 1,
            ..stat.clone()
        };
        assert!(!Arc::ptr_eq(&first, &cache.get(pid, &reused)));
    }
}
