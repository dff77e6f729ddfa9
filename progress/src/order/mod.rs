//! The progress order: which classes of tasks are behind, by position in the code.
//!
//! STAT's temporal order analysis (Ahn et al., "Scalable Temporal Order Analysis for Large
//! Scale Debugging", SC 2009: sections 3 and 4.3): walk the prefix tree from the root; at
//! every branching point the groups of tasks that part ways are ordered by the *first
//! divergent frame*, the child frames that differ. Two such frames are in the same function
//! (the parent frame is a common call site), so their source lines become program points
//! ([`crate::point`]) and the points are compared. Tasks below one child keep the order
//! decided at every branching point above them, so a task's place is a hierarchical label,
//! `T1.2`, and the least progressed tasks are the ones with the smallest label.
//!
//! The analysis runs on the 2D tree (the last sample: one stack per task, the moment the
//! processes were stopped) at line granularity, cut below MPI (library internals are not
//! program points of the application). When threads were sampled only each rank's main
//! thread counts: a rank's progress is where its main thread is.
//!
//! What is never guessed: groups in different arms of one conditional are reported as
//! incomparable; groups whose order depends on a loop's iteration count are reported as
//! needing a loop variable (with the order they would have in the same iteration); groups
//! in different functions below one call site, or in frames without line information, are
//! reported as unordered, with the reason. When a source file cannot be read, the point
//! falls back to line numbers within one function, and the report says so.
//!
//! The parts (private modules): `walk` (the depth-first walk that labels the tasks, and the
//! result, [`ProgressOrder`]), `tree` (the tree it walks), `points` (frames to program
//! points, once each), `groups` (the groups parting at a node, split by iteration values),
//! `evidence` (how two groups compare, and why) and `levels` (the order of one branching
//! point's groups: levels by Kahn's algorithm, tie letters).

mod evidence;
mod groups;
mod levels;
mod points;
mod tree;
mod walk;

#[cfg(test)]
mod tests;

pub use evidence::{Evidence, IterationFact};
pub use groups::Group;
pub use levels::{BranchPoint, MAX_GROUPS};
pub use walk::{ProgressClass, ProgressOrder, analyze, loop_requests};
