//! Why a variable has no value: the one-line error (or "optimized out") its
//! `VariableValue` carries. Every step of a read (planning from DWARF, evaluating the
//! location, decoding) fails with an [`Unreadable`], never with a panic.

/// Why a variable has no value, as its `VariableValue` says it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unreadable {
    pub(super) message: String,
    /// The value is gone (gdb's `<optimized out>`), as opposed to unreadable.
    pub(super) optimized_out: bool,
}

pub(super) fn error(message: impl Into<String>) -> Unreadable {
    Unreadable {
        message: message.into(),
        optimized_out: false,
    }
}

pub(super) fn optimized(message: impl Into<String>) -> Unreadable {
    Unreadable {
        message: message.into(),
        optimized_out: true,
    }
}

pub(super) const OPTIMIZED_OUT: &str = "optimized out at this pc";

pub(super) fn bad_dwarf(e: gimli::Error) -> Unreadable {
    error(format!("unreadable DWARF: {e}"))
}
