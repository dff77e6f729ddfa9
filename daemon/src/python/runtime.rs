//! Finding a process's CPython: the image that defines `_PyRuntime` (the `python3.X`
//! executable, `libpython3.X.so`, or a program that links libpython statically), its
//! version, and the layout to read it with.
//!
//! The version comes from the image itself, never from running code: `Py_Version` (3.11+,
//! a constant in the image), else the image's file name (`libpython3.10.so.1.0`,
//! `python3.9`). From 3.13 the runtime starts with `_Py_DebugOffsets`, CPython's own
//! table of the offsets a debugger needs: strata compares it with its verified layout and
//! refuses the process when the two disagree (a patch release that moved a field).

use super::layout::{CurrentFrame, Layout, Position};
use crate::images::{AddressSpace, MappedImage};
use crate::memory::MemoryReader;

/// A CPython interpreter found in a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    /// (major, minor, micro); no micro when only the file name told.
    pub version: (u32, u32, Option<u32>),
    pub layout: &'static Layout,
    /// The address of `_PyRuntime` in the process.
    pub runtime: u64,
    /// The address of `PyCode_Type`, to tell a code object from anything else.
    pub code_type: Option<u64>,
    /// The image that holds the interpreter (its frames are the interpreter's own).
    pub image_path: String,
}

impl Interpreter {
    /// `3.11.2`, or `3.10` when the micro version is not known.
    pub fn version_text(&self) -> String {
        version_text(self.version)
    }
}

/// What a process's address space says about Python.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discovery {
    /// No image defines `_PyRuntime`: not a Python process (or one whose interpreter has
    /// no symbols at all).
    NotPython,
    Python(Interpreter),
    /// A CPython strata will not read, and why (one line, for the rank table).
    Refused(String),
}

/// Finds the interpreter among `space`'s images; `mem` reads the process (3.13's debug
/// offsets).
pub fn discover(space: &AddressSpace, mem: &dyn MemoryReader) -> Discovery {
    let Some((m, runtime_svma)) = space.mappings.iter().find_map(|m| {
        let image = m.image()?;
        Some((m, image.data_symbol_address("_PyRuntime")?))
    }) else {
        return Discovery::NotPython;
    };
    let image = m.image().expect("found through its image");
    let path = m.path.trim_end_matches(" (deleted)").to_string();
    let version = match version_of(m) {
        Some(v) => v,
        None => {
            return Discovery::Refused(format!(
                "cannot tell the Python version of {path} (no Py_Version, no version in its name)"
            ));
        }
    };
    let (major, minor, _) = version;
    let shown = version_text(version);
    let Some(layout) = (major == 3).then(|| Layout::for_minor(minor)).flatten() else {
        return Discovery::Refused(format!(
            "Python {shown} layout not verified (strata reads CPython 3.{}-3.{})",
            super::layout::LAYOUTS[0].minor,
            super::layout::LAYOUTS[super::layout::LAYOUTS.len() - 1].minor
        ));
    };
    let runtime = runtime_svma.wrapping_add(m.bias);
    if minor >= 13
        && let Err(why) = check_debug_offsets(mem, runtime, layout)
    {
        return Discovery::Refused(format!("Python {shown}: {why}"));
    }
    Discovery::Python(Interpreter {
        version,
        layout,
        runtime,
        code_type: image
            .data_symbol_address("PyCode_Type")
            .map(|a| a.wrapping_add(m.bias)),
        image_path: path,
    })
}

fn version_text(version: (u32, u32, Option<u32>)) -> String {
    match version {
        (a, b, Some(c)) => format!("{a}.{b}.{c}"),
        (a, b, None) => format!("{a}.{b}"),
    }
}

/// The interpreter's version: `Py_Version` (`PY_VERSION_HEX`, 3.11+) from the image's
/// file contents, else the `3.X` in its file name.
fn version_of(m: &MappedImage) -> Option<(u32, u32, Option<u32>)> {
    let image = m.image()?;
    if let Some(at) = image.data_symbol_address("Py_Version")
        && let Some(b) = image.bytes_at(at, 4)
    {
        let hex = u32::from_le_bytes(b.try_into().ok()?);
        return Some((hex >> 24, (hex >> 16) & 0xff, Some((hex >> 8) & 0xff)));
    }
    version_in_name(m.short_name())
}

/// `3.10` in `libpython3.10.so.1.0`, `python3.10`, `libpython3.9d.so`.
fn version_in_name(name: &str) -> Option<(u32, u32, Option<u32>)> {
    let rest = name
        .strip_prefix("libpython")
        .or_else(|| name.strip_prefix("python"))?;
    let (major, rest) = rest.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?, None))
}

/// The 3.13 `_Py_DebugOffsets` words strata compares with its layout: (index of the
/// 64-bit word, what the layout says, its name).
fn debug_offsets_expected(layout: &Layout) -> Vec<(usize, u64, &'static str)> {
    let mut v = vec![
        (5, layout.runtime.interpreters_head, "interpreters_head"),
        (8, layout.interp.next, "interpreter next"),
        (9, layout.interp.threads_head, "threads_head"),
        (21, layout.tstate.next, "thread next"),
        (22, layout.tstate.interp, "thread interp"),
        (24, layout.tstate.thread_id, "thread_id"),
        (29, layout.frame.previous, "frame previous"),
        (30, layout.frame.code, "frame executable"),
        (32, layout.frame.localsplus, "frame localsplus"),
        (35, layout.code.filename, "co_filename"),
        (36, layout.code.name, "co_name"),
        (38, layout.code.linetable, "co_linetable"),
        (39, layout.code.firstlineno, "co_firstlineno"),
        (41, layout.code.local_names, "co_localsplusnames"),
    ];
    if let CurrentFrame::Direct(at) = layout.tstate.current_frame {
        v.push((23, at, "current_frame"));
    }
    if let Some(n) = layout.tstate.native_thread_id {
        v.push((25, n, "native_thread_id"));
    }
    if let Position::Pointer(at) = layout.frame.position {
        v.push((31, at, "instr_ptr"));
    }
    if let super::layout::Entry::CStackShim { owner, .. } = layout.frame.entry {
        v.push((33, owner, "frame owner"));
    }
    if let Some(q) = layout.code.qualname {
        v.push((37, q, "co_qualname"));
    }
    if let super::layout::Instructions::Inline(at) = layout.code.instructions {
        v.push((43, at, "co_code_adaptive"));
    }
    v
}

fn check_debug_offsets(
    mem: &dyn MemoryReader,
    runtime: u64,
    layout: &Layout,
) -> Result<(), String> {
    let mut cookie = [0u8; 8];
    mem.read(runtime, &mut cookie)
        .map_err(|e| format!("cannot read its debug offsets ({e})"))?;
    if &cookie != b"xdebugpy" {
        return Err("its runtime has no debug offsets (cookie missing)".into());
    }
    let word = |i: usize| {
        mem.read_u64(runtime + 8 * i as u64)
            .map_err(|e| format!("cannot read its debug offsets ({e})"))
    };
    if word(2)? != 0 {
        return Err("free-threaded build, layout not verified".into());
    }
    for (i, expected, name) in debug_offsets_expected(layout) {
        let found = word(i)?;
        if found != expected {
            return Err(format!(
                "layout not verified ({name} at {found}, the verified 3.{} layout has {expected})",
                layout.minor
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_from_file_names() {
        assert_eq!(version_in_name("libpython3.10.so.1.0"), Some((3, 10, None)));
        assert_eq!(version_in_name("python3.9"), Some((3, 9, None)));
        assert_eq!(version_in_name("libpython3.9d.so"), Some((3, 9, None)));
        assert_eq!(version_in_name("python"), None);
        assert_eq!(version_in_name("python3"), None);
        assert_eq!(version_in_name("train"), None);
    }
}
