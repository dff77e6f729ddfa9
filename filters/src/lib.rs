//! strata's trace model and merge filters: pure code, no I/O.
//!
//! * [`taskset`]: subtree-scoped task runs and rank-order bitmaps.
//! * [`frame`]: frames and their interning table.
//! * [`mpi`]: what is MPI in a stack: its libraries, its entry frames, a call's C name.
//! * [`tree`]: the call-graph prefix tree (2D and 3D).
//! * [`merge`]: the concatenating merge a commnode applies to its children.
//! * [`remap`](mod@remap): the one remap to MPI rank order at the root.
//! * [`view`](mod@view): granularities and "cut below MPI", derived without re-sampling.
//! * [`classes`]: equivalence classes.
//! * [`wire`]: the tree's compact encoding for the tree network.
//! * [`dense`]: job-wide bit vectors, the pre-208K-paper baseline for `strata bench --dense`.
//! * [`synth`]: synthetic hangs for tests and benchmarks.
//!
//! Design constraint: nothing here may cost time or space proportional to the whole job
//! except [`remap()`] and what runs after it at the root ([`dense`] is the deliberate
//! exception, kept to measure what that rule saves).

pub mod classes;
pub mod dense;
pub mod frame;
pub mod merge;
pub mod mpi;
pub mod places;
pub mod remap;
pub mod start_up;
pub mod synth;
pub mod taskset;
pub mod tree;
pub mod view;
pub mod wire;

pub use classes::{EqClass, NodeClass, equivalence_classes, node_classes};
pub use frame::{CodeFrame, CodeKind, Frame, FrameId, FrameTable, Module, Special};
pub use merge::{ConcatMerge, merge_concat};
pub use remap::{IndexMap, RemapError, remap};
pub use taskset::{RankSet, TaskRuns, TaskSet};
pub use tree::{NodeId, PrefixTree};
pub use view::{Granularity, ViewOptions, runtime_threads, view, view_with_cut};
