//! C and C++ declarations: scopes searched outwards from a use, declarators, integer types
//! and typedefs, `const` values and `#define`s, members of a method's class.

use super::analysis::{Analysis, FileFacts};
use super::declarations::{Declared, TypeClass};
use super::step::{StepExpression, c_integer};
use crate::source::constructs::is_macro_block;
use crate::source::functions::innermost_function_declarator;
use crate::source::language::Language;
use crate::source::syntax::{children, first_line};
use tree_sitter::Node;

/// How deep typedef chains are followed (`typedef a b; typedef b c;`): a guard against a
/// cycle in broken code, far above what real code has.
const TYPEDEF_DEPTH: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum DeclaratorShape {
    Plain,
    Pointer,
    Array,
}

impl<'tree> Analysis<'_, 'tree> {
    pub(super) fn c_declaration(&self, name: &str, at: Node<'tree>) -> Option<Declared> {
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
                initializer.and_then(|value| self.literal_value(value))
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
    pub(super) fn declarator_name(&self, declarator: Node) -> Option<(String, DeclaratorShape)> {
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
    pub(super) fn define(&self, name: &str) -> Option<i128> {
        if !matches!(self.language, Language::C | Language::Cpp) {
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

/// The parameter list of a function definition: the innermost function declarator's.
fn function_parameters(function: Node) -> Option<Node> {
    innermost_function_declarator(function)?.child_by_field_name("parameters")
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
