//! A Python variable of a live frame, as `--var FUNCTION:NAME` reads it on a Python rank:
//! the frame's fast local of that name (an argument, a local, a closure's cell), else the
//! module's global (a script's top-level loop keeps its counter there), decoded by
//! [`super::values`]. Read while the rank is stopped, so that the value is the
//! one of the frames it was captured in.

use super::dicts;
use super::layout::Layout;
use super::objects::{field_u64, read_str};
use super::threads::PyFrame;
use super::values::{self, PyValue};
use crate::memory::MemoryReader;

/// More local names than this is a code object gone wrong.
const MAX_LOCALS: u64 = 1 << 16;

/// Where a variable was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Local,
    Global,
}

/// The variable `name` as the code of `frame` sees it.
pub fn read_variable(
    mem: &dyn MemoryReader,
    layout: &Layout,
    frame: &PyFrame,
    name: &str,
) -> Result<(PyValue, Scope), String> {
    let names = local_names(mem, layout, frame.code)?;
    // 3.9 and 3.10 keep an argument a closure captures in a cell slot too, its own slot
    // emptied: the first slot of the name with a value is the variable.
    let mut unbound = false;
    for (index, _) in names.iter().enumerate().filter(|(_, n)| *n == name) {
        let slot = frame.address + layout.frame.localsplus + 8 * index as u64;
        let object = mem
            .read_u64(slot)
            .map_err(|e| format!("cannot read the local {name}: {e}"))?;
        if object == 0 {
            unbound = true;
            continue;
        }
        return values::value(mem, layout, object).map(|v| (v, Scope::Local));
    }
    if unbound {
        return Err(format!(
            "{name} has no value yet in {} (not assigned, or deleted)",
            frame.function
        ));
    }
    let globals = mem
        .read_u64(frame.address + layout.frame.globals)
        .map_err(|e| format!("cannot read the frame's globals: {e}"))?;
    let found = match globals {
        0 => None,
        dict => dicts::get_str(mem, layout, dict, name)?,
    };
    match found {
        Some(object) => values::value(mem, layout, object).map(|v| (v, Scope::Global)),
        None => Err(format!(
            "{} has no local or global named {name} (locals: {})",
            frame.function,
            shown_names(&names)
        )),
    }
}

/// The names of a code object's fast locals, in slot order: `co_localsplusnames` (3.11+:
/// arguments, locals, cells and free variables), or `co_varnames`, `co_cellvars` and
/// `co_freevars` one after the other (3.9, 3.10).
fn local_names(mem: &dyn MemoryReader, layout: &Layout, code: u64) -> Result<Vec<String>, String> {
    let mut tuples = vec![layout.code.local_names];
    if let Some((cells, frees)) = layout.code.cell_names {
        tuples.extend([cells, frees]);
    }
    let mut names = Vec::new();
    for field in tuples {
        let tuple = mem
            .read_u64(code + field)
            .map_err(|e| format!("cannot read the code object: {e}"))?;
        names.extend(tuple_strs(mem, layout, tuple)?);
    }
    Ok(names)
}

/// The strs of the tuple at `tuple`.
fn tuple_strs(mem: &dyn MemoryReader, layout: &Layout, tuple: u64) -> Result<Vec<String>, String> {
    let mut head = [0u8; 24];
    mem.read(tuple, &mut head)
        .map_err(|e| format!("cannot read the local names: {e}"))?;
    // `ob_size`, where a bytes object has its size.
    let count = field_u64(&head, layout.strings.bytes_size).unwrap_or(u64::MAX);
    if count > MAX_LOCALS {
        return Err("the code object's local names do not read right".to_string());
    }
    let mut items = vec![0u8; 8 * count as usize];
    mem.read(tuple + layout.objects.tuple_items, &mut items)
        .map_err(|e| format!("cannot read the local names: {e}"))?;
    items
        .chunks_exact(8)
        .map(|p| {
            let at = u64::from_le_bytes(p.try_into().expect("8 bytes"));
            read_str(mem, &layout.strings, at).map_err(|e| format!("a local's name: {e}"))
        })
        .collect()
}

/// `a, b, c` (the first few), for a "no such variable" message.
fn shown_names(names: &[String]) -> String {
    const SHOWN: usize = 8;
    if names.is_empty() {
        return "none".to_string();
    }
    let mut shown = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        shown.push_str(", ...");
    }
    shown
}
