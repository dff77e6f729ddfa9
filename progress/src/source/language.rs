//! Which source language a file is, by its name, and the tree-sitter grammar that reads it.
//! A `.py` file is Python's: its frames are read from the interpreter (the daemon's Python
//! reader), with the line the interpreter is at.

use std::path::Path;

/// A source language strata can parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    C,
    Cpp,
    Fortran,
    Python,
}

impl Language {
    /// The language of a source file by its extension (case matters: `.C` is C++, `.c` C).
    /// `.h` is parsed as C++: its grammar accepts C headers in practice, and a header may be
    /// included from either language. Fixed-form Fortran (`.f`, `.F`, `.for`, `.ftn`, `.f77`)
    /// goes to the free-form grammar, which reads simple fixed-form code only.
    pub fn from_path(path: &str) -> Option<Language> {
        let extension = Path::new(path).extension()?.to_str()?;
        match extension {
            "c" => Some(Language::C),
            "h" | "C" | "cc" | "cpp" | "cxx" | "c++" | "hpp" | "hh" | "hxx" | "h++" | "ipp"
            | "tcc" => Some(Language::Cpp),
            "f90" | "f95" | "f03" | "f08" | "F90" | "F95" | "F03" | "F08" | "f" | "F" | "for"
            | "ftn" | "f77" | "F77" => Some(Language::Fortran),
            "py" => Some(Language::Python),
            _ => None,
        }
    }

    pub(super) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Language::Fortran => tree_sitter_fortran::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Language::C => "C",
            Language::Cpp => "C++",
            Language::Fortran => "Fortran",
            Language::Python => "Python",
        }
    }
}
