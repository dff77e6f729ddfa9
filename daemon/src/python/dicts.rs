//! Dicts read out of a target's memory: a module's namespace, `sys.modules`, an instance's
//! attributes (its own dict, or, from 3.11, values keyed by its class's shared keys).
//!
//! Every table is bounded ([`MAX_ENTRIES`]) and read in one copy; an entry whose key is
//! not what the caller looks for is skipped, never decoded by a guess.

use super::layout::{DictKeys, InstanceDict, Layout, ManagedValues};
use super::objects::{field_u64, read_str};
use crate::memory::MemoryReader;

/// More dict entries than this is a dict gone wrong.
pub const MAX_ENTRIES: u64 = 1 << 16;

/// `Py_TPFLAGS_MANAGED_DICT` (3.11+) and `Py_TPFLAGS_INLINE_VALUES` (3.13+).
const MANAGED_DICT: u64 = 1 << 4;
const INLINE_VALUES: u64 = 1 << 2;

/// Every (key, value) of the dict at `dict`, in insertion order (deleted entries left
/// out).
pub fn entries(
    mem: &dyn MemoryReader,
    layout: &Layout,
    dict: u64,
) -> Result<Vec<(u64, u64)>, String> {
    let o = &layout.objects;
    let keys = mem
        .read_u64(dict + o.dict_keys)
        .map_err(|e| format!("cannot read the dict: {e}"))?;
    let split = mem
        .read_u64(dict + o.dict_values)
        .map_err(|e| format!("cannot read the dict: {e}"))?;
    let values = (split != 0).then_some(split + o.dict_values_items);
    table_entries(mem, layout, keys, values)
}

/// The entries of the key table at `keys`; `values`: the array of a split table's values
/// (entry `i`'s value is its `i`-th element).
fn table_entries(
    mem: &dyn MemoryReader,
    layout: &Layout,
    keys: u64,
    values: Option<u64>,
) -> Result<Vec<(u64, u64)>, String> {
    let mut head = [0u8; 48];
    mem.read(keys, &mut head)
        .map_err(|e| format!("cannot read the dict's keys: {e}"))?;
    let byte = |at: u64| head.get(at as usize).copied().unwrap_or(0);
    let (entries_at, count, entry_size, key_at, value_at) = match layout.objects.keys {
        DictKeys::Sized {
            size,
            nentries,
            indices,
        } => {
            let size = field_u64(&head, size).unwrap_or(0);
            let index_bytes = match size {
                0..=0xff => 1,
                0x100..=0xffff => 2,
                0x1_0000..=0xffff_ffff => 4,
                _ => 8,
            };
            let at = size
                .checked_mul(index_bytes)
                .and_then(|b| b.checked_add(keys + indices));
            (at, field_u64(&head, nentries), 24, 8, 16)
        }
        DictKeys::Log2 {
            log2_index_bytes,
            kind,
            nentries,
            indices,
            entry_size,
            unicode_entry_size,
            ..
        } => {
            let index_bytes = byte(log2_index_bytes);
            let at = (index_bytes < 48)
                .then(|| 1u64 << index_bytes)
                .and_then(|b| b.checked_add(keys + indices));
            // Kind 0 holds (hash, key, value); the str-keyed kinds (key, value).
            let count = field_u64(&head, nentries);
            if byte(kind) == 0 {
                (at, count, entry_size, 8, 16)
            } else {
                (at, count, unicode_entry_size, 0, 8)
            }
        }
    };
    let entries_at = entries_at.ok_or("the dict's key table does not read right")?;
    let count = count.unwrap_or(u64::MAX);
    if count > MAX_ENTRIES {
        return Err(format!("a dict of {count} entries does not read right"));
    }
    let mut table = vec![0u8; (count * entry_size) as usize];
    mem.read(entries_at, &mut table)
        .map_err(|e| format!("cannot read the dict's entries: {e}"))?;
    let split = match values {
        Some(at) => {
            let mut v = vec![0u8; 8 * count as usize];
            mem.read(at, &mut v)
                .map_err(|e| format!("cannot read the dict's values: {e}"))?;
            Some(v)
        }
        None => None,
    };
    let mut out = Vec::new();
    for (i, entry) in table.chunks_exact(entry_size as usize).enumerate() {
        let key = field_u64(entry, key_at).unwrap_or(0);
        let value = match &split {
            Some(v) => field_u64(v, 8 * i as u64).unwrap_or(0),
            None => field_u64(entry, value_at).unwrap_or(0),
        };
        if key != 0 && value != 0 {
            out.push((key, value));
        }
    }
    Ok(out)
}

/// The value under the str key `key` in the dict at `dict`, None when it has none.
pub fn get_str(
    mem: &dyn MemoryReader,
    layout: &Layout,
    dict: u64,
    key: &str,
) -> Result<Option<u64>, String> {
    Ok(find(mem, layout, &entries(mem, layout, dict)?, key))
}

fn find(mem: &dyn MemoryReader, layout: &Layout, entries: &[(u64, u64)], key: &str) -> Option<u64> {
    entries
        .iter()
        .find(|(k, _)| str_equals(mem, layout, *k, key))
        .map(|&(_, v)| v)
}

/// The attribute `name` of the instance at `object` whose type is at `ty`, looked up in
/// its own attributes only (not its class's), None when it has none.
pub fn instance_attribute(
    mem: &dyn MemoryReader,
    layout: &Layout,
    object: u64,
    ty: u64,
    name: &str,
) -> Result<Option<u64>, String> {
    let o = &layout.objects;
    let word = |at: u64| {
        mem.read_u64(at)
            .map_err(|e| format!("cannot read the object: {e}"))
    };
    let flags = word(ty + o.type_flags)?;
    let entries = match o.instance {
        InstanceDict::Managed {
            cached_keys,
            dict_before,
            values,
        } if flags & MANAGED_DICT != 0 => {
            let dict = word(object.wrapping_sub(dict_before))?;
            let own_values = match values {
                ManagedValues::Before(before) => {
                    Some(word(object.wrapping_sub(before))?).filter(|&v| v != 0)
                }
                ManagedValues::Tagged if dict & 1 == 1 => Some(dict + 1),
                ManagedValues::Tagged => None,
                ManagedValues::Inline { valid, items } if flags & INLINE_VALUES != 0 => {
                    let inline = object + word(ty + o.type_basicsize)?;
                    let mut byte = [0u8; 1];
                    mem.read(inline + valid, &mut byte)
                        .map_err(|e| format!("cannot read the object's values: {e}"))?;
                    (byte[0] != 0).then_some(inline + items)
                }
                ManagedValues::Inline { .. } => None,
            };
            match own_values {
                // A dict of its own (made when asked for `__dict__`) wins.
                Some(_) if dict != 0 && dict & 1 == 0 => entries(mem, layout, dict)?,
                Some(values) => {
                    let keys = word(ty + cached_keys)?;
                    table_entries(mem, layout, keys, Some(values))?
                }
                None if dict != 0 && dict & 1 == 0 => entries(mem, layout, dict)?,
                None => return Ok(None),
            }
        }
        _ => {
            let offset = word(ty + o.type_dictoffset)? as i64;
            if offset <= 0 {
                // No dict, or one placed from the object's end (a variable-size object).
                return Ok(None);
            }
            match word(object + offset as u64)? {
                0 => return Ok(None),
                dict => entries(mem, layout, dict)?,
            }
        }
    };
    Ok(find(mem, layout, &entries, name))
}

/// Whether the object at `addr` is a compact str equal to `key` (anything else is not).
fn str_equals(mem: &dyn MemoryReader, layout: &Layout, addr: u64, key: &str) -> bool {
    let s = &layout.strings;
    let mut head = [0u8; 8];
    if mem.read(addr + s.unicode_length, &mut head).is_err() {
        return false;
    }
    // Only strings of the right length are decoded (most keys differ by length).
    if u64::from_le_bytes(head) != key.chars().count() as u64 {
        return false;
    }
    read_str(mem, s, addr).is_ok_and(|found| found == key)
}
