//! The strata daemon role: one per node, it finds the job's tasks on its node, captures and
//! unwinds their stacks with ptrace, and sends a subtree-scoped prefix tree up the tree.
//!
//! Not built yet: capture and unwinding arrive with issue 3, sampling with issue 4. The crate
//! exists so the workspace has the shape of the design card.
