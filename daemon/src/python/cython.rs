//! Cython's C names back to the Python-level names they implement: mpi4py's
//! `Comm.Barrier` is the C function `__pyx_pw_6mpi4py_3MPI_4Comm_119Barrier`.
//!
//! Cython names a function `__pyx_<kind>_` followed by its scope, one length-prefixed
//! part per module and class (`6mpi4py_3MPI_4Comm`), and its own name, prefixed by a
//! counter for Python-visible functions (`119Barrier`) or not (`PyMPI_recv` of a `cdef`
//! function). The module's parts are dropped where they match the extension module's own
//! path (`.../mpi4py/MPI.cpython-311-x86_64-linux-gnu.so`), leaving `Comm.Barrier`.

/// The prefixes of the functions Cython generates for Python-level code: `pw` the Python
/// wrapper, `pf` its body, `f` a `cdef` function, `getprop`/`setprop` properties.
/// Whether the function's own name carries a counter (Python-visible functions do).
const PREFIXES: [(&str, bool); 5] = [
    ("__pyx_pw_", true),
    ("__pyx_pf_", true),
    ("__pyx_f_", false),
    ("__pyx_getprop_", false),
    ("__pyx_setprop_", false),
];

/// The Python-level name of a Cython function named `symbol` in the extension module at
/// `module_path`, or `None` when `symbol` is not one.
pub fn python_name(symbol: &str, module_path: &str) -> Option<String> {
    let (rest, counted) = PREFIXES
        .iter()
        .find_map(|(p, counted)| Some((symbol.strip_prefix(p)?, *counted)))?;
    let (mut scope, name) = parse(rest, counted)?;
    // Drop the leading parts that are the module's dotted path (a suffix of the file's
    // directories and its name up to the first dot).
    let file = module_path.rsplit('/').next().unwrap_or(module_path);
    let stem = file.split('.').next().unwrap_or(file);
    let mut path: Vec<&str> = module_path.split('/').collect();
    path.pop();
    path.push(stem);
    let mut drop = 0;
    for k in (1..=scope.len().min(path.len())).rev() {
        if scope[..k] == path[path.len() - k..] {
            drop = k;
            break;
        }
    }
    scope.drain(..drop);
    scope.push(name);
    Some(scope.join("."))
}

/// Splits `6mpi4py_3MPI_4Comm_119Barrier` into its scope parts and the function's name,
/// which starts with a counter when `counted`: a split whose last part does not fit is
/// not taken (`4Comm_5Split_init` is `Comm.Split_init`, not `Comm.Split.init`).
fn parse(s: &str, counted: bool) -> Option<(Vec<&str>, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        // A name without a counter (`cdef` functions): all the rest.
        return (!counted && !s.is_empty()).then(|| (Vec::new(), s));
    }
    let after = &s[digits..];
    let n: usize = s[..digits].parse().ok()?;
    // A scope part: `n` characters, then `_` and more.
    if let Some(part) = after.get(..n)
        && let Some(more) = after[n..].strip_prefix('_')
        && let Some((mut scope, name)) = parse(more, counted)
    {
        scope.insert(0, part);
        return Some((scope, name));
    }
    // Otherwise the counter of the function's own name.
    (counted && !after.is_empty()).then(|| (Vec::new(), after))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MPI: &str =
        "/venv/lib/python3.11/site-packages/mpi4py/MPI.mpich.cpython-311-x86_64-linux-gnu.so";

    #[test]
    fn mpi4py_methods_read_as_python_methods() {
        let n = |s| python_name(s, MPI);
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_4Comm_119Barrier").as_deref(),
            Some("Comm.Barrier")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_4Comm_259recv").as_deref(),
            Some("Comm.recv")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_4Comm_179Barrier_init").as_deref(),
            Some("Comm.Barrier_init")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_7Message_19Recv").as_deref(),
            Some("Message.Recv")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_101get_vendor").as_deref(),
            Some("get_vendor")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_10BottomType_13__getbuffer__").as_deref(),
            Some("BottomType.__getbuffer__")
        );
        assert_eq!(
            n("__pyx_pw_6mpi4py_3MPI_4Comm_5Split_init").as_deref(),
            Some("Comm.Split_init")
        );
        assert_eq!(
            n("__pyx_getprop_6mpi4py_3MPI_4Comm_size").as_deref(),
            Some("Comm.size")
        );
        assert_eq!(
            n("__pyx_f_6mpi4py_3MPI_PyMPI_recv").as_deref(),
            Some("PyMPI_recv")
        );
        assert_eq!(
            n("__pyx_f_6mpi4py_3MPI_10_p_msg_cco_for_cco_recv").as_deref(),
            Some("_p_msg_cco.for_cco_recv")
        );
    }

    #[test]
    fn other_names_and_other_modules() {
        assert_eq!(python_name("MPI_Barrier", MPI), None);
        assert_eq!(python_name("__pyx_pw_", MPI), None);
        // A module whose path strata cannot match keeps its dotted path.
        assert_eq!(
            python_name("__pyx_pw_3pkg_4core_5Model_3fit", "/opt/x.so").as_deref(),
            Some("pkg.core.Model.fit")
        );
    }
}
