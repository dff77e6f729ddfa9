//! The front end's side of the tree network: an [`AttachRequest`] in, a rank-ordered
//! [`Assembled`] result out.
//!
//! * [`request`]: what an attach asks for (target, sampling, tree shape, debug dirs, variables);
//! * [`place`]: the request checked and the job looked up with its resource manager;
//! * [`gather`]: the tree for the job (shape, launcher, session key) run to the end, or kept
//!   open for a live session, or `--serial` in this process;
//! * [`root`]: the root of the tree network ([`Session`]): it launches the commnodes level by
//!   level and the daemons in one launch, drives the commands with deadlines, and merges its
//!   children's replies, keeping the trees it built;
//! * [`provide`]: debug indexes read once by the front end and sent down the tree to the
//!   daemons that lack them;
//! * [`assemble`]: the one remap to MPI rank order and the result;
//! * [`error`]: why an attach produced nothing ([`AttachError`]).
//!
//! Design constraints: no terminal UI and no rendering (the front end shows the result);
//! every command has a deadline, and a daemon or commnode that does not answer costs only
//! its own ranks, which the result names; Ctrl-C shuts the tree down and every daemon
//! detaches. It speaks to the user on stderr only for warnings and the progress bar, as the
//! front end's voice; results and errors are returned.

pub mod assemble;
pub mod error;
pub mod gather;
pub mod local_jobs;
pub mod place;
pub mod provide;
pub mod request;
pub mod root;

pub use assemble::Assembled;
pub use error::AttachError;
pub use request::{AttachRequest, JobTarget, ResourceManager, TreeShape};
pub use root::Session;
