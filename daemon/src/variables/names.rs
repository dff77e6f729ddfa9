//! How a name a user typed matches a name in the program: a frame's (demangled) function
//! name, or a variable's, C++ qualified or Fortran case-insensitive.

/// Whether a frame's (demangled) function `name` is the `wanted` one: the whole name, the
/// name without its parameters (`ns::S<int>::run`), or its last `::` component without
/// parameters (`run`); ASCII case-insensitive, as Fortran names are.
pub fn function_matches(name: &str, wanted: &str) -> bool {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return false;
    }
    let bare = without_parameters(name);
    name.eq_ignore_ascii_case(wanted)
        || bare.eq_ignore_ascii_case(wanted)
        || last_component(bare).eq_ignore_ascii_case(wanted)
}

/// Whether `name` is the external symbol a Fortran compiler makes of `wanted`: one
/// trailing underscore added (`SOLVE` -> `solve_`), any case.
pub(super) fn fortran_external_matches(name: &str, wanted: &str) -> bool {
    let wanted = wanted.trim();
    !wanted.is_empty()
        && !wanted.ends_with('_')
        && name
            .strip_suffix('_')
            .is_some_and(|n| n.eq_ignore_ascii_case(wanted))
}

pub(super) fn names_equal(name: &str, wanted: &str, fold_case: bool) -> bool {
    if fold_case {
        name.eq_ignore_ascii_case(wanted)
    } else {
        name == wanted
    }
}

/// `ns::f<int>(int, char) const` without its parameter list: up to the `(` matching the
/// last `)`. Names without parameters come back unchanged.
fn without_parameters(name: &str) -> &str {
    let Some(close) = name.rfind(')') else {
        return name;
    };
    let mut depth = 0usize;
    for (i, c) in name[..=close].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return name[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    name
}

/// The part after the last `::` outside template arguments (`a::B<c::d>::run` -> `run`).
pub(super) fn last_component(name: &str) -> &str {
    let bytes = name.as_bytes();
    let mut depth = 0i32;
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' | b'(' => depth += 1,
            b'>' | b')' => depth -= 1,
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    &name[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn function_names_match_whole_bare_or_last_component() {
        assert!(function_matches("get_norm", "get_norm"));
        assert!(function_matches("get_norm", "GET_NORM"));
        assert!(function_matches("solver::get_norm", "get_norm"));
        assert!(function_matches("solver::get_norm", "solver::get_norm"));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "sweep"
        ));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "ns::Grid<int>::sweep"
        ));
        assert!(function_matches(
            "ns::Grid<int>::sweep(int, double) const",
            "ns::Grid<int>::sweep(int, double) const"
        ));
        assert!(function_matches("a::B<c::d>::run()", "run"));
        assert!(function_matches("mymod::solve", "SOLVE"));
        assert!(!function_matches("get_norm2", "get_norm"));
        assert!(!function_matches("solver::get_norm", "solver"));
        assert!(!function_matches("a::B<c::run>::go()", "run"));
        assert!(!function_matches("main", ""));
        assert!(!function_matches("main", "  "));
        // Fortran externals, only when nothing matches exactly (see read_request).
        assert!(!function_matches("solve_", "solve"));
        assert!(fortran_external_matches("solve_", "SOLVE"));
        assert!(!fortran_external_matches("solve__", "solve"));
        assert!(!fortran_external_matches("solve_", "solve_"));
        assert!(!fortran_external_matches("solve_", ""));
        // Odd names do not panic.
        for odd in ["", ")", "(", "::", "a::", "f(()", "f)(", "<<::>>"] {
            let _ = function_matches(odd, "f");
            let _ = without_parameters(odd);
            let _ = last_component(odd);
        }
    }
}
