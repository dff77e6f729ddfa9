#![allow(dead_code)] // each test file uses its own subset

//! Driving a full-screen program like a user: a real terminal from tmux, keys sent with
//! `send-keys`, the screen read back with `capture-pane`. Each `Tmux` runs its own tmux
//! server (a private socket), killed on drop.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `shell_command` (run by `sh -c`) in a new `width` x `height` terminal.
    pub fn start(shell_command: &str, width: u16, height: u16, dir: &Path) -> Tmux {
        let socket = format!(
            "strata-test-{}-{}",
            std::process::id(),
            dir.file_name().and_then(|n| n.to_str()).unwrap_or("t")
        );
        let t = Tmux { socket };
        let status = t
            .tmux()
            .args(["new-session", "-d", "-x", &width.to_string()])
            .args(["-y", &height.to_string(), "-c"])
            .arg(dir)
            .arg(shell_command)
            .env("TERM", "xterm-256color")
            .status()
            .expect("tmux runs (apt-get install tmux)");
        assert!(status.success(), "tmux new-session failed");
        // Keep the pane (and its last screen) when the program exits.
        let _ = t
            .tmux()
            .args(["set-option", "-g", "remain-on-exit", "on"])
            .status();
        t
    }

    fn tmux(&self) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-f", "/dev/null", "-L", &self.socket]);
        c
    }

    /// The visible screen, as text.
    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p"])
            .output()
            .expect("tmux capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys as tmux names them (`Enter`, `Escape`, `Down`, or literal text).
    pub fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .arg("send-keys")
            .args(keys)
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Sends literal text (no key-name lookup).
    pub fn type_text(&self, text: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-l", text])
            .status()
            .expect("tmux send-keys");
        assert!(status.success());
    }

    /// Waits until the screen satisfies `ok`; panics with the last screen after `limit`.
    pub fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + limit;
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < end,
                "waited {limit:?} for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the screen shows `text`.
    pub fn wait_text(&self, text: &str, limit: Duration) -> String {
        self.wait_for(&format!("'{text}'"), limit, |s| s.contains(text))
    }

    /// True while the program has the terminal on its alternate screen (full-screen UIs),
    /// false once it has given it back.
    pub fn alternate_screen(&self) -> bool {
        let out = self
            .tmux()
            .args(["display-message", "-p", "#{alternate_on}"])
            .output()
            .expect("tmux display-message");
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
    }
}
