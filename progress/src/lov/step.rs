//! A definition's step as written: an integer literal (C, C++ or Fortran syntax), a name
//! (a loop-invariant variable or a named constant), or neither.

use super::analysis::Analysis;
use crate::source::language::Language;
use tree_sitter::Node;

/// The step of a monotonic definition, before the loop-wide facts resolve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum StepExpression {
    /// An integer literal, sign included.
    Literal(i128),
    /// A variable (or named constant); `negated` for `-c`.
    Name { name: String, negated: bool },
    /// A literal that is not an integer (`0.5`, `1.0d0`).
    NotInteger(String),
    /// Anything else (`2*k`, `f()`).
    Other(String),
}

impl<'tree> Analysis<'_, 'tree> {
    /// The value of an expression that is an integer literal (a constant's initializer).
    pub(super) fn literal_value(&self, node: Node) -> Option<i128> {
        match self.step_expression(node) {
            StepExpression::Literal(value) => Some(value),
            _ => None,
        }
    }

    pub(super) fn step_expression(&self, node: Node) -> StepExpression {
        let node = self.unparenthesize(node);
        match node.kind() {
            "number_literal" | "integer" => self.literal(node),
            "float" => StepExpression::NotInteger(self.written(node)),
            "identifier" => StepExpression::Name {
                name: self.normalize(self.text(node)),
                negated: false,
            },
            "unary_expression" | "unary_operator" => {
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
        let parsed = match self.language {
            Language::Fortran => fortran_integer(text),
            Language::Python => python_integer(text),
            Language::C | Language::Cpp => c_integer(text),
        };
        match parsed {
            Some(value) => StepExpression::Literal(value),
            None => StepExpression::NotInteger(self.written(node)),
        }
    }
}

/// The value of a C or C++ integer literal (`42`, `-2`, `0x10`, `0b101`, `017`, `10u`,
/// `1'000'000LL`), or None for anything else (a float, a malformed literal).
pub(super) fn c_integer(text: &str) -> Option<i128> {
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
pub(super) fn fortran_integer(text: &str) -> Option<i128> {
    let digits = text.split('_').next().unwrap_or(text).trim();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The value of a Python integer literal (`42`, `1_000`, `0x10`, `0o17`, `0b101`), or
/// None for anything else (a float, an imaginary number).
pub(super) fn python_integer(text: &str) -> Option<i128> {
    let text: String = text.chars().filter(|c| *c != '_').collect();
    let lower = text.to_ascii_lowercase();
    let (radix, body) = if let Some(hex) = lower.strip_prefix("0x") {
        (16, hex)
    } else if let Some(octal) = lower.strip_prefix("0o") {
        (8, octal)
    } else if let Some(binary) = lower.strip_prefix("0b") {
        (2, binary)
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    i128::from_str_radix(body, radix).ok()
}
