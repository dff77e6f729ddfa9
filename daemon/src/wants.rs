//! Which debug indexes a daemon asks the tree for at set-up, and for which addresses.
//!
//! A daemon that would read a binary's DWARF from its own file system asks the front end
//! for the binary's index instead (the front end reads each once per job and sends it down
//! the tree, as STAT's SBRS sent the binaries: "Lessons Learned at 208K", 2008). It asks
//! only for what symbolizing its stacks will need: the binaries the stacks are in, and in
//! each the addresses they hit: cold, the front end builds an index of just the units
//! covering them (a hung rank's stacks touch a handful of a library's units), and the
//! whole one in the background.
//!
//! To know the addresses before the first sample, the daemon probes: one capture of each
//! task (the threads stopped for microseconds, as a sample stops them), unwound by CFI,
//! not symbolized. It probes only when some mapped binary is wanted at all, so a warm
//! daemon (every index in its node-local cache) pays nothing. A task it could not probe
//! wants the whole index of every binary it maps that lacks one: strata never guesses
//! where a stack it did not see would be.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use strata_proto::overlay::{IndexWant, MAX_WANT_ADDRESSES};

use crate::capture::{CaptureOptions, Capturer};
use crate::memory::ProcessMemory;
use crate::procfs::Pid;
use crate::sampler::Sampler;
use crate::stacks;

/// One binary's want, while it is gathered.
struct Gathering {
    path: String,
    svmas: BTreeSet<u64>,
    whole: bool,
}

/// The debug indexes the binaries of `pids` need and this daemon lacks
/// ([`crate::symbols::Symbolizer::wants_index`]), each once, with the path of a binary
/// that has it and the addresses the tasks' stacks hit in it now. Loads the tasks' address
/// spaces, which the first sample reuses.
pub fn index_wants(sampler: &mut Sampler, capturer: &Capturer, pids: &[Pid]) -> Vec<IndexWant> {
    // By key; and per task, the keys its mapped binaries want, by mapping path.
    let mut wants: BTreeMap<String, Gathering> = BTreeMap::new();
    let mut by_task: Vec<(Pid, HashMap<String, String>)> = Vec::new();
    for &pid in pids {
        let Ok(maps) = crate::procfs::maps(pid) else {
            continue;
        };
        let space = sampler.address_space(pid, &Arc::from(maps), &ProcessMemory::new(pid));
        let mut keys = HashMap::new();
        for m in &space.mappings {
            let Ok(image) = &m.image else { continue };
            if m.path.starts_with('[') || m.path.ends_with(" (deleted)") {
                continue;
            }
            let Some(key) = sampler.symbolizer().wants_index(image, &m.path) else {
                continue;
            };
            wants.entry(key.clone()).or_insert_with(|| Gathering {
                path: m.path.clone(),
                svmas: BTreeSet::new(),
                whole: false,
            });
            keys.insert(m.path.clone(), key);
        }
        if !keys.is_empty() {
            by_task.push((pid, keys));
        }
    }
    if wants.is_empty() {
        return Vec::new();
    }
    let probed: Vec<Pid> = by_task.iter().map(|(pid, _)| *pid).collect();
    let captures = capturer.capture(&probed, &CaptureOptions::default());
    for ((pid, keys), capture) in by_task.iter().zip(captures) {
        let Ok(capture) = capture else {
            // Not seen: every binary of the task may be on its stacks.
            for key in keys.values() {
                if let Some(w) = wants.get_mut(key) {
                    w.whole = true;
                }
            }
            continue;
        };
        let live = ProcessMemory::new(*pid);
        let space = sampler.address_space(*pid, &capture.maps, &live);
        let unwound =
            stacks::unwind_threads(&capture, space, &live, stacks::DEFAULT_MAX_FRAMES, &|_| {
                true
            });
        for thread in &unwound.threads {
            // A thread without a stack (in uninterruptible sleep, say) is sampled without
            // one too; should a sample walk it after all, a binary only it is in is read
            // lazily by this daemon, as without an index.
            let Ok(stack) = &thread.stack else { continue };
            for frame in &stack.frames {
                let Some(m) = unwound.space.find(frame.lookup_pc) else {
                    continue;
                };
                if let Some(w) = keys.get(&m.path).and_then(|k| wants.get_mut(k)) {
                    w.svmas.insert(frame.lookup_pc.wrapping_sub(m.bias));
                }
            }
        }
    }
    wants
        .into_iter()
        // A binary no stack is in needs no index for this attach: the first sample that
        // reaches it reads it lazily, as without an index.
        .filter(|(_, w)| w.whole || !w.svmas.is_empty())
        .map(|(key, w)| {
            let whole = w.whole || w.svmas.len() > MAX_WANT_ADDRESSES;
            IndexWant {
                key,
                path: w.path,
                svmas: if whole {
                    Vec::new()
                } else {
                    w.svmas.into_iter().collect()
                },
                whole,
            }
        })
        .collect()
}
