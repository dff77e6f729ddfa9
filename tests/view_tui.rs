//! `strata view` on a real terminal: a pseudo-terminal from util-linux `script`. The
//! interactive view opens, answers keys, quits on `q` and on Ctrl-C, and leaves the terminal
//! as it found it (canonical mode and echo back on, main screen); `--print` and `--format`
//! print instead. The screens themselves are tested on ratatui's test backend
//! (`frontend/src/tui/tests.rs`).

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/examples/ring-8.json");
const ALT_SCREEN_ON: &str = "\x1b[?1049h";
const ALT_SCREEN_OFF: &str = "\x1b[?1049l";

/// `strata ARGS` in an 80x24 pseudo-terminal, then its exit code and the terminal's modes.
/// Killed when dropped.
struct Pty {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Pty {
    fn start(args: &str) -> Option<Pty> {
        Pty::start_with("", args)
    }

    /// Like `start`, the command line prefixed with `env` (`NO_COLOR=1`).
    fn start_with(env: &str, args: &str) -> Option<Pty> {
        if Command::new("script").arg("--version").output().is_err() {
            eprintln!("skipped: util-linux script is not installed");
            return None;
        }
        let bin = env!("CARGO_BIN_EXE_strata");
        let cmd = format!(
            "stty cols 80 rows 24; {env} {bin} view {args}; echo \"exit=$?\"; stty -a; echo end-of-run"
        );
        let mut child = Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env_remove("NO_COLOR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("script starts");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Some(Pty { child, stdin, out })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    /// Waits until the output contains `needle`; the output. Wait for single words: the
    /// screen may move the cursor over blanks instead of writing spaces.
    fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let text = self.text();
            if text.contains(needle) {
                return text;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60) && !text.contains("end-of-run"),
                "no '{needle}' (strata ended, or 60 s passed); the terminal showed:\n{text:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn keys(&mut self, keys: &str) {
        self.stdin.write_all(keys.as_bytes()).unwrap();
        self.stdin.flush().unwrap();
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The terminal after strata: canonical mode and echo on again.
fn assert_restored(text: &str) {
    let modes = text.rsplit("exit=").next().unwrap();
    let words: Vec<&str> = modes.split_whitespace().collect();
    assert!(words.contains(&"icanon"), "raw mode left on: {modes}");
    assert!(words.contains(&"echo"), "echo left off: {modes}");
}

#[test]
fn view_opens_on_a_terminal_answers_keys_and_restores_the_terminal() {
    let Some(mut pty) = Pty::start(EXAMPLE) else {
        return;
    };
    pty.wait_for("saved");
    pty.keys("C\t");
    pty.wait_for("classes");
    pty.keys("/waitall\r");
    pty.wait_for("/waitall/:");
    pty.keys("q");
    let text = pty.wait_for("end-of-run");
    assert!(text.contains(ALT_SCREEN_ON), "{text:?}");
    let after = text.rsplit(ALT_SCREEN_OFF).next().unwrap();
    assert!(after.contains("exit=0"), "{text:?}");
    assert_restored(&text);
}

#[test]
fn ctrl_c_is_a_key_that_quits_the_view() {
    let Some(mut pty) = Pty::start(EXAMPLE) else {
        return;
    };
    pty.wait_for("saved");
    pty.keys("/abc\x03");
    let text = pty.wait_for("end-of-run");
    assert!(text.contains("exit=0"), "{text:?}");
    assert_restored(&text);
}

#[test]
fn print_and_formats_print_on_a_terminal_too() {
    for args in ["--print", "-f text", "--format dot"] {
        let Some(pty) = Pty::start(&format!("{EXAMPLE} {args}")) else {
            return;
        };
        let text = pty.wait_for("end-of-run");
        assert!(!text.contains(ALT_SCREEN_ON), "{args}: {text:?}");
        assert!(text.contains("exit=0"), "{args}: {text:?}");
        assert!(text.contains("MPI_Barrier"), "{args}: {text:?}");
    }
}

#[test]
fn no_color_turns_every_colour_off() {
    // crossterm writes a colour as an indexed foreground, ESC [ 38 ; 5 ; N m.
    let colour = "\x1b[38;5;";
    for (env, coloured) in [("", true), ("NO_COLOR=1", false)] {
        let Some(mut pty) = Pty::start_with(env, EXAMPLE) else {
            return;
        };
        pty.wait_for("saved");
        pty.keys("C\tq");
        let text = pty.wait_for("end-of-run");
        assert_eq!(text.contains(colour), coloured, "{env}: {text:?}");
        assert!(text.contains("exit=0"), "{text:?}");
    }
}
