//! The arguments of a call on a source line, as expressions: what the verdict reads to learn
//! the peer and the communicator of an MPI call at -O0 (`MPI_Recv(&x, 1, MPI_INT, 1 - rank,
//! 0, MPI_COMM_WORLD, &status)` gives `1 - rank` and `MPI_COMM_WORLD`).
//!
//! Only the shapes an argument is usually written in are kept as structure: integer
//! literals, names, `+ - * / %`, unary minus, parentheses, casts (looked through) and calls
//! (Fortran's `mod(rank + 1, size)`). Anything else (`nbr[i]`, `p->peer`, `a ? b : c`) is
//! [`Expr::Other`] with its text, so that a reader can say what it did not evaluate.
//!
//! The call is found by name, matching case-insensitively and with or without the `P`
//! of the profiling interface (`MPI_Recv`, `PMPI_Recv`, Fortran `mpi_recv`): among the calls
//! spanning the line, the innermost (a call written over several lines is found from any of
//! them; DWARF gives the call instruction the line of the callee's name in practice).
//! Fortran keyword arguments (`source=src`) keep their keyword.

use super::files::{SourceError, SourceIndex};
use super::language::Language;
use super::syntax::{children, children_spanning, spans};
use tree_sitter::Node;

/// An argument expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Integer(i64),
    /// A variable or a constant's name (`rank`, `MPI_COMM_WORLD`, C++ `ns::peer`).
    Name(String),
    Negate(Box<Expr>),
    Binary(Operator, Box<Expr>, Box<Expr>),
    /// A function call (`mod(a, b)`), its name and arguments.
    Call(String, Vec<Expr>),
    /// Anything else, as written.
    Other(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Add,
    Subtract,
    Multiply,
    Divide,
    Remainder,
}

/// One argument of a call: a Fortran keyword argument keeps its keyword.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Argument {
    pub keyword: Option<String>,
    pub value: Expr,
}

/// Why a call's arguments could not be read from the source.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error(transparent)]
    Source(#[from] SourceError),
    #[error("{path}:{line} has no call to {callee} that the parser could read")]
    NoCall {
        path: String,
        line: u32,
        callee: String,
    },
}

impl SourceIndex {
    /// The arguments of the call to `callee` on `file:line` (1-based).
    pub fn call_arguments(
        &mut self,
        file: &str,
        line: u32,
        callee: &str,
    ) -> Result<Vec<Argument>, CallError> {
        let parsed = self.parsed(file, line)?;
        let source = parsed.text.as_bytes();
        let call = innermost_call(
            parsed.tree.root_node(),
            line,
            callee,
            parsed.language,
            source,
        )
        .ok_or_else(|| CallError::NoCall {
            path: parsed.shown.clone(),
            line,
            callee: callee.to_owned(),
        })?;
        Ok(arguments(call, parsed.language, source))
    }
}

/// Whether a called name is `callee`: the same name ignoring case, with or without `P`.
fn names_callee(name: &str, callee: &str) -> bool {
    let name = name.trim();
    let bare = |s: &str| -> String {
        let lower = s.to_ascii_lowercase();
        lower.strip_prefix('p').map_or(lower.clone(), |rest| {
            if rest.starts_with("mpi_") {
                rest.to_owned()
            } else {
                lower.clone()
            }
        })
    };
    bare(name) == bare(callee)
}

/// The name a call node calls, and the node holding its argument list.
fn callee_of<'t>(node: Node<'t>, language: Language, source: &[u8]) -> Option<(String, Node<'t>)> {
    let (function, list) = match (language, node.kind()) {
        (Language::C | Language::Cpp, "call_expression") => (
            node.child_by_field_name("function")?,
            node.child_by_field_name("arguments")?,
        ),
        (Language::Fortran, "subroutine_call") => (
            node.child_by_field_name("subroutine")?,
            children(node)
                .into_iter()
                .find(|c| c.kind() == "argument_list")?,
        ),
        // A function reference (`ierr = f(...)`) or MPI's Fortran functions.
        (Language::Fortran, "call_expression") => (
            children(node).into_iter().find(|c| c.is_named())?,
            node.child_by_field_name("arguments").or_else(|| {
                children(node)
                    .into_iter()
                    .find(|c| c.kind() == "argument_list")
            })?,
        ),
        _ => return None,
    };
    let name = function.utf8_text(source).ok()?.to_owned();
    Some((name, list))
}

fn innermost_call<'t>(
    root: Node<'t>,
    line: u32,
    callee: &str,
    language: Language,
    source: &[u8],
) -> Option<Node<'t>> {
    let mut best: Option<Node> = None;
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if !spans(node, line) {
            continue;
        }
        if let Some((name, _)) = callee_of(node, language, source)
            && names_callee(&name, callee)
            && best.is_none_or(|b| node.start_byte() >= b.start_byte())
        {
            best = Some(node);
        }
        pending.extend(children_spanning(node, line));
    }
    best
}

fn arguments(call: Node, language: Language, source: &[u8]) -> Vec<Argument> {
    let Some((_, list)) = callee_of(call, language, source) else {
        return Vec::new();
    };
    children(list)
        .into_iter()
        .filter(|c| c.is_named() && !c.is_extra())
        .map(|c| {
            if c.kind() == "keyword_argument" {
                let keyword = c
                    .child_by_field_name("name")
                    .and_then(|n| n.utf8_text(source).ok())
                    .map(str::to_owned);
                let value = c
                    .child_by_field_name("value")
                    .map_or_else(|| Expr::Other(text(c, source)), |v| expr(v, source));
                Argument { keyword, value }
            } else {
                Argument {
                    keyword: None,
                    value: expr(c, source),
                }
            }
        })
        .collect()
}

fn text(node: Node, source: &[u8]) -> String {
    node.utf8_text(source).unwrap_or("").to_owned()
}

/// Expression trees can be deep, but arguments worth evaluating are not: past this depth
/// the rest is kept as text.
const MAX_DEPTH: usize = 32;

fn expr(node: Node, source: &[u8]) -> Expr {
    expr_at(node, source, 0)
}

fn expr_at(node: Node, source: &[u8], depth: usize) -> Expr {
    let other = || Expr::Other(text(node, source));
    if depth > MAX_DEPTH {
        return other();
    }
    let sub = |n: Node| expr_at(n, source, depth + 1);
    let named: Vec<Node> = children(node)
        .into_iter()
        .filter(|c| c.is_named() && c.kind() != "comment")
        .collect();
    match node.kind() {
        "number_literal" => parse_integer(&text(node, source)).map_or_else(other, Expr::Integer),
        "identifier" | "qualified_identifier" => Expr::Name(text(node, source)),
        "parenthesized_expression" if named.len() == 1 => sub(named[0]),
        // `(int) x`: the value is the operand's.
        "cast_expression" => node.child_by_field_name("value").map_or_else(other, sub),
        "unary_expression" => {
            let operator = node
                .child_by_field_name("operator")
                .map(|o| text(o, source))
                .unwrap_or_default();
            match (operator.as_str(), node.child_by_field_name("argument")) {
                ("-", Some(a)) => Expr::Negate(Box::new(sub(a))),
                ("+", Some(a)) => sub(a),
                _ => other(),
            }
        }
        "binary_expression" | "math_expression" => {
            let operator = node
                .child_by_field_name("operator")
                .map(|o| text(o, source))
                .unwrap_or_default();
            let operator = match operator.as_str() {
                "+" => Operator::Add,
                "-" => Operator::Subtract,
                "*" => Operator::Multiply,
                "/" => Operator::Divide,
                "%" => Operator::Remainder,
                _ => return other(),
            };
            match (
                node.child_by_field_name("left"),
                node.child_by_field_name("right"),
            ) {
                (Some(l), Some(r)) => Expr::Binary(operator, Box::new(sub(l)), Box::new(sub(r))),
                _ => other(),
            }
        }
        "call_expression" => {
            let function = node
                .child_by_field_name("function")
                .or_else(|| named.first().copied());
            let list = node
                .child_by_field_name("arguments")
                .or_else(|| named.iter().copied().find(|c| c.kind() == "argument_list"));
            match (function, list) {
                (Some(f), Some(l)) if f.kind() == "identifier" => Expr::Call(
                    text(f, source),
                    children(l)
                        .into_iter()
                        .filter(|c| c.is_named() && c.kind() != "comment")
                        .map(sub)
                        .collect(),
                ),
                _ => other(),
            }
        }
        _ => other(),
    }
}

/// A C or Fortran integer literal (`42`, `0x10`, `010`, `7u`, `3L`, Fortran `5_8`).
fn parse_integer(literal: &str) -> Option<i64> {
    let literal = literal.trim();
    // Fortran kind suffix.
    let literal = literal.split('_').next()?;
    let digits = literal.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        return i64::from_str_radix(hex, 16).ok();
    }
    if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) {
        return i64::from_str_radix(&digits[1..], 8).ok();
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::line_of;

    fn arguments_in(name: &str, text: &str, marker: &str, callee: &str) -> Vec<Argument> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        let mut index = SourceIndex::new(Vec::new());
        index
            .call_arguments(path.to_str().unwrap(), line_of(text, marker), callee)
            .unwrap()
    }

    fn values(arguments: &[Argument]) -> Vec<Expr> {
        arguments.iter().map(|a| a.value.clone()).collect()
    }

    fn name(n: &str) -> Expr {
        Expr::Name(n.into())
    }

    #[test]
    fn a_c_receive_gives_its_peer_expression_and_communicator() {
        let c = "#include <mpi.h>\nint main(void) {\n  int x, rank;\n  \
                 MPI_Recv(&x, 1, MPI_INT, 1 - rank, 0x10, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* here */\n}\n";
        let got = values(&arguments_in("a.c", c, "here", "MPI_Recv"));
        assert_eq!(got.len(), 7, "{got:?}");
        assert_eq!(got[1], Expr::Integer(1));
        assert_eq!(
            got[3],
            Expr::Binary(
                Operator::Subtract,
                Box::new(Expr::Integer(1)),
                Box::new(name("rank"))
            )
        );
        assert_eq!(got[4], Expr::Integer(16));
        assert_eq!(got[5], name("MPI_COMM_WORLD"));
        assert!(matches!(&got[0], Expr::Other(t) if t == "&x"));
    }

    #[test]
    fn a_call_over_several_lines_is_found_from_any_of_them_and_casts_are_looked_through() {
        let c = "void f(int r, int n) {\n  PMPI_Ssend(buf, 1, MPI_INT,\n     \
                 (int)((r + 1) % n), /* dest */\n     7, comm);\n}\n";
        let got = values(&arguments_in("b.c", c, "dest", "MPI_Ssend"));
        assert_eq!(
            got[3],
            Expr::Binary(
                Operator::Remainder,
                Box::new(Expr::Binary(
                    Operator::Add,
                    Box::new(name("r")),
                    Box::new(Expr::Integer(1))
                )),
                Box::new(name("n"))
            )
        );
        assert_eq!(got[5], name("comm"));
    }

    #[test]
    fn fortran_calls_give_names_intrinsics_and_keywords() {
        let f = "program p\n  use mpi\n  integer :: r, n, ierr, buf(1), st(MPI_STATUS_SIZE)\n  \
                 call MPI_RECV(buf, 1, MPI_INTEGER, mod(r + 1, n), 0, MPI_COMM_WORLD, st, ierr) ! here\n  \
                 call mpi_send(buf, 1, MPI_INTEGER, dest=-1, tag=0, comm=MPI_COMM_WORLD) ! second\nend program p\n";
        let got = values(&arguments_in("p.f90", f, "here", "MPI_Recv"));
        assert_eq!(got.len(), 8, "{got:?}");
        assert_eq!(
            got[3],
            Expr::Call(
                "mod".into(),
                vec![
                    Expr::Binary(
                        Operator::Add,
                        Box::new(name("r")),
                        Box::new(Expr::Integer(1))
                    ),
                    name("n")
                ]
            )
        );
        assert_eq!(got[5], name("MPI_COMM_WORLD"));
        let got = arguments_in("p.f90", f, "second", "MPI_Send");
        let dest = got
            .iter()
            .find(|a| a.keyword.as_deref() == Some("dest"))
            .unwrap();
        assert_eq!(dest.value, Expr::Negate(Box::new(Expr::Integer(1))));
    }

    #[test]
    fn a_line_without_the_call_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.c");
        std::fs::write(
            &path,
            "int main(void) {\n  MPI_Barrier(MPI_COMM_WORLD);\n}\n",
        )
        .unwrap();
        let mut index = SourceIndex::new(Vec::new());
        let e = index
            .call_arguments(path.to_str().unwrap(), 2, "MPI_Recv")
            .unwrap_err();
        assert!(e.to_string().contains("no call to MPI_Recv"), "{e}");
        let got = index
            .call_arguments(path.to_str().unwrap(), 2, "MPI_Barrier")
            .unwrap();
        assert_eq!(values(&got), vec![name("MPI_COMM_WORLD")]);
    }

    #[test]
    fn literals_read_in_every_base_and_unknown_shapes_keep_their_text() {
        assert_eq!(parse_integer("010"), Some(8));
        assert_eq!(parse_integer("0x1F"), Some(31));
        assert_eq!(parse_integer("12UL"), Some(12));
        assert_eq!(parse_integer("5_8"), Some(5));
        assert_eq!(parse_integer("1.5"), None);
        let c = "void f(int *nbr) {\n  MPI_Recv(0, 1, t, nbr[2], 0, c, s); /* x */\n}\n";
        let got = values(&arguments_in("d.c", c, "x", "MPI_Recv"));
        assert_eq!(got[3], Expr::Other("nbr[2]".into()));
    }
}
