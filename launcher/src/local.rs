//! The local launcher: commnodes and daemons as processes on this host (`--rm local`).
//!
//! Every process is the same `strata` binary in another role. The session key travels in
//! the environment ([`KEY_ENV`](crate::KEY_ENV)), never on the command line. Each process
//! gets a process group of its own, so a Ctrl-C typed at the terminal reaches only the
//! front end, which then shuts the tree down in order (targets detached first); if the
//! front end dies, its children see their link close and exit by themselves.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{CommnodeSpec, DaemonSpec, LaunchError, Launcher, LostEnder};

/// Starts processes on this host and reaps them when dropped.
#[derive(Debug)]
pub struct LocalLauncher {
    exe: PathBuf,
    key_hex: String,
    /// Shared with the [`LostEnder`], which kills one of them while the session runs.
    children: Arc<Mutex<Vec<Child>>>,
}

impl LocalLauncher {
    /// `exe`: the strata binary; `key_hex`: the session key.
    pub fn new(exe: PathBuf, key_hex: String) -> LocalLauncher {
        LocalLauncher {
            exe,
            key_hex,
            children: Arc::default(),
        }
    }

    fn command(&self, role: &str) -> Command {
        let mut c = Command::new(&self.exe);
        c.arg(role)
            .env(crate::KEY_ENV, &self.key_hex)
            .env(crate::ROLE_ENV, role)
            .stdin(Stdio::null())
            .process_group(0);
        crate::priority::start_raised(&mut c);
        c
    }

    /// The pids of the processes started so far (tests kill them).
    pub fn pids(&self) -> Vec<u32> {
        self.started().iter().map(|c| c.id()).collect()
    }

    /// Waits up to `grace` for every started process to exit, then kills the rest.
    fn reap_all(&mut self, grace: Duration) {
        let mut children = std::mem::take(&mut *self.started());
        crate::reap_children(&mut children, grace);
    }

    fn started(&self) -> std::sync::MutexGuard<'_, Vec<Child>> {
        self.children.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keep(&self, child: Child) {
        self.started().push(child);
    }
}

impl Drop for LocalLauncher {
    fn drop(&mut self) {
        self.reap_all(Duration::from_secs(3));
    }
}

impl Launcher for LocalLauncher {
    fn name(&self) -> &'static str {
        "local"
    }

    fn reap(&mut self, grace: Duration) {
        self.reap_all(grace);
    }

    fn listen_host(&self) -> String {
        "127.0.0.1".to_string()
    }

    fn lost_ender(&self) -> LostEnder {
        let children = self.children.clone();
        Arc::new(move |lost| {
            let mut children = children.lock().unwrap_or_else(|e| e.into_inner());
            // Only a child of ours, not yet reaped: its pid cannot have been reused.
            let child = children
                .iter_mut()
                .find(|c| c.id() == lost.pid)
                .ok_or_else(|| format!("pid {} is no process this session started", lost.pid))?;
            child
                .kill()
                .map(|()| format!("killed it (pid {})", lost.pid))
                .map_err(|e| format!("cannot kill pid {}: {e}", lost.pid))
        })
    }

    fn start_commnodes(&mut self, specs: &[CommnodeSpec]) -> Result<Vec<SocketAddr>, LaunchError> {
        let mut started = Vec::with_capacity(specs.len());
        for s in specs {
            let mut c = self.command("commnode");
            c.args(s.args())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit());
            let mut child = c.spawn().map_err(|e| LaunchError::Spawn {
                what: format!("commnode {}", s.index),
                reason: e.to_string(),
            })?;
            let stdout = child.stdout.take().expect("piped");
            self.keep(child);
            started.push((s.index, stdout));
        }
        // Each announces `listening ADDR` on its first line.
        let mut addrs = Vec::with_capacity(started.len());
        for (index, stdout) in started {
            let (tx, rx) = std::sync::mpsc::channel();
            crate::priority::spawn_raised("strata-commnode-addr", move || {
                let mut line = String::new();
                let _ = BufReader::new(stdout).read_line(&mut line);
                let _ = tx.send(line);
            })
            .map_err(|e| LaunchError::Spawn {
                what: format!("commnode {index}"),
                reason: format!("cannot start a thread: {e}"),
            })?;
            let line =
                rx.recv_timeout(Duration::from_secs(20))
                    .map_err(|_| LaunchError::Spawn {
                        what: format!("commnode {index}"),
                        reason: "did not say where it listens within 20 s".into(),
                    })?;
            let addr = line
                .trim()
                .strip_prefix("listening ")
                .and_then(|a| a.parse().ok())
                .ok_or_else(|| LaunchError::Spawn {
                    what: format!("commnode {index}"),
                    reason: if line.is_empty() {
                        "exited before listening (see its message above)".into()
                    } else {
                        format!("unexpected first line {:?}", line.trim())
                    },
                })?;
            addrs.push(addr);
        }
        Ok(addrs)
    }

    fn start_daemons(&mut self, spec: &DaemonSpec) -> Result<(), LaunchError> {
        for i in 0..spec.daemons {
            let mut c = self.command("daemon");
            c.args(spec.args(i))
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            let child = c.spawn().map_err(|e| LaunchError::Spawn {
                what: format!("daemon {i}"),
                reason: e.to_string(),
            })?;
            self.keep(child);
        }
        Ok(())
    }
}
