//! Python as the sampler sees it: each process's interpreter found once per address space,
//! its threads read at each sample, and Python frames turned into shared trace frames.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use strata_filters::{CodeFrame, CodeKind, Frame, Module};

use super::ProcessPython;
use super::names::{find_active, thread_names};
use super::runtime::{Discovery, Interpreter, discover};
use super::threads::{self, CodeCache, PyFrame};
use crate::images::AddressSpace;
use crate::memory::MemoryReader;
use crate::procfs::Pid;

/// What one process's Python looked like at a sample.
pub type PythonRead = Result<ProcessPython, String>;

/// Where a process's `threading._active` dict is.
#[derive(Clone, Copy, Debug)]
enum ActiveDict {
    At(u64),
    /// Not found (`threading` not imported yet) at this moment.
    NotYet(std::time::Instant),
}

/// How long a process without `threading` is not asked again (a look goes through all of
/// `sys.modules`).
const ACTIVE_RETRY: std::time::Duration = std::time::Duration::from_secs(10);

/// The sampler's Python state, kept across samples.
#[derive(Debug, Default)]
pub struct PythonFrames {
    /// Per process: the address space the discovery was made in, and what it found.
    discoveries: HashMap<Pid, (Arc<AddressSpace>, Discovery)>,
    /// The paths of the images that hold an interpreter: their frames are the
    /// interpreter's own ([`CodeKind::Interpreter`]).
    interpreter_images: HashSet<String>,
    codes: CodeCache,
    /// Per process: the address space and where its `threading._active` dict is, or when
    /// it was last looked for in vain.
    active: HashMap<Pid, (Arc<AddressSpace>, ActiveDict)>,
    /// (qualified name, file, line) -> its trace frame, shared by every tree and sample.
    frames: HashMap<(String, String, Option<u32>), Arc<Frame>>,
}

impl PythonFrames {
    /// Reads the Python threads of `pid`: `None` for a process without Python.
    pub fn read(
        &mut self,
        pid: Pid,
        space: &Arc<AddressSpace>,
        mem: &dyn MemoryReader,
    ) -> Option<PythonRead> {
        let known = self
            .discoveries
            .get(&pid)
            .filter(|(s, _)| Arc::ptr_eq(s, space))
            .map(|(_, d)| d.clone());
        let discovery = known.unwrap_or_else(|| {
            let d = discover(space, mem);
            if let Discovery::Python(i) = &d {
                self.interpreter_images.insert(i.image_path.clone());
            }
            self.discoveries.insert(pid, (space.clone(), d.clone()));
            d
        });
        match discovery {
            Discovery::NotPython => None,
            Discovery::Refused(why) => Some(Err(why)),
            Discovery::Python(interpreter) => {
                let started = std::time::Instant::now();
                let mut threads = threads::walk(pid, &interpreter, mem, &mut self.codes)
                    .map_err(|e| e.to_string());
                if let Ok(threads) = &mut threads {
                    self.name_threads(pid, space, mem, &interpreter, threads);
                }
                Some(Ok(ProcessPython {
                    interpreter,
                    threads,
                    read_in: started.elapsed(),
                }))
            }
        }
    }

    /// Gives each thread its `threading` name, where `threading` has one.
    fn name_threads(
        &mut self,
        pid: Pid,
        space: &Arc<AddressSpace>,
        mem: &dyn MemoryReader,
        interpreter: &Interpreter,
        threads: &mut [super::PyThread],
    ) {
        let layout = interpreter.layout;
        let known = self
            .active
            .get(&pid)
            .filter(|(s, _)| Arc::ptr_eq(s, space))
            .map(|(_, a)| *a);
        let active = match known {
            Some(ActiveDict::At(at)) => Some(at),
            Some(ActiveDict::NotYet(when)) if when.elapsed() < ACTIVE_RETRY => None,
            _ => {
                let found = mem
                    .read_u64(interpreter.runtime + layout.runtime.interpreters_head)
                    .ok()
                    .and_then(|main| find_active(mem, layout, main).ok().flatten());
                let entry = match found {
                    Some(at) => ActiveDict::At(at),
                    None => ActiveDict::NotYet(std::time::Instant::now()),
                };
                self.active.insert(pid, (space.clone(), entry));
                found
            }
        };
        let Some(at) = active else { return };
        let names = match thread_names(mem, layout, at) {
            Ok(names) => names,
            Err(_) => {
                // Gone (the module reloaded?): look again next time.
                self.active.remove(&pid);
                return;
            }
        };
        for t in threads {
            t.name = names.get(&t.pthread).cloned();
        }
    }

    /// Whether the image at `path` holds a Python interpreter found in some process.
    pub fn is_interpreter_image(&self, path: &str) -> bool {
        self.interpreter_images.contains(path)
    }

    /// The trace frame of a Python frame.
    pub fn frame(&mut self, f: &PyFrame) -> Arc<Frame> {
        let key = (f.function.clone(), f.file.clone(), f.line);
        self.frames
            .entry(key)
            .or_insert_with(|| {
                Arc::new(Frame::Code(CodeFrame {
                    function: Some(f.function.clone()),
                    module: Some(Module {
                        path: f.file.clone(),
                        build_id: None,
                    }),
                    file: Some(f.file.clone()),
                    line: f.line,
                    kind: CodeKind::Python,
                    ..CodeFrame::default()
                }))
            })
            .clone()
    }

    /// Forgets what was learned about `pid` (it exited).
    pub fn forget(&mut self, pid: Pid) {
        self.discoveries.remove(&pid);
        self.active.remove(&pid);
        self.codes.forget(pid);
    }
}
