//! Python thread names (`threading.Thread.name`), read as py-spy reads them: the
//! `threading` module in `sys.modules`, its `_active` dict (thread id -> Thread), and each
//! Thread's `_name`. A thread `threading` does not know (one started with `_thread`, or
//! before `threading` was imported) has no name; a process that never imported
//! `threading` has none at all. Names are extras: any failure leaves them out.

use std::collections::HashMap;

use super::dicts;
use super::layout::Layout;
use super::objects::{field_u64, read_str};
use super::values;
use crate::memory::MemoryReader;

/// More threads than this in `_active` is a dict gone wrong.
const MAX_THREADS: usize = 4096;

/// Where a process's `threading._active` dict is (found once: a module's namespace and the
/// dict it binds live as long as the process, unless the module is reloaded).
pub fn find_active(
    mem: &dyn MemoryReader,
    layout: &Layout,
    interpreter: u64,
) -> Result<Option<u64>, String> {
    let modules = mem
        .read_u64(interpreter + layout.interp.modules)
        .map_err(|e| format!("cannot read sys.modules: {e}"))?;
    if modules == 0 {
        return Ok(None);
    }
    let Some(module) = dicts::get_str(mem, layout, modules, "threading")? else {
        return Ok(None);
    };
    let ty = mem
        .read_u64(module + 8)
        .map_err(|e| format!("cannot read the threading module: {e}"))?;
    let offset = mem
        .read_u64(ty + layout.objects.type_dictoffset)
        .map_err(|e| format!("cannot read the module type: {e}"))? as i64;
    if offset <= 0 {
        return Ok(None);
    }
    let namespace = mem
        .read_u64(module + offset as u64)
        .map_err(|e| format!("cannot read the threading module: {e}"))?;
    if namespace == 0 {
        return Ok(None);
    }
    dicts::get_str(mem, layout, namespace, "_active")
}

/// Each Python thread's name by its thread id (`threading.get_ident()`, the thread
/// state's `thread_id`), from the `_active` dict at `active`.
pub fn thread_names(
    mem: &dyn MemoryReader,
    layout: &Layout,
    active: u64,
) -> Result<HashMap<u64, String>, String> {
    let mut names = HashMap::new();
    for (key, thread) in dicts::entries(mem, layout, active)?
        .into_iter()
        .take(MAX_THREADS)
    {
        let Ok(ident) = values::int_at(mem, layout, key) else {
            continue;
        };
        let Ok(ident) = u64::try_from(ident) else {
            continue;
        };
        let mut head = [0u8; 16];
        if mem.read(thread, &mut head).is_err() {
            continue;
        }
        let ty = field_u64(&head, 8).unwrap_or(0);
        if let Ok(Some(name)) = dicts::instance_attribute(mem, layout, thread, ty, "_name")
            && let Ok(name) = read_str(mem, &layout.strings, name)
        {
            names.insert(ident, name);
        }
    }
    Ok(names)
}
