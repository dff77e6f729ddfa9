//! Frames: one entry of a call path, and the interning table that gives them small ids.
//!
//! A frame carries everything any view needs (function, module with build-id, offset,
//! source file and line, inline marker), so that the function, line and module
//! granularities are projections of one sampled tree and never need a re-sample.

use crate::mpi::{
    MpiCall, call_named, is_c_binding_name, is_call_name, is_mpi_library, is_runtime_library,
};
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::Arc;
use thiserror::Error;

/// A binary image: its path as the target saw it and its GNU build-id (hex), if any.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Module {
    pub path: String,
    pub build_id: Option<String>,
}

impl Module {
    /// The file name part of the path, which is what a label shows.
    pub fn basename(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }
}

/// A code location in a task's stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CodeFrame {
    /// Demangled function name; `None` when no symbol covers the address.
    pub function: Option<String>,
    pub module: Option<Module>,
    /// Offset of the (lookup) address from the module's load base.
    pub offset: Option<u64>,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// This frame is an inlined call inside the physical frame that follows it, or a call
    /// recovered from the caller's call instruction (`recovered`).
    pub inlined: bool,
    /// A call recovered from the caller's call instruction (see
    /// [`CodeFrame::is_recovered_call`]). Files and messages write it as an inlined frame
    /// without an offset, which a sampled frame always has ([`CodeFrame::from_fields`]);
    /// in memory it is said outright, because a view's projection drops the offsets of
    /// every frame, and an inlined call would then read as a recovered one.
    pub recovered: bool,
    /// Machine code, a Python function, or the Python interpreter's own code.
    pub kind: CodeKind,
}

/// What kind of code a frame is in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CodeKind {
    /// Machine code (C, C++, Fortran, Rust, ...), as the unwinder found it.
    #[default]
    Native,
    /// A Python function, read from the interpreter's own frames: `function` is its
    /// qualified name (`Solver.step`), `file` and `line` are in its `.py` source, and the
    /// module is that source file (a Python module is its file); no offset.
    Python,
    /// The Python interpreter's own machine code (its evaluation loop and call machinery,
    /// the C frames between two Python frames): views hide it unless full stacks are
    /// asked for ([`crate::view::ViewOptions::hide_interpreter`]).
    Interpreter,
}

impl CodeKind {
    /// The name files and messages use (`None` for machine code, the default).
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            CodeKind::Native => None,
            CodeKind::Python => Some("python"),
            CodeKind::Interpreter => Some("interpreter"),
        }
    }

    pub fn from_name(name: &str) -> Option<CodeKind> {
        match name {
            "python" => Some(CodeKind::Python),
            "interpreter" => Some(CodeKind::Interpreter),
            "native" => Some(CodeKind::Native),
            _ => None,
        }
    }
}

impl CodeFrame {
    /// A call that has no frame of its own, named from the caller's call instruction: the
    /// program called `MPI_Waitall`, and the MPI library jumped from that entry into its
    /// internals (a stripped library, a tail call), so no frame below says so. Written as
    /// an inlined frame without an address.
    pub fn is_recovered_call(&self) -> bool {
        self.recovered
    }
}

/// Flat frame fields that make no frame (see [`CodeFrame::from_fields`]).
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum FrameError {
    #[error("frame has a build-id but no module path")]
    BuildIdWithoutModule,
}

impl CodeFrame {
    /// Builds a code frame from the flat fields a file or message carries, refusing a
    /// build-id without a module path (it would identify nothing).
    pub fn from_fields(
        function: Option<String>,
        module_path: Option<String>,
        build_id: Option<String>,
        offset: Option<u64>,
        file: Option<String>,
        line: Option<u32>,
        inlined: bool,
    ) -> Result<CodeFrame, FrameError> {
        if build_id.is_some() && module_path.is_none() {
            return Err(FrameError::BuildIdWithoutModule);
        }
        Ok(CodeFrame {
            function,
            module: module_path.map(|path| Module { path, build_id }),
            offset,
            file,
            line,
            inlined,
            // Stored trees are sampled frames, which all have an offset but this one (a
            // Python frame has none, and is never inlined).
            recovered: inlined && offset.is_none(),
            kind: CodeKind::Native,
        })
    }
}

/// Frames that are not code: they stand for what strata could not sample, so that the
/// ranks concerned stay visible in the tree instead of silently disappearing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Special {
    /// The task exited before or during the sample.
    TaskExited,
    /// The stack walk failed at this point; frames above it are still shown.
    UnwindError,
    /// The daemon responsible for these ranks did not answer in time.
    DaemonUnreachable,
    /// A subtree was lost before its rank map arrived: its ranks cannot be named.
    RanksUnknown,
    /// strata could not attach (permission, already traced, ...); see the rank table.
    NotAttached,
    /// The stack was deeper than the frame limit. A walk starts at the innermost frame, so
    /// the outermost frames are the missing ones: this frame stands in for them, first on
    /// the path.
    Truncated,
    /// The thread sleeps uninterruptibly in the kernel (state D: I/O, a hung file system)
    /// and cannot be stopped to read its stack; the rank table has its `wchan`. Shown only
    /// when `/proc` said D for that thread at that sample.
    Uninterruptible,
    /// The thread did not stop within the sample's deadline although the kernel did not
    /// say it sleeps uninterruptibly (a loaded machine, a thread waiting for a core): its
    /// stack was not read for that sample. Never shown as a kernel state.
    NotStopped,
}

impl Special {
    pub const ALL: [Special; 8] = [
        Special::TaskExited,
        Special::UnwindError,
        Special::DaemonUnreachable,
        Special::RanksUnknown,
        Special::NotAttached,
        Special::Truncated,
        Special::Uninterruptible,
        Special::NotStopped,
    ];

    /// The label shown in every rendering, e.g. `[task exited]`.
    pub fn label(self) -> &'static str {
        match self {
            Special::TaskExited => "[task exited]",
            Special::UnwindError => "[unwind error]",
            Special::DaemonUnreachable => "[daemon unreachable]",
            Special::RanksUnknown => "[ranks unknown]",
            Special::NotAttached => "[not attached]",
            Special::Truncated => "[truncated]",
            Special::Uninterruptible => "[uninterruptible sleep]",
            Special::NotStopped => "[not stopped in time]",
        }
    }

    /// Inverse of [`Special::label`].
    pub fn from_label(label: &str) -> Option<Special> {
        Special::ALL.into_iter().find(|s| s.label() == label)
    }
}

/// One element of a call path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Frame {
    Code(CodeFrame),
    Special(Special),
}

impl Frame {
    /// A code frame with only a function name (tests, synthetic traces).
    pub fn function(name: &str) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(name.to_string()),
            ..CodeFrame::default()
        })
    }

    /// The code part, if this is a code frame.
    pub fn code(&self) -> Option<&CodeFrame> {
        match self {
            Frame::Code(c) => Some(c),
            Frame::Special(_) => None,
        }
    }

    /// The name a user reads: the function, else `module+0xoffset`, else `??`.
    pub fn name(&self) -> String {
        match self {
            Frame::Special(s) => s.label().to_string(),
            Frame::Code(c) => match (&c.function, &c.module, c.offset) {
                (Some(f), _, _) => f.clone(),
                (None, Some(m), Some(off)) => format!("{}+{:#x}", m.basename(), off),
                (None, Some(m), None) => format!("{}+??", m.basename()),
                (None, None, Some(off)) => format!("{off:#x}"),
                (None, None, None) => "??".to_string(),
            },
        }
    }

    /// True for a frame of an MPI call: an MPI function as [`crate::mpi::call_named`] reads
    /// its name (`MPI_Recv`, `PMPI_Recv`, `mpi_recv_`, `ompi_recv_f`, Open MPI's tail-called
    /// `ompi_mpi_finalize`). Library internals (`MPIR_`, `opal_progress`) are not entries:
    /// they are what "cut below MPI" removes.
    ///
    /// The name is not enough: a Fortran program called `mpi_matrix` is not an MPI call.
    /// The frame must be in an MPI library ([`crate::mpi::is_mpi_library`]), or, in another
    /// binary (an MPI linked statically, a tool's PMPI wrapper), bear a C binding's name
    /// ([`crate::mpi::is_c_binding_name`]); a frame without a module is judged by its name.
    pub fn is_mpi_entry(&self) -> bool {
        self.code().is_some_and(CodeFrame::is_mpi_entry)
    }

    /// Whether this is the Python interpreter's own code ([`CodeKind::Interpreter`]).
    pub fn is_interpreter(&self) -> bool {
        self.code().is_some_and(|c| c.kind == CodeKind::Interpreter)
    }

    /// Whether this is a Python function's frame ([`CodeKind::Python`]).
    pub fn is_python(&self) -> bool {
        self.code().is_some_and(|c| c.kind == CodeKind::Python)
    }

    /// Whether this frame's code is in the MPI runtime: an MPI library or one it runs on
    /// (PMIx, UCX, libfabric, ...: [`crate::mpi::is_runtime_library`]).
    pub fn is_in_mpi_runtime(&self) -> bool {
        self.code()
            .and_then(|c| c.module.as_ref())
            .is_some_and(|m| is_runtime_library(&m.path))
    }
}

impl CodeFrame {
    /// See [`Frame::is_mpi_entry`].
    pub fn is_mpi_entry(&self) -> bool {
        // Asked of every node of every view: decided without building the call's name.
        self.function
            .as_deref()
            .is_some_and(|name| is_call_name(name) && self.may_be_mpi(name))
    }

    /// The MPI call this frame is an entry of ([`Frame::is_mpi_entry`]), named by its C
    /// binding whatever the frame spells.
    pub fn mpi_call(&self) -> Option<MpiCall> {
        let name = self.function.as_deref()?;
        if !self.may_be_mpi(name) {
            return None;
        }
        call_named(name)
    }

    /// Whether a frame named `name` (an MPI name) can be MPI's, by its binary: see
    /// [`Frame::is_mpi_entry`].
    pub fn may_be_mpi(&self, name: &str) -> bool {
        match &self.module {
            Some(m) if !is_mpi_library(&m.path) => is_c_binding_name(name),
            _ => true,
        }
    }
}

impl fmt::Display for Frame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// Index of a frame in a [`FrameTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FrameId(pub u32);

/// Interns frames: each distinct frame is stored once per tree and nodes refer to it by id,
/// so a tree of thousands of nodes holds only as many strings as it has distinct frames.
/// Frames are shared (`Arc`), so copying a table to a derived tree (the remap, a view)
/// copies pointers, not strings.
#[derive(Clone, Default)]
pub struct FrameTable {
    frames: Vec<Arc<Frame>>,
    ids: FxHashMap<Arc<Frame>, FrameId>,
}

impl fmt::Debug for FrameTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.frames).finish()
    }
}

impl FrameTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `frame`, adding it if it is new.
    pub fn intern(&mut self, frame: &Frame) -> FrameId {
        if let Some(&id) = self.ids.get(frame) {
            return id;
        }
        self.push(Arc::new(frame.clone()))
    }

    /// Like [`FrameTable::intern`] for a frame that is already shared.
    pub fn intern_shared(&mut self, frame: &Arc<Frame>) -> FrameId {
        if let Some(&id) = self.ids.get(&**frame) {
            return id;
        }
        self.push(Arc::clone(frame))
    }

    fn push(&mut self, frame: Arc<Frame>) -> FrameId {
        let id = FrameId(u32::try_from(self.frames.len()).expect("fewer than 2^32 frames"));
        self.ids.insert(Arc::clone(&frame), id);
        self.frames.push(frame);
        id
    }

    pub fn get(&self, id: FrameId) -> &Frame {
        &self.frames[id.0 as usize]
    }

    /// The shared frame behind `id`.
    pub fn get_shared(&self, id: FrameId) -> &Arc<Frame> {
        &self.frames[id.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.frames.len()
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Frame> {
        self.frames.iter().map(|f| &**f)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_mpi_name_outside_an_mpi_library_must_be_a_c_binding() {
        let frame = |function: &str, module: Option<&str>| {
            Frame::Code(CodeFrame {
                function: Some(function.to_string()),
                module: module.map(|path| Module {
                    path: path.to_string(),
                    build_id: None,
                }),
                ..CodeFrame::default()
            })
        };
        // A Fortran program called mpi_matrix, and its own mpi_helper_.
        assert!(!frame("mpi_matrix", Some("/home/u/mpi_matrix")).is_mpi_entry());
        assert!(!frame("mpi_helper_", Some("/home/u/app")).is_mpi_entry());
        // MPI linked statically, or a PMPI tool's wrapper.
        assert!(frame("MPI_Recv", Some("/home/u/app")).is_mpi_entry());
        assert!(frame("PMPI_Recv", Some("/opt/tool/libmpiP.so")).is_mpi_entry());
        // In an MPI library, every binding; without a module, the name decides.
        assert!(frame("mpi_recv_", Some("/usr/lib/libmpi_mpifh.so.40")).is_mpi_entry());
        assert!(frame("mpi_recv_", None).is_mpi_entry());
    }

    use super::*;

    #[test]
    fn names_fall_back_to_module_offset() {
        let m = Module {
            path: "/usr/lib/libfoo.so.1".into(),
            build_id: None,
        };
        let f = Frame::Code(CodeFrame {
            module: Some(m),
            offset: Some(0x1234),
            ..CodeFrame::default()
        });
        assert_eq!(f.name(), "libfoo.so.1+0x1234");
        assert_eq!(Frame::Special(Special::TaskExited).name(), "[task exited]");
        for s in Special::ALL {
            assert_eq!(Special::from_label(s.label()), Some(s));
        }
    }

    #[test]
    fn interning_is_stable() {
        let mut t = FrameTable::new();
        let a = t.intern(&Frame::function("a"));
        let b = t.intern(&Frame::function("b"));
        assert_ne!(a, b);
        assert_eq!(t.intern(&Frame::function("a")), a);
        assert_eq!(t.len(), 2);
    }
}
