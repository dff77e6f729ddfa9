//! Starting the tree: its shape ([`topology`]) and the resource-manager back ends that
//! launch commnodes and daemons: [`local`] (processes on this host) and [`slurm`] (one
//! `srun` into the job's allocation). Flux (`flux run`/`flux exec` into a job), PBS
//! (`pbsdsh`, or `mpiexec` of PBS Pro into the job) and LSF (`blaunch`) fit the same
//! [`Launcher`] trait: look the job up, start one daemon per node in one launch, let each
//! daemon derive its index from the node's rank in the launch. Not built.
//!
//! Design constraints: one launch per tree level, never one per daemon (sequential launch
//! grows linearly with the job); the session key reaches the launched processes out of
//! band (the environment), never on a command line; a launch that fails is an error the
//! front end can name, and whatever was started is reaped.

use std::net::SocketAddr;
use std::ops::Range;

pub mod local;
pub mod priority;
pub mod slurm;
pub mod topology;

pub use strata_proto::ROLE_ENV;
pub use strata_proto::auth::KEY_ENV;

/// Waits until `grace` has passed for `children` to exit, then kills (and reaps) the rest:
/// what every launcher does with its processes once a session is over.
pub fn reap_children<'a>(
    children: impl IntoIterator<Item = &'a mut std::process::Child>,
    grace: std::time::Duration,
) {
    let end = std::time::Instant::now() + grace;
    for c in children {
        while std::time::Instant::now() < end && matches!(c.try_wait(), Ok(None)) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// A resource manager's way of starting strata's processes.
pub trait Launcher {
    /// `local`, `slurm`, ...
    fn name(&self) -> &'static str;
    /// The address the front end listens on so that the launched processes reach it.
    fn listen_host(&self) -> String;
    /// Starts one level of commnodes; returns where each listens, in order.
    fn start_commnodes(&mut self, specs: &[CommnodeSpec]) -> Result<Vec<SocketAddr>, LaunchError>;
    /// Starts every daemon, in one launch where the resource manager allows it.
    fn start_daemons(&mut self, spec: &DaemonSpec) -> Result<(), LaunchError>;
    /// After the session: waits up to `grace` for what was started to exit, then ends it.
    fn reap(&mut self, grace: std::time::Duration);
    /// How to end, at once and from any thread, a process this launcher started that the
    /// tree declared lost while it may still live (stopped, hung): the kernel lets go of
    /// every rank a dead tracer had stopped, which a stopped one would hold until the end.
    fn lost_ender(&self) -> LostEnder;
}

/// Ends one lost process ([`Launcher::lost_ender`]); `Ok` says how, `Err` why it could not.
/// Never blocks for long: it runs on the thread of the link that noticed the loss.
pub type LostEnder =
    std::sync::Arc<dyn Fn(&strata_proto::overlay::Lost) -> Result<String, String> + Send + Sync>;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error("cannot start {what}: {reason}")]
    Spawn { what: String, reason: String },
}

/// One commnode: its place in the tree.
#[derive(Clone, Debug)]
pub struct CommnodeSpec {
    pub index: u32,
    /// Its level (1: a child of the front end).
    pub level: u32,
    pub parent: SocketAddr,
    /// Its children's indices in the level below.
    pub children: Range<u32>,
    /// The children are daemons (else commnodes).
    pub children_are_daemons: bool,
    /// Per child, the daemons below it (for reports).
    pub child_daemons: Vec<Range<u32>>,
    /// Host to listen on.
    pub listen_host: String,
}

impl CommnodeSpec {
    /// The `strata commnode` arguments.
    pub fn args(&self) -> Vec<String> {
        let ranges: Vec<String> = self
            .child_daemons
            .iter()
            .map(|r| format!("{}-{}", r.start, r.end))
            .collect();
        vec![
            "--parent".into(),
            self.parent.to_string(),
            "--index".into(),
            self.index.to_string(),
            "--level".into(),
            self.level.to_string(),
            "--children".into(),
            format!("{}-{}", self.children.start, self.children.end),
            "--child-role".into(),
            if self.children_are_daemons {
                "daemon"
            } else {
                "commnode"
            }
            .into(),
            "--child-daemons".into(),
            ranges.join(","),
            "--listen".into(),
            format!("{}:0", self.listen_host),
        ]
    }
}

/// All daemons of a session.
#[derive(Clone, Debug)]
pub struct DaemonSpec {
    pub daemons: u32,
    /// The addresses of the level above the daemons; each daemon picks its parent by its
    /// index ([`topology::parent_of`]), so every daemon can get the same command line.
    pub parents: Vec<SocketAddr>,
}

impl DaemonSpec {
    /// The `strata daemon` arguments of daemon `index` (a bulk launch leaves `--index`
    /// out and lets each daemon read its node index from the resource manager).
    pub fn args(&self, index: u32) -> Vec<String> {
        let parents: Vec<String> = self.parents.iter().map(|a| a.to_string()).collect();
        vec![
            "--parents".into(),
            parents.join(","),
            "--daemons".into(),
            self.daemons.to_string(),
            "--index".into(),
            index.to_string(),
        ]
    }
}
