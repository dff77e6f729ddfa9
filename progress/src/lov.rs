//! Loop-order variables: the variables whose runtime value tells which iteration of a loop
//! a rank is in (Ahn et al., SC'09, Section 4.2, Definitions 4.1-4.3 and Figure 4).
//!
//! When two groups of ranks stop inside one loop, their program points differ only by the
//! iteration count (see [`Step::Iteration`](super::point::Step::Iteration)). No process
//! keeps that count, but most loops have a variable that moves by a constant step once per
//! iteration: the `for` loop's `it++`, a Fortran `do` index, a `while` loop's `k = k + 1`.
//! Reading such a variable from every rank orders the ranks. This module finds those
//! variables in the source, with tree-sitter, for one loop named by its first line;
//! [`SourceIndex::loop_variables`](super::source::SourceIndex::loop_variables) is the entry
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

use super::source::constructs::{is_macro_block, loop_kind};
use super::source::files::{SourceError, SourceIndex};
use super::source::language::Language;
use super::source::syntax::{children, children_spanning, first_line};
use serde::Serialize;
use std::cell::OnceCell;
use std::collections::HashMap;
use tree_sitter::{Node, Tree};

/// Which way a candidate moves from one iteration to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Direction {
    Increasing,
    Decreasing,
    /// The step's sign is not known statically (a loop-invariant variable step).
    Unknown,
}

/// A loop-order variable: assigned once in every iteration, by a constant step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// As written (C and C++ identifiers keep their case; Fortran names are lower-cased).
    pub variable: String,
    pub direction: Direction,
    /// How it moves, as written: "for-loop induction (it++)", "do-loop index (step -1)",
    /// "n += 2", "k = k - 1", "--n in the loop condition", with notes in parentheses
    /// ("declaration not seen", the value of a named constant step, a `break` before it).
    pub how: String,
    /// The defining statement's line, or the loop's first line for its induction variable.
    /// A rank stopped after this line (in the same iteration) reads the variable one step
    /// further than a rank stopped before it.
    pub line: u32,
    /// The signed step when it is an integer literal (`it++`: 1, `k -= 2`: -2): what a rank
    /// past `line` has added in its current iteration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<i64>,
}

/// A variable assigned in the loop that is not a loop-order variable, and why (one line).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Rejected {
    pub variable: String,
    /// The definition (or declaration) the reason is about.
    pub line: u32,
    pub why: String,
}

/// The loop-order variables of one loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoopVariables {
    /// The file as asked (the DWARF name), as [`ProgramPoint::file`](super::point::ProgramPoint).
    pub file: String,
    pub loop_line: u32,
    /// The loop's kind, as in [`Step::Iteration`](super::point::Step::Iteration).
    pub kind: &'static str,
    /// Best first (see the module docs for the ranking).
    pub candidates: Vec<Candidate>,
    /// Every integer-ish variable assigned in the loop that is not a candidate, by line.
    pub rejected: Vec<Rejected>,
}

impl LoopVariables {
    /// The variable to read first, if any qualifies.
    pub fn best(&self) -> Option<&Candidate> {
        self.candidates.first()
    }
}

impl SourceIndex {
    /// The loop-order variables of the loop whose first line is `loop_line` in `file` (an
    /// [`Step::Iteration`](super::point::Step::Iteration) step's line): see the module
    /// docs. Errors as [`SourceIndex::point`], and [`SourceError::NoLoopAt`] when no loop
    /// starts on that line.
    pub fn loop_variables(
        &mut self,
        file: &str,
        loop_line: u32,
    ) -> Result<LoopVariables, SourceError> {
        let parsed = self.parsed(file, loop_line)?;
        loop_variables_in_tree(parsed.tree, parsed.text, parsed.language, file, loop_line).ok_or(
            SourceError::NoLoopAt {
                path: parsed.shown,
                line: loop_line,
            },
        )
    }
}

/// The loop-order variables of the loop starting at `loop_line` in a parsed file, or None
/// when no loop starts there.
pub(super) fn loop_variables_in_tree(
    tree: &Tree,
    text: &str,
    language: Language,
    file: &str,
    loop_line: u32,
) -> Option<LoopVariables> {
    let root = tree.root_node();
    let (the_loop, kind) = find_loop(root, loop_line, language)?;
    let analysis = Analysis {
        language,
        source: text.as_bytes(),
        root,
        the_loop,
        loop_line,
        facts: OnceCell::new(),
    };
    let (candidates, rejected) = analysis.run();
    Some(LoopVariables {
        file: file.to_owned(),
        loop_line,
        kind,
        candidates,
        rejected,
    })
}

/// The outermost loop whose first line is `line`: the walk goes down the nodes that span the
/// line, parents before children, so an enclosing loop is met before a loop inside it.
fn find_loop(root: Node, line: u32, language: Language) -> Option<(Node, &'static str)> {
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if let Some(kind) = loop_kind(node, language)
            && first_line(node) == line
        {
            return Some((node, kind));
        }
        // Reversed, so that the leftmost child is searched first.
        pending.extend(children_spanning(node, line).into_iter().rev());
    }
    None
}

// ---------------------------------------------------------------------------------------
// What the analysis collects.

/// Where in the loop a definition sits, as far as "once per iteration" is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The loop's own increment (`for (...; ...; i++)`) or a Fortran `do` index.
    Induction,
    /// The loop's condition, evaluated once per iteration (`while (--n > 0)`).
    Condition,
    Body,
    /// A declaration with an initializer inside the loop: a new variable every iteration.
    Declaration,
    /// The element of the loop's own range-for.
    RangeElement,
}

/// The step of a monotonic definition, before the loop-wide facts resolve it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum StepExpression {
    /// An integer literal, sign included.
    Literal(i128),
    /// A variable (or named constant); `negated` for `-c`.
    Name { name: String, negated: bool },
    /// A literal that is not an integer (`0.5`, `1.0d0`).
    NotInteger(String),
    /// Anything else (`2*k`, `f()`).
    Other(String),
}

/// What a definition does to its variable.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Form {
    /// `x = x + sign * step`. `evaluated_once`: the step is computed once before the loop
    /// (a Fortran `do` step), so it need not be loop-invariant.
    Step {
        step: StepExpression,
        sign: i8,
        evaluated_once: bool,
    },
    /// Not a constant-step update; says why.
    NotMonotonic(String),
    /// A declaration's initializer or a range-for element: a fresh variable.
    Fresh,
}

/// Why a definition does not run exactly once in every iteration.
#[derive(Clone, Debug, PartialEq, Eq)]
enum NotEveryIteration {
    /// It is the induction variable of an inner loop (the clearest thing to say).
    InnerInduction(String),
    Other(String),
}

impl NotEveryIteration {
    fn why(&self) -> &str {
        match self {
            NotEveryIteration::InnerInduction(why) | NotEveryIteration::Other(why) => why,
        }
    }
}

/// One assignment to a plain variable inside the loop.
#[derive(Debug)]
struct Definition<'tree> {
    variable: String,
    node: Node<'tree>,
    line: u32,
    /// The defining expression as written, on one line, shortened.
    text: String,
    place: Place,
    form: Form,
    context: Option<NotEveryIteration>,
}

/// What a jump statement does to the rest of the current iteration of the analysed loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JumpEffect {
    /// Goes on with the next iteration (`continue`, `cycle`): what follows it is skipped.
    Skips,
    /// Leaves the loop (`break`, `return`, `exit`, `goto` out of the loop).
    Leaves,
    /// A `goto` to a label inside the loop: it may skip or repeat anything.
    Tangles,
}

#[derive(Debug)]
struct Jump {
    word: String,
    line: u32,
    start_byte: usize,
    effect: JumpEffect,
}

/// What a variable's type is, as far as its declaration tells.
#[derive(Clone, Debug, PartialEq, Eq)]
enum TypeClass {
    Integer,
    /// Probably an integer but not checked; the note goes into `how`.
    Assumed(String),
    /// Not an integer scalar; the reason, ready for [`Rejected::why`].
    Not(String),
}

/// A declaration found for a name.
#[derive(Clone, Debug)]
struct Declared {
    line: u32,
    class: TypeClass,
    /// The value of a constant with a literal initializer (`const int s = 2`, a Fortran
    /// `parameter`).
    constant: Option<i128>,
    /// Declared inside the analysed loop (not its own header): fresh every iteration.
    in_loop: bool,
}

/// Facts about the whole file, gathered once on first need: typedefs, `#define`s of
/// literals and class bodies (for members used in out-of-line methods).
#[derive(Default)]
struct FileFacts<'tree> {
    /// `typedef T name;` and `using name = T;`: the node to classify.
    typedefs: HashMap<String, Node<'tree>>,
    defines: HashMap<String, i128>,
    /// Class or struct name to its member list.
    classes: HashMap<String, Node<'tree>>,
}

struct Analysis<'a, 'tree> {
    language: Language,
    source: &'a [u8],
    root: Node<'tree>,
    the_loop: Node<'tree>,
    loop_line: u32,
    facts: OnceCell<FileFacts<'tree>>,
}

/// The most characters of source shown in one reason or `how`.
const SHOWN_CHARS: usize = 60;

/// How deep typedef chains are followed (`typedef a b; typedef b c;`): a guard against a
/// cycle in broken code, far above what real code has.
const TYPEDEF_DEPTH: usize = 8;

impl<'tree> Analysis<'_, 'tree> {
    fn is_fortran(&self) -> bool {
        self.language == Language::Fortran
    }

    fn text(&self, node: Node) -> &str {
        node.utf8_text(self.source).unwrap_or("")
    }

    /// Source text on one line, shortened for a message.
    fn written(&self, node: Node) -> String {
        let words: Vec<&str> = self.text(node).split_whitespace().collect();
        let joined = words.join(" ");
        if joined.chars().count() <= SHOWN_CHARS {
            joined
        } else {
            let mut short: String = joined.chars().take(SHOWN_CHARS - 3).collect();
            short.push_str("...");
            short
        }
    }

    /// A variable's name as compared: Fortran is case-insensitive.
    fn normalize(&self, name: &str) -> String {
        if self.is_fortran() {
            name.to_lowercase()
        } else {
            name.to_owned()
        }
    }

    /// The name of a plain variable reference, or None for anything else (an element, a
    /// field, a dereference).
    fn plain_name(&self, node: Node) -> Option<String> {
        let node = self.unparenthesize(node);
        (node.kind() == "identifier").then(|| self.normalize(self.text(node)))
    }

    fn unparenthesize<'n>(&self, mut node: Node<'n>) -> Node<'n> {
        // Parentheses nest a handful deep; the bound guards against a malformed tree.
        for _ in 0..64 {
            if node.kind() != "parenthesized_expression" || node.named_child_count() != 1 {
                break;
            }
            match node.named_child(0) {
                Some(inner) => node = inner,
                None => break,
            }
        }
        node
    }

    fn is_the_loop(&self, node: Node) -> bool {
        node == self.the_loop
    }

    /// Whether `node` is inside the analysed loop (the loop itself excluded).
    fn inside_loop(&self, node: Node) -> bool {
        let mut current = node.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return true;
            }
            current = ancestor.parent();
        }
        false
    }

    // ---- The analysis --------------------------------------------------------------

    fn run(&self) -> (Vec<Candidate>, Vec<Rejected>) {
        let (definitions, mut rejected) = self.definitions();
        let jumps = self.jumps();
        let assigned: std::collections::HashSet<&str> = definitions
            .iter()
            .map(|definition| definition.variable.as_str())
            .collect();

        // Group by variable, in order of first definition.
        let mut order: Vec<&str> = Vec::new();
        let mut groups: HashMap<&str, Vec<&Definition>> = HashMap::new();
        for definition in &definitions {
            let group = groups.entry(&definition.variable).or_default();
            if group.is_empty() {
                order.push(&definition.variable);
            }
            group.push(definition);
        }

        let mut candidates = Vec::new();
        for variable in order {
            let Some(group) = groups.get(variable) else {
                continue;
            };
            match self.verdict(group, &jumps, &assigned) {
                Verdict::Candidate(candidate, rank) => candidates.push((rank, candidate)),
                Verdict::Rejected(reason) => rejected.push(reason),
                Verdict::Omitted => {}
            }
        }
        candidates.sort_by(|(a, x), (b, y)| a.cmp(b).then(x.variable.cmp(&y.variable)));
        rejected.sort_by(|a, b| a.line.cmp(&b.line).then(a.variable.cmp(&b.variable)));
        let parse_note = self.the_loop.has_error();
        let candidates = candidates
            .into_iter()
            .map(|(_, mut candidate)| {
                if parse_note {
                    candidate
                        .how
                        .push_str(" (the parser could not read all of the loop)");
                }
                candidate
            })
            .collect();
        (candidates, rejected)
    }

    /// Every definition of a plain variable in the loop (not its own initializer, which
    /// runs once before it), and the rejections that need no grouping (do concurrent
    /// indices).
    fn definitions(&self) -> (Vec<Definition<'tree>>, Vec<Rejected>) {
        let mut definitions = Vec::new();
        let mut rejected = Vec::new();
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            if self.is_the_loop(node) {
                self.own_header(node, &mut definitions, &mut rejected);
                for child in children(node) {
                    if !self.is_evaluated_once(child) {
                        pending.push(child);
                    }
                }
                continue;
            }
            self.definitions_at(node, &mut definitions);
            pending.extend(children(node));
        }
        definitions.sort_by_key(|definition| definition.node.start_byte());
        (definitions, rejected)
    }

    /// Parts of the analysed loop's header that run once, before the first iteration: a
    /// `for` initializer, a range-for's range, a Fortran `do` header (handled by
    /// [`Analysis::own_header`]).
    fn is_evaluated_once(&self, child: Node) -> bool {
        let field = |name| self.the_loop.child_by_field_name(name) == Some(child);
        match self.language {
            Language::C | Language::Cpp => {
                field("initializer")
                    || (self.the_loop.kind() == "for_range_loop"
                        && (field("right") || field("declarator") || field("type")))
            }
            Language::Fortran => child.kind() == "do_statement",
        }
    }

    /// The definitions the loop's own header makes: a range-for's element, a Fortran `do`
    /// index (its step is evaluated once, when the loop starts), a `do concurrent`'s
    /// indices (rejected: no order).
    fn own_header(
        &self,
        the_loop: Node<'tree>,
        definitions: &mut Vec<Definition<'tree>>,
        rejected: &mut Vec<Rejected>,
    ) {
        match self.language {
            Language::C | Language::Cpp => {
                if the_loop.kind() != "for_range_loop" {
                    return;
                }
                let declarator = the_loop.child_by_field_name("declarator");
                if let Some((name, _)) = declarator.and_then(|d| self.declarator_name(d)) {
                    definitions.push(Definition {
                        variable: name,
                        node: the_loop,
                        line: self.loop_line,
                        text: self.written(declarator.unwrap_or(the_loop)),
                        place: Place::RangeElement,
                        form: Form::Fresh,
                        context: None,
                    });
                }
            }
            Language::Fortran => {
                let Some(header) = children(the_loop)
                    .into_iter()
                    .find(|child| child.kind() == "do_statement")
                else {
                    return;
                };
                for part in children(header) {
                    match part.kind() {
                        "loop_control_expression" => {
                            if let Some(definition) = self.do_index(part, Place::Induction, None) {
                                definitions.push(definition);
                            }
                        }
                        "concurrent_statement" => {
                            let mut pending = vec![part];
                            while let Some(node) = pending.pop() {
                                if node.kind() == "concurrent_control" {
                                    if let Some(index) =
                                        node.named_child(0).and_then(|index| self.plain_name(index))
                                    {
                                        rejected.push(Rejected {
                                            variable: index,
                                            line: self.loop_line,
                                            why: "the index of a do concurrent, whose \
                                                  iterations run in no fixed order"
                                                .to_owned(),
                                        });
                                    }
                                } else {
                                    pending.extend(children(node));
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// A Fortran `do i = a, b[, s]` header as a definition of `i` by step `s` (1 if absent).
    fn do_index(
        &self,
        control: Node<'tree>,
        place: Place,
        context: Option<NotEveryIteration>,
    ) -> Option<Definition<'tree>> {
        let parts: Vec<Node> = {
            let mut cursor = control.walk();
            control.named_children(&mut cursor).collect()
        };
        let variable = self.plain_name(*parts.first()?)?;
        let step = match parts.get(3) {
            Some(step) => self.step_expression(*step),
            None => StepExpression::Literal(1),
        };
        Some(Definition {
            variable,
            node: control,
            line: first_line(control),
            text: self.written(control),
            place,
            form: Form::Step {
                step,
                sign: 1,
                evaluated_once: true,
            },
            context,
        })
    }

    /// The definitions `node` itself makes (its children are visited by the caller).
    fn definitions_at(&self, node: Node<'tree>, definitions: &mut Vec<Definition<'tree>>) {
        let mut define = |variable: String, form: Form, place: Option<Place>| {
            let (found_place, context) = self.context(node);
            definitions.push(Definition {
                variable,
                node,
                line: first_line(node),
                text: self.written(node),
                place: place.unwrap_or(found_place),
                form,
                context,
            });
        };
        match (self.language, node.kind()) {
            (Language::C | Language::Cpp, "update_expression") => {
                let Some(variable) = node
                    .child_by_field_name("argument")
                    .and_then(|argument| self.plain_name(argument))
                else {
                    return;
                };
                let operator = node
                    .child_by_field_name("operator")
                    .map_or("", |operator| operator.kind());
                let step = if operator == "--" { -1 } else { 1 };
                define(
                    variable,
                    Form::Step {
                        step: StepExpression::Literal(step),
                        sign: 1,
                        evaluated_once: false,
                    },
                    None,
                );
            }
            (Language::C | Language::Cpp, "assignment_expression") => {
                let (Some(left), Some(right), Some(operator)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                    node.child_by_field_name("operator"),
                ) else {
                    return;
                };
                let Some(variable) = self.plain_name(left) else {
                    return;
                };
                let form = match operator.kind() {
                    "+=" => self.step_form(right, 1),
                    "-=" => self.step_form(right, -1),
                    "=" => self.assignment_form(&variable, node, right),
                    _ => Form::NotMonotonic(format!(
                        "{} is not monotonic by a constant step",
                        self.written(node)
                    )),
                };
                define(variable, form, None);
            }
            // A declaration with an initializer inside the loop (the loop's own
            // initializer is never visited), or a C++ condition declaration.
            (Language::C | Language::Cpp, "init_declarator") => {
                if let Some((variable, _)) = self.declarator_name(node) {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::C | Language::Cpp, "declaration")
                if node.child_by_field_name("value").is_some() =>
            {
                if let Some((variable, _)) = node
                    .child_by_field_name("declarator")
                    .and_then(|declarator| self.declarator_name(declarator))
                {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::C | Language::Cpp, "for_range_loop") => {
                if let Some((variable, _)) = node
                    .child_by_field_name("declarator")
                    .and_then(|declarator| self.declarator_name(declarator))
                {
                    define(variable, Form::Fresh, Some(Place::Declaration));
                }
            }
            (Language::Fortran, "assignment_statement") => {
                let (Some(left), Some(right)) = (
                    node.child_by_field_name("left"),
                    node.child_by_field_name("right"),
                ) else {
                    return;
                };
                let Some(variable) = self.plain_name(left) else {
                    return;
                };
                let form = self.assignment_form(&variable, node, right);
                define(variable, form, None);
            }
            (Language::Fortran, "loop_control_expression") => {
                // An inner do's index: `context` names the inner loop.
                let (place, context) = self.context(node);
                if let Some(definition) = self.do_index(node, place, context) {
                    definitions.push(definition);
                }
            }
            _ => {}
        }
    }

    /// `x += c` (sign 1) or `x -= c` (sign -1).
    fn step_form(&self, step: Node, sign: i8) -> Form {
        Form::Step {
            step: self.step_expression(step),
            sign,
            evaluated_once: false,
        }
    }

    /// `x = x + c`, `x = c + x`, `x = x - c`, or why not.
    fn assignment_form(&self, variable: &str, statement: Node, right: Node) -> Form {
        let right = self.unparenthesize(right);
        if matches!(right.kind(), "binary_expression" | "math_expression") {
            let operator = right
                .child_by_field_name("operator")
                .map_or("", |operator| operator.kind());
            let (left_operand, right_operand) = (
                right.child_by_field_name("left"),
                right.child_by_field_name("right"),
            );
            if let (Some(a), Some(b)) = (left_operand, right_operand) {
                let is_variable = |node: Node| self.plain_name(node).as_deref() == Some(variable);
                match operator {
                    "+" if is_variable(a) => return self.step_form(b, 1),
                    "+" if is_variable(b) => return self.step_form(a, 1),
                    "-" if is_variable(a) => return self.step_form(b, -1),
                    _ => {}
                }
            }
        }
        if self.mentions(right, variable) {
            Form::NotMonotonic(format!(
                "{} is not monotonic by a constant step",
                self.written(statement)
            ))
        } else {
            Form::NotMonotonic(format!(
                "{} sets it from other values, not by a step from its own",
                self.written(statement)
            ))
        }
    }

    /// Whether the expression reads `variable` anywhere.
    fn mentions(&self, expression: Node, variable: &str) -> bool {
        let mut pending = vec![expression];
        while let Some(node) = pending.pop() {
            if node.kind() == "identifier" && self.normalize(self.text(node)) == variable {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    fn step_expression(&self, node: Node) -> StepExpression {
        let node = self.unparenthesize(node);
        match node.kind() {
            "number_literal" => self.literal(node),
            "identifier" => StepExpression::Name {
                name: self.normalize(self.text(node)),
                negated: false,
            },
            "unary_expression" => {
                let operator = node
                    .child_by_field_name("operator")
                    .map_or("", |operator| operator.kind());
                let Some(argument) = node.child_by_field_name("argument") else {
                    return StepExpression::Other(self.written(node));
                };
                let negate = match operator {
                    "-" => true,
                    "+" => false,
                    _ => return StepExpression::Other(self.written(node)),
                };
                match self.step_expression(argument) {
                    StepExpression::Literal(value) if negate => {
                        StepExpression::Literal(value.saturating_neg())
                    }
                    StepExpression::Name { name, negated } if negate => StepExpression::Name {
                        name,
                        negated: !negated,
                    },
                    StepExpression::NotInteger(_) => StepExpression::NotInteger(self.written(node)),
                    StepExpression::Other(_) => StepExpression::Other(self.written(node)),
                    unchanged => unchanged,
                }
            }
            _ => StepExpression::Other(self.written(node)),
        }
    }

    fn literal(&self, node: Node) -> StepExpression {
        let text = self.text(node);
        let parsed = if self.is_fortran() {
            fortran_integer(text)
        } else {
            c_integer(text)
        };
        match parsed {
            Some(value) => StepExpression::Literal(value),
            None => StepExpression::NotInteger(self.written(node)),
        }
    }

    // ---- Where a definition runs -----------------------------------------------------

    /// Where `node` (inside the loop) sits, and why it may not run exactly once per
    /// iteration: the outermost construct between it and the loop that is not straight-line
    /// code decides (an `if` around an inner loop is "in a branch").
    fn context(&self, node: Node<'tree>) -> (Place, Option<NotEveryIteration>) {
        let mut reason = None;
        let mut child = node;
        let mut current = node.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return (self.place_in_loop(child), reason);
            }
            if let Some(found) = self.construct_reason(ancestor, child) {
                reason = Some(found);
            }
            child = ancestor;
            current = ancestor.parent();
        }
        // Not inside the loop: cannot happen for nodes found under it.
        (Place::Body, reason)
    }

    /// Which part of the analysed loop `child` (one of its children) is.
    fn place_in_loop(&self, child: Node) -> Place {
        let is_field = |name| self.the_loop.child_by_field_name(name) == Some(child);
        match self.language {
            Language::C | Language::Cpp => {
                if is_field("update") {
                    Place::Induction
                } else if is_field("condition") {
                    Place::Condition
                } else {
                    Place::Body
                }
            }
            Language::Fortran => Place::Body,
        }
    }

    /// Why a definition reached through `child` of `ancestor` may not run once per iteration,
    /// or None when `ancestor` is straight-line code for it.
    fn construct_reason(&self, ancestor: Node, child: Node) -> Option<NotEveryIteration> {
        let line = first_line(ancestor);
        let is_field = |name| ancestor.child_by_field_name(name) == Some(child);
        let other = |why: String| Some(NotEveryIteration::Other(why));
        if let Some(kind) = loop_kind(ancestor, self.language) {
            return match self.language {
                Language::C | Language::Cpp => {
                    if is_field("initializer") || (kind == "range-for" && is_field("right")) {
                        // Runs once each time the inner loop starts: once per iteration.
                        None
                    } else if is_field("update") {
                        Some(NotEveryIteration::InnerInduction(format!(
                            "the induction variable of the inner {kind} at line {line}"
                        )))
                    } else {
                        other(format!(
                            "assigned only inside the inner {kind} at line {line}, which may \
                             run any number of times per iteration"
                        ))
                    }
                }
                Language::Fortran => {
                    if child.kind() == "do_statement" {
                        Some(NotEveryIteration::InnerInduction(format!(
                            "the induction variable of the inner {kind} at line {line}"
                        )))
                    } else {
                        other(format!(
                            "assigned only inside the inner {kind} at line {line}, which may \
                             run any number of times per iteration"
                        ))
                    }
                }
            };
        }
        let branch =
            |what: &str| other(format!("assigned only in a branch ({what} at line {line})"));
        match (self.language, ancestor.kind()) {
            (Language::C | Language::Cpp, "if_statement") if !is_field("condition") => branch("if"),
            (Language::C | Language::Cpp, "switch_statement") if !is_field("condition") => {
                branch("switch")
            }
            (Language::C | Language::Cpp, "conditional_expression") if !is_field("condition") => {
                branch("?:")
            }
            (Language::C | Language::Cpp, "binary_expression") if is_field("right") => {
                match ancestor.child_by_field_name("operator").map(|o| o.kind()) {
                    Some(operator @ ("&&" | "||")) => branch(operator),
                    _ => None,
                }
            }
            (Language::Cpp, "try_statement") if is_field("body") => other(format!(
                "assigned only in a try block (line {line}): an exception may skip it"
            )),
            (Language::Cpp, "catch_clause") => branch("catch"),
            (Language::Cpp, "lambda_expression") => other(format!(
                "assigned inside a lambda (line {line}), which the loop may call any number \
                 of times"
            )),
            (Language::C | Language::Cpp, "function_definition") if is_macro_block(ancestor) => {
                other(format!(
                    "assigned inside the block after a macro at line {line}, which may loop or \
                     not run"
                ))
            }
            (
                Language::C | Language::Cpp,
                "sizeof_expression" | "alignof_expression" | "decltype",
            ) => other(format!(
                "inside {} at line {line}, never evaluated",
                ancestor.kind().trim_end_matches("_expression")
            )),
            (Language::Fortran, "if_statement") if child.kind() != "parenthesized_expression" => {
                branch("if")
            }
            (Language::Fortran, "elseif_clause" | "else_clause") => None,
            (
                Language::Fortran,
                "select_case_statement" | "select_type_statement" | "select_rank_statement",
            ) if child.kind() != "selector" => branch("select"),
            (Language::Fortran, "where_statement") => branch("where"),
            _ => None,
        }
    }

    // ---- Jumps -------------------------------------------------------------------------

    /// Every jump in the loop that can cut an iteration of the analysed loop short.
    fn jumps(&self) -> Vec<Jump> {
        let mut jumps = Vec::new();
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            // Jumps in a lambda or a nested function leave that, not the loop.
            if !self.is_the_loop(node)
                && matches!(node.kind(), "lambda_expression" | "function_definition")
                && !is_macro_block(node)
            {
                continue;
            }
            if let Some(jump) = self.jump_at(node) {
                jumps.push(jump);
            }
            pending.extend(children(node));
        }
        jumps
    }

    fn jump_at(&self, node: Node) -> Option<Jump> {
        let jump = |word: &str, effect| Jump {
            word: word.to_owned(),
            line: first_line(node),
            start_byte: node.start_byte(),
            effect,
        };
        match self.language {
            Language::C | Language::Cpp => match node.kind() {
                "continue_statement" => {
                    (!self.inner_target(node, false)).then(|| jump("continue", JumpEffect::Skips))
                }
                "break_statement" => {
                    (!self.inner_target(node, true)).then(|| jump("break", JumpEffect::Leaves))
                }
                "return_statement" | "co_return_statement" => {
                    Some(jump("return", JumpEffect::Leaves))
                }
                "throw_statement" => Some(jump("throw", JumpEffect::Leaves)),
                "goto_statement" => {
                    let label = node
                        .child_by_field_name("label")
                        .map(|label| self.text(label).to_owned())
                        .unwrap_or_default();
                    let effect = if self.c_label_in_loop(&label) {
                        JumpEffect::Tangles
                    } else {
                        JumpEffect::Leaves
                    };
                    Some(jump("goto", effect))
                }
                _ => None,
            },
            Language::Fortran => match node.kind() {
                "keyword_statement" => {
                    let word = node.child(0)?.kind().to_lowercase();
                    match word.as_str() {
                        "cycle" | "exit" => match (word.as_str(), self.fortran_target(node)) {
                            (_, FortranTarget::Inner) => None,
                            ("cycle", FortranTarget::This) => {
                                Some(jump("cycle", JumpEffect::Skips))
                            }
                            _ => Some(jump(&word, JumpEffect::Leaves)),
                        },
                        "return" => Some(jump("return", JumpEffect::Leaves)),
                        "go" | "goto" => {
                            let label = children(node)
                                .into_iter()
                                .find(|child| child.kind() == "statement_label_reference")
                                .map(|label| self.text(label).trim().to_owned())
                                .unwrap_or_default();
                            let effect = if self.fortran_label_in_loop(&label) {
                                JumpEffect::Tangles
                            } else {
                                JumpEffect::Leaves
                            };
                            Some(jump("go to", effect))
                        }
                        _ => None,
                    }
                }
                "stop_statement" | "error_stop_statement" => Some(jump("stop", JumpEffect::Leaves)),
                _ => None,
            },
        }
    }

    /// Whether a C `continue` (or `break`, with `switch_too`) belongs to a construct inside
    /// the analysed loop rather than to the loop itself.
    fn inner_target(&self, jump: Node, switch_too: bool) -> bool {
        let mut current = jump.parent();
        while let Some(ancestor) = current {
            if self.is_the_loop(ancestor) {
                return false;
            }
            if loop_kind(ancestor, self.language).is_some()
                || (switch_too && ancestor.kind() == "switch_statement")
            {
                return true;
            }
            current = ancestor.parent();
        }
        false
    }

    fn c_label_in_loop(&self, label: &str) -> bool {
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            if node.kind() == "labeled_statement"
                && node
                    .child_by_field_name("label")
                    .is_some_and(|found| self.text(found) == label)
            {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    fn fortran_label_in_loop(&self, label: &str) -> bool {
        let mut pending = vec![self.the_loop];
        while let Some(node) = pending.pop() {
            // A reference (`go to 10`) holds an unnamed token of the same kind.
            if node.kind() == "statement_label"
                && node.is_named()
                && self.text(node).trim() == label
            {
                return true;
            }
            pending.extend(children(node));
        }
        false
    }

    /// The loop a Fortran `cycle`/`exit` acts on: the innermost enclosing `do`, or the one
    /// with its label.
    fn fortran_target(&self, jump: Node) -> FortranTarget {
        let label = children(jump)
            .into_iter()
            .find(|child| child.kind() == "identifier")
            .map(|name| self.text(name).to_lowercase());
        let mut current = jump.parent();
        while let Some(ancestor) = current {
            if ancestor.kind() == "do_loop" {
                let matches = match &label {
                    None => true,
                    Some(label) => self.fortran_loop_label(ancestor).as_ref() == Some(label),
                };
                if matches {
                    return if self.is_the_loop(ancestor) {
                        FortranTarget::This
                    } else if self.inside_loop(ancestor) {
                        FortranTarget::Inner
                    } else {
                        FortranTarget::Outer
                    };
                }
            }
            current = ancestor.parent();
        }
        // A label naming no enclosing loop (a named block): it leaves the loop.
        FortranTarget::Outer
    }

    fn fortran_loop_label(&self, do_loop: Node) -> Option<String> {
        children(do_loop)
            .into_iter()
            .find(|child| child.kind() == "block_label_start_expression")
            .map(|label| {
                self.text(label)
                    .trim()
                    .trim_end_matches(':')
                    .trim()
                    .to_lowercase()
            })
    }

    // ---- The verdict on one variable -----------------------------------------------------

    fn verdict(
        &self,
        group: &[&Definition<'tree>],
        jumps: &[Jump],
        assigned: &std::collections::HashSet<&str>,
    ) -> Verdict {
        let Some(first) = group.first() else {
            return Verdict::Omitted;
        };
        let variable = first.variable.clone();
        let reject = |line: u32, why: String| {
            Verdict::Rejected(Rejected {
                variable: variable.clone(),
                line,
                why,
            })
        };
        let monotonic_shape = group
            .iter()
            .any(|definition| matches!(definition.form, Form::Step { .. }));

        if group
            .iter()
            .any(|definition| definition.place == Place::RangeElement)
        {
            return reject(
                self.loop_line,
                "the range-for's element: a range-for has no induction variable".to_owned(),
            );
        }
        if let Some((definition, why)) =
            group
                .iter()
                .find_map(|definition| match &definition.context {
                    Some(NotEveryIteration::InnerInduction(why)) => Some((definition, why)),
                    _ => None,
                })
        {
            return reject(definition.line, why.clone());
        }

        let declared = self.declaration(&variable, first.node);
        if let Some(declared) = &declared {
            if declared.in_loop {
                return match &declared.class {
                    TypeClass::Not(_) if !monotonic_shape => Verdict::Omitted,
                    _ => reject(
                        declared.line,
                        format!(
                            "declared inside the loop (line {}): a new variable every iteration",
                            declared.line
                        ),
                    ),
                };
            }
            if let TypeClass::Not(why) = &declared.class {
                return if monotonic_shape {
                    reject(first.line, why.clone())
                } else {
                    Verdict::Omitted
                };
            }
        }

        // The shape of every definition, the step resolved.
        let mut direction = Direction::Unknown;
        let mut notes: Vec<String> = Vec::new();
        for definition in group {
            match self.resolve_step(definition, assigned) {
                Ok((found, note)) => {
                    direction = found;
                    notes.extend(note);
                }
                Err(why) => return reject(definition.line, why),
            }
        }

        // Once in every iteration.
        let reasons: Vec<Option<String>> = group
            .iter()
            .map(|definition| self.not_every_iteration(definition, jumps))
            .collect();
        if let [definition] = group {
            if let Some(Some(why)) = reasons.first() {
                return reject(definition.line, why.clone());
            }
        } else {
            let lines: Vec<u32> = group.iter().map(|definition| definition.line).collect();
            let listed = list_lines(&lines);
            let why = match group.iter().zip(&reasons).find_map(|(definition, reason)| {
                reason.as_ref().map(|reason| (definition.line, reason))
            }) {
                Some((line, reason)) => {
                    format!("assigned at lines {listed}; at line {line}: {reason}")
                }
                None => format!(
                    "assigned {} per iteration (lines {listed})",
                    times(group.len())
                ),
            };
            return reject(first.line, why);
        }

        // A candidate: one definition, every iteration, a constant step.
        match declared.as_ref().map(|declared| &declared.class) {
            Some(TypeClass::Assumed(note)) => notes.push(note.clone()),
            None => notes.push("declaration not seen".to_owned()),
            Some(_) => {}
        }
        if first.place == Place::Body
            && let Some(jump) = jumps.iter().find(|jump| {
                jump.effect == JumpEffect::Leaves && jump.start_byte < first.node.start_byte()
            })
        {
            notes.push(format!(
                "a {} at line {} may end the last iteration before it",
                jump.word, jump.line
            ));
        }
        let how = self.how(first);
        let how = if notes.is_empty() {
            how
        } else {
            format!("{how} ({})", notes.join("; "))
        };
        let line = if first.place == Place::Induction {
            self.loop_line
        } else {
            first.line
        };
        let tier = match (first.place, direction) {
            (_, Direction::Unknown) => 2,
            (Place::Induction, _) => 0,
            _ => 1,
        };
        let rank = (tier, u8::from(first.place != Place::Induction), line);
        let step = match &first.form {
            Form::Step {
                step: StepExpression::Literal(v),
                sign,
                ..
            } => i64::try_from(v.saturating_mul(i128::from(*sign))).ok(),
            _ => None,
        };
        Verdict::Candidate(
            Candidate {
                variable,
                direction,
                how,
                line,
                step,
            },
            rank,
        )
    }

    /// Why one definition may not run exactly once per iteration: its construct, or a jump
    /// that may skip it.
    fn not_every_iteration(&self, definition: &Definition, jumps: &[Jump]) -> Option<String> {
        if let Some(context) = &definition.context {
            return Some(context.why().to_owned());
        }
        if definition.place != Place::Body {
            // The increment runs after a `continue`; the condition before the body.
            return None;
        }
        jumps.iter().find_map(|jump| match jump.effect {
            JumpEffect::Tangles => Some(format!(
                "a {} at line {} jumps inside the loop and may skip or repeat it",
                jump.word, jump.line
            )),
            JumpEffect::Skips if jump.start_byte < definition.node.start_byte() => Some(format!(
                "after the {} at line {}, which may skip it",
                jump.word, jump.line
            )),
            JumpEffect::Skips | JumpEffect::Leaves => None,
        })
    }

    /// The direction of a constant-step definition, with a note for a named constant's
    /// value, or why it is no constant step.
    fn resolve_step(
        &self,
        definition: &Definition<'tree>,
        assigned: &std::collections::HashSet<&str>,
    ) -> Result<(Direction, Option<String>), String> {
        let Form::Step {
            step,
            sign,
            evaluated_once,
        } = &definition.form
        else {
            return match &definition.form {
                Form::NotMonotonic(why) => Err(why.clone()),
                // A fresh variable is caught before (declared in the loop); a declaration
                // whose declarator the lookup could not read lands here.
                _ => Err(format!(
                    "declared inside the loop (line {}): a new variable every iteration",
                    definition.line
                )),
            };
        };
        let text = &definition.text;
        let signed = |value: i128| value.saturating_mul(i128::from(*sign));
        let direction = |value: i128| {
            if value > 0 {
                Direction::Increasing
            } else {
                Direction::Decreasing
            }
        };
        match step {
            StepExpression::Literal(0) => Err(format!("{text} does not change it (step 0)")),
            StepExpression::Literal(value) => Ok((direction(signed(*value)), None)),
            StepExpression::NotInteger(literal) => {
                Err(format!("{text}: the step {literal} is not an integer"))
            }
            StepExpression::Other(_) if *evaluated_once => Ok((Direction::Unknown, None)),
            StepExpression::Other(expression) => Err(format!(
                "{text}: the step {expression} is neither an integer literal nor a single \
                 variable"
            )),
            StepExpression::Name { name, negated } => {
                if *name == definition.variable {
                    return Err(format!("{text} is not monotonic by a constant step"));
                }
                if !evaluated_once && assigned.contains(name.as_str()) {
                    return Err(format!("the step {name} is assigned in the loop"));
                }
                let constant = self
                    .declaration(name, definition.node)
                    .and_then(|declared| declared.constant)
                    .or_else(|| self.define(name));
                match constant {
                    Some(0) => Err(format!("the step {name} is 0")),
                    Some(value) => {
                        let value = if *negated {
                            value.saturating_neg()
                        } else {
                            value
                        };
                        Ok((direction(signed(value)), Some(format!("{name} = {value}"))))
                    }
                    None => Ok((Direction::Unknown, None)),
                }
            }
        }
    }

    fn how(&self, definition: &Definition) -> String {
        match (definition.place, self.is_fortran()) {
            (Place::Induction, true) => {
                let step = match &definition.form {
                    Form::Step { step, .. } => match step {
                        StepExpression::Literal(value) => value.to_string(),
                        StepExpression::Name { name, negated } => {
                            format!("{}{name}", if *negated { "-" } else { "" })
                        }
                        StepExpression::NotInteger(text) | StepExpression::Other(text) => {
                            text.clone()
                        }
                    },
                    _ => String::new(),
                };
                format!("do-loop index (step {step})")
            }
            (Place::Induction, false) => format!("for-loop induction ({})", definition.text),
            (Place::Condition, _) => format!("{} in the loop condition", definition.text),
            _ => definition.text.clone(),
        }
    }

    // ---- Declarations ----------------------------------------------------------------

    /// The declaration of `name` visible at `at` (a node in the loop), searched outwards
    /// through the enclosing scopes; None when not seen. Fortran without `implicit none`
    /// gets its implicit type.
    fn declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
        match self.language {
            Language::C | Language::Cpp => self.c_declaration(name, at),
            Language::Fortran => self.fortran_declaration(name, at),
        }
    }

    fn c_declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
        let mut in_loop = self.inside_loop(at);
        let mut child = at;
        let mut current = at.parent();
        let mut function: Option<Node> = None;
        // A declaration is visible from its own start on (`int c = 0;` declares the `c` of
        // its initializer).
        let before = at.start_byte();
        while let Some(scope) = current {
            if self.is_the_loop(scope) {
                // The loop's own initializer is the loop's scope, not an iteration's.
                in_loop = false;
            }
            let found = match scope.kind() {
                "compound_statement" | "translation_unit" | "declaration_list" => {
                    self.c_scope_declaration(scope, name, Some(before))
                }
                "for_statement" => scope
                    .child_by_field_name("initializer")
                    .filter(|initializer| *initializer != child)
                    .and_then(|initializer| self.c_declares(initializer, name)),
                "for_range_loop" if scope.child_by_field_name("body") == Some(child) => {
                    self.c_declares(scope, name)
                }
                "if_statement" | "while_statement" | "switch_statement" => scope
                    .child_by_field_name("condition")
                    .filter(|condition| *condition != child)
                    .and_then(|condition| condition.child_by_field_name("value"))
                    .and_then(|value| self.c_declares(value, name)),
                "catch_clause" => scope
                    .child_by_field_name("parameters")
                    .and_then(|parameters| self.c_parameter(parameters, name)),
                "function_definition" if !is_macro_block(scope) => {
                    function.get_or_insert(scope);
                    function_parameters(scope)
                        .and_then(|parameters| self.c_parameter(parameters, name))
                }
                "lambda_expression" => scope
                    .child_by_field_name("declarator")
                    .and_then(|declarator| declarator.child_by_field_name("parameters"))
                    .and_then(|parameters| self.c_parameter(parameters, name)),
                "field_declaration_list" => self.c_scope_declaration(scope, name, None),
                _ => None,
            };
            if let Some(mut declared) = found {
                declared.in_loop = in_loop;
                return Some(declared);
            }
            child = scope;
            current = scope.parent();
        }
        // A member of the class of an out-of-line method (`void Solver::step()`).
        let class = function
            .and_then(method_class)
            .map(|class| self.text(class))?;
        let members = *self.facts().classes.get(class)?;
        self.c_scope_declaration(members, name, None)
    }

    /// A declaration of `name` among the children of a block (only those starting at or
    /// before `before`, when given), looking into `#if` blocks.
    fn c_scope_declaration(
        &self,
        scope: Node,
        name: &str,
        before: Option<usize>,
    ) -> Option<Declared> {
        let mut found = None;
        let mut pending: Vec<Node> = children(scope);
        pending.reverse();
        while let Some(node) = pending.pop() {
            if before.is_some_and(|before| node.start_byte() > before) {
                continue;
            }
            match node.kind() {
                "declaration" | "field_declaration" => {
                    // The last one before the use wins (a redeclaration in one block).
                    if let Some(declared) = self.c_declares(node, name) {
                        found = Some(declared);
                    }
                }
                kind if kind.starts_with("preproc_") => {
                    let mut inner = children(node);
                    inner.reverse();
                    pending.extend(inner);
                }
                _ => {}
            }
        }
        found
    }

    fn c_parameter(&self, parameters: Node, name: &str) -> Option<Declared> {
        children(parameters)
            .into_iter()
            .find_map(|parameter| self.c_declares(parameter, name))
    }

    /// Whether a declaration-like node (a declaration, parameter, field, range-for) declares
    /// `name`, and with what type.
    fn c_declares(&self, declaration: Node, name: &str) -> Option<Declared> {
        let type_node = declaration.child_by_field_name("type");
        let mut cursor = declaration.walk();
        let declarators: Vec<Node> = declaration
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        for declarator in declarators {
            let Some((declared_name, shape)) = self.declarator_name(declarator) else {
                continue;
            };
            if declared_name != name {
                continue;
            }
            let initializer = match declarator.kind() {
                "init_declarator" => declarator.child_by_field_name("value"),
                _ => declaration
                    .child_by_field_name("value")
                    .or_else(|| declaration.child_by_field_name("default_value")),
            };
            let class = match shape {
                DeclaratorShape::Pointer => TypeClass::Not("a pointer, not an integer".to_owned()),
                DeclaratorShape::Array => {
                    TypeClass::Not("an array, not an integer scalar".to_owned())
                }
                DeclaratorShape::Plain => match type_node {
                    Some(type_node) => self.c_type_class(type_node, initializer, 0),
                    None => TypeClass::Assumed("type not read".to_owned()),
                },
            };
            let constant = if self.c_is_const(declaration) {
                initializer.and_then(|value| match self.step_expression(value) {
                    StepExpression::Literal(value) => Some(value),
                    _ => None,
                })
            } else {
                None
            };
            return Some(Declared {
                line: first_line(declaration),
                class,
                constant,
                in_loop: false,
            });
        }
        None
    }

    fn c_is_const(&self, declaration: Node) -> bool {
        children(declaration).into_iter().any(|child| {
            child.kind() == "type_qualifier"
                && matches!(self.text(child), "const" | "constexpr" | "constinit")
        })
    }

    /// The declared name and shape under a declarator (`*p`, `a[3]`, `&r`, `x = 0`).
    fn declarator_name(&self, declarator: Node) -> Option<(String, DeclaratorShape)> {
        let mut shape = DeclaratorShape::Plain;
        let mut node = declarator;
        // Declarators nest a handful deep; the bound guards against a malformed tree.
        for _ in 0..32 {
            match node.kind() {
                "identifier" | "field_identifier" => {
                    return Some((self.normalize(self.text(node)), shape));
                }
                // The outermost declarator decides: `int *a[3]` is an array (of pointers).
                "pointer_declarator" if shape == DeclaratorShape::Plain => {
                    shape = DeclaratorShape::Pointer;
                }
                "array_declarator" if shape == DeclaratorShape::Plain => {
                    shape = DeclaratorShape::Array;
                }
                "function_declarator" => return None,
                _ => {}
            }
            node = match node.child_by_field_name("declarator") {
                Some(inner) => inner,
                // reference_declarator, parenthesized_declarator: no field, the last named
                // child is the inner declarator.
                None => node
                    .named_child_count()
                    .checked_sub(1)
                    .and_then(|last| u32::try_from(last).ok())
                    .and_then(|last| node.named_child(last))?,
            };
        }
        None
    }

    /// Whether a C/C++ type is an integer.
    fn c_type_class(&self, type_node: Node, initializer: Option<Node>, depth: usize) -> TypeClass {
        let text = self.written(type_node);
        let not = |what: String| TypeClass::Not(format!("{what}, not an integer"));
        match type_node.kind() {
            "primitive_type" => match text.as_str() {
                "float" | "double" => not(format!("a {text}")),
                "bool" | "_Bool" => not("a bool".to_owned()),
                "void" => not("void".to_owned()),
                name if is_integer_type_name(name) => TypeClass::Integer,
                _ => not(format!("a {text}")),
            },
            "sized_type_specifier" => {
                if text.contains("double") || text.contains("float") {
                    not(format!("a {text}"))
                } else {
                    TypeClass::Integer
                }
            }
            "type_identifier" | "qualified_identifier" => {
                let last = text.rsplit("::").next().unwrap_or(&text).trim();
                if text.contains('<') {
                    return not(format!("a {text}"));
                }
                if is_integer_type_name(last) {
                    return TypeClass::Integer;
                }
                if matches!(last, "bool" | "_Bool") {
                    return not("a bool".to_owned());
                }
                if depth < TYPEDEF_DEPTH
                    && let Some(typedef) = self.facts().typedefs.get(last).copied()
                {
                    return self.typedef_class(typedef, last, depth + 1);
                }
                TypeClass::Assumed(format!(
                    "type {text}: a typedef not seen, assumed an integer"
                ))
            }
            "placeholder_type_specifier" => {
                match initializer.map(|value| self.step_expression(value)) {
                    Some(StepExpression::Literal(_)) => TypeClass::Integer,
                    _ => TypeClass::Not(format!(
                        "declared {text}{}: not known to be an integer",
                        initializer
                            .map(|value| format!(" from {}", self.written(value)))
                            .unwrap_or_default()
                    )),
                }
            }
            "struct_specifier" | "class_specifier" => not("a struct".to_owned()),
            "union_specifier" => not("a union".to_owned()),
            "enum_specifier" => not("an enum".to_owned()),
            "template_type" => not(format!("a {text}")),
            _ => TypeClass::Assumed(format!("type {text} not read, assumed an integer")),
        }
    }

    /// The class of a typedef'd type: `typedef long idx_t;`, `using idx_t = long;`.
    fn typedef_class(&self, typedef: Node, name: &str, depth: usize) -> TypeClass {
        let aliased = match typedef.kind() {
            "alias_declaration" => typedef
                .child_by_field_name("type")
                .and_then(|descriptor| descriptor.child_by_field_name("type")),
            _ => typedef.child_by_field_name("type"),
        };
        // `typedef int *ptr_t;`: the declarator says pointer.
        let mut cursor = typedef.walk();
        let declarator_shape = typedef
            .children_by_field_name("declarator", &mut cursor)
            .find_map(|declarator| {
                let mut node = declarator;
                for _ in 0..32 {
                    match node.kind() {
                        "type_identifier" => {
                            return (self.text(node) == name).then_some(DeclaratorShape::Plain);
                        }
                        "pointer_declarator" => return Some(DeclaratorShape::Pointer),
                        "array_declarator" => return Some(DeclaratorShape::Array),
                        _ => node = node.child_by_field_name("declarator")?,
                    }
                }
                None
            });
        match (declarator_shape, aliased) {
            (Some(DeclaratorShape::Pointer), _) => {
                TypeClass::Not(format!("{name} is a pointer, not an integer"))
            }
            (Some(DeclaratorShape::Array), _) => {
                TypeClass::Not(format!("{name} is an array, not an integer scalar"))
            }
            (_, Some(aliased)) => match self.c_type_class(aliased, None, depth) {
                TypeClass::Not(why) => TypeClass::Not(format!("{name} is {why}")),
                other => other,
            },
            (_, None) => TypeClass::Assumed(format!("type {name} not read, assumed an integer")),
        }
    }

    /// The value of `#define name literal` in this file.
    fn define(&self, name: &str) -> Option<i128> {
        if self.is_fortran() {
            return None;
        }
        self.facts().defines.get(name).copied()
    }

    fn facts(&self) -> &FileFacts<'tree> {
        self.facts.get_or_init(|| {
            let mut facts = FileFacts::default();
            if self.is_fortran() {
                return facts;
            }
            let mut pending = vec![self.root];
            while let Some(node) = pending.pop() {
                match node.kind() {
                    "type_definition" => {
                        let mut cursor = node.walk();
                        let names: Vec<String> = node
                            .children_by_field_name("declarator", &mut cursor)
                            .filter_map(|declarator| typedef_name(declarator))
                            .map(|name| self.text(name).to_owned())
                            .collect();
                        for name in names {
                            facts.typedefs.entry(name).or_insert(node);
                        }
                    }
                    "alias_declaration" => {
                        if let Some(name) = node.child_by_field_name("name") {
                            facts
                                .typedefs
                                .entry(self.text(name).to_owned())
                                .or_insert(node);
                        }
                    }
                    "preproc_def" => {
                        let name = node.child_by_field_name("name");
                        let value = node.child_by_field_name("value");
                        if let (Some(name), Some(value)) = (name, value) {
                            let body = self.text(value).trim();
                            let body = body.trim_start_matches('(').trim_end_matches(')').trim();
                            if let Some(value) = c_integer(body) {
                                facts
                                    .defines
                                    .entry(self.text(name).to_owned())
                                    .or_insert(value);
                            }
                        }
                    }
                    "class_specifier" | "struct_specifier" => {
                        let name = node.child_by_field_name("name");
                        let body = node.child_by_field_name("body");
                        if let (Some(name), Some(body)) = (name, body) {
                            facts
                                .classes
                                .entry(self.text(name).to_owned())
                                .or_insert(body);
                        }
                    }
                    _ => {}
                }
                pending.extend(children(node));
            }
            facts
        })
    }

    // ---- Fortran declarations --------------------------------------------------------

    /// Fortran declarations are scoped by program unit (and `block`), in any order within
    /// the specification part; a host's variables are seen by its internal procedures.
    fn fortran_declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
        let mut in_loop = self.inside_loop(at);
        let mut implicit_none = false;
        let mut uses_modules = false;
        let mut current = at.parent();
        while let Some(scope) = current {
            if self.is_the_loop(scope) {
                in_loop = false;
            }
            if matches!(
                scope.kind(),
                "block_construct"
                    | "subroutine"
                    | "function"
                    | "program"
                    | "module"
                    | "submodule"
                    | "module_procedure"
            ) {
                for statement in fortran_specification(scope) {
                    match statement.kind() {
                        "variable_declaration" => {
                            if let Some(mut declared) = self.fortran_declares(statement, name) {
                                declared.in_loop = in_loop;
                                return Some(declared);
                            }
                        }
                        "implicit_statement" => {
                            implicit_none |= self.text(statement).to_lowercase().contains("none");
                        }
                        "use_statement" => uses_modules = true,
                        _ => {}
                    }
                }
            }
            current = scope.parent();
        }
        if implicit_none || uses_modules {
            return None;
        }
        // Implicit typing: names starting with i to n are integers, the rest reals.
        let integer = name
            .chars()
            .next()
            .is_some_and(|first| ('i'..='n').contains(&first));
        Some(Declared {
            line: first_line(at),
            class: if integer {
                TypeClass::Assumed("implicitly an integer".to_owned())
            } else {
                TypeClass::Not(
                    "implicitly a real (no declaration, and the name does not start with i-n)"
                        .to_owned(),
                )
            },
            constant: None,
            in_loop: false,
        })
    }

    fn fortran_declares(&self, declaration: Node, name: &str) -> Option<Declared> {
        let mut cursor = declaration.walk();
        let declarators: Vec<Node> = declaration
            .children_by_field_name("declarator", &mut cursor)
            .collect();
        let attributes: Vec<String> = {
            let mut cursor = declaration.walk();
            declaration
                .children_by_field_name("attribute", &mut cursor)
                .map(|attribute| self.text(attribute).to_lowercase())
                .collect()
        };
        for declarator in declarators {
            let (declared_name, initializer, array) = match declarator.kind() {
                "identifier" => (Some(declarator), None, false),
                "init_declarator" => (
                    declarator.child_by_field_name("left"),
                    declarator.child_by_field_name("right"),
                    false,
                ),
                "sized_declarator" | "coarray_declarator" => {
                    (declarator.named_child(0), None, true)
                }
                _ => (None, None, false),
            };
            let Some(declared_name) = declared_name else {
                continue;
            };
            if self.normalize(self.text(declared_name)) != name {
                continue;
            }
            let type_text = declaration
                .child_by_field_name("type")
                .map(|type_node| self.fortran_type_word(type_node))
                .unwrap_or_default();
            let is_attribute = |word: &str| attributes.iter().any(|a| a.starts_with(word));
            let class = if array || is_attribute("dimension") {
                TypeClass::Not("an array, not an integer scalar".to_owned())
            } else if is_attribute("pointer") {
                TypeClass::Not("a pointer, not an integer".to_owned())
            } else if type_text == "integer" {
                TypeClass::Integer
            } else {
                TypeClass::Not(format!("a {type_text}, not an integer"))
            };
            let constant = if is_attribute("parameter") {
                initializer.and_then(|value| match self.step_expression(value) {
                    StepExpression::Literal(value) => Some(value),
                    _ => None,
                })
            } else {
                None
            };
            return Some(Declared {
                line: first_line(declaration),
                class,
                constant,
                in_loop: false,
            });
        }
        None
    }

    /// `integer`, `real`, `double precision`, `logical`, or `type(grid)` for derived types.
    fn fortran_type_word(&self, type_node: Node) -> String {
        if type_node.kind() == "intrinsic_type" {
            let words: Vec<String> = children(type_node)
                .into_iter()
                .filter(|child| !child.is_named())
                .map(|child| self.text(child).to_lowercase())
                .collect();
            words.join(" ")
        } else {
            self.written(type_node).to_lowercase()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DeclaratorShape {
    Plain,
    Pointer,
    Array,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FortranTarget {
    This,
    Inner,
    Outer,
}

/// The verdict on one variable; candidates carry their rank (lower first).
enum Verdict {
    Candidate(Candidate, (u8, u8, u32)),
    Rejected(Rejected),
    /// Not integer-ish and not counter-like: not worth a line.
    Omitted,
}

/// "once", "twice", "3 times".
fn times(count: usize) -> String {
    match count {
        1 => "once".to_owned(),
        2 => "twice".to_owned(),
        _ => format!("{count} times"),
    }
}

/// "4", "4 and 6", "4, 6 and 9".
fn list_lines(lines: &[u32]) -> String {
    let shown: Vec<String> = lines.iter().map(u32::to_string).collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

/// Integer types by name, as the C grammar reads them (`size_t` is a primitive type there)
/// and as C++ spells them after `std::`.
fn is_integer_type_name(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "int",
        "long",
        "short",
        "char",
        "signed",
        "unsigned",
        "size_t",
        "ssize_t",
        "ptrdiff_t",
        "intptr_t",
        "uintptr_t",
        "intmax_t",
        "uintmax_t",
        "off_t",
        "pid_t",
        "MPI_Aint",
        "MPI_Offset",
        "MPI_Count",
        "MPI_Fint",
    ];
    if NAMES.contains(&name) {
        return true;
    }
    // intN_t, uintN_t, int_fastN_t, int_leastN_t and their unsigned forms.
    let rest = name.strip_prefix('u').unwrap_or(name);
    let Some(rest) = rest
        .strip_prefix("int")
        .and_then(|rest| rest.strip_suffix("_t"))
    else {
        return false;
    };
    let bits = rest
        .strip_prefix("_fast")
        .or_else(|| rest.strip_prefix("_least"))
        .unwrap_or(rest);
    matches!(bits, "8" | "16" | "32" | "64")
}

/// The value of a C or C++ integer literal (`42`, `-2`, `0x10`, `0b101`, `017`, `10u`,
/// `1'000'000LL`), or None for anything else (a float, a malformed literal).
fn c_integer(text: &str) -> Option<i128> {
    let text: String = text.chars().filter(|c| *c != '\'').collect();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, text.strip_prefix('+').unwrap_or(&text)),
    };
    let digits = digits.trim_end_matches(['u', 'U', 'l', 'L', 'z', 'Z']);
    let (radix, body) = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        (16, hex)
    } else if let Some(binary) = digits
        .strip_prefix("0b")
        .or_else(|| digits.strip_prefix("0B"))
    {
        (2, binary)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() {
        return None;
    }
    let value = i128::from_str_radix(body, radix).ok()?;
    Some(if negative { -value } else { value })
}

/// The value of a Fortran integer literal (`42`, `1_8`, `2_int64`), or None (a real).
fn fortran_integer(text: &str) -> Option<i128> {
    let digits = text.split('_').next().unwrap_or(text).trim();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The parameter list of a function definition: the innermost function declarator's.
fn function_parameters(function: Node) -> Option<Node> {
    let mut parameters = None;
    let mut declarator = function.child_by_field_name("declarator");
    for _ in 0..32 {
        let Some(current) = declarator else { break };
        if current.kind() == "function_declarator" {
            parameters = current.child_by_field_name("parameters");
        }
        declarator = current.child_by_field_name("declarator").or_else(|| {
            current
                .named_child_count()
                .checked_sub(1)
                .and_then(|last| u32::try_from(last).ok())
                .and_then(|last| current.named_child(last))
                .filter(|_| current.kind().ends_with("_declarator"))
        });
    }
    parameters
}

/// The class name of an out-of-line method (`Solver` in `void Solver::step()`).
fn method_class(function: Node) -> Option<Node> {
    let mut declarator = function.child_by_field_name("declarator");
    for _ in 0..32 {
        let current = declarator?;
        if current.kind() == "function_declarator" {
            let name = current.child_by_field_name("declarator")?;
            return (name.kind() == "qualified_identifier")
                .then(|| name.child_by_field_name("scope"))
                .flatten();
        }
        declarator = current.child_by_field_name("declarator");
    }
    None
}

/// The type name a typedef declarator introduces (`idx_t` in `typedef long *idx_t`).
fn typedef_name(declarator: Node) -> Option<Node> {
    let mut node = declarator;
    for _ in 0..32 {
        if node.kind() == "type_identifier" {
            return Some(node);
        }
        node = node.child_by_field_name("declarator")?;
    }
    None
}

/// The statements of a Fortran scoping unit's specification part (and its `#if` blocks).
fn fortran_specification(scope: Node) -> Vec<Node> {
    let mut statements = Vec::new();
    let mut pending = children(scope);
    pending.reverse();
    while let Some(node) = pending.pop() {
        if node.kind().starts_with("preproc_") {
            let mut inner = children(node);
            inner.reverse();
            pending.extend(inner);
        } else {
            statements.push(node);
        }
    }
    statements
}

#[cfg(test)]
mod tests {
    use super::super::source::files::parse;
    use super::*;
    use proptest::prelude::*;

    use crate::testing::line_of;

    /// The loop variables of the loop on the line holding `loop_marker`.
    fn analyse(language: Language, text: &str, loop_marker: &str) -> LoopVariables {
        let tree = parse(text, language, "snippet").expect("parses");
        let line = line_of(text, loop_marker);
        loop_variables_in_tree(&tree, text, language, "snippet", line)
            .unwrap_or_else(|| panic!("no loop at {loop_marker:?}"))
    }

    fn c(text: &str, loop_marker: &str) -> LoopVariables {
        analyse(Language::C, text, loop_marker)
    }

    fn cpp(text: &str, loop_marker: &str) -> LoopVariables {
        analyse(Language::Cpp, text, loop_marker)
    }

    fn fortran(text: &str, loop_marker: &str) -> LoopVariables {
        analyse(Language::Fortran, text, loop_marker)
    }

    fn candidate(variable: &str, direction: Direction, how: &str, line: u32) -> Candidate {
        Candidate {
            variable: variable.to_owned(),
            direction,
            how: how.to_owned(),
            line,
            step: None,
        }
    }

    /// The candidates without their steps (most tests check the rest; the steps have a
    /// test of their own).
    fn no_steps(found: &[Candidate]) -> Vec<Candidate> {
        found
            .iter()
            .map(|c| Candidate {
                step: None,
                ..c.clone()
            })
            .collect()
    }

    fn rejected(variable: &str, line: u32, why: &str) -> Rejected {
        Rejected {
            variable: variable.to_owned(),
            line,
            why: why.to_owned(),
        }
    }

    fn candidate_names(found: &LoopVariables) -> Vec<&str> {
        found
            .candidates
            .iter()
            .map(|candidate| candidate.variable.as_str())
            .collect()
    }

    /// The rejection of `variable`, which must be listed exactly once.
    fn rejection<'a>(found: &'a LoopVariables, variable: &str) -> &'a Rejected {
        let matching: Vec<&Rejected> = found
            .rejected
            .iter()
            .filter(|rejected| rejected.variable == variable)
            .collect();
        assert_eq!(matching.len(), 1, "{variable} in {:#?}", found.rejected);
        matching[0]
    }

    // ---- C -----------------------------------------------------------------------------

    #[test]
    fn a_for_loops_induction_variable_is_the_best() {
        let text = "\
void solve(int n) {
    for (int it = 0; it < n; it++) {
        step(it);
    }
}
";
        let found = c(text, "for (");
        assert_eq!(found.kind, "for");
        assert_eq!(found.loop_line, 2);
        assert_eq!(found.file, "snippet");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate(
                "it",
                Direction::Increasing,
                "for-loop induction (it++)",
                2
            )]
        );
        assert_eq!(found.best(), found.candidates.first());
        assert!(found.rejected.is_empty(), "{:#?}", found.rejected);
    }

    #[test]
    fn a_while_loops_counter_in_the_body() {
        let text = "\
void poll(void) {
    int it = 0, done = 0;
    while (!done) {
        work();
        it++;
    }
}
";
        let found = c(text, "while");
        assert_eq!(found.kind, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("it", Direction::Increasing, "it++", 5)]
        );
    }

    #[test]
    fn an_endless_for_with_a_literal_step() {
        let text = "\
void spin(void) {
    long step = 0;
    for (;;) {
        step += 2;
    }
}
";
        let found = c(text, "for (;;)");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("step", Direction::Increasing, "step += 2", 4)]
        );
    }

    #[test]
    fn every_monotonic_form_and_its_direction() {
        let text = "\
void forms(void) {
    int a = 0, b = 0, d = 0, e = 0, f = 0, g = 0, h = 0, k = 0, m = 0;
    while (go()) {
        a--;
        --b;
        d -= 1;
        e = e - 3;
        f = 4 + f;
        g -= -2;
        h += -1;
        k = (k + 0x10);
        ++m;
    }
}
";
        let found = c(text, "while");
        let directions: Vec<(&str, Direction)> = found
            .candidates
            .iter()
            .map(|candidate| (candidate.variable.as_str(), candidate.direction))
            .collect();
        assert_eq!(
            directions,
            vec![
                ("a", Direction::Decreasing),
                ("b", Direction::Decreasing),
                ("d", Direction::Decreasing),
                ("e", Direction::Decreasing),
                ("f", Direction::Increasing),
                ("g", Direction::Increasing),
                ("h", Direction::Decreasing),
                ("k", Direction::Increasing),
                ("m", Direction::Increasing),
            ]
        );
        assert_eq!(found.candidates[3].how, "e = e - 3");
    }

    #[test]
    fn products_copies_and_zero_steps_are_rejected() {
        let text = "\
void shapes(int y) {
    int x = 1, z = 0, w = 0, q = 0, r = 0;
    while (go()) {
        x *= 2;
        z = y + 1;
        w = f(w);
        q += 0;
        r += 2 * y;
    }
}
";
        let found = c(text, "while");
        assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
        assert_eq!(
            found.rejected,
            vec![
                rejected("x", 4, "x *= 2 is not monotonic by a constant step"),
                rejected(
                    "z",
                    5,
                    "z = y + 1 sets it from other values, not by a step from its own"
                ),
                rejected("w", 6, "w = f(w) is not monotonic by a constant step"),
                rejected("q", 7, "q += 0 does not change it (step 0)"),
                rejected(
                    "r",
                    8,
                    "r += 2 * y: the step 2 * y is neither an integer literal nor a single \
                     variable"
                ),
            ]
        );
    }

    #[test]
    fn an_increment_in_an_if_is_rejected_with_the_ifs_line() {
        let text = "\
void sometimes(int n) {
    int hits = 0, i;
    for (i = 0; i < n; i++) {
        if (check(i))
            hits++;
        int t = cond() ? hits2++ : 0;
        if (ready() && flag++) {}
        switch (i) { case 1: cases++; break; }
    }
}
";
        let found = c(text, "for (");
        assert_eq!(candidate_names(&found), vec!["i"]);
        assert_eq!(
            rejection(&found, "hits"),
            &rejected("hits", 5, "assigned only in a branch (if at line 4)")
        );
        assert_eq!(
            rejection(&found, "hits2").why,
            "assigned only in a branch (?: at line 6)"
        );
        assert_eq!(
            rejection(&found, "flag").why,
            "assigned only in a branch (&& at line 7)"
        );
        assert_eq!(
            rejection(&found, "cases").why,
            "assigned only in a branch (switch at line 8)"
        );
        // `t` is an integer declared in the body: a new variable every iteration.
        assert_eq!(
            rejection(&found, "t").why,
            "declared inside the loop (line 6): a new variable every iteration"
        );
    }

    #[test]
    fn an_increment_in_an_if_condition_runs_every_iteration() {
        let text = "\
void counted(void) {
    int calls = 0;
    while (1) {
        if (++calls > 10) {
            report();
        }
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("calls", Direction::Increasing, "++calls", 4)]
        );
    }

    #[test]
    fn two_definitions_per_iteration_are_rejected() {
        let text = "\
void twice(int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        k++;
        i += 2;
        k += 1;
    }
}
";
        let found = c(text, "for (");
        assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
        assert_eq!(
            found.rejected,
            vec![
                rejected("i", 3, "assigned twice per iteration (lines 3 and 5)"),
                rejected("k", 4, "assigned twice per iteration (lines 4 and 6)"),
            ]
        );
    }

    #[test]
    fn one_unconditional_and_one_conditional_definition_says_both() {
        let text = "\
void mixed(void) {
    int k = 0;
    while (go()) {
        k++;
        if (extra()) k++;
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            rejection(&found, "k").why,
            "assigned at lines 4 and 5; at line 5: assigned only in a branch (if at line 5)"
        );
    }

    #[test]
    fn a_loop_with_nothing_usable_says_why() {
        let text = "\
void relax(double *u, int n) {
    double t = 0.0;
    double norm = 1.0;
    int *p = 0;
    while (norm > 1e-6) {
        norm = sweep(u, n);
        t += 1;
        p++;
        u[0] += 1;
        grid.cells++;
    }
}
";
        let found = c(text, "while");
        assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
        assert_eq!(found.best(), None);
        // `norm` is neither an integer nor counter-like: not listed. Elements and fields
        // are skipped.
        assert_eq!(
            found.rejected,
            vec![
                rejected("t", 7, "a double, not an integer"),
                rejected("p", 8, "a pointer, not an integer"),
            ]
        );
    }

    #[test]
    fn nested_loops_keep_their_own_variables() {
        let text = "\
void nest(int n, int m) {
    int j;
    for (int i = 0; i < n; i++) {
        for (j = 0; j < m; j++) {
            inner(i, j);
        }
        while (more()) { drained++; }
    }
}
";
        let outer = c(text, "for (int i");
        assert_eq!(candidate_names(&outer), vec!["i"]);
        assert_eq!(
            rejection(&outer, "j"),
            &rejected("j", 4, "the induction variable of the inner for at line 4")
        );
        assert_eq!(
            rejection(&outer, "drained").why,
            "assigned only inside the inner while at line 7, which may run any number of \
             times per iteration"
        );
        let inner = c(text, "for (j");
        assert_eq!(
            no_steps(&inner.candidates),
            vec![candidate(
                "j",
                Direction::Increasing,
                "for-loop induction (j++)",
                4
            )]
        );
        assert!(inner.rejected.is_empty(), "{:#?}", inner.rejected);
    }

    #[test]
    fn a_loop_invariant_step_ranks_after_a_literal_one() {
        let text = "\
void strided(int stride, int n) {
    int it = 0, count = 0, pos = 0, jump = 1;
    while (it < n) {
        it += stride;
        pos -= jump;
        count++;
        jump = next(jump);
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![
                candidate("count", Direction::Increasing, "count++", 6),
                candidate("it", Direction::Unknown, "it += stride", 4),
            ]
        );
        assert_eq!(
            rejection(&found, "pos"),
            &rejected("pos", 5, "the step jump is assigned in the loop")
        );
    }

    #[test]
    fn named_constant_steps_have_a_direction() {
        let text = "\
#define STRIDE (4)
void constants(void) {
    const int down = -2;
    int a = 0, b = 0, c = 0;
    for (;;) {
        a += down;
        b -= STRIDE;
        c += STRIDE;
    }
}
";
        let found = c(text, "for (;;)");
        assert_eq!(
            no_steps(&found.candidates),
            vec![
                candidate("a", Direction::Decreasing, "a += down (down = -2)", 6),
                candidate("b", Direction::Decreasing, "b -= STRIDE (STRIDE = 4)", 7),
                candidate("c", Direction::Increasing, "c += STRIDE (STRIDE = 4)", 8),
            ]
        );
    }

    #[test]
    fn a_do_while_body_runs_once_per_iteration() {
        let text = "\
void retry(void) {
    unsigned attempts = 0;
    do {
        attempts++;
    } while (!try_once());
}
";
        let found = c(text, "do {");
        assert_eq!(found.kind, "do-while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate(
                "attempts",
                Direction::Increasing,
                "attempts++",
                4
            )]
        );
    }

    #[test]
    fn a_counter_in_the_loop_condition() {
        let text = "\
void countdown(int n) {
    while (--n > 0) {
        tick();
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate(
                "n",
                Direction::Decreasing,
                "--n in the loop condition",
                2
            )]
        );
    }

    #[test]
    fn a_continue_before_the_counter_rejects_it_and_a_break_is_noted() {
        let text = "\
void jumps(void) {
    int skipped = 0, counted = 0, before = 0;
    while (go()) {
        before++;
        if (stalled()) continue;
        skipped++;
    }
    while (more()) {
        if (finished()) break;
        counted++;
        for (int r = 0; r < 4; r++) { if (r == 2) continue; }
        switch (counted) { case 3: break; }
    }
}
";
        let skipping = c(text, "while (go())");
        assert_eq!(
            no_steps(&skipping.candidates),
            vec![candidate("before", Direction::Increasing, "before++", 4)]
        );
        assert_eq!(
            skipping.rejected,
            vec![rejected(
                "skipped",
                6,
                "after the continue at line 5, which may skip it"
            )]
        );
        // The inner loop's continue and the switch's break are theirs, not this loop's:
        // only the break at line 9 is noted.
        let breaking = c(text, "while (more())");
        assert_eq!(
            no_steps(&breaking.candidates),
            vec![candidate(
                "counted",
                Direction::Increasing,
                "counted++ (a break at line 9 may end the last iteration before it)",
                10
            )]
        );
    }

    #[test]
    fn a_continue_does_not_skip_a_for_loops_increment() {
        let text = "\
void each(int n) {
    for (int i = 0; i < n; i++) {
        if (skip(i)) continue;
        work(i);
    }
}
";
        assert_eq!(candidate_names(&c(text, "for (")), vec!["i"]);
    }

    #[test]
    fn a_goto_inside_the_loop_tangles_it_and_one_out_of_it_leaves() {
        let text = "\
void gotos(void) {
    int k = 0, m = 0;
    while (go()) {
again:
        k++;
        if (retry()) goto again;
    }
    while (more()) {
        if (failed()) goto out;
        m++;
    }
out:
    return;
}
";
        let tangled = c(text, "while (go())");
        assert_eq!(
            tangled.rejected,
            vec![rejected(
                "k",
                5,
                "a goto at line 6 jumps inside the loop and may skip or repeat it"
            )]
        );
        let left = c(text, "while (more())");
        assert_eq!(
            no_steps(&left.candidates),
            vec![candidate(
                "m",
                Direction::Increasing,
                "m++ (a goto at line 9 may end the last iteration before it)",
                10
            )]
        );
    }

    #[test]
    fn integer_types_are_recognised_and_others_rejected() {
        let text = "\
#include <stdint.h>
typedef long idx_t;
typedef idx_t *idx_ptr;
typedef float real_t;
extern int global_steps;
void types(size_t m, unsigned long long big, my_count_t opaque, idx_ptr ip) {
    int64_t i64 = 0;
    idx_t idx = 0;
    real_t r = 0;
    _Bool flag = 0;
    struct cell c;
    enum phase ph;
    char letters[4];
    while (go()) {
        m++;
        big--;
        i64 += 8;
        idx++;
        global_steps++;
        undeclared++;
        opaque++;
        r += 1;
        flag++;
        c++;
        ph++;
        letters++;
        ip++;
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![
                candidate("m", Direction::Increasing, "m++", 15),
                candidate("big", Direction::Decreasing, "big--", 16),
                candidate("i64", Direction::Increasing, "i64 += 8", 17),
                candidate("idx", Direction::Increasing, "idx++", 18),
                candidate("global_steps", Direction::Increasing, "global_steps++", 19),
                candidate(
                    "undeclared",
                    Direction::Increasing,
                    "undeclared++ (declaration not seen)",
                    20
                ),
                candidate(
                    "opaque",
                    Direction::Increasing,
                    "opaque++ (type my_count_t: a typedef not seen, assumed an integer)",
                    21
                ),
            ]
        );
        assert_eq!(
            found.rejected,
            vec![
                rejected("r", 22, "real_t is a float, not an integer"),
                rejected("flag", 23, "a bool, not an integer"),
                rejected("c", 24, "a struct, not an integer"),
                rejected("ph", 25, "an enum, not an integer"),
                rejected("letters", 26, "an array, not an integer scalar"),
                rejected("ip", 27, "idx_ptr is a pointer, not an integer"),
            ]
        );
    }

    #[test]
    fn a_shadowing_declaration_in_a_block_is_the_one_seen() {
        let text = "\
void shadow(void) {
    double k = 0;
    {
        int k = 0;
        while (go()) {
            k++;
        }
    }
}
";
        assert_eq!(candidate_names(&c(text, "while")), vec!["k"]);
    }

    #[test]
    fn preprocessor_blocks_are_straight_line_code() {
        let text = "\
void traced(void) {
#ifdef USE_LONG
    long n = 0;
#else
    int n = 0;
#endif
    while (go()) {
#if TRACE
        trace(n);
#endif
        n++;
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("n", Direction::Increasing, "n++", 11)]
        );
    }

    #[test]
    fn a_block_after_a_macro_may_be_a_loop() {
        let text = "\
void ranks(void) {
    int sent = 0, rounds = 0;
    while (go()) {
        FOR_EACH_RANK(r) { sent++; }
        rounds++;
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("rounds", Direction::Increasing, "rounds++", 5)]
        );
        assert_eq!(
            found.rejected,
            vec![rejected(
                "sent",
                4,
                "assigned inside the block after a macro at line 4, which may loop or not run"
            )]
        );
    }

    // ---- C++ ---------------------------------------------------------------------------

    #[test]
    fn a_range_for_has_no_induction_variable_but_a_counter_works() {
        let text = "\
void visit(std::vector<Cell>& cells) {
    std::size_t count = 0;
    for (auto& cell : cells) {
        relax(cell);
        ++count;
    }
    for (const Cell& c : cells) {
        relax(c);
    }
}
";
        let found = cpp(text, "for (auto& cell");
        assert_eq!(found.kind, "range-for");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("count", Direction::Increasing, "++count", 5)]
        );
        let bare = cpp(text, "for (const Cell& c");
        assert!(bare.candidates.is_empty());
        assert_eq!(
            bare.rejected,
            vec![rejected(
                "c",
                7,
                "the range-for's element: a range-for has no induction variable"
            )]
        );
    }

    #[test]
    fn a_method_loop_finds_the_member_type() {
        let text = "\
class Solver {
    std::size_t sweeps_;
    double residual_;
    void inline_loop() {
        for (;;) { sweeps_ += 2u; }
    }
    void step();
};
void Solver::step() {
    while (residual_ > tolerance_) {
        residual_ = sweep();
        ++sweeps_;
        this->calls++;
    }
}
";
        let inline = cpp(text, "for (;;)");
        assert_eq!(
            no_steps(&inline.candidates),
            vec![candidate(
                "sweeps_",
                Direction::Increasing,
                "sweeps_ += 2u",
                5
            )]
        );
        let out_of_line = cpp(text, "while");
        assert_eq!(
            no_steps(&out_of_line.candidates),
            vec![candidate("sweeps_", Direction::Increasing, "++sweeps_", 12)]
        );
        // residual_ is a double set from a call: not listed; this->calls is a field.
        assert!(
            out_of_line.rejected.is_empty(),
            "{:#?}",
            out_of_line.rejected
        );
    }

    #[test]
    fn cpp_iterators_try_blocks_and_lambdas_are_not_candidates() {
        let text = "\
void walk(std::map<int, int>& m) {
    int tries = 0, inside = 0, caught = 0;
    auto seven = 7;
    for (auto it = m.begin(); it != m.end(); ++it) {
        try { tries++; } catch (...) { caught++; }
        auto bump = [&]() { inside++; };
        seven -= 7;
    }
}
";
        let found = cpp(text, "for (auto it");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("seven", Direction::Decreasing, "seven -= 7", 7)]
        );
        assert_eq!(
            rejection(&found, "it").why,
            "declared auto from m.begin(): not known to be an integer"
        );
        assert_eq!(
            rejection(&found, "tries").why,
            "assigned only in a try block (line 5): an exception may skip it"
        );
        assert_eq!(
            rejection(&found, "caught").why,
            "assigned only in a branch (catch at line 5)"
        );
        assert_eq!(
            rejection(&found, "inside").why,
            "assigned inside a lambda (line 6), which the loop may call any number of times"
        );
    }

    // ---- Fortran -----------------------------------------------------------------------

    #[test]
    fn fortran_do_loops_and_their_steps() {
        let text = "\
subroutine sweeps(n, s)
  implicit none
  integer, intent(in) :: n, s
  integer, parameter :: back = -2
  integer :: i, j, k
  do i = n, 1, -1
    call down(i)
  end do
  do j = 1, n, s
    call strided(j)
  end do
  do k = 1, n
    call up(k)
  end do
  do i = n, 1, back
    call named(i)
  end do
end subroutine sweeps
";
        let down = fortran(text, "do i = n, 1, -1");
        assert_eq!(down.kind, "do");
        assert_eq!(
            no_steps(&down.candidates),
            vec![candidate(
                "i",
                Direction::Decreasing,
                "do-loop index (step -1)",
                6
            )]
        );
        let strided = fortran(text, "do j");
        assert_eq!(
            no_steps(&strided.candidates),
            vec![candidate(
                "j",
                Direction::Unknown,
                "do-loop index (step s)",
                9
            )]
        );
        let up = fortran(text, "do k");
        assert_eq!(
            no_steps(&up.candidates),
            vec![candidate(
                "k",
                Direction::Increasing,
                "do-loop index (step 1)",
                12
            )]
        );
        let named = fortran(text, "do i = n, 1, back");
        assert_eq!(
            no_steps(&named.candidates),
            vec![candidate(
                "i",
                Direction::Decreasing,
                "do-loop index (step back) (back = -2)",
                15
            )]
        );
    }

    #[test]
    fn fortran_do_while_and_endless_do_with_counters() {
        let text = "\
program drive
  implicit none
  integer :: k
  integer(kind=8) :: c8
  real(8) :: x
  k = 0
  DO WHILE (k < 10)
    K = K + 1
  END DO
  do ! endless
    if (c8 < 0) exit
    c8 = c8 - 1_8
    x = x + 1
  end do
end program drive
";
        let found = fortran(text, "DO WHILE");
        assert_eq!(found.kind, "do-while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("k", Direction::Increasing, "K = K + 1", 8)]
        );
        let endless = fortran(text, "! endless");
        assert_eq!(endless.kind, "do");
        assert_eq!(
            no_steps(&endless.candidates),
            vec![candidate(
                "c8",
                Direction::Decreasing,
                "c8 = c8 - 1_8 (a exit at line 11 may end the last iteration before it)",
                12
            )]
        );
        assert_eq!(
            endless.rejected,
            vec![rejected("x", 13, "a real, not an integer")]
        );
    }

    #[test]
    fn fortran_cycle_exit_and_goto() {
        let text = "\
subroutine jumps(n)
  implicit none
  integer :: n, a, b, c, d, i, j
  outer: do
    a = a + 1
    inner: do j = 1, n
      if (j > 2) cycle inner
      if (j > 3) exit outer
    end do inner
    if (a > 5) cycle
    b = b + 1
  end do outer
  do i = 1, n
    if (i > 2) cycle
    c = c + 2
    if (i > 3) go to 10
    d = d - 1
  end do
10 continue
  do ! tangled
    d = d + 1
    if (d > 4) go to 20
20  continue
  end do
end subroutine jumps
";
        // The exit of the outer loop at line 8 is inside the inner do, before b and after
        // a; the cycle of the inner loop is the inner loop's.
        let outer = fortran(text, "outer: do");
        assert_eq!(
            no_steps(&outer.candidates),
            vec![candidate("a", Direction::Increasing, "a = a + 1", 5)]
        );
        assert_eq!(
            outer.rejected,
            vec![
                rejected("j", 6, "the induction variable of the inner do at line 6"),
                rejected("b", 11, "after the cycle at line 10, which may skip it"),
            ]
        );
        // A cycle does not skip a do index; it skips c.
        let counted = fortran(text, "do i = 1, n");
        assert_eq!(candidate_names(&counted), vec!["i"]);
        assert_eq!(
            rejection(&counted, "c").why,
            "after the cycle at line 14, which may skip it"
        );
        assert_eq!(
            rejection(&counted, "d").why,
            "after the cycle at line 14, which may skip it"
        );
        let tangled = fortran(text, "! tangled");
        assert_eq!(
            tangled.rejected,
            vec![rejected(
                "d",
                21,
                "a go to at line 22 jumps inside the loop and may skip or repeat it"
            )]
        );
    }

    #[test]
    fn fortran_types_implicit_typing_and_concurrent_loops() {
        let text = "\
subroutine typed(n)
  integer, dimension(4) :: counts
  logical :: done
  integer :: n
  do concurrent (i = 1:n)
    counts(i) = 0
  end do
  do while (.not. done)
    nsteps = nsteps + 1
    xsum = xsum + 1
    block
      integer :: local
      local = local + 1
    end block
    counts = counts + 1
  end do
end subroutine typed
";
        let concurrent = fortran(text, "do concurrent");
        assert_eq!(concurrent.kind, "do concurrent");
        assert!(concurrent.candidates.is_empty());
        assert_eq!(
            concurrent.rejected,
            vec![rejected(
                "i",
                5,
                "the index of a do concurrent, whose iterations run in no fixed order"
            )]
        );
        // No `implicit none`: nsteps is implicitly an integer, xsum a real.
        let found = fortran(text, "do while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate(
                "nsteps",
                Direction::Increasing,
                "nsteps = nsteps + 1 (implicitly an integer)",
                9
            )]
        );
        assert_eq!(
            found.rejected,
            vec![
                rejected(
                    "xsum",
                    10,
                    "implicitly a real (no declaration, and the name does not start with i-n)"
                ),
                rejected(
                    "local",
                    12,
                    "declared inside the loop (line 12): a new variable every iteration"
                ),
                rejected("counts", 15, "an array, not an integer scalar"),
            ]
        );
    }

    #[test]
    fn fortran_without_a_declaration_under_implicit_none_is_not_seen() {
        let text = "\
subroutine modular()
  use counters
  implicit none
  do while (running())
    total_steps = total_steps + 1
  end do
end subroutine modular
";
        assert_eq!(
            no_steps(&fortran(text, "do while").candidates),
            vec![candidate(
                "total_steps",
                Direction::Increasing,
                "total_steps = total_steps + 1 (declaration not seen)",
                5
            )]
        );
    }

    #[test]
    fn a_loop_invariant_induction_ranks_after_a_literal_body_counter() {
        let text = "\
void ranked(int n, int s) {
    int sweeps = 0;
    for (int i = 0; i < n; i += s) {
        sweeps++;
    }
}
";
        let found = c(text, "for (");
        assert_eq!(
            no_steps(&found.candidates),
            vec![
                candidate("sweeps", Direction::Increasing, "sweeps++", 4),
                candidate("i", Direction::Unknown, "for-loop induction (i += s)", 3),
            ]
        );
    }

    #[test]
    fn fixed_form_labelled_do_loops() {
        let text = "\
      subroutine old(n)
      integer n, i, m
      do 10 i = 1, n
         m = m + 2
         call work(i)
 10   continue
      end
";
        let found = fortran(text, "do 10");
        assert_eq!(
            no_steps(&found.candidates),
            vec![
                candidate("i", Direction::Increasing, "do-loop index (step 1)", 3),
                candidate("m", Direction::Increasing, "m = m + 2", 4),
            ]
        );
    }

    #[test]
    fn literal_steps_are_kept_with_their_sign() {
        let text = "\
void s(int n) {
    int a = 0, b = 0, c = 0, d = 0;
    for (int it = 0; it < n; it++) {
        a += 2;
        b -= 3;
        c = c - -1;
        d += n;
    }
}
";
        let found = c(text, "for (");
        let steps: Vec<(&str, Option<i64>)> = found
            .candidates
            .iter()
            .map(|c| (c.variable.as_str(), c.step))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("it", Some(1)),
                ("a", Some(2)),
                ("b", Some(-3)),
                ("c", Some(1)),
                ("d", None)
            ]
        );
    }

    #[test]
    fn the_json_names_every_field() {
        let text = "\
void j(int n) {
    for (int it = 0; it < n; it++) { x *= 2; }
}
";
        let json = serde_json::to_value(c(text, "for (")).expect("serializes");
        assert_eq!(
            json,
            serde_json::json!({
                "file": "snippet",
                "loop_line": 2,
                "kind": "for",
                "candidates": [{
                    "variable": "it",
                    "direction": "Increasing",
                    "how": "for-loop induction (it++)",
                    "step": 1,
                    "line": 2
                }],
                "rejected": [{
                    "variable": "x",
                    "line": 2,
                    "why": "x *= 2 is not monotonic by a constant step"
                }]
            })
        );
    }

    // ---- Through the index, and errors -------------------------------------------------

    use crate::testing::testdata;

    #[test]
    fn the_papers_figure_1_loop_has_it_as_its_loop_order_variable() {
        // Section 4.2: "Our algorithm identifies it in Figure 1 as a LOV [...] with respect
        // to the loop that spans (4) and (21)", by the `it++` at (20).
        let mut index = SourceIndex::new(Vec::new());
        let path = testdata("poisson.c");
        let found = index.loop_variables(&path, 4).expect("the while loop");
        assert_eq!(found.kind, "while");
        assert_eq!(found.file, path);
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate("it", Direction::Increasing, "it++", 20)]
        );
        // `norm` is a double set from a call: not listed. The inner loop's `row` is.
        assert_eq!(
            found.rejected,
            vec![rejected(
                "row",
                11,
                "the induction variable of the inner for at line 11"
            )]
        );
        let reduction = index.loop_variables(&path, 28).expect("get_norm's loop");
        assert_eq!(
            no_steps(&reduction.candidates),
            vec![candidate(
                "i",
                Direction::Increasing,
                "for-loop induction (i++)",
                28
            )]
        );
    }

    #[test]
    fn a_line_that_starts_no_loop_is_an_error() {
        let mut index = SourceIndex::new(Vec::new());
        let path = testdata("poisson.c");
        // Line 5 is inside the loop, but the loop starts at line 4.
        let error = index
            .loop_variables(&path, 5)
            .expect_err("no loop starts there");
        assert_eq!(
            error,
            SourceError::NoLoopAt {
                path: path.clone(),
                line: 5
            }
        );
        assert!(
            error
                .to_string()
                .contains(&format!("{path}:5 starts no loop")),
            "{error}"
        );
        assert!(matches!(
            index.loop_variables(&path, 0),
            Err(SourceError::LineOutOfRange { .. })
        ));
        assert!(matches!(
            index.loop_variables(&path, 10_000),
            Err(SourceError::LineOutOfRange { .. })
        ));
        assert!(matches!(
            index.loop_variables("/nonexistent/strata/solver.c", 3),
            Err(SourceError::Unreadable { .. })
        ));
        assert!(matches!(
            index.loop_variables("notes.txt", 3),
            Err(SourceError::UnknownLanguage { .. })
        ));
    }

    #[test]
    fn the_first_of_two_loops_on_one_line_is_the_outer_one() {
        let text = "\
void grid(int n) {
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) cell(i, j);
}
";
        let found = c(text, "for (int i");
        assert_eq!(candidate_names(&found), vec!["i"]);
        assert_eq!(
            rejection(&found, "j").why,
            "the induction variable of the inner for at line 2"
        );
    }

    // ---- Robustness --------------------------------------------------------------------

    #[test]
    fn a_broken_loop_is_analysed_and_says_so() {
        let text = "\
void broken(int n) {
    int k = 0;
    while (k < n) {
        k++;
        x = = 3;
    }
}
";
        let found = c(text, "while");
        assert_eq!(
            no_steps(&found.candidates),
            vec![candidate(
                "k",
                Direction::Increasing,
                "k++ (the parser could not read all of the loop)",
                4
            )]
        );
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        let depth = 20_000;
        let text = format!(
            "void deep(void) {{\n    int k = 0;\n    while (go()) {{\n        k = {}1{};\n        k++;\n    }}\n}}\n",
            "(".repeat(depth),
            ")".repeat(depth)
        );
        let found = c(&text, "while");
        // The source is shortened in the one-line reason.
        let why = &rejection(&found, "k").why;
        assert!(
            why.starts_with("k = ((((")
                && why.ends_with("... sets it from other values, not by a step from its own"),
            "{why}"
        );
        assert!(why.len() < 200, "{why}");
    }

    /// Source-like token soup: loops, jumps, assignments and declarations in random order
    /// and nesting, so that malformed trees meet every branch of the analysis.
    fn soup() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("for (int i = 0; i < n; i++) {\n"),
            Just("while (go()) {\n"),
            Just("do {\n"),
            Just("} while (k);\n"),
            Just("for (auto& x : v) {\n"),
            Just("if (c) {\n"),
            Just("} else {\n"),
            Just("}\n"),
            Just("k++;\n"),
            Just("k += s;\n"),
            Just("s = k * 2;\n"),
            Just("int k = 0;\n"),
            Just("double d;\n"),
            Just("continue;\n"),
            Just("break;\n"),
            Just("goto l;\n"),
            Just("l: ;\n"),
            Just("switch (k) { case 1:\n"),
            Just("try {\n"),
            Just("} catch (...) {\n"),
            Just("[&]() { k--; };\n"),
            Just("x = c ? k++ : 0;\n"),
            Just("#if A\n"),
            Just("#endif\n"),
        ];
        proptest::collection::vec(token, 0..40)
            .prop_map(|tokens| format!("void f(int n, int s) {{\n{}}}\n", tokens.concat()))
    }

    fn fortran_soup() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            Just("do i = 1, n\n"),
            Just("do while (k < n)\n"),
            Just("outer: do\n"),
            Just("end do\n"),
            Just("if (k > 2) then\n"),
            Just("else\n"),
            Just("end if\n"),
            Just("k = k + 1\n"),
            Just("k = k * 2\n"),
            Just("cycle\n"),
            Just("exit outer\n"),
            Just("go to 10\n"),
            Just("10 continue\n"),
            Just("integer :: k\n"),
            Just("block\n"),
            Just("end block\n"),
        ];
        proptest::collection::vec(token, 0..40)
            .prop_map(|tokens| format!("subroutine f(n)\n{}end subroutine f\n", tokens.concat()))
    }

    /// Every loop line of a parsed text analysed: no panic, and the invariants hold.
    fn check_every_loop(language: Language, text: &str) -> Result<(), TestCaseError> {
        let tree = parse(text, language, "soup").expect("parses");
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        for line in 1..=lines {
            let Some(found) = loop_variables_in_tree(&tree, text, language, "soup", line) else {
                continue;
            };
            prop_assert_eq!(found.loop_line, line);
            for candidate in &found.candidates {
                // A variable is a candidate or rejected, never both.
                prop_assert!(
                    !found
                        .rejected
                        .iter()
                        .any(|rejected| rejected.variable == candidate.variable),
                    "{:?} both ways in {:#?}",
                    candidate.variable,
                    found
                );
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn c_and_cpp_soup_never_panics(text in soup()) {
            check_every_loop(Language::C, &text)?;
            check_every_loop(Language::Cpp, &text)?;
        }

        #[test]
        fn fortran_soup_never_panics(text in fortran_soup()) {
            check_every_loop(Language::Fortran, &text)?;
        }
    }
}
