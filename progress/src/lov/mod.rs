//! Loop-order variables: the variables whose runtime value tells which iteration of a loop
//! a rank is in (Ahn et al., "Scalable Temporal Order Analysis for Large Scale Debugging",
//! SC 2009: Section 4.2, Definitions 4.1-4.3 and Figure 4).
//!
//! When two groups of ranks stop inside one loop, their program points differ only by the
//! iteration count (see [`Step::Iteration`](crate::point::Step::Iteration)). No process
//! keeps that count, but most loops have a variable that moves by a constant step once per
//! iteration: the `for` loop's `it++`, a Fortran `do` index, a `while` loop's `k = k + 1`.
//! Reading such a variable from every rank orders the ranks. This module finds those
//! variables in the source, with tree-sitter, for one loop named by its first line;
//! [`SourceIndex::loop_variables`](crate::source::SourceIndex::loop_variables) is the entry
//! point.
//!
//! # The rules (the paper's, made concrete)
//!
//! A variable `x` is a candidate when, inside the loop:
//!
//! 1. **it is assigned in every iteration**: its definition is a statement directly in the
//!    loop body (through plain `{}` blocks, `#if` blocks and Fortran `block`s), the loop's
//!    own increment (`for (...; ...; i++)`), the loop's condition (`while (--n > 0)`: it
//!    runs on every iteration) or a Fortran `do` index. A definition inside an `if`,
//!    `switch`, `?:`, the right side of `&&`/`||`, an inner loop, a `try` or `catch`, a
//!    lambda, or after a `continue` (Fortran `cycle`) that may skip it, or anywhere in a
//!    loop with a `goto` into its own body, is not;
//! 2. **it moves by a constant step**: `x++`, `++x`, `x--`, `--x`, `x += c`, `x -= c`,
//!    `x = x + c`, `x = c + x`, `x = x - c` (Fortran `x = x + c`, `x = x - c`), where `c`
//!    is a non-zero integer literal (its sign and the operator give the [`Direction`]) or an
//!    identifier assigned nowhere in the loop: a loop-invariant step whose sign is not known
//!    statically ([`Direction::Unknown`]), unless the identifier is a `const`/`constexpr`
//!    with a literal initializer, a `#define` of a literal, or a Fortran `parameter`, whose
//!    value is then used. `x *= c`, `x /= c`, `x = f(x)`, `x = y + 1` are rejected: the
//!    paper calls products non-monotonic, and a copy of another variable is the
//!    dependent-monotonic case it leaves out;
//! 3. **it is assigned once per iteration** (Definition 4.3: several definitions in the loop
//!    are ambiguous), the loop's own increment included: `for (...; i++) { i += 2; }` is
//!    rejected;
//! 4. **it is an integer scalar**: when its declaration is visible (a parameter, a local in
//!    an enclosing block, the loop's own initializer, a global or a class member in this
//!    file, a Fortran declaration of the procedure or its host), its type must be an integer
//!    type (`int`, `long`, `unsigned`, `short`, `char`, `size_t`, `intN_t`, `std::size_t`,
//!    a `typedef` of those in the file, Fortran `integer(kind=...)`). A variable whose
//!    declaration is not seen (a global of another file, a member of a class defined
//!    elsewhere, a module variable) is accepted with "declaration not seen" in
//!    [`Candidate::how`]: the daemons read its DWARF type anyway.
//!
//! Candidates are ranked: the loop's own induction variable with a known step first, then
//! the other known-step variables by line, then the loop-invariant steps
//! ([`Direction::Unknown`]), induction variable first.
//!
//! # Choices the paper leaves open
//!
//! * **A `break`, `return`, `throw`, Fortran `exit` or `stop` before the definition does
//!   not reject it**: it ends the loop, so the iteration it cuts short is the last, and a
//!   rank that took it is no longer in the loop to be ordered. The candidate's `how` says
//!   so. A `continue` or `cycle` does reject it: the loop goes on with the variable one
//!   step short.
//! * **Array elements and fields are skipped silently** (`a[i]++`, `s.n++`, `p->n++`,
//!   `this->n++`, Fortran `a(i) = a(i) + 1`): they are not variables the daemons can name,
//!   and listing every array store of a numerical loop would bury the real rejections.
//! * **Variables of inner loops are rejected, with the reason**: an inner loop's induction
//!   variable is "the induction variable of the inner for at line N", other updates inside
//!   an inner loop are "assigned only inside the inner ... at line N".
//! * **Variables declared inside the loop are rejected**: they start afresh every
//!   iteration. The element of a range-for is listed as such ("a range-for has no induction
//!   variable"), so that a range-for with no counter says why nothing was found.
//! * [`LoopVariables::rejected`] lists every variable assigned in the loop whose type is an
//!   integer or unknown, and the non-integer ones only where their update has a monotonic
//!   form (a `double t; t += dt;` counter): a `norm = get_norm(u)` is not worth a line.
//! * Two loops starting on one line: the outermost is analysed (a program point cannot tell
//!   them apart either).
//!
//! # What is weak or not seen
//!
//! * Only the syntax: writes through pointers, references and call arguments (`f(&k)`,
//!   Fortran's by-reference `call advance(k)`) are invisible, so a variable also changed
//!   that way is still proposed. Condition (3) of Definition 4.1, that every rank assigns
//!   the same sequence, is assumed, not proven: a counter that starts from a rank-dependent
//!   value still orders iterations within one rank, not across ranks.
//! * Both sides of an `#if` are seen: a counter incremented in `#if A` and in its `#else`
//!   reads as assigned twice. Macros are not expanded: an increment hidden in a macro is
//!   not seen, a `FOREACH(x) { ... }` block is treated as a possible inner loop.
//! * Types: a `typedef` from another file is assumed an integer (noted in `how`); C++
//!   `auto` is an integer only when its initializer is an integer literal; an `enum` is
//!   rejected.
//! * Fortran: a variable with no declaration takes the implicit type (i-n integer) unless
//!   `implicit none` or a `use` is in scope, when it is "declaration not seen". A `do
//!   concurrent`'s indices are rejected (its iterations have no order); a `forall` yields
//!   nothing at all (its index is in no assignment, its body stores array elements).
//!
//! # Where each part lives
//!
//! Private modules, bottom up: `candidates` (the answer: [`LoopVariables`], [`Candidate`],
//! [`Rejected`], [`Direction`]), `analysis` (what one loop's analysis knows and how it reads
//! the source text), `step` (a step as written), `definitions` (every assignment in the loop,
//! per construct, and where it runs: rule 1), `jumps` (what may cut an iteration short),
//! `declarations` with `c_declarations` and `fortran_declarations` (the type and constant
//! value of a name: rule 4), `direction` (rule 2: the step's sign), `verdict` (the rules
//! applied to one variable) and `find` (the loop at a line, the ranking, and
//! [`SourceIndex::loop_variables`](crate::source::SourceIndex::loop_variables)).

mod analysis;
mod c_declarations;
mod candidates;
mod declarations;
mod definitions;
mod direction;
mod find;
mod fortran_declarations;
mod jumps;
mod python_loops;
mod step;
mod verdict;

#[cfg(test)]
mod tests;

pub use candidates::{Candidate, Direction, LoopVariables, Rejected};
