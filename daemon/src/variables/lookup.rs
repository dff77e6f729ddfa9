//! Finding a variable's DIE as seen from a frame: the locals and parameters of the scopes
//! holding the address, innermost first, then the unit's globals and statics, by bare name
//! or qualified by C++ namespaces and Fortran modules.

use std::collections::HashMap;

use gimli::{AttributeValue, constants};

use crate::symbols::DwarfReader;

use super::dies::{
    MAX_CHAIN, Offset, Unit, abstract_origin, die_contains, is_declaration, name_of,
};
use super::names::{last_component, names_equal};
use super::unreadable::{OPTIMIZED_OUT, Unreadable, bad_dwarf, error, optimized};

/// The DIE of `variable` seen from the scope DIE `scope` at `pc`: its locals and
/// parameters, innermost scope first, then the unit's globals. `Ok(None)` when there is
/// none; optimized out when only the abstract instance of an inlined function has it; an
/// error when a bare global name is ambiguous (refused, not guessed).
pub(super) fn find_variable(
    unit: Unit<'_>,
    scope: Offset,
    pc: u64,
    variable: &str,
    fold_case: bool,
) -> Result<Option<Offset>, Unreadable> {
    let mut chosen: Option<Offset> = None;
    // Locals and parameters, innermost scope first.
    for level in scopes(unit, scope, pc).map_err(bad_dwarf)? {
        for &die in &level {
            let entry = unit.entry(die).map_err(bad_dwarf)?;
            if is_declaration(&entry) {
                continue; // `extern int x;` in a function: the global, found below
            }
            if name_of(unit, &entry).is_some_and(|n| names_equal(&n, variable, fold_case)) {
                chosen = Some(die);
                break;
            }
        }
        if chosen.is_some() {
            break;
        }
    }
    // A variable of the function that has no DIE at this instance (only in the abstract
    // instance of an inlined function) exists but was optimized away.
    if chosen.is_none()
        && let Some(origin) = abstract_origin(unit, scope)
        && subtree_has_variable(unit, origin, variable, fold_case)
    {
        return Err(optimized(OPTIMIZED_OUT));
    }
    if chosen.is_none() {
        match find_global(unit, variable, fold_case).map_err(bad_dwarf)? {
            Global::One(die) => chosen = Some(die),
            Global::Ambiguous(names) => {
                return Err(error(format!(
                    "'{variable}' is ambiguous: {}; qualify it",
                    names.join(", ")
                )));
            }
            Global::None => {}
        }
    }
    Ok(chosen)
}

/// The variable and parameter DIEs of `scope` and of its lexical blocks holding `pc`,
/// innermost scope first. Inlined calls inside it are frames of their own: not entered. A
/// block without address ranges (its code was optimized away, or the compiler left them
/// out) is entered only when no block with ranges holds `pc`: its variables then have no
/// location, which says "optimized out" rather than "no such variable".
fn scopes(unit: Unit<'_>, scope: Offset, pc: u64) -> Result<Vec<Vec<Offset>>, gimli::Error> {
    let mut levels = Vec::new();
    let mut at = scope;
    for _ in 0..MAX_CHAIN {
        let mut tree = unit.entries_tree(Some(at))?;
        let root = tree.root()?;
        let mut vars = Vec::new();
        let (mut holding, mut rangeless) = (None, None);
        let mut children = root.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                constants::DW_TAG_variable | constants::DW_TAG_formal_parameter => {
                    vars.push(e.offset())
                }
                constants::DW_TAG_lexical_block if holding.is_none() => {
                    match die_contains(unit, e, pc)? {
                        Some(true) => holding = Some(e.offset()),
                        Some(false) => {}
                        None => {
                            rangeless.get_or_insert(e.offset());
                        }
                    }
                }
                _ => {}
            }
        }
        levels.push(vars);
        match holding.or(rangeless) {
            Some(inner) => at = inner,
            None => break,
        }
    }
    levels.reverse();
    Ok(levels)
}

/// Whether a variable or parameter called `name` is anywhere under `die` (lexical blocks
/// included, inlined calls not).
fn subtree_has_variable(unit: Unit<'_>, die: Offset, name: &str, fold_case: bool) -> bool {
    fn walk(
        unit: Unit<'_>,
        node: gimli::EntriesTreeNode<'_, '_, DwarfReader>,
        name: &str,
        fold_case: bool,
        depth: usize,
    ) -> Result<bool, gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            let found = match e.tag() {
                constants::DW_TAG_variable | constants::DW_TAG_formal_parameter => {
                    name_of(unit, e).is_some_and(|n| names_equal(&n, name, fold_case))
                }
                constants::DW_TAG_lexical_block if depth < MAX_CHAIN => {
                    walk(unit, child, name, fold_case, depth + 1)?
                }
                _ => false,
            };
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
    let Ok(mut tree) = unit.entries_tree(Some(die)) else {
        return false;
    };
    let Ok(root) = tree.root() else { return false };
    walk(unit, root, name, fold_case, 0).unwrap_or(false)
}

/// What a search of a unit's globals found.
#[derive(Debug, PartialEq, Eq)]
enum Global {
    None,
    One(Offset),
    /// A bare name that several namespaces or modules define (their qualified names).
    Ambiguous(Vec<String>),
}

/// A variable of the unit's top level that has a location or a constant value (a global
/// or file static of the unit), by its qualified name (`ns::name` inside C++ namespaces,
/// `module::name` inside Fortran modules) or, when only one namespace defines it, by its
/// bare name. A declaration alone (`extern int x;`, defined in another unit) is not a
/// value this unit can read. C++ puts a namespace's variable's definition at the top level
/// with `DW_AT_specification` pointing at its declaration inside the namespace: the
/// declaration gives the qualified name.
fn find_global(unit: Unit<'_>, name: &str, fold_case: bool) -> Result<Global, gimli::Error> {
    #[derive(Default)]
    struct Found {
        /// Declarations' qualified names, for the definitions that point at them.
        declared: HashMap<Offset, String>,
        defined: Vec<(String, Offset)>,
    }
    fn walk(
        unit: Unit<'_>,
        node: gimli::EntriesTreeNode<'_, '_, DwarfReader>,
        prefix: &str,
        depth: usize,
        found: &mut Found,
    ) -> Result<(), gimli::Error> {
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let e = child.entry();
            match e.tag() {
                constants::DW_TAG_variable => {
                    let Some(n) = name_of(unit, e) else { continue };
                    let has_value = e.attr(constants::DW_AT_location).is_some()
                        || e.attr(constants::DW_AT_const_value).is_some();
                    if !has_value {
                        found.declared.insert(e.offset(), format!("{prefix}{n}"));
                        continue;
                    }
                    let qualified = match e.attr_value(constants::DW_AT_specification) {
                        Some(AttributeValue::UnitRef(d)) => found.declared.get(&d).cloned(),
                        _ => None,
                    };
                    let qualified = qualified.unwrap_or_else(|| format!("{prefix}{n}"));
                    found.defined.push((qualified, e.offset()));
                }
                constants::DW_TAG_namespace | constants::DW_TAG_module if depth < MAX_CHAIN => {
                    let inner = match name_of(unit, e) {
                        Some(n) => format!("{prefix}{n}::"),
                        None => prefix.to_string(), // an anonymous namespace
                    };
                    walk(unit, child, &inner, depth + 1, found)?;
                }
                _ => {}
            }
        }
        Ok(())
    }
    let mut found = Found::default();
    let mut tree = unit.entries_tree(None)?;
    walk(unit, tree.root()?, "", 0, &mut found)?;
    let defined = found.defined;
    if let Some((_, die)) = defined
        .iter()
        .find(|(q, _)| names_equal(q, name, fold_case))
    {
        return Ok(Global::One(*die));
    }
    let mut bare: Vec<&(String, Offset)> = defined
        .iter()
        .filter(|(q, _)| names_equal(last_component(q), name, fold_case))
        .collect();
    bare.dedup_by(|a, b| a.0 == b.0);
    Ok(match bare.as_slice() {
        [] => Global::None,
        [(_, die)] => Global::One(*die),
        several => Global::Ambiguous(several.iter().map(|(q, _)| q.clone()).collect()),
    })
}
