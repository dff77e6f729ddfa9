//! The detached builder: the index of a binary too large to index while an attach waits
//! is built by a process of its own (`strata index-debug-info`), started by the daemon
//! that first missed it, at idle priority once it has the binary, outliving that daemon,
//! so that the next attach on the node (or on any node sharing the cache) finds it warm.
//!
//! The daemon hands the binary's bytes over on the builder's stdin rather than a path:
//! the path is the target's (another mount namespace, maybe deleted since), the bytes
//! are what the daemon parsed. The path still goes along, as the place separate debug
//! files are looked for (`.gnu_debuglink`), exactly as the daemon looked. A builder that
//! dies (the node's job step ended, say) leaves no entry, only its temporary file, which
//! the cache ignores; the next attach starts another.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::images::Image;

/// The hidden subcommand of the strata binary that builds one entry.
pub const SUBCOMMAND: &str = "index-debug-info";

/// What the builder is told.
#[derive(Debug)]
pub struct Request<'a> {
    /// The strata binary.
    pub builder: &'a Path,
    /// The entry's key: the builder takes its lock before it reads anything.
    pub key: &'a str,
    pub cache: &'a Path,
    pub debug_dirs: &'a [PathBuf],
    /// The path the binary was mapped from.
    pub name: &'a str,
}

impl Request<'_> {
    /// The builder's command line (its stdin gets the binary).
    pub fn command(&self) -> Command {
        let mut c = Command::new(self.builder);
        c.arg(SUBCOMMAND)
            .arg("--cache")
            .arg(self.cache)
            .arg("--key")
            .arg(self.key);
        for dir in self.debug_dirs {
            c.arg("--debug-dir").arg(dir);
        }
        c.arg("--").arg(self.name);
        c
    }

    /// Starts the builder and hands it `image`, then leaves a thread of this process to
    /// reap it (if this process exits first, init does). The hand-over is done here, not
    /// in that thread: a daemon may exit right after its reply, and a thread cut off
    /// mid-write would leave the builder a truncated binary. The builder reads at normal
    /// priority and lowers itself afterwards, so this costs a copy of the binary through
    /// a pipe (about 0.1 s for 200 MB), once per large binary and node.
    pub fn spawn(&self, image: &Image) -> std::io::Result<()> {
        let mut child = self
            .command()
            // Nothing of the daemon's environment: not the session key, not its role (the
            // builder is no daemon), not the job's variables.
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group: a signal to the daemon's group does not cut it off.
            .process_group(0)
            .spawn()?;
        let fed = match child.stdin.take() {
            // A builder that exits early (the entry appeared) closes the pipe: not an error.
            Some(mut stdin) => match stdin.write_all(image.data()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e),
                _ => Ok(()),
            },
            None => Ok(()),
        };
        std::thread::Builder::new()
            .name("index-builder-reaper".into())
            .spawn(move || child.wait())?;
        fed
    }
}
