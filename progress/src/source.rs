//! From a frame's `file:line` to a [`ProgramPoint`]: the paper's program point rewriting
//! system (Section 4.1), on tree-sitter syntax trees instead of ROSE.
//!
//! [`SourceIndex`] finds the source file (as named by DWARF, or under `--source-dir`
//! folders), parses it once with the C, C++ or Fortran grammar, and answers points for its
//! lines. For a line it finds the innermost function definition that spans it, then descends
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

use super::lov::{LoopVariables, loop_variables_in_tree};
use super::point::{ProgramPoint, Step};
use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};
use tree_sitter::{Node, Parser, Point, Tree};

/// A source language strata can parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Language {
    C,
    Cpp,
    Fortran,
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
            _ => None,
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
            Language::Fortran => tree_sitter_fortran::LANGUAGE.into(),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::C => "C",
            Language::Cpp => "C++",
            Language::Fortran => "Fortran",
        }
    }
}

/// Why a program point could not be made. Each message is one line naming the file.
///
/// `path` is the file as asked (the DWARF name) for `Unreadable` and `UnknownLanguage`, and
/// the file actually read (after the `--source-dir` search) for the others.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Neither the path as given nor any search folder has it; `why` is the error for the
    /// path as given.
    #[error("cannot read {path}: {why} (pass --source-dir DIR where the sources live)")]
    Unreadable { path: String, why: String },
    #[error(
        "{path}: not a C, C++ or Fortran source by its name (known endings: .c .h .cc .cpp .cxx \
         .C .hpp .f90 .F90 .f ...), so its program points are unknown"
    )]
    UnknownLanguage { path: String },
    #[error(
        "{path}:{line} is outside the file ({lines} lines): the source does not match the \
         binary's debug information"
    )]
    LineOutOfRange { path: String, line: u32, lines: u32 },
    #[error("{path}:{line} is not inside a function definition that the parser could read")]
    NotInFunction { path: String, line: u32 },
    #[error("cannot parse {path}: {why}")]
    Parse { path: String, why: String },
    /// A loop was asked for by its first line (an `Iteration` step's line), and no loop
    /// starts there.
    #[error(
        "{path}:{line} starts no loop (for, while, do-while, range-for, Fortran do) that the \
         parser could read: the source does not match the binary's debug information"
    )]
    NoLoopAt { path: String, line: u32 },
}

/// Parses each source file once (cache by path) and answers program points.
#[derive(Debug)]
pub struct SourceIndex {
    search_dirs: Vec<PathBuf>,
    /// Keyed by the path as asked (the DWARF name); failures are kept too, so that an
    /// unreadable file is tried once.
    files: HashMap<String, Result<SourceFile, SourceError>>,
}

/// A parsed file, borrowed from the cache for one question.
struct Parsed<'index> {
    tree: &'index Tree,
    text: &'index str,
    language: Language,
    /// The path actually read, for error messages.
    shown: String,
}

/// One file as read, with its syntax tree once a point was asked of it.
struct SourceFile {
    path: PathBuf,
    text: String,
    lines: u32,
    tree: Option<Result<Tree, SourceError>>,
}

impl fmt::Debug for SourceFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceFile")
            .field("path", &self.path)
            .field("lines", &self.lines)
            .field("parsed", &self.tree.as_ref().map(|tree| tree.is_ok()))
            .finish()
    }
}

impl SourceIndex {
    /// `search_dirs`: where to look when the DWARF path is not readable as is: try DIR joined
    /// with the path's trailing components, longest suffix first (like gdb's `directory`).
    pub fn new(search_dirs: Vec<PathBuf>) -> SourceIndex {
        SourceIndex {
            search_dirs,
            files: HashMap::new(),
        }
    }

    /// The program point of `file:line` (1-based).
    pub fn point(&mut self, file: &str, line: u32) -> Result<ProgramPoint, SourceError> {
        let parsed = self.parsed(file, line)?;
        point_in_tree(parsed.tree, parsed.text, parsed.language, file, line).ok_or(
            SourceError::NotInFunction {
                path: parsed.shown,
                line,
            },
        )
    }

    /// The loop-order variables of the loop whose first line is `loop_line` in `file` (an
    /// [`Step::Iteration`] step's line): see [`super::lov`]. Errors as [`SourceIndex::point`],
    /// and [`SourceError::NoLoopAt`] when no loop starts on that line.
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

    /// The syntax tree of `file`, parsed on the first question, for a question about `line`
    /// (which must be inside the file).
    fn parsed(&mut self, file: &str, line: u32) -> Result<Parsed<'_>, SourceError> {
        let language = Language::from_path(file).ok_or_else(|| SourceError::UnknownLanguage {
            path: file.to_owned(),
        })?;
        let source = self.load(file)?;
        let shown = source.path.display().to_string();
        if line == 0 || line > source.lines {
            return Err(SourceError::LineOutOfRange {
                path: shown,
                line,
                lines: source.lines,
            });
        }
        let SourceFile { text, tree, .. } = source;
        let tree = tree
            .get_or_insert_with(|| parse(text, language, &shown))
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(Parsed {
            tree,
            text,
            language,
            shown,
        })
    }

    /// The path actually read for `file` (after the search), if it was found.
    pub fn resolved(&self, file: &str) -> Option<&Path> {
        match self.files.get(file) {
            Some(Ok(source)) => Some(&source.path),
            _ => None,
        }
    }

    /// The text of one line (1-based), for evidence in reports; None if unreadable.
    pub fn line_text(&mut self, file: &str, line: u32) -> Option<String> {
        let index = usize::try_from(line.checked_sub(1)?).ok()?;
        let source = self.load(file).ok()?;
        source.text.lines().nth(index).map(str::to_owned)
    }

    fn load(&mut self, file: &str) -> Result<&mut SourceFile, SourceError> {
        let search_dirs = &self.search_dirs;
        self.files
            .entry(file.to_owned())
            .or_insert_with(|| read_source(file, search_dirs))
            .as_mut()
            .map_err(|error| error.clone())
    }
}

/// Reads `file` as is, or else under each search folder with the longest trailing part of
/// its path that exists there. The error names the path as asked, with why it failed there.
fn read_source(file: &str, search_dirs: &[PathBuf]) -> Result<SourceFile, SourceError> {
    let as_is = PathBuf::from(file);
    let first_error = match read_regular_file(&as_is) {
        Ok(bytes) => return Ok(SourceFile::new(as_is, &bytes)),
        Err(error) => error,
    };
    let parts: Vec<&std::ffi::OsStr> = Path::new(file)
        .components()
        .filter_map(|component| match component {
            Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    for dir in search_dirs {
        for start in 0..parts.len() {
            let candidate: PathBuf = std::iter::once(dir.as_os_str())
                .chain(parts[start..].iter().copied())
                .collect();
            if let Ok(bytes) = read_regular_file(&candidate) {
                return Ok(SourceFile::new(candidate, &bytes));
            }
        }
    }
    Err(SourceError::Unreadable {
        path: file.to_owned(),
        why: io_reason(&first_error),
    })
}

/// No source file is this large; a bigger "source" is a mistake (a data file, a device),
/// and reading it would only exhaust memory.
const MAX_SOURCE_BYTES: u64 = 256 << 20;

/// The bytes of a plain file: a folder matching a path suffix, a FIFO or a device named like
/// a source is not one, and reading those would fail late or never end.
fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    if !metadata.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    if metadata.len() > MAX_SOURCE_BYTES {
        return Err(std::io::Error::other(
            "larger than 256 MiB, not a source file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SOURCE_BYTES).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// An I/O error's text without the "(os error N)" suffix, which says nothing to a user.
fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    match text.find(" (os error ") {
        Some(at) => text[..at].to_owned(),
        None => text,
    }
}

impl SourceFile {
    fn new(path: PathBuf, bytes: &[u8]) -> SourceFile {
        // Sources with Latin-1 comments are common in old Fortran: decode lossily rather
        // than refuse them (only rows matter to the analysis).
        let text = String::from_utf8_lossy(bytes).into_owned();
        let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
        SourceFile {
            path,
            text,
            lines,
            tree: None,
        }
    }
}

pub(super) fn parse(text: &str, language: Language, shown: &str) -> Result<Tree, SourceError> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|error| SourceError::Parse {
            path: shown.to_owned(),
            why: format!("the {} grammar cannot be loaded: {error}", language.name()),
        })?;
    // ERROR nodes are fine: only the target's enclosing function has to be readable.
    parser.parse(text, None).ok_or_else(|| SourceError::Parse {
        path: shown.to_owned(),
        why: format!("the {} parser gave up", language.name()),
    })
}

/// The program point of `line` in a parsed file, or None when no function spans it.
fn point_in_tree(
    tree: &Tree,
    text: &str,
    language: Language,
    file: &str,
    line: u32,
) -> Option<ProgramPoint> {
    let source = text.as_bytes();
    let function = innermost_function(tree.root_node(), line, language)?;
    Some(ProgramPoint {
        file: file.to_owned(),
        function: function_name(function, language, source),
        function_lines: (first_line(function), last_line(function)),
        line,
        steps: steps_to(function, line, language, source),
    })
}

// ---------------------------------------------------------------------------------------
// Lines of nodes. tree-sitter rows are 0-based; a node that ends at column 0 ends with the
// previous line's newline, and that next line is not part of it.

fn row_to_line(row: usize) -> u32 {
    u32::try_from(row).unwrap_or(u32::MAX - 1).saturating_add(1)
}

pub(super) fn first_line(node: Node) -> u32 {
    row_to_line(node.start_position().row)
}

fn last_line(node: Node) -> u32 {
    let (start, end) = (node.start_position(), node.end_position());
    if end.column == 0 && end.row > start.row {
        row_to_line(end.row - 1)
    } else {
        row_to_line(end.row)
    }
}

fn spans(node: Node, line: u32) -> bool {
    first_line(node) <= line && line <= last_line(node)
}

pub(super) fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.children(&mut cursor).collect()
}

/// The children of `node` whose lines include `line`. The searches below go down one path
/// of a tree whose nodes can have thousands of children (a big `switch`, a generated
/// table): the cursor skips to the first child that reaches the line, and the scan stops at
/// the first child that starts after it.
pub(super) fn children_spanning(node: Node, line: u32) -> Vec<Node> {
    let mut found = Vec::new();
    let Some(row) = line
        .checked_sub(1)
        .and_then(|row| usize::try_from(row).ok())
    else {
        return found;
    };
    let mut cursor = node.walk();
    if cursor
        .goto_first_child_for_point(Point { row, column: 0 })
        .is_none()
    {
        return found;
    }
    loop {
        let child = cursor.node();
        if first_line(child) > line {
            break;
        }
        if spans(child, line) {
            found.push(child);
        }
        if !cursor.goto_next_sibling() {
            break;
        }
    }
    found
}

/// Tokens that are only structure: a line holding nothing else holds no code (no call can
/// be there), so it does not pull the line into the part they belong to.
const STRUCTURAL_TOKENS: &[&str] = &[
    "{", "}", "(", ")", "[", "]", ";", ",", ":", "else", "then", "comment",
];

/// Whether `node` has a token of real code on `line`. Iterative: expression trees can be
/// deeper than a thread's stack.
fn has_code_on(node: Node, line: u32, source: &[u8]) -> bool {
    let mut pending = vec![node];
    while let Some(node) = pending.pop() {
        if !spans(node, line) || node.is_extra() {
            continue;
        }
        if node.child_count() == 0 {
            let blank = node
                .utf8_text(source)
                .map(|text| text.trim().is_empty())
                .unwrap_or(true);
            if !node.is_missing() && !blank && !STRUCTURAL_TOKENS.contains(&node.kind()) {
                return true;
            }
        } else {
            pending.extend(children_spanning(node, line));
        }
    }
    false
}

// ---------------------------------------------------------------------------------------
// Functions.

/// The innermost function definition spanning `line`. Definitions nest properly, so among
/// those that span the line the innermost is the one that starts last.
fn innermost_function(root: Node, line: u32, language: Language) -> Option<Node> {
    let mut best: Option<Node> = None;
    let mut pending = vec![root];
    while let Some(node) = pending.pop() {
        if !spans(node, line) {
            continue;
        }
        if is_function(node, language)
            && encloses(node, line)
            && best.is_none_or(|best| node.start_byte() >= best.start_byte())
        {
            best = Some(node);
        }
        pending.extend(children_spanning(node, line));
    }
    best
}

fn is_function(node: Node, language: Language) -> bool {
    match language {
        Language::C | Language::Cpp => match node.kind() {
            "function_definition" => !is_macro_block(node),
            "lambda_expression" => true,
            _ => false,
        },
        Language::Fortran => {
            matches!(
                node.kind(),
                "subroutine" | "function" | "program" | "module_procedure"
            )
        }
    }
}

/// Whether a C/C++ "function definition" is really a macro followed by a block, as in
/// `FOR_EACH_RANK(r) { send(r); }` inside a function body: the grammar, seeing no macro
/// definitions, reads `FOR_EACH_RANK(r)` as a K&R declarator. A definition nested in a
/// function without a class body in between can only be that (or a GCC nested function,
/// rare enough to read as a block too); its lines are the enclosing function's.
pub(super) fn is_macro_block(node: Node) -> bool {
    let mut ancestor = node.parent();
    while let Some(current) = ancestor {
        match current.kind() {
            "field_declaration_list" => return false,
            "function_definition" | "lambda_expression" => return true,
            _ => ancestor = current.parent(),
        }
    }
    false
}

/// Whether `line` belongs to the function `node` spans: always, except a lambda's first
/// line, which is the enclosing function's (see the module docs).
fn encloses(node: Node, line: u32) -> bool {
    node.kind() != "lambda_expression" || line > first_line(node)
}

fn function_name(node: Node, language: Language, source: &[u8]) -> Option<String> {
    let name = match language {
        Language::C | Language::Cpp => declarator_name(node)?,
        Language::Fortran => {
            let statement = children(node).into_iter().find(|child| {
                matches!(
                    child.kind(),
                    "subroutine_statement"
                        | "function_statement"
                        | "program_statement"
                        | "module_procedure_statement"
                )
            })?;
            statement
                .child_by_field_name("name")
                .or_else(|| children(statement).into_iter().find(|c| c.kind() == "name"))?
        }
    };
    let text = name.utf8_text(source).ok()?;
    let words: Vec<&str> = text.split_whitespace().collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The name node of a C/C++ function definition: the `declarator` of its innermost
/// `function_declarator`, under any pointer, reference or parenthesized declarators
/// (`int *f(void)`, `T& Solver::at(int)`; in `int (*pick(int kind))(int)` the outer
/// function declarator is the returned pointer's type, the inner one is `pick`'s). None for
/// lambdas, which have no name.
fn declarator_name(function: Node) -> Option<Node> {
    if function.kind() != "function_definition" {
        return None;
    }
    let mut name = None;
    let mut declarator = function.child_by_field_name("declarator");
    // Declarators nest a handful deep; the bound only guards against a malformed tree.
    for _ in 0..32 {
        let Some(current) = declarator else { break };
        if current.kind() == "function_declarator" {
            name = current.child_by_field_name("declarator");
        }
        declarator = match current.child_by_field_name("declarator") {
            Some(inner) => Some(inner),
            // C++'s reference_declarator and the parenthesized_declarator name no field:
            // their last named child is the inner declarator.
            None if current.kind().ends_with("_declarator") => current
                .named_child_count()
                .checked_sub(1)
                .and_then(|last| u32::try_from(last).ok())
                .and_then(|last| current.named_child(last)),
            None => None,
        };
    }
    name
}

// ---------------------------------------------------------------------------------------
// Loops and conditionals.

/// What a node is to the descent.
enum Role {
    Loop(&'static str),
    Conditional,
    /// A nested function: its lines are not the current function's code.
    Opaque,
    Transparent,
}

fn role(node: Node, language: Language) -> Role {
    match language {
        Language::C | Language::Cpp => match node.kind() {
            "for_statement" => Role::Loop("for"),
            "while_statement" => Role::Loop("while"),
            "do_statement" => Role::Loop("do-while"),
            "for_range_loop" => Role::Loop("range-for"),
            "if_statement" | "switch_statement" | "try_statement" => Role::Conditional,
            "function_definition" if is_macro_block(node) => Role::Transparent,
            "function_definition" | "lambda_expression" => Role::Opaque,
            _ => Role::Transparent,
        },
        Language::Fortran => match node.kind() {
            "do_loop" => Role::Loop(fortran_do_kind(node)),
            "forall_statement" => Role::Loop("forall"),
            "if_statement"
            | "select_case_statement"
            | "select_type_statement"
            | "select_rank_statement" => Role::Conditional,
            "subroutine" | "function" | "module_procedure" | "internal_procedures" => Role::Opaque,
            _ => Role::Transparent,
        },
    }
}

/// The kind of loop `node` is ("for", "while", "do-while", "range-for", "do", "do-while",
/// "do concurrent", "forall": the kinds of [`Step::Iteration`]), or None if it is no loop.
pub(super) fn loop_kind(node: Node, language: Language) -> Option<&'static str> {
    match role(node, language) {
        Role::Loop(kind) => Some(kind),
        Role::Conditional | Role::Opaque | Role::Transparent => None,
    }
}

fn fortran_do_kind(do_loop: Node) -> &'static str {
    let header = children(do_loop)
        .into_iter()
        .find(|child| child.kind() == "do_statement");
    let control = header
        .into_iter()
        .flat_map(children)
        .map(|child| child.kind());
    for kind in control {
        match kind {
            "while_statement" => return "do-while",
            "concurrent_statement" => return "do concurrent",
            _ => {}
        }
    }
    "do"
}

/// One part of a conditional: its condition or one arm, as the sibling nodes that make it
/// up (a Fortran arm is a run of statements, not one node) and the line offsets inside it
/// are counted from.
struct Part<'tree> {
    first_line: u32,
    nodes: Vec<Node<'tree>>,
}

impl Part<'_> {
    fn spans(&self, line: u32) -> bool {
        self.nodes.iter().any(|node| spans(*node, line))
    }

    fn has_code_on(&self, line: u32, source: &[u8]) -> bool {
        self.nodes
            .iter()
            .any(|node| has_code_on(*node, line, source))
    }
}

/// `if (c) A else if (d) B else C`: one clause per condition, nested as C nests them.
struct IfClause<'tree> {
    line: u32,
    condition: Part<'tree>,
    body: Part<'tree>,
}

enum Shape<'tree> {
    /// An if with its else-if clauses (Fortran's are flat in the tree; C's hold one clause
    /// and nest the next `if` inside the else part) and its final else.
    IfChain {
        kind: &'static str,
        clauses: Vec<IfClause<'tree>>,
        otherwise: Option<Part<'tree>>,
    },
    /// switch, select case / type / rank, try: an optional condition (arm 0) and flat arms.
    Arms {
        kind: &'static str,
        line: u32,
        condition: Option<Part<'tree>>,
        arms: Vec<Part<'tree>>,
    },
}

/// Which part of a shape holds the target: for an `IfChain`, `Condition(k)` and `Body(k)`
/// are clause `k`'s, `Body(clauses.len())` is the else part; for `Arms`, `Condition(0)` is
/// the condition and `Body(i)` is arm `i + 1`.
#[derive(Clone, Copy)]
enum Slot {
    Condition(usize),
    Body(usize),
}

impl<'tree> Shape<'tree> {
    fn parts(&self) -> Vec<(Slot, &Part<'tree>)> {
        match self {
            Shape::IfChain {
                clauses, otherwise, ..
            } => {
                let mut parts = Vec::new();
                for (index, clause) in clauses.iter().enumerate() {
                    parts.push((Slot::Condition(index), &clause.condition));
                    parts.push((Slot::Body(index), &clause.body));
                }
                if let Some(otherwise) = otherwise {
                    parts.push((Slot::Body(clauses.len()), otherwise));
                }
                parts
            }
            Shape::Arms {
                condition, arms, ..
            } => {
                let mut parts: Vec<(Slot, &Part)> = condition
                    .iter()
                    .map(|part| (Slot::Condition(0), part))
                    .collect();
                parts.extend(
                    arms.iter()
                        .enumerate()
                        .map(|(index, arm)| (Slot::Body(index), arm)),
                );
                parts
            }
        }
    }

    /// The part that holds `line`: an arm with code on it, else the condition with code on
    /// it, else an arm or the condition whose lines span it (see the module docs).
    fn choose(&self, line: u32, source: &[u8]) -> Option<(Slot, &Part<'tree>)> {
        let mut parts = self.parts();
        parts.retain(|(_, part)| part.spans(line));
        // The code test walks down to the line: only pay for it when the line is shared.
        if parts.len() == 1 {
            return parts.first().copied();
        }
        // Arms before the condition, for one test of "holds the line".
        let find = |holds: &dyn Fn(&Part) -> bool| {
            let arm = parts
                .iter()
                .find(|(slot, part)| matches!(slot, Slot::Body(_)) && holds(part));
            arm.or_else(|| {
                parts
                    .iter()
                    .find(|(slot, part)| matches!(slot, Slot::Condition(_)) && holds(part))
            })
            .copied()
        };
        find(&|part| part.has_code_on(line, source)).or_else(|| find(&|_| true))
    }

    /// Emits the steps that lead into `slot` and moves `base` to that part's first line.
    fn enter(&self, slot: Slot, base: &mut u32, steps: &mut Vec<Step>) {
        match self {
            Shape::Arms {
                kind,
                line,
                condition,
                arms,
            } => {
                let (arm, part) = match slot {
                    Slot::Condition(_) => (0, condition.as_ref()),
                    Slot::Body(index) => (
                        u32::try_from(index + 1).unwrap_or(u32::MAX),
                        arms.get(index),
                    ),
                };
                steps.push(Step::Offset(line.saturating_sub(*base)));
                steps.push(Step::Arm {
                    line: *line,
                    arm,
                    kind,
                });
                *base = part.map_or(*line, |part| part.first_line);
            }
            Shape::IfChain {
                kind,
                clauses,
                otherwise,
            } => {
                let (Slot::Condition(target) | Slot::Body(target)) = slot;
                // Every clause before the target was false: the target is in its else part
                // (arm 2), which starts where the next clause (or the final else) starts.
                for (index, clause) in clauses.iter().enumerate().take(target) {
                    steps.push(Step::Offset(clause.line.saturating_sub(*base)));
                    steps.push(Step::Arm {
                        line: clause.line,
                        arm: 2,
                        kind,
                    });
                    *base = match clauses.get(index + 1) {
                        Some(next) => next.line,
                        None => otherwise
                            .as_ref()
                            .map_or(clause.line, |part| part.first_line),
                    };
                }
                if let Some(clause) = clauses.get(target) {
                    let (arm, part) = match slot {
                        Slot::Condition(_) => (0, &clause.condition),
                        Slot::Body(_) => (1, &clause.body),
                    };
                    steps.push(Step::Offset(clause.line.saturating_sub(*base)));
                    steps.push(Step::Arm {
                        line: clause.line,
                        arm,
                        kind,
                    });
                    *base = part.first_line;
                }
            }
        }
    }
}

/// A conditional's parts. None when the node is not one this code knows the shape of.
fn shape<'tree>(node: Node<'tree>, language: Language) -> Option<Shape<'tree>> {
    let line = first_line(node);
    let part = |node: Node<'tree>| Part {
        first_line: first_line(node),
        nodes: vec![node],
    };
    match (language, node.kind()) {
        (Language::C | Language::Cpp, "if_statement") => {
            let constexpr = children(node)
                .iter()
                .any(|child| child.kind() == "constexpr");
            let condition = node.child_by_field_name("condition")?;
            let consequence = node.child_by_field_name("consequence")?;
            Some(Shape::IfChain {
                kind: if constexpr { "if constexpr" } else { "if" },
                clauses: vec![IfClause {
                    line,
                    condition: part(condition),
                    body: part(consequence),
                }],
                otherwise: node.child_by_field_name("alternative").map(part),
            })
        }
        (Language::C | Language::Cpp, "switch_statement") => {
            let body = node.child_by_field_name("body")?;
            let arms = children(body)
                .into_iter()
                .filter(|child| child.kind() == "case_statement")
                .map(part)
                .collect();
            Some(Shape::Arms {
                kind: "switch",
                line,
                condition: node.child_by_field_name("condition").map(part),
                arms,
            })
        }
        (Language::Cpp, "try_statement") => {
            let body = node.child_by_field_name("body")?;
            let handlers = children(node)
                .into_iter()
                .filter(|child| child.kind() == "catch_clause");
            Some(Shape::Arms {
                kind: "try",
                line,
                condition: None,
                arms: std::iter::once(body).chain(handlers).map(part).collect(),
            })
        }
        (Language::Fortran, "if_statement") => fortran_if(node),
        (
            Language::Fortran,
            "select_case_statement" | "select_type_statement" | "select_rank_statement",
        ) => {
            let (kind, arm_kind) = match node.kind() {
                "select_case_statement" => ("select case", "case_statement"),
                "select_type_statement" => ("select type", "type_statement"),
                _ => ("select rank", "rank_statement"),
            };
            let parts = children(node);
            Some(Shape::Arms {
                kind,
                line,
                condition: parts
                    .iter()
                    .find(|child| child.kind() == "selector")
                    .copied()
                    .map(part),
                arms: parts
                    .into_iter()
                    .filter(|child| child.kind() == arm_kind)
                    .map(part)
                    .collect(),
            })
        }
        _ => None,
    }
}

/// A Fortran if: `if (c) then / body / else if (d) then / body / else / body / end if`, or
/// the one-line logical `if (c) statement`. The tree holds the first clause's condition
/// and statements directly, then `elseif_clause`s and an `else_clause`.
fn fortran_if(node: Node) -> Option<Shape> {
    let mut clauses = vec![fortran_clause(node, first_line(node))?];
    let mut otherwise = None;
    for child in children(node) {
        match child.kind() {
            "elseif_clause" => clauses.push(fortran_clause(child, first_line(child))?),
            "else_clause" => {
                otherwise = Some(Part {
                    first_line: first_line(child),
                    nodes: vec![child],
                });
            }
            _ => {}
        }
    }
    Some(Shape::IfChain {
        kind: "if",
        clauses,
        otherwise,
    })
}

/// One condition and its statements: those that follow the condition up to the next clause
/// or `end if`. The arm starts on the `then` line, as a C arm starts at its `{`; a logical
/// if has no `then`, and its arm is its statement.
fn fortran_clause(node: Node, line: u32) -> Option<IfClause> {
    let parts = children(node);
    let at = parts
        .iter()
        .position(|child| child.kind() == "parenthesized_expression")?;
    let condition = parts[at];
    let then = parts[at..].iter().find(|child| child.kind() == "then");
    let statements: Vec<Node> = parts[at + 1..]
        .iter()
        .copied()
        .filter(|child| {
            child.is_named()
                && !matches!(
                    child.kind(),
                    "elseif_clause" | "else_clause" | "end_if_statement"
                )
        })
        .collect();
    let body_line = then
        .map(|then| first_line(*then))
        .or_else(|| statements.first().map(|statement| first_line(*statement)))
        .unwrap_or(line);
    Some(IfClause {
        line,
        condition: Part {
            first_line: first_line(condition),
            nodes: vec![condition],
        },
        body: Part {
            first_line: body_line,
            nodes: statements,
        },
    })
}

// ---------------------------------------------------------------------------------------
// The descent.

/// Among sibling nodes, the one that holds `line`: the first that has code on it, else the
/// first that spans it (a line may end one statement and start the next).
fn pick<'tree>(nodes: &[Node<'tree>], line: u32, source: &[u8]) -> Option<Node<'tree>> {
    let spanning: Vec<Node> = nodes
        .iter()
        .copied()
        .filter(|node| spans(*node, line))
        .collect();
    // The code test walks down to the line: only pay for it when the line is shared.
    if spanning.len() == 1 {
        return spanning.first().copied();
    }
    spanning
        .iter()
        .copied()
        .find(|node| has_code_on(*node, line, source))
        .or_else(|| spanning.first().copied())
}

/// The steps from `function`'s first line down to `line`. A loop, not recursion: the path
/// runs through every expression node around the target, and those can nest deeply.
fn steps_to(function: Node, line: u32, language: Language, source: &[u8]) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut base = first_line(function);
    let mut nodes = children_spanning(function, line);
    while let Some(node) = pick(&nodes, line, source) {
        match role(node, language) {
            Role::Opaque => break,
            Role::Transparent => nodes = children_spanning(node, line),
            Role::Loop(kind) => {
                let start = first_line(node);
                steps.push(Step::Offset(start.saturating_sub(base)));
                steps.push(Step::Iteration { line: start, kind });
                base = start;
                nodes = children_spanning(node, line);
            }
            Role::Conditional => {
                let shape = shape(node, language);
                let chosen = shape
                    .as_ref()
                    .and_then(|shape| Some((shape, shape.choose(line, source)?)));
                match chosen {
                    Some((shape, (slot, part))) => {
                        shape.enter(slot, &mut base, &mut steps);
                        nodes = part.nodes.clone();
                    }
                    // In the construct but in none of its parts (`end if`, a switch's
                    // braces), or a shape this code cannot read: the line's own offset.
                    None => break,
                }
            }
        }
    }
    steps.push(Step::Offset(line.saturating_sub(base)));
    steps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::point::{Relation, compare};
    use proptest::prelude::*;

    fn testdata(name: &str) -> String {
        format!("{}/src/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    fn read_testdata(name: &str) -> String {
        std::fs::read_to_string(testdata(name)).expect("test fixture")
    }

    use crate::testing::line_of;

    /// The point of the line holding `marker` in a fixture file, through a SourceIndex.
    fn point_of(index: &mut SourceIndex, name: &str, marker: &str) -> ProgramPoint {
        let path = testdata(name);
        let line = line_of(&read_testdata(name), marker);
        index
            .point(&path, line)
            .unwrap_or_else(|error| panic!("{marker:?}: {error}"))
    }

    /// The point of the line holding `marker` in a snippet.
    fn snippet_point(language: Language, text: &str, marker: &str) -> ProgramPoint {
        let tree = parse(text, language, "snippet").expect("parses");
        let line = line_of(text, marker);
        point_in_tree(&tree, text, language, "snippet", line)
            .unwrap_or_else(|| panic!("{marker:?} is not in a function"))
    }

    fn needs_iteration(line: u32, kind: &'static str, then: Relation) -> Relation {
        Relation::NeedsIteration {
            line,
            kind,
            if_same_iteration: Box::new(then),
        }
    }

    fn incomparable(line: u32, kind: &'static str, arms: (u32, u32)) -> Relation {
        Relation::Incomparable { line, kind, arms }
    }

    // ---- The paper's Figure 1 --------------------------------------------------------

    #[test]
    fn poisson_fixture_has_the_papers_line_numbers() {
        let text = read_testdata("poisson.c");
        let expected = [
            ("void poisson(", 1),
            ("while (norm > TOLERANCE", 4),
            ("exchange_band(", 5),
            ("sweep_band(", 6),
            ("if (norm <= TOLERANCE)", 14),
            ("handle_converged(", 15),
            ("} else {", 16),
            ("handle_not(", 17),
            ("it++", 20),
        ];
        for (marker, line) in expected {
            assert_eq!(line_of(&text, marker), line, "{marker}");
        }
    }

    #[test]
    fn poisson_points_are_the_papers_tuples() {
        let mut index = SourceIndex::new(Vec::new());
        let exchange = point_of(&mut index, "poisson.c", "exchange_band(");
        assert_eq!(exchange.function.as_deref(), Some("poisson"));
        assert_eq!(exchange.function_lines, (1, 23));
        assert_eq!(exchange.line, 5);
        // <(4-1), (iterCount), (5-4)>
        let while_loop = Step::Iteration {
            line: 4,
            kind: "while",
        };
        assert_eq!(
            exchange.steps,
            vec![Step::Offset(3), while_loop.clone(), Step::Offset(1)]
        );
        // <3, iterCount, 0^(in 10), 1>: the then arm starts on the if's line.
        let converged = point_of(&mut index, "poisson.c", "handle_converged(");
        let then_arm = Step::Arm {
            line: 14,
            arm: 1,
            kind: "if",
        };
        assert_eq!(
            converged.steps,
            vec![
                Step::Offset(3),
                while_loop.clone(),
                Step::Offset(10),
                then_arm,
                Step::Offset(1)
            ]
        );
        // <3, iterCount, 2^(in 10), 1>: the else arm starts at line 16, 17 is 1 past it.
        let not_converged = point_of(&mut index, "poisson.c", "handle_not(");
        let else_arm = Step::Arm {
            line: 14,
            arm: 2,
            kind: "if",
        };
        assert_eq!(
            not_converged.steps,
            vec![
                Step::Offset(3),
                while_loop,
                Step::Offset(10),
                else_arm,
                Step::Offset(1)
            ]
        );
        assert_eq!(
            not_converged.to_string(),
            "poisson@<3,it(while@4),10,br(if@14:2),1>"
        );
    }

    #[test]
    fn poisson_points_are_ordered_as_table_1_says() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "poisson.c", marker);
        let (five, six) = (at("exchange_band("), at("sweep_band("));
        let (fifteen, seventeen) = (at("handle_converged("), at("handle_not("));
        let after_loop = at("finish(u, n)");
        // (5) before (6) in one iteration; the counts decide otherwise.
        assert_eq!(
            compare(&five, &six),
            needs_iteration(4, "while", Relation::Before)
        );
        // (15) and (17) are never ordered in one iteration.
        assert_eq!(
            compare(&fifteen, &seventeen),
            needs_iteration(4, "while", incomparable(14, "if", (1, 2)))
        );
        assert_eq!(
            compare(&five, &fifteen),
            needs_iteration(4, "while", Relation::Before)
        );
        assert_eq!(
            compare(&seventeen, &five),
            needs_iteration(4, "while", Relation::After)
        );
        // Whatever the iteration, the loop comes before what follows it.
        assert_eq!(compare(&five, &after_loop), Relation::Before);
        assert_eq!(compare(&after_loop, &seventeen), Relation::After);
        assert_eq!(compare(&six, &six.clone()), Relation::Same);
    }

    #[test]
    fn a_second_function_in_the_file_is_its_own() {
        let mut index = SourceIndex::new(Vec::new());
        let reduce = point_of(&mut index, "poisson.c", "MPI_Allreduce(");
        assert_eq!(reduce.function.as_deref(), Some("get_norm"));
        assert_eq!(reduce.function_lines, (26, 33));
        assert_eq!(reduce.to_string(), "get_norm@<5>");
        let exchange = point_of(&mut index, "poisson.c", "exchange_band(");
        assert!(matches!(
            compare(&reduce, &exchange),
            Relation::Unrelated(_)
        ));
    }

    // ---- Loops -----------------------------------------------------------------------

    const LOOPS_C: &str = "\
void loops(int n) {
    prepare();
    for (int i = 0; i < n; i++) {
        first_in_loop(i);
        for (int j = 0; j < n; j++) {
            inner_a(i, j);
            inner_b(i, j);
        }
        second_in_loop(i);
    }
    do {
        body_line();
    } while (keep_going());
    while (!converged()) {
        iterate();
    }
    after_all();
}
";

    #[test]
    fn a_call_before_a_loop_is_before_every_call_in_it() {
        let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
        assert_eq!(
            compare(&at("prepare()"), &at("first_in_loop(")),
            Relation::Before
        );
        assert_eq!(compare(&at("prepare()"), &at("inner_b(")), Relation::Before);
        assert_eq!(
            compare(&at("after_all()"), &at("body_line()")),
            Relation::After
        );
    }

    #[test]
    fn two_lines_of_one_loop_need_the_iteration_count() {
        let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
        let (first, second) = (at("first_in_loop("), at("second_in_loop("));
        assert_eq!(
            compare(&first, &second),
            needs_iteration(3, "for", Relation::Before)
        );
        assert_eq!(
            compare(&second, &first),
            needs_iteration(3, "for", Relation::After)
        );
        // The header (condition and increment) runs each iteration: it is in the loop.
        let header = at("for (int i = 0");
        assert_eq!(
            header.steps[1],
            Step::Iteration {
                line: 3,
                kind: "for"
            }
        );
        assert_eq!(
            compare(&header, &first),
            needs_iteration(3, "for", Relation::Before)
        );
    }

    #[test]
    fn nested_loops_let_the_outer_offset_decide_first() {
        let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
        let (inner_a, inner_b) = (at("inner_a("), at("inner_b("));
        assert_eq!(
            inner_a.steps,
            vec![
                Step::Offset(2),
                Step::Iteration {
                    line: 3,
                    kind: "for"
                },
                Step::Offset(2),
                Step::Iteration {
                    line: 5,
                    kind: "for"
                },
                Step::Offset(1),
            ]
        );
        // Both loops' counts matter for two lines of the inner loop.
        assert_eq!(
            compare(&inner_a, &inner_b),
            needs_iteration(3, "for", needs_iteration(5, "for", Relation::Before))
        );
        // Against a line of the outer body only the outer count matters.
        assert_eq!(
            compare(&inner_b, &at("second_in_loop(")),
            needs_iteration(3, "for", Relation::Before)
        );
        assert_eq!(
            compare(&inner_a, &at("first_in_loop(")),
            needs_iteration(3, "for", Relation::After)
        );
    }

    #[test]
    fn a_do_while_condition_comes_after_its_body() {
        let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
        let condition = at("keep_going()");
        assert_eq!(
            condition.steps[1],
            Step::Iteration {
                line: 11,
                kind: "do-while"
            }
        );
        assert_eq!(
            compare(&condition, &at("body_line()")),
            needs_iteration(11, "do-while", Relation::After)
        );
        let while_condition = at("converged()");
        assert_eq!(
            while_condition.steps[1],
            Step::Iteration {
                line: 14,
                kind: "while"
            }
        );
        assert_eq!(
            compare(&while_condition, &at("iterate()")),
            needs_iteration(14, "while", Relation::Before)
        );
    }

    // ---- Conditionals ----------------------------------------------------------------

    const BRANCHES_C: &str = "\
int branches(int x) {
    if (check(x)) {
        on_true();
    } else if (big(x)) {
        on_big();
    } else {
        on_other();
    }
    switch (x) {
    case 1:
        case_one();
        break;
    case 2:
        case_two();
        break;
    default:
        case_default();
    }
    if (x) quick();
    after_if();
    return x;
}
";

    #[test]
    fn the_condition_comes_before_every_arm() {
        let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
        let condition = at("check(x)");
        assert_eq!(
            condition.steps[1],
            Step::Arm {
                line: 2,
                arm: 0,
                kind: "if"
            }
        );
        assert_eq!(compare(&condition, &at("on_true()")), Relation::Before);
        assert_eq!(compare(&condition, &at("on_other()")), Relation::Before);
        assert_eq!(compare(&at("on_big()"), &condition), Relation::After);
    }

    #[test]
    fn then_and_else_are_incomparable() {
        let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
        assert_eq!(
            compare(&at("on_true()"), &at("on_other()")),
            incomparable(2, "if", (1, 2))
        );
    }

    #[test]
    fn an_else_if_chain_nests_and_its_arms_are_pairwise_incomparable() {
        let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
        let (on_true, on_big, on_other) = (at("on_true()"), at("on_big()"), at("on_other()"));
        assert_eq!(compare(&on_true, &on_big), incomparable(2, "if", (1, 2)));
        assert_eq!(compare(&on_big, &on_other), incomparable(4, "if", (1, 2)));
        assert_eq!(compare(&on_other, &on_true), incomparable(2, "if", (2, 1)));
        assert_eq!(
            on_other.steps,
            vec![
                Step::Offset(1),
                Step::Arm {
                    line: 2,
                    arm: 2,
                    kind: "if"
                },
                Step::Offset(0),
                Step::Arm {
                    line: 4,
                    arm: 2,
                    kind: "if"
                },
                Step::Offset(1),
            ]
        );
        // The inner condition runs after the outer one failed, before its own arms.
        let inner_condition = at("big(x)");
        assert_eq!(compare(&inner_condition, &on_big), Relation::Before);
        assert_eq!(compare(&inner_condition, &on_other), Relation::Before);
        assert_eq!(
            compare(&inner_condition, &on_true),
            incomparable(2, "if", (2, 1))
        );
    }

    #[test]
    fn switch_cases_are_incomparable_arms() {
        let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
        let (one, two, default) = (at("case_one()"), at("case_two()"), at("case_default()"));
        assert_eq!(compare(&one, &two), incomparable(9, "switch", (1, 2)));
        assert_eq!(compare(&two, &default), incomparable(9, "switch", (2, 3)));
        assert_eq!(compare(&default, &one), incomparable(9, "switch", (3, 1)));
        assert_eq!(compare(&at("switch (x)"), &two), Relation::Before);
    }

    #[test]
    fn a_one_line_if_puts_the_call_in_its_arm() {
        let quick = snippet_point(Language::C, BRANCHES_C, "quick()");
        assert_eq!(
            quick.steps[1],
            Step::Arm {
                line: 19,
                arm: 1,
                kind: "if"
            }
        );
    }

    #[test]
    fn a_point_after_a_conditional_is_after_all_its_arms() {
        let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
        let after = at("after_if()");
        for arm in [
            "on_true()",
            "on_big()",
            "on_other()",
            "case_one()",
            "quick()",
        ] {
            assert_eq!(compare(&after, &at(arm)), Relation::After, "{arm}");
        }
    }

    // ---- C++ -------------------------------------------------------------------------

    #[test]
    fn methods_are_named_as_declared() {
        let mut index = SourceIndex::new(Vec::new());
        let in_class = point_of(&mut index, "solver.cpp", "smooth(i)");
        assert_eq!(in_class.function.as_deref(), Some("relax"));
        assert_eq!(in_class.function_lines, (6, 10));
        assert_eq!(in_class.to_string(), "relax@<1,it(for@7),1>");
        let out_of_line = point_of(&mut index, "solver.cpp", "update(value)");
        assert_eq!(out_of_line.function.as_deref(), Some("Solver::step"));
        assert_eq!(out_of_line.function_lines, (17, 36));
        assert_eq!(
            out_of_line.steps[1],
            Step::Iteration {
                line: 19,
                kind: "range-for"
            }
        );
    }

    #[test]
    fn declarators_are_unwrapped_to_the_name() {
        let text = "\
int *make_buffer(int n) {
    return alloc_ints(n);
}
double& Grid::at(int i) {
    return cell_ref(i);
}
bool Grid::operator()(int i) const {
    return test_cell(i);
}
Grid::~Grid() {
    release_all();
}
static int (*pick_handler(int kind))(int) {
    return lookup_handler(kind);
}
";
        let name = |marker| snippet_point(Language::Cpp, text, marker).function;
        assert_eq!(name("alloc_ints").as_deref(), Some("make_buffer"));
        assert_eq!(name("cell_ref").as_deref(), Some("Grid::at"));
        assert_eq!(name("test_cell").as_deref(), Some("Grid::operator()"));
        assert_eq!(name("release_all").as_deref(), Some("Grid::~Grid"));
        assert_eq!(name("lookup_handler").as_deref(), Some("pick_handler"));
    }

    #[test]
    fn a_lambda_is_its_own_function_after_its_first_line() {
        let mut index = SourceIndex::new(Vec::new());
        let send = point_of(&mut index, "solver.cpp", "send_to(rank)");
        assert_eq!(send.function, None);
        assert_eq!(send.function_lines, (22, 26));
        assert_eq!(
            send.steps,
            vec![
                Step::Offset(1),
                Step::Arm {
                    line: 23,
                    arm: 1,
                    kind: "if"
                },
                Step::Offset(1)
            ]
        );
        // The line that creates the lambda is the enclosing function's.
        let creation = point_of(&mut index, "solver.cpp", "auto visit =");
        assert_eq!(creation.function.as_deref(), Some("Solver::step"));
        assert!(matches!(compare(&send, &creation), Relation::Unrelated(_)));
    }

    #[test]
    fn try_and_catch_clauses_are_incomparable_arms() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.cpp", marker);
        let (body, handler, catch_all) =
            (at("communicate()"), at("report(error)"), at("abort_all()"));
        assert_eq!(compare(&body, &handler), incomparable(28, "try", (1, 2)));
        assert_eq!(
            compare(&catch_all, &handler),
            incomparable(28, "try", (3, 2))
        );
        let after = at("wait_all()");
        for point in [&body, &handler, &catch_all] {
            assert_eq!(compare(&after, point), Relation::After);
        }
        assert_eq!(compare(&at("visit(1)"), &body), Relation::Before);
    }

    #[test]
    fn template_functions_and_if_constexpr() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.cpp", marker);
        let reduce = at("reduce_one(item)");
        assert_eq!(reduce.function.as_deref(), Some("accumulate"));
        assert_eq!(
            reduce.steps[1],
            Step::Iteration {
                line: 41,
                kind: "range-for"
            }
        );
        let (wide, narrow) = (at("wide_path("), at("narrow_path("));
        assert_eq!(
            compare(&wide, &narrow),
            incomparable(44, "if constexpr", (1, 2))
        );
        assert_eq!(compare(&reduce, &wide), Relation::Before);
    }

    // ---- Fortran ---------------------------------------------------------------------

    #[test]
    fn fortran_do_loops() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.f90", marker);
        let (setup, exchange, sweep) = (
            at("call setup(n)"),
            at("call exchange(i)"),
            at("call sweep(i)"),
        );
        assert_eq!(setup.function.as_deref(), Some("iterate"));
        assert_eq!(setup.function_lines, (4, 40));
        assert_eq!(exchange.to_string(), "iterate@<5,it(do@9),1>");
        assert_eq!(compare(&setup, &exchange), Relation::Before);
        assert_eq!(
            compare(&exchange, &sweep),
            needs_iteration(9, "do", Relation::Before)
        );
        let (step, increment) = (at("call step(it)"), at("it = it + 1"));
        assert_eq!(
            compare(&increment, &step),
            needs_iteration(29, "do-while", Relation::After)
        );
        assert_eq!(
            compare(&at("do while"), &step),
            needs_iteration(29, "do-while", Relation::Before)
        );
    }

    #[test]
    fn fortran_if_chains_nest_like_c() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.f90", marker);
        let (finish, refine, retry) =
            (at("call finish()"), at("call refine()"), at("call retry()"));
        assert_eq!(compare(&finish, &refine), incomparable(13, "if", (1, 2)));
        assert_eq!(compare(&refine, &retry), incomparable(15, "if", (1, 2)));
        assert_eq!(compare(&retry, &finish), incomparable(13, "if", (2, 1)));
        // The same shape as C's `else if`: arm 2 of the outer if holds the inner if.
        assert_eq!(
            retry.steps,
            vec![
                Step::Offset(9),
                Step::Arm {
                    line: 13,
                    arm: 2,
                    kind: "if"
                },
                Step::Offset(0),
                Step::Arm {
                    line: 15,
                    arm: 2,
                    kind: "if"
                },
                Step::Offset(1),
            ]
        );
        let inner_condition = at("else if (n > 10)");
        assert_eq!(compare(&inner_condition, &refine), Relation::Before);
        assert_eq!(
            compare(&inner_condition, &finish),
            incomparable(13, "if", (2, 1))
        );
        assert_eq!(
            compare(&at("if (converged) then"), &finish),
            Relation::Before
        );
        // `end if` closes every arm.
        let end_if = at("end if");
        for arm in [&finish, &refine, &retry] {
            assert_eq!(compare(&end_if, arm), Relation::After);
        }
        // A logical if: the call is in its arm.
        let nothing = at("call nothing()");
        assert_eq!(
            nothing.steps[1],
            Step::Arm {
                line: 33,
                arm: 1,
                kind: "if"
            }
        );
    }

    #[test]
    fn fortran_select_case_arms_are_incomparable() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.f90", marker);
        let (one, few, many) = (at("call one()"), at("call few()"), at("call many()"));
        assert_eq!(compare(&one, &few), incomparable(20, "select case", (1, 2)));
        assert_eq!(
            compare(&many, &few),
            incomparable(20, "select case", (3, 2))
        );
        assert_eq!(compare(&at("select case (n)"), &many), Relation::Before);
    }

    #[test]
    fn fortran_internal_procedures_and_programs_are_functions() {
        let mut index = SourceIndex::new(Vec::new());
        let mut at = |marker| point_of(&mut index, "solver.f90", marker);
        let inner = at("norm = m * 2");
        assert_eq!(inner.function.as_deref(), Some("norm"));
        assert_eq!(inner.function_lines, (36, 39));
        assert_eq!(inner.steps, vec![Step::Offset(2)]);
        let main = at("call iterate(3, done)");
        assert_eq!(main.function.as_deref(), Some("main"));
        assert_eq!(main.function_lines, (43, 47));
        // The host's own lines end before `contains`.
        assert_eq!(
            compare(&at("call report("), &at("call sweep(i)")),
            Relation::After
        );
    }

    #[test]
    fn fortran_loop_and_select_kinds() {
        let text = "\
subroutine kinds(p, n)
  do concurrent (i = 1:n)
    call in_concurrent(i)
  end do
  forall (i = 1:n)
    x(i) = in_forall(i)
  end forall
  do
    call in_endless()
  end do
  select type (p)
  type is (integer)
    call is_integer()
  class default
    call is_other()
  end select
end subroutine kinds
";
        let at = |marker| snippet_point(Language::Fortran, text, marker);
        assert_eq!(
            at("in_concurrent").steps[1],
            Step::Iteration {
                line: 2,
                kind: "do concurrent"
            }
        );
        assert_eq!(
            at("in_forall").steps[1],
            Step::Iteration {
                line: 5,
                kind: "forall"
            }
        );
        assert_eq!(
            at("in_endless").steps[1],
            Step::Iteration {
                line: 8,
                kind: "do"
            }
        );
        assert_eq!(
            compare(&at("is_integer"), &at("is_other")),
            incomparable(11, "select type", (1, 2))
        );
    }

    #[test]
    fn simple_fixed_form_fortran_is_read() {
        let text = "\
      subroutine old(n)
      integer n, i
      do 10 i = 1, n
         call work(i)
 10   continue
      call done()
      end
";
        assert_eq!(Language::from_path("legacy/old.f"), Some(Language::Fortran));
        let at = |marker| snippet_point(Language::Fortran, text, marker);
        let work = at("call work(i)");
        assert_eq!(work.function.as_deref(), Some("old"));
        assert_eq!(work.to_string(), "old@<2,it(do@3),1>");
        assert_eq!(compare(&work, &at("call done()")), Relation::Before);
    }

    #[test]
    fn preprocessor_blocks_are_transparent() {
        let fortran = "\
subroutine s(n)
#ifdef USE_MPI
  call mpi_barrier(comm, ierr)
#endif
  do i = 1, n
#if DEBUG
    call dbg(i)
#endif
    call work(i)
  end do
end subroutine s
";
        let at = |marker| snippet_point(Language::Fortran, fortran, marker).to_string();
        assert_eq!(at("mpi_barrier"), "s@<2>");
        assert_eq!(at("dbg(i)"), "s@<4,it(do@5),2>");
        assert_eq!(at("work(i)"), "s@<4,it(do@5),4>");
        let c = "\
void s(int n) {
    for (int i = 0; i < n; i++) {
#ifdef DEBUG
        dbg(i);
#endif
        work(i);
    }
}
";
        let at = |marker| snippet_point(Language::C, c, marker).to_string();
        assert_eq!(at("dbg(i)"), "s@<1,it(for@2),2>");
        assert_eq!(at("work(i)"), "s@<1,it(for@2),4>");
    }

    // ---- Files and errors ------------------------------------------------------------

    #[test]
    fn languages_by_extension() {
        assert_eq!(Language::from_path("/src/a.c"), Some(Language::C));
        assert_eq!(Language::from_path("a.h"), Some(Language::Cpp));
        assert_eq!(Language::from_path("a.C"), Some(Language::Cpp));
        assert_eq!(Language::from_path("dir.d/a.cxx"), Some(Language::Cpp));
        assert_eq!(Language::from_path("a.F90"), Some(Language::Fortran));
        assert_eq!(Language::from_path("a.f"), Some(Language::Fortran));
        assert_eq!(Language::from_path("a.py"), None);
        assert_eq!(Language::from_path("Makefile"), None);
        assert_eq!(Language::from_path("a.c.orig"), None);
    }

    #[test]
    fn an_unreadable_file_says_where_to_point() {
        let mut index = SourceIndex::new(Vec::new());
        let error = index.point("/nonexistent/strata/solver.c", 3).unwrap_err();
        assert!(matches!(error, SourceError::Unreadable { .. }), "{error:?}");
        let message = error.to_string();
        assert!(
            message.starts_with("cannot read /nonexistent/strata/solver.c: "),
            "{message}"
        );
        assert!(message.contains("--source-dir"), "{message}");
        assert!(!message.contains("os error"), "{message}");
        assert!(!message.contains('\n'), "{message}");
        assert_eq!(index.resolved("/nonexistent/strata/solver.c"), None);
        assert_eq!(index.line_text("/nonexistent/strata/solver.c", 1), None);
    }

    #[test]
    fn a_folder_named_like_a_source_is_unreadable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("looks_like.c");
        std::fs::create_dir(&folder).expect("mkdir");
        let mut index = SourceIndex::new(vec![dir.path().to_owned()]);
        let error = index.point(folder.to_str().expect("utf-8"), 1).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
    }

    #[test]
    fn an_unknown_language_is_refused_by_name() {
        let mut index = SourceIndex::new(Vec::new());
        let error = index.point("/src/model.py", 1).unwrap_err();
        assert_eq!(
            error,
            SourceError::UnknownLanguage {
                path: "/src/model.py".to_owned()
            }
        );
        assert!(error.to_string().contains("/src/model.py"));
    }

    #[test]
    fn lines_outside_functions_and_past_the_end_are_errors() {
        let mut index = SourceIndex::new(Vec::new());
        let path = testdata("poisson.c");
        let comment = line_of(&read_testdata("poisson.c"), "The reduction");
        let error = index.point(&path, comment).unwrap_err();
        assert!(matches!(error, SourceError::NotInFunction { line, .. } if line == comment));
        assert!(error.to_string().contains("poisson.c"), "{error}");
        let error = index.point(&path, 34).unwrap_err();
        assert!(
            matches!(
                error,
                SourceError::LineOutOfRange {
                    line: 34,
                    lines: 33,
                    ..
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("33 lines"), "{error}");
        assert!(matches!(
            index.point(&path, 0),
            Err(SourceError::LineOutOfRange { .. })
        ));
        // A module's specification part is not in a procedure.
        let fortran = testdata("solver.f90");
        assert!(matches!(
            index.point(&fortran, 2),
            Err(SourceError::NotInFunction { .. })
        ));
    }

    #[test]
    fn search_dirs_find_the_longest_trailing_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("proj/src");
        std::fs::create_dir_all(&nested).expect("mkdir");
        std::fs::copy(testdata("poisson.c"), nested.join("poisson.c")).expect("copy");
        // A shorter suffix matches too, with other content: the longer one must win.
        std::fs::write(
            dir.path().join("poisson.c"),
            "int other(void) {\n  return 0;\n}\n",
        )
        .expect("write");
        let mut index = SourceIndex::new(vec![PathBuf::from("/nonexistent"), dir.path().into()]);
        let dwarf_path = "/build/home/user/proj/src/poisson.c";
        let point = index
            .point(dwarf_path, 5)
            .expect("found under the search dir");
        assert_eq!(point.file, dwarf_path);
        assert_eq!(point.function.as_deref(), Some("poisson"));
        assert_eq!(
            index.resolved(dwarf_path),
            Some(nested.join("poisson.c").as_path())
        );
        assert_eq!(
            index.line_text(dwarf_path, 5).as_deref(),
            Some("        exchange_band(u, n, rank, size);")
        );
        assert_eq!(index.line_text(dwarf_path, 0), None);
        assert_eq!(index.line_text(dwarf_path, 999), None);
    }

    #[test]
    fn a_failure_is_cached() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("late.c");
        let file = path.to_str().expect("utf-8 temp path");
        let mut index = SourceIndex::new(Vec::new());
        assert!(matches!(
            index.point(file, 2),
            Err(SourceError::Unreadable { .. })
        ));
        std::fs::write(&path, "void late(void) {\n  work();\n}\n").expect("write");
        assert!(matches!(
            index.point(file, 2),
            Err(SourceError::Unreadable { .. })
        ));
        // A fresh index reads it.
        let point = SourceIndex::new(Vec::new())
            .point(file, 2)
            .expect("readable now");
        assert_eq!(point.function.as_deref(), Some("late"));
    }

    #[test]
    fn unknown_macros_do_not_hide_functions() {
        let text = "\
#define API __attribute__((visibility(\"default\")))
API int exported(int x) {
    return forward(x);
}
BEGIN_DECLS
int looping(void) {
    for (;;) { spin(); }
}
END_DECLS
static void sender(void) NOTHROW {
    FOR_EACH_RANK(r) {
        send(r);
    }
    after_ranks();
}
";
        let at = |marker| snippet_point(Language::C, text, marker);
        assert_eq!(at("forward(x)").function.as_deref(), Some("exported"));
        assert_eq!(at("spin()").function.as_deref(), Some("looping"));
        assert_eq!(
            at("spin()").steps[1],
            Step::Iteration {
                line: 7,
                kind: "for"
            }
        );
        // The macro's block is the enclosing function's code, not a function of its own.
        let (send, after) = (at("send(r)"), at("after_ranks()"));
        assert_eq!(send.function.as_deref(), Some("sender"));
        assert_eq!(compare(&send, &after), Relation::Before);
    }

    #[test]
    fn a_wrecked_function_is_an_error_not_a_crash() {
        // An unbalanced parenthesis swallows the next function into the parser's error
        // recovery: the line has no readable enclosing function.
        let text = "void broken( {\n  garbage here ;;; ))\n}\nvoid fine(void) {\n  work();\n}\n";
        let tree = parse(text, Language::C, "snippet").expect("parses");
        for line in 1..=6 {
            assert_eq!(
                point_in_tree(&tree, text, Language::C, "snippet", line),
                None
            );
        }
    }

    #[test]
    fn bad_bytes_are_no_crash() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Latin-1 in a comment: decoded lossily, the code is still read.
        let latin1 = dir.path().join("latin1.f90");
        let mut bytes = b"! r\xe9solution\nsubroutine s()\n  call t()\nend subroutine s\n".to_vec();
        std::fs::write(&latin1, &bytes).expect("write");
        let mut index = SourceIndex::new(Vec::new());
        let point = index
            .point(latin1.to_str().expect("utf-8"), 3)
            .expect("point");
        assert_eq!(point.function.as_deref(), Some("s"));
        // Binary noise under a source name: an error or a point, never a panic.
        bytes = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let noise = dir.path().join("noise.cpp");
        std::fs::write(&noise, &bytes).expect("write");
        let noise = noise.to_str().expect("utf-8");
        let lines = u32::try_from(String::from_utf8_lossy(&bytes).lines().count()).expect("small");
        for line in (1..=lines).step_by(
            std::env::var("STEP")
                .map(|s| s.parse().unwrap())
                .unwrap_or(1),
        ) {
            let _ = index.point(noise, line);
        }
    }

    #[test]
    fn deep_nesting_does_not_exhaust_the_stack() {
        // Test threads have small stacks: the walks must be loops, not recursion.
        const DEPTH: u32 = 3000;
        const TERMS: usize = 20_000;
        let mut text = String::from("void deep(int x) {\n");
        text += &"if (x) {\n".repeat(DEPTH as usize);
        text += "innermost();\n";
        text += &"}\n".repeat(DEPTH as usize);
        text += "}\nint sum(int a) {\n  return a\n";
        text += &"    + a\n".repeat(TERMS);
        text += "    + last_term(a);\n}\n";
        let innermost = snippet_point(Language::C, &text, "innermost()");
        // An offset and an arm per if, and the last offset.
        assert_eq!(innermost.steps.len(), 2 * DEPTH as usize + 1);
        assert_eq!(
            innermost.to_string().matches("br(if@").count(),
            DEPTH as usize
        );
        let last_term = snippet_point(Language::C, &text, "last_term(a)");
        assert_eq!(last_term.function.as_deref(), Some("sum"));
        assert_eq!(last_term.steps, vec![Step::Offset(1 + TERMS as u32 + 1)]);
    }

    // ---- Properties over every line of the fixtures ----------------------------------

    /// Every line of the fixtures that has a point.
    fn fixture_points() -> Vec<ProgramPoint> {
        let mut index = SourceIndex::new(Vec::new());
        let mut points = Vec::new();
        for name in ["poisson.c", "solver.cpp", "solver.f90"] {
            let path = testdata(name);
            let lines = u32::try_from(read_testdata(name).lines().count()).expect("small");
            points.extend((1..=lines).filter_map(|line| index.point(&path, line).ok()));
        }
        points
    }

    #[test]
    fn only_lines_outside_functions_lack_points() {
        // Includes, blank lines and comments between functions, a class's declarations,
        // a template head, a module's specification part and its end.
        let outside: [(&str, Vec<u32>); 3] = [
            ("poisson.c", vec![24, 25]),
            (
                "solver.cpp",
                [1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 37, 38].into(),
            ),
            ("solver.f90", vec![1, 2, 3, 41, 42]),
        ];
        let mut index = SourceIndex::new(Vec::new());
        for (name, expected) in outside {
            let path = testdata(name);
            let lines = u32::try_from(read_testdata(name).lines().count()).expect("small");
            let mut missing = Vec::new();
            for line in (1..=lines).step_by(
                std::env::var("STEP")
                    .map(|s| s.parse().unwrap())
                    .unwrap_or(1),
            ) {
                match index.point(&path, line) {
                    Ok(point) => assert_eq!(point.line, line),
                    Err(SourceError::NotInFunction { .. }) => missing.push(line),
                    Err(error) => panic!("{error}"),
                }
            }
            assert_eq!(missing, expected, "{name}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn fixture_points_compare_consistently(
            (a, b, c) in {
                let points = fixture_points();
                let pick = proptest::sample::select(points);
                (pick.clone(), pick.clone(), pick)
            }
        ) {
            prop_assert_eq!(compare(&a, &a), Relation::Same);
            let forward = compare(&a, &b);
            prop_assert_eq!(compare(&b, &a), forward.reversed());
            // Before means earlier in the text: line offsets never run backwards, and a
            // condition precedes its arms.
            if forward == Relation::Before {
                prop_assert!(a.line <= b.line, "{} before {}", a, b);
                if compare(&b, &c) == Relation::Before {
                    prop_assert_eq!(compare(&a, &c), Relation::Before);
                }
            }
            if a.function_lines == b.function_lines && a.file == b.file {
                prop_assert!(!matches!(forward, Relation::Unrelated(_)), "{} vs {}", a, b);
            }
        }
    }
}
