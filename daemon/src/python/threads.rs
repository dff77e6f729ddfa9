//! Walking a CPython process's state: its interpreters, their thread states, each
//! thread's chain of frames, and the GIL's holder, read through a [`MemoryReader`].
//!
//! Every loop is bounded (interpreters, threads, frames) and every pointer read is checked
//! by the read itself: a process that changes under the walk (one that runs while it is
//! read) gives a shorter walk or an error for that thread, never a hang or a panic.

use std::collections::HashMap;
use std::sync::Arc;

use super::layout::{CurrentFrame, Entry, Layout, Position};
use super::objects::{self, Code, ObjectError, field_i32, field_u64};
use super::runtime::Interpreter;
use crate::memory::{MemoryError, MemoryReader};
use crate::procfs::Pid;

/// More interpreters than this in one process is a walk gone wrong.
pub const MAX_INTERPRETERS: usize = 64;
/// More Python threads than this in one process is a walk gone wrong.
pub const MAX_THREADS: usize = 4096;
/// Python frames beyond this are cut (deep recursion).
pub const MAX_FRAMES: usize = 1024;

/// One Python function's frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyFrame {
    /// Qualified name (`Solver.step`; the plain name before 3.11, `<module>` for a module).
    pub function: String,
    pub file: String,
    /// `None` for an instruction without a line (compiler-generated code).
    pub line: Option<u32>,
    /// The outermost frame one evaluator call runs: frames after it in the list (further
    /// out) belong to the next `_PyEval_EvalFrameDefault` C frame outwards.
    pub entry: bool,
    /// The frame's address (its locals are read from there) and its code object's.
    pub address: u64,
    pub code: u64,
}

/// One Python thread state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyThread {
    /// The thread state's address.
    pub tstate: u64,
    /// The kernel's thread id (3.11+; before, `pthread` is matched to the captured
    /// threads' thread pointers).
    pub native_tid: Option<Pid>,
    /// `thread_id`: the thread's `pthread_t`.
    pub pthread: u64,
    /// The thread holds the GIL.
    pub holds_gil: bool,
    /// Its `threading` name (`MainThread`, `Thread-1 (worker)`), when `threading` knows it.
    pub name: Option<String>,
    /// Innermost first; empty for a thread that runs no Python code now.
    pub frames: Vec<PyFrame>,
    /// Why the walk of its frames stopped early, if it did.
    pub error: Option<String>,
    /// The frames went on past [`MAX_FRAMES`].
    pub truncated: bool,
}

/// Why a process's Python state could not be read at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WalkError {
    #[error("cannot read the interpreter state: {0}")]
    Memory(#[from] MemoryError),
    #[error("no interpreter yet (Python is starting or finishing)")]
    NoInterpreter,
    #[error("more than {MAX_THREADS} thread states: the interpreter state does not read right")]
    TooManyThreads,
}

/// Code objects read so far, by process, address and identity (a code object lives as
/// long as its function, and its name, file and line table never change): one read of its
/// header per frame instead of five.
#[derive(Debug, Default)]
pub struct CodeCache {
    codes: HashMap<(Pid, u64, [u64; 4]), Arc<Code>>,
}

/// Beyond this the cache starts again (a process that makes code at run time).
const CODE_CACHE_MAX: usize = 1 << 16;

impl CodeCache {
    fn code(
        &mut self,
        pid: Pid,
        mem: &dyn MemoryReader,
        interp: &Interpreter,
        addr: u64,
    ) -> Result<Arc<Code>, ObjectError> {
        let (header, identity) =
            objects::code_identity(mem, interp.layout, addr, interp.code_type)?;
        if let Some(c) = self.codes.get(&(pid, addr, identity)) {
            return Ok(c.clone());
        }
        let code = Arc::new(objects::read_code(
            mem,
            interp.layout,
            addr,
            &header,
            identity,
        )?);
        if self.codes.len() >= CODE_CACHE_MAX {
            self.codes.clear();
        }
        self.codes.insert((pid, addr, identity), code.clone());
        Ok(code)
    }

    pub fn len(&self) -> usize {
        self.codes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.codes.is_empty()
    }

    /// Forgets a process's code objects (it exited).
    pub fn forget(&mut self, pid: Pid) {
        self.codes.retain(|(p, _, _), _| *p != pid);
    }
}

/// Enough of a thread state to reach every field strata reads.
const TSTATE_COPY: usize = 192;
/// Enough of a frame (`PyFrameObject` to 3.10, `_PyInterpreterFrame` after).
const FRAME_COPY: usize = 112;

/// Every thread state of every interpreter of the process `pid`, with its frames.
pub fn walk(
    pid: Pid,
    interp: &Interpreter,
    mem: &dyn MemoryReader,
    codes: &mut CodeCache,
) -> Result<Vec<PyThread>, WalkError> {
    let l = interp.layout;
    let mut head = mem.read_u64(interp.runtime + l.runtime.interpreters_head)?;
    if head == 0 {
        return Err(WalkError::NoInterpreter);
    }
    let runtime_holder = match l.runtime.gil {
        Some(g) => gil_holder(mem, interp.runtime, g.last_holder, g.locked),
        None => None,
    };
    let mut threads = Vec::new();
    for _ in 0..MAX_INTERPRETERS {
        if head == 0 {
            break;
        }
        let holder = match l.interp.gil {
            Some((at, g)) => mem
                .read_u64(head + at)
                .ok()
                .filter(|&p| p != 0)
                .and_then(|gil| gil_holder(mem, gil, g.last_holder, g.locked)),
            None => runtime_holder,
        };
        let mut tstate = mem.read_u64(head + l.interp.threads_head)?;
        while tstate != 0 {
            if threads.len() >= MAX_THREADS {
                return Err(WalkError::TooManyThreads);
            }
            let (thread, next) = thread_at(pid, interp, mem, codes, tstate, holder)?;
            threads.push(thread);
            tstate = next;
        }
        head = mem.read_u64(head + l.interp.next)?;
    }
    Ok(threads)
}

/// The thread state holding a GIL whose `last_holder` and `locked` words are at these
/// offsets from `base`, if it is held.
fn gil_holder(mem: &dyn MemoryReader, base: u64, last_holder: u64, locked: u64) -> Option<u64> {
    let locked = objects::i32_at(mem, base + locked).ok()?;
    (locked > 0)
        .then(|| mem.read_u64(base + last_holder).ok())
        .flatten()
        .filter(|&p| p != 0)
}

/// The thread state at `tstate` and the next one's address.
fn thread_at(
    pid: Pid,
    interp: &Interpreter,
    mem: &dyn MemoryReader,
    codes: &mut CodeCache,
    tstate: u64,
    gil_holder: Option<u64>,
) -> Result<(PyThread, u64), WalkError> {
    let t = &interp.layout.tstate;
    let mut block = [0u8; TSTATE_COPY];
    mem.read(tstate, &mut block)?;
    let word = |at: u64| field_u64(&block, at).unwrap_or(0);
    let next = word(t.next);
    let native_tid = t
        .native_thread_id
        .map(&word)
        .and_then(|tid| Pid::try_from(tid).ok())
        .filter(|&tid| tid > 0);
    let frame = match t.current_frame {
        CurrentFrame::Direct(at) => Ok(word(at)),
        CurrentFrame::ThroughCFrame {
            cframe,
            current_frame,
        } => match word(cframe) {
            0 => Ok(0),
            c => mem.read_u64(c + current_frame),
        },
    };
    let mut thread = PyThread {
        tstate,
        native_tid,
        pthread: word(t.thread_id),
        holds_gil: gil_holder == Some(tstate),
        name: None,
        frames: Vec::new(),
        error: None,
        truncated: false,
    };
    match frame {
        Ok(first) => frames(pid, interp, mem, codes, first, &mut thread),
        Err(e) => thread.error = Some(e.to_string()),
    }
    Ok((thread, next))
}

/// Follows a thread's frames from its innermost one (`at`) outwards.
fn frames(
    pid: Pid,
    interp: &Interpreter,
    mem: &dyn MemoryReader,
    codes: &mut CodeCache,
    mut at: u64,
    thread: &mut PyThread,
) {
    let l: &Layout = interp.layout;
    let f = &l.frame;
    let mut block = [0u8; FRAME_COPY];
    while at != 0 {
        if thread.frames.len() >= MAX_FRAMES {
            thread.truncated = true;
            return;
        }
        if let Err(e) = mem.read(at, &mut block) {
            thread.error = Some(format!("cannot read a frame: {e}"));
            return;
        }
        let word = |off: u64| field_u64(&block, off).unwrap_or(0);
        let previous = word(f.previous);
        let entry = match f.entry {
            Entry::EveryFrame => true,
            Entry::IsEntry(off) => block.get(off as usize).is_some_and(|&b| b != 0),
            Entry::CStackShim { owner, cstack } => {
                if block.get(owner as usize) == Some(&cstack) {
                    // The evaluator's own shim: not code. The frame inside it (the one
                    // read before) is the first its evaluator call ran.
                    if let Some(inner) = thread.frames.last_mut() {
                        inner.entry = true;
                    }
                    at = previous;
                    continue;
                }
                false
            }
        };
        let code_at = word(f.code);
        let code = match codes.code(pid, mem, interp, code_at) {
            Ok(c) => c,
            // 3.13's frames may run something else than a code object: not a Python
            // function's frame.
            Err(ObjectError::NotCode(_)) if l.minor >= 13 => {
                at = previous;
                continue;
            }
            Err(e) => {
                thread.error = Some(format!("cannot read a code object: {e}"));
                return;
            }
        };
        let addr: i64 = match f.position {
            Position::Lasti {
                offset,
                in_code_units,
            } => {
                let lasti = i64::from(field_i32(&block, offset).unwrap_or(-1));
                if in_code_units && lasti >= 0 {
                    lasti * 2
                } else {
                    lasti
                }
            }
            Position::Pointer(off) => (word(off) as i64).wrapping_sub(code.instructions as i64),
        };
        thread.frames.push(PyFrame {
            function: code.name.clone(),
            file: code.filename.clone(),
            line: code.line(l.minor, addr),
            entry,
            address: at,
            code: code_at,
        });
        at = previous;
    }
}
