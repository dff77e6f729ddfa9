//! The terminal UI: `strata view` on a terminal, `strata attach -i` on a live job.
//!
//! * [`app`]: state and key handling, pure (tested with key sequences); finding and the
//!   panels (ranks, stacks, source, hand-off, help) in its submodules;
//! * [`view`]: the view a user edits and the tree derived from it;
//! * [`ui`]: drawing with ratatui (tested on its `TestBackend`);
//! * [`source`]: the seam to a live session ([`Source`]) and a saved result ([`Saved`]);
//! * [`handoff`]: the command that opens gdb on a representative rank;
//! * [`listing`]: source lines around a frame;
//! * [`keys`]: the key map, one table for the help panel, the footer and the docs;
//! * [`search`]: a search and its hits;
//! * this module: the terminal itself (raw mode, alternate screen, restored on every way
//!   out, panics included) and the event loop.
//!
//! Design constraints: the UI never reaches a job itself. Everything live (resample, more
//! samples, full stacks, variables, detach) goes through the [`Source`] trait, which the
//! front end implements over a tree session; a saved result is [`Saved`]. So the UI has no
//! ptrace and no network, and all of its state changes are testable with key sequences and
//! ratatui's `TestBackend`. It owns the terminal only between entering and leaving its
//! screen, and gives it back on every way out.

pub mod app;
pub mod handoff;
pub mod keys;
pub mod listing;
pub mod search;
pub mod source;
pub mod ui;
pub mod view;

#[cfg(test)]
mod tests;

pub use app::{App, Step};
pub use source::{Saved, Source};
pub use view::ViewState;

use nix::sys::signal::{SigSet, Signal};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{self, Event, KeyEventKind};
use ratatui::crossterm::{cursor, execute, terminal};
use std::io;
use std::process::ExitStatus;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use strata_result::StrataResult;

/// Why the UI could not run.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// The terminal refused raw mode, the alternate screen, or a read or write.
    #[error("terminal: {0}")]
    Terminal(#[from] io::Error),
}

/// Runs the UI on `result`, starting in view `state`, until the user quits; `color` off
/// draws without any colour (`NO_COLOR`). Returns the result shown last (a live session
/// writes it; its missing ranks decide the exit code, as for `strata view`).
///
/// The terminal is restored on every way out: quitting, Ctrl-C (a key in raw mode: it
/// quits), an I/O error, a panic (a panic hook restores it before the message is printed).
/// A live `source` is detached before this returns, whichever way the loop ended; after a
/// panic it is dropped, so a live source should detach in its `Drop` as well.
///
/// Signals: SIGINT and SIGQUIT are blocked in the calling thread (threads it starts later
/// inherit that) and swallowed by a helper thread, so a Ctrl-C typed into a debugger that
/// the hand-off runs does not kill strata. A process whose other threads exist already
/// must block them there too, and such a watcher should ignore SIGINT while
/// [`debugger_running`] is true.
pub fn run(
    result: StrataResult,
    source: Box<dyn Source>,
    state: ViewState,
    color: bool,
) -> Result<StrataResult, TuiError> {
    swallow_terminal_signals();
    let mut app = App::new(result, source, state, &strata_proto::link::hostname());
    let (outcome, detach) = match Screen::enter() {
        // The screen is left when `_screen` goes, after the detach: the last thing the
        // user sees is "detaching…".
        Ok(_screen) => match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(mut t) => session(&mut t, &mut app, color, event::read, run_outside),
            Err(e) => (Err(e), app.finish()),
        },
        Err(e) => (Err(e), app.finish()),
    };
    if let Some(e) = detach {
        eprintln!("strata: {e}");
    }
    outcome?;
    Ok(app.result().clone())
}

/// Leaves raw mode and the alternate screen if the UI is on it: for a thread that must end
/// the process while the UI runs (a SIGTERM in a live session).
pub fn restore_terminal() {
    let _ = leave_screen();
}

/// True while a debugger started by the hand-off runs (strata is off the screen).
pub fn debugger_running() -> bool {
    DEBUGGER_RUNNING.load(Ordering::SeqCst)
}

static DEBUGGER_RUNNING: AtomicBool = AtomicBool::new(false);
/// Whether strata has the terminal in raw mode on the alternate screen (the panic hook
/// restores it only then).
static ON_SCREEN: AtomicBool = AtomicBool::new(false);

/// The UI's loop, then the detach of a live source (whichever way the loop ended): what
/// [`run`] runs on the real terminal. Returns the loop's outcome and the detach's
/// error, if any.
pub fn session<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    color: bool,
    next_event: impl FnMut() -> io::Result<Event>,
    shell: impl FnMut(&[String]) -> io::Result<ExitStatus>,
) -> (io::Result<()>, Option<String>) {
    let outcome = event_loop(terminal, app, color, next_event, shell);
    (outcome, app.finish())
}

/// The UI's loop: draw, read an event, act. `next_event` and `shell` (runs a hand-off
/// command off the screen) are parameters so that tests drive the loop on a test backend.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    color: bool,
    mut next_event: impl FnMut() -> io::Result<Event>,
    mut shell: impl FnMut(&[String]) -> io::Result<ExitStatus>,
) -> io::Result<()> {
    let io_error = |e: B::Error| io::Error::other(e.to_string());
    let draw = |terminal: &mut Terminal<B>, app: &mut App| {
        terminal
            .draw(|f| ui::draw(f, app, color))
            .map(|_| ())
            .map_err(io_error)
    };
    loop {
        draw(terminal, app)?;
        let key = match next_event()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => k,
            // A resize (or anything else) just redraws.
            _ => continue,
        };
        match app.handle_key(key) {
            Step::Continue => {}
            Step::Busy => {
                draw(terminal, app)?;
                app.perform();
            }
            Step::Run(argv) => {
                let status = shell(&argv);
                terminal.clear().map_err(io_error)?;
                app.command_finished(&argv, status);
            }
            Step::Quit => {
                if app.begin_quit() {
                    draw(terminal, app)?;
                }
                return Ok(());
            }
        }
    }
}

/// Raw mode and the alternate screen, left again when dropped.
struct Screen;

impl Screen {
    fn enter() -> io::Result<Screen> {
        install_panic_hook();
        // Made first, so that a failure halfway through still restores what was done.
        let screen = Screen;
        enter_screen()?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = leave_screen();
    }
}

fn enter_screen() -> io::Result<()> {
    ON_SCREEN.store(true, Ordering::SeqCst);
    terminal::enable_raw_mode()?;
    execute!(io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)
}

fn leave_screen() -> io::Result<()> {
    if !ON_SCREEN.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = terminal::disable_raw_mode();
    execute!(io::stdout(), terminal::LeaveAlternateScreen, cursor::Show)?;
    raw
}

/// A panic while the UI runs must not leave the terminal raw and the message on the
/// alternate screen, where nobody would read it.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = leave_screen();
            previous(info);
        }));
    });
}

/// See [`run_in_view`]: in raw mode the terminal sends no SIGINT, but a debugger run by
/// the hand-off shares the terminal in cooked mode, and its Ctrl-C reaches strata too.
fn swallow_terminal_signals() {
    static SWALLOW: Once = Once::new();
    SWALLOW.call_once(|| {
        let mut set = SigSet::empty();
        set.add(Signal::SIGINT);
        set.add(Signal::SIGQUIT);
        if set.thread_block().is_ok() {
            // Raised like every strata thread: even asleep, one at the normal policy must be
            // scheduled to die, which spinning ranks can hold up at exit.
            let _ = strata_launcher::priority::spawn_raised("strata-tui-signals", move || {
                while set.wait().is_ok() {}
            });
        }
    });
}

/// Runs a hand-off command with the terminal: leaves the screen, runs it with inherited
/// standard streams (the child starts with an empty signal mask: std resets it), comes
/// back. No strata command is in flight meanwhile (the loop waits for this).
fn run_outside(argv: &[String]) -> io::Result<ExitStatus> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::other("empty command"))?;
    leave_screen()?;
    println!("strata: running {}", handoff::shell_line(argv));
    DEBUGGER_RUNNING.store(true, Ordering::SeqCst);
    let status = std::process::Command::new(program).args(args).status();
    DEBUGGER_RUNNING.store(false, Ordering::SeqCst);
    enter_screen()?;
    status
}
