//! Why an attach produced nothing: one line for the user, and the kind of failure, from
//! which the front end chooses the exit code.

use strata_launcher::slurm::SlurmError;
use strata_launcher::topology::TopologyError;
use strata_proto::sampling::SamplingError;

/// Why an attach failed.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// The request contradicts itself or names something malformed.
    #[error("{0}")]
    Usage(String),
    /// The job or its processes are not there, or not running.
    #[error("{0}")]
    NotFound(String),
    /// The system refused access to the job's processes.
    #[error("{0}")]
    PermissionDenied(String),
    /// The resource manager's answer about the job.
    #[error(transparent)]
    Slurm(#[from] SlurmError),
    /// Sampling settings out of their bounds.
    #[error(transparent)]
    Sampling(#[from] SamplingError),
    /// A tree shape that cannot be built.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// strata cannot work here, or the tree produced nothing (a bug, or a broken machine).
    #[error("{0}")]
    Internal(String),
}

/// The tree network produced nothing.
impl From<crate::root::SessionError> for AttachError {
    fn from(e: crate::root::SessionError) -> Self {
        AttachError::Internal(e.0)
    }
}
