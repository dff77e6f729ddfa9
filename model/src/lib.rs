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
//! * [`outliers`](mod@outliers): the dissimilarity of two models (the sum over their transitions, times
//!   weighed by their share of the ranks' time, a transition one of them lacks counting
//!   most), each rank's distance to its nearest neighbour among a bounded sample of ranks,
//!   the abnormal ranks (largest distances first) and, for each, the transitions that
//!   contribute most to its distance: the code regions to look at.
//!
//! * [`dependence`]: Prodometer's loop-aware progress dependence ("Accurate application
//!   progress analysis for large-scale parallel debugging", 2014): loops from the union of
//!   the ranks' transitions, iteration counts from their back edges, which ranks are
//!   behind which, and the least progressed.
//! * [`report`]: both answers on a result ([`RuntimeModel`]), as the verdict shows them
//!   and `result.json` carries them (`runtime_model`).
//!
//! * [`compress`](mod@compress): AutomaDeD's graph compression of the chains every rank passes
//!   through alike, before ranks are compared.
//! * [`cluster`](mod@cluster): AutomaDeD's clustering: K-medoids on a sample of the models, the
//!   number of clusters by the Bayesian information criterion, the clusters apart from the
//!   rest and the ranks far from their medoid.

pub mod cluster;
pub mod compress;
pub mod dependence;
#[cfg(test)]
mod fixtures;
pub mod normal;
pub mod outliers;
pub mod report;
pub mod smm;

pub use cluster::{Cluster, Clustering, cluster};
pub use dependence::Dependence;
pub use outliers::{
    Abnormal, Outliers, SAMPLE, abnormal_ranks, dissimilarity, outliers, outliers_of,
};
pub use report::{Finding, RuntimeModel};
pub use smm::{Edge, EdgeKey, RankModel, Times};
