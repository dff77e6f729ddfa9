//! strata's communication processes: the inner nodes of the tree network.
//!
//! [`children`] is a node's server end (admitting and commanding its children), [`merge`]
//! combines their replies with the `filters` code, [`node`] is the `strata commnode` role.
//! The front end is the root node: it uses [`children`] and [`merge`] the same way.

pub mod children;
pub mod merge;
pub mod node;
