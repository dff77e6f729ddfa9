//! The runtime model of a job, from the MPI history strata's PMPI library keeps in each rank
//! (`strata_result::pmpi::PmpiHistory`), after AutomaDeD ("Probabilistic diagnosis of
//! performance faults in large-scale parallel applications", 2012, and its scalable outlier
//! detection): each rank is a semi-Markov model whose states are its MPI call sites and the
//! computation between them, and a rank whose model lies far from every other is abnormal.
//!
//! * [`smm`]: a rank's model: for each transition between two call sites (named by call,
//!   function, file and line, so that ranks loaded at different addresses compare), its
//!   probability among the transitions out of its source, and the normal distributions of
//!   the time in the first call and of the computation between.
//! * [`normal`]: how far apart two normal distributions are: the share of their areas that
//!   does not overlap (AutomaDeD's Lk-norm for normals), in closed form.
//! * [`outliers`]: the dissimilarity of two models (the sum over their transitions, a
//!   transition one of them lacks counting most), each rank's distance to its nearest
//!   neighbour among a bounded sample of ranks, the abnormal ranks (largest distances first)
//!   and, for each, the transitions that contribute most to its distance: the code regions
//!   to look at.
//!
//! Not yet: AutomaDeD's clustering (K-medoids with BIC), edge compression in the tree,
//! Prodometer's progress dependence; nothing reads this crate's answers into a report yet.

pub mod normal;
pub mod outliers;
pub mod smm;

pub use outliers::{Abnormal, SAMPLE, abnormal_ranks, dissimilarity};
pub use smm::{Edge, EdgeKey, RankModel, Times};
