//! Which MPI call a stack is in, and where the program called it.
//!
//! The verdict's one door to MPI in frames. What is MPI (its libraries, its entry frames in
//! every binding's spelling, a call's C name and kind) is defined once for all of strata in
//! [`strata_filters::mpi`]; this module finds a stack's call with it ([`locate`]) and the
//! place the program made the call from, and everything else in the verdict works with the
//! [`Located`] it returns.
//!
//! A stack is in the MPI call named by its *outermost* MPI frame: the application called
//! it; any deeper `MPI_` name is the library calling itself. The frame just above it is
//! where the program made the call (its file and line are the call site).

use serde::Serialize;
pub use strata_filters::mpi::{CallKind, MpiCall, call_named};
use strata_filters::{CodeKind, Frame};

/// A place in the program: the function and, with debug information, its file and line.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Place {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl Place {
    /// The place a frame stands for; `None` for a special frame (`[task exited]`).
    pub fn of(frame: &Frame) -> Option<Place> {
        let c = frame.code()?;
        Some(Place {
            function: Some(frame.name()),
            file: c.file.clone(),
            line: c.line,
        })
    }

    /// `file:line`, else the function's name.
    pub fn short(&self) -> String {
        match (&self.file, self.line, &self.function) {
            (Some(file), Some(line), _) => {
                let base = file.rsplit('/').next().unwrap_or(file);
                format!("{base}:{line}")
            }
            (_, _, Some(function)) => function.clone(),
            _ => "??".to_string(),
        }
    }
}

/// A stack's MPI call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located {
    pub call: MpiCall,
    /// Index of the call's entry frame in the path (outermost first).
    pub entry: usize,
    /// Where the program called it: the frame above the entry, when there is one.
    pub call_site: Option<Place>,
}

/// The MPI call `path` (outermost frame first) is in, if any: see the module's doc.
pub fn locate(path: &[&Frame]) -> Option<Located> {
    // An MPI name in the program itself (a Fortran program called `mpi_matrix`) is not a
    // call into MPI: `mpi_call` asks the frame's binary too.
    let (entry, call) = path
        .iter()
        .enumerate()
        .find_map(|(i, frame)| Some((i, frame.code()?.mpi_call()?)))?;
    // Called from Python, the frames between the innermost Python frame and the entry are
    // the binding's (mpi4py's `Comm.recv > PyMPI_recv`, no source lines) or the
    // interpreter's: the program's call is that Python line. A C function with a line in
    // between (a callback of an embedding program) is the caller itself.
    let python_caller = path[..entry]
        .iter()
        .rposition(|f| f.code().is_some_and(|c| c.kind == CodeKind::Python))
        .filter(|&python| {
            path[python + 1..entry].iter().all(|f| {
                f.code()
                    .is_some_and(|c| c.kind == CodeKind::Interpreter || c.line.is_none())
            })
        });
    let call_site = python_caller
        .or_else(|| entry.checked_sub(1))
        .and_then(|caller| Place::of(path[caller]));
    Some(Located {
        call,
        entry,
        call_site,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_filters::CodeFrame;

    fn code(function: &str, line: Option<u32>) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(function.to_string()),
            file: line.map(|_| "/src/app.c".to_string()),
            line,
            ..CodeFrame::default()
        })
    }

    #[test]
    fn the_outermost_entry_and_its_caller() {
        let path = [
            code("main", Some(40)),
            code("exchange", Some(17)),
            code("PMPI_Sendrecv", None),
            code("PMPI_Wait", None),
            code("opal_progress", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call.name, "MPI_Sendrecv");
        assert_eq!(at.entry, 2);
        let site = at.call_site.expect("a caller");
        assert_eq!(site.function.as_deref(), Some("exchange"));
        assert_eq!(site.line, Some(17));
        assert_eq!(site.short(), "app.c:17");
    }

    #[test]
    fn open_mpi_finalize_reached_by_a_tail_call() {
        let path = [
            code("main", Some(30)),
            code("ompi_mpi_finalize", None),
            code("usleep", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call.name, "MPI_Finalize");
        assert_eq!(at.call_site.and_then(|s| s.line), Some(30));
        let outside = [code("main", Some(3)), code("compute", Some(9))];
        let refs: Vec<&Frame> = outside.iter().collect();
        assert_eq!(locate(&refs), None);
    }

    fn python(function: &str, line: u32) -> Frame {
        Frame::Code(CodeFrame {
            function: Some(function.to_string()),
            file: Some("/src/train.py".to_string()),
            line: Some(line),
            kind: strata_filters::CodeKind::Python,
            ..CodeFrame::default()
        })
    }

    #[test]
    fn called_from_python_through_the_binding() {
        let path = [
            python("<module>", 88),
            python("step", 41),
            code("Comm.Barrier", None),
            code("MPI_Barrier", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call.name, "MPI_Barrier");
        assert_eq!(at.call_site.expect("a caller").short(), "train.py:41");
    }

    #[test]
    fn a_c_callback_between_python_and_mpi_is_the_caller() {
        let path = [
            python("step", 41),
            code("reduce_callback", Some(12)),
            code("MPI_Allreduce", None),
        ];
        let refs: Vec<&Frame> = path.iter().collect();
        let at = locate(&refs).expect("in MPI");
        assert_eq!(at.call_site.expect("a caller").short(), "app.c:12");
    }
}
