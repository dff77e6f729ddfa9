//! Python as the sampler sees it: each process's interpreter found once per address space,
//! its threads read at each sample, and Python frames turned into shared trace frames.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use strata_filters::{CodeFrame, CodeKind, Frame, Module};

use super::ProcessPython;
use super::runtime::{Discovery, discover};
use super::threads::{self, CodeCache, PyFrame};
use crate::images::AddressSpace;
use crate::memory::MemoryReader;
use crate::procfs::Pid;

/// What one process's Python looked like at a sample.
pub type PythonRead = Result<ProcessPython, String>;

/// The sampler's Python state, kept across samples.
#[derive(Debug, Default)]
pub struct PythonFrames {
    /// Per process: the address space the discovery was made in, and what it found.
    discoveries: HashMap<Pid, (Arc<AddressSpace>, Discovery)>,
    /// The paths of the images that hold an interpreter: their frames are the
    /// interpreter's own ([`CodeKind::Interpreter`]).
    interpreter_images: HashSet<String>,
    codes: CodeCache,
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
                let threads = threads::walk(pid, &interpreter, mem, &mut self.codes)
                    .map_err(|e| e.to_string());
                Some(Ok(ProcessPython {
                    interpreter,
                    threads,
                    read_in: started.elapsed(),
                }))
            }
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
        self.codes.forget(pid);
    }
}
