//! From a frame's `file:line` to a [`ProgramPoint`](crate::point::ProgramPoint): the
//! paper's program point rewriting system (Section 4.1), on tree-sitter syntax trees
//! instead of ROSE.
//!
//! [`SourceIndex`] finds the source file (as named by DWARF or the Python frame, or under
//! `--source-dir` folders), parses it once with the C, C++, Fortran or Python grammar, and
//! answers points for its lines. For a line it finds the innermost function definition that spans it, then descends
//! through the loops and conditionals that contain the line, outermost first, emitting for
//! each an offset from the current base line and an iteration placeholder (loops) or an arm
//! token (conditionals); the base moves to the loop's or the arm's first line; the last step
//! is the target's offset from the last base. Everything else (`{}` blocks, `#if` blocks,
//! Fortran `block`, `associate`, `where`, declarations, expressions) is transparent: line
//! offsets already order the statements inside it.
//!
//! # Choices the paper leaves open
//!
//! * **Which arm holds a line.** By the arms' line spans. A line can belong to two parts of a
//!   conditional (`if (c) f();`, `} else {`, `if (c) {`): the part with code on that line
//!   (a token other than braces, parentheses, `;`, `else`, `then` or a comment) wins, arms
//!   before the condition. So `if (c) f();` puts the line in the then arm (the call is there)
//!   and `if (check()) {` in the condition.
//! * **Loop headers are in the loop**: the condition of `while (!converged())` and a
//!   do-while's trailing `while (...)` run on every iteration. (A `for` header's
//!   initializer runs once, before the first iteration, but shares the header's line and so
//!   its point.)
//! * **else-if chains nest as C's grammar nests them**: `else if` is arm 2 of the outer `if`,
//!   holding an inner `if` whose arms are 1 and 2. Fortran's flat `else if` clauses are given
//!   the same nesting, so a Fortran and a C chain produce the same shapes.
//! * **A C++ lambda's first line belongs to the enclosing function**: that line is where the
//!   lambda is created or passed (`for_each(b, e, [&](int x) {`), and the enclosing frame
//!   reports it; lines after it are the lambda's (function: None). A lambda written on a
//!   single line is therefore never the innermost function (its frames and its caller's
//!   report the same line, and only the caller's point can be compared with other lines).
//! * A line inside a conditional but in none of its parts (the `end if` line, a `switch`
//!   body's closing brace) ends the point there: the last offset is the line's own, so it
//!   is ordered by its line against the arms (after all of them, for those two).
//!
//! # What is weak or not seen
//!
//! * The grammar sees the unpreprocessed text: loops hidden in macros are invisible, and
//!   both sides of an `#if` are present (the binary has only one, so this is harmless).
//!   `.h` headers are parsed with the C++ grammar, in practice a superset of C's.
//! * Python: a line of a module's own code is in the function `<module>` (the whole file), as
//!   the interpreter runs it; a loop's `else` clause reads as part of the loop; a `try`'s
//!   `else` and `finally` clauses are arms of their own; comprehensions are not loops. No
//!   loop-order variables yet: tasks in one loop at different lines need the iteration.
//! * Fixed-form Fortran (`.f`, `.for`, `.ftn`, `.f77`) is parsed with the free-form grammar:
//!   simple code parses, but column-6 continuations and `C` comment lines may not.
//! * Loops built from `goto`, `setjmp`, recursion or macros are not loops here; `?:`, `&&`,
//!   `||` and Fortran `where` are not conditionals.
//! * `switch` cases are always incomparable, even where one falls through into the next; a
//!   `try` block and its `catch` clauses are arms, although a task in a handler went through
//!   part of the block.
//! * A function-like macro followed by a block inside a function (`FOR_EACH_RANK(r) {`)
//!   reads as a plain block of the enclosing function, whether the macro loops or not.
//! * Two constructs starting on one line (`if (a) f(); while (b) g();`) get equal offsets and
//!   different tokens: [`compare`](super::point::compare) calls them unrelated.
//!
//! [`SourceIndex::call_arguments`] reads the argument expressions of a call on a line (the
//! peers and communicators of MPI calls, for the verdict).
//!
//! The layers, bottom up (private modules): `language` (which grammar a file takes),
//! `files` (the one lookup and parse cache of source files, shared with [`crate::lov`]),
//! `syntax` (lines and children of syntax nodes), `constructs` (what a node is: a loop, a
//! conditional, a nested function), `functions` (the function that holds a line, and its
//! name), `conditionals` (the parts of a conditional and which one holds a line), and
//! `points` (the descent that builds the point).

pub(crate) mod calls;
pub(crate) mod conditionals;
pub(crate) mod constructs;
pub(crate) mod files;
pub(crate) mod functions;
pub(crate) mod language;
pub(crate) mod points;
pub(crate) mod syntax;

#[cfg(test)]
mod tests;

pub use calls::{Argument, CallError, Expr, Operator};
pub use files::{SourceError, SourceIndex};
pub use language::Language;
