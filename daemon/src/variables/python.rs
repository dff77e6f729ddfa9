//! `--var` on a Python rank: a request whose function no native frame has is looked for
//! among the main thread's Python frames (innermost first, by qualified name or its last
//! part: `step` or `Solver.step`; `<module>` for a script's top level), and the variable
//! read there ([`crate::python::locals`]).

use strata_proto::overlay::{VariableRequest, VariableValue};

use crate::memory::MemoryReader;
use crate::procfs::Pid;
use crate::python::frames::PythonRead;
use crate::python::locals::read_variable;
use crate::python::{PyFrame, PyThread};

/// The Python side of one stopped rank's reads.
pub(super) struct PythonStack<'a> {
    pub(super) read: &'a PythonRead,
    pub(super) main: Option<&'a PyThread>,
}

impl<'a> PythonStack<'a> {
    pub(super) fn new(read: &'a PythonRead, tid: Pid, fs_base: u64) -> PythonStack<'a> {
        let main = read.as_ref().ok().and_then(|p| p.thread(tid, fs_base));
        PythonStack { read, main }
    }

    /// The request's value when a Python frame of its function is on the main thread;
    /// None when none is (the native "no frame" answer stands).
    pub(super) fn read(
        &self,
        mem: &dyn MemoryReader,
        request: &VariableRequest,
    ) -> Option<VariableValue> {
        let python = self.read.as_ref().ok()?;
        let wanted = request.function.trim();
        let frame = self
            .main?
            .frames
            .iter()
            .find(|f| python_function_matches(&f.function, wanted))?;
        Some(value_in(mem, python.interpreter.layout, frame, request))
    }

    /// What the Python frames add to "no frame of f" (`; Python: compute < main <
    /// <module>`), or why they are not there.
    pub(super) fn summary(&self) -> String {
        const SHOWN: usize = 6;
        match (self.read, self.main) {
            (Err(why), _) => format!("; its Python frames were not read: {why}"),
            (Ok(p), _) if p.threads.is_err() => format!(
                "; its Python frames were not read: {}",
                p.threads.as_ref().err().map_or("", |e| e.as_str())
            ),
            (Ok(_), None) => "; its main thread runs no Python".to_string(),
            (Ok(_), Some(t)) => {
                let names: Vec<&str> = t
                    .frames
                    .iter()
                    .take(SHOWN)
                    .map(|f| f.function.as_str())
                    .collect();
                let more = if t.frames.len() > SHOWN { " < ..." } else { "" };
                format!("; Python: {}{more}", names.join(" < "))
            }
        }
    }
}

/// `Solver.step` answers to `Solver.step` and `step`; `<module>` to itself.
pub(super) fn python_function_matches(qualified: &str, wanted: &str) -> bool {
    !wanted.is_empty() && (qualified == wanted || qualified.rsplit('.').next() == Some(wanted))
}

fn value_in(
    mem: &dyn MemoryReader,
    layout: &crate::python::layout::Layout,
    frame: &PyFrame,
    request: &VariableRequest,
) -> VariableValue {
    let mut value = VariableValue {
        function: Some(frame.function.clone()),
        file: Some(frame.file.clone()),
        line: frame.line.unwrap_or(0),
        ..VariableValue::default()
    };
    match read_variable(mem, layout, frame, request.variable.trim()) {
        Ok((v, _)) => {
            value.text = Some(v.text);
            value.integer = v.integer;
        }
        Err(why) => value.error = Some(why),
    }
    value
}

#[cfg(test)]
mod tests {
    use super::python_function_matches;

    #[test]
    fn python_functions_answer_to_their_qualified_name_and_its_last_part() {
        assert!(python_function_matches("Solver.step", "step"));
        assert!(python_function_matches("Solver.step", "Solver.step"));
        assert!(python_function_matches("<module>", "<module>"));
        assert!(python_function_matches("main.<locals>.inner", "inner"));
        assert!(!python_function_matches("Solver.step", "Solver"));
        assert!(!python_function_matches("stepper", "step"));
        assert!(!python_function_matches("step", ""));
    }
}
