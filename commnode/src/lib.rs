//! strata's communication processes: the inner nodes of the tree network.
//!
//! [`children`] is a node's server end (admitting and commanding its children), [`merge`]
//! combines their replies with the `filters` code, [`node`] is the `strata commnode` role,
//! [`stderr`] writes their warnings without ever blocking on a full pipe.
//! The front end is the root node: it uses [`children`] and [`merge`] the same way, and
//! keeps the merged trees it builds instead of encoding them.
//!
//! Design constraints: a child is admitted only after proving it belongs to the session,
//! and nothing it sends is trusted (sizes bounded before decoding, trees validated); a child
//! that is silent, slow or gone costs only its own ranks, never the round; a merge costs
//! time proportional to the children's trees, never to the job. No ptrace, no terminal.

pub mod children;
pub mod merge;
pub mod node;
pub mod stderr;
