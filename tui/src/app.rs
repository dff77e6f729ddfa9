//! The UI's state and what every key does. Pure: no terminal here, so key sequences can
//! be tested as state changes, and `ui` draws whatever state results.
//!
//! Work that blocks (sampling, reading live stacks, detaching) is not done inside
//! [`App::handle_key`]: the key sets it pending and returns [`Step::Busy`], the loop draws
//! the "sampling…" line, then calls [`App::perform`]. A debugger hand-off returns
//! [`Step::Run`]: only the loop can leave the screen to run it.

mod find;
mod model;
mod panels;
mod why;

use super::handoff::shell_line;
use super::source::Source;
use super::view::{BadRegex, Display, Row, ViewState, cut_regex};
use crate::search::Search;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use std::collections::HashSet;
use std::fmt;
use strata_filters::{Frame, NodeId};
use strata_progress::order::ProgressOrder;
use strata_progress::source::SourceIndex;
use strata_result::variables::{VariableReads, VariableSpec};
use strata_result::{StrataResult, TreeKind, merge_more};

/// What the loop must do after a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Draw and wait for the next key.
    Continue,
    /// Draw (the busy line says what is coming), then call [`App::perform`].
    Busy,
    /// Leave the screen, run this command with the terminal, come back, then call
    /// [`App::command_finished`].
    Run(Vec<String>),
    /// Quit (a live source is detached by the loop's owner).
    Quit,
}

/// A line of text the user types at the bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prompt {
    pub kind: PromptKind,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptKind {
    Search,
    Rank,
    Host,
    Cut,
    More,
    Variable,
}

impl PromptKind {
    /// The label before the typed text.
    pub fn label(self) -> &'static str {
        match self {
            PromptKind::Search => "search (regex): /",
            PromptKind::Rank => "find rank: #",
            PromptKind::Host => "find host: @",
            PromptKind::Cut => "cut below frames matching (regex, empty: none): ",
            PromptKind::More => "more samples: ",
            PromptKind::Variable => {
                "read variable in the node's function (NAME, or FUNCTION:NAME): "
            }
        }
    }
}

/// A panel over the tree: help, rank information, stacks, source lines, a hand-off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dialog {
    pub title: String,
    pub lines: Vec<String>,
    pub scroll: usize,
    /// A line to highlight (the frame's line in a source listing).
    pub marked: Option<usize>,
    /// Enter runs this command (the debugger hand-off).
    pub run: Option<Vec<String>>,
}

impl Dialog {
    fn text(title: impl Into<String>, lines: Vec<String>) -> Dialog {
        Dialog {
            title: title.into(),
            lines,
            scroll: 0,
            marked: None,
            run: None,
        }
    }
}

/// The one-line message at the bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub text: String,
    pub error: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Work {
    Sample {
        samples: u32,
        threads: bool,
        merge: bool,
    },
    Stacks(u32),
    Variables(Vec<u32>, VariableSpec),
    Detach,
}

/// The terminal UI's state.
pub struct App {
    result: StrataResult,
    /// The progress order of `result`, computed when first asked for (it reads sources).
    progress: Option<ProgressOrder>,
    /// The verdict on `result`, computed when first asked for (`w`, `W`).
    verdict: Option<strata_verdict::Verdict>,
    /// Which of the verdict's culprits `w` went to last.
    why_cursor: Option<usize>,
    /// Which of the runtime model's findings `a` went to last.
    model_cursor: Option<usize>,
    source: Box<dyn Source>,
    state: ViewState,
    undo: Vec<ViewState>,
    display: Display,
    collapsed: HashSet<NodeId>,
    rows: Vec<Row>,
    /// The selected node; the root when the tree is empty.
    selected: NodeId,
    scroll: usize,
    /// Tree lines on screen at the last draw (a page for PgUp/PgDn).
    page: usize,
    search: Option<Search>,
    class_cursor: Option<usize>,
    show_classes: bool,
    prompt: Option<Prompt>,
    dialog: Option<Dialog>,
    message: Option<Message>,
    busy: Option<String>,
    pending: Option<Work>,
    /// Samples and threads for "sample again".
    samples: u32,
    threads: bool,
    this_host: String,
}

impl fmt::Debug for App {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("App")
            .field("state", &self.state)
            .field("selected", &self.selected)
            .field("live", &self.source.live())
            .finish_non_exhaustive()
    }
}

impl App {
    /// The UI on `result`, in view `state` (the default view when `state` is not valid),
    /// `this_host` being where debuggers would run.
    pub fn new(
        result: StrataResult,
        source: Box<dyn Source>,
        state: ViewState,
        this_host: &str,
    ) -> App {
        let progress = state.progress.then(|| {
            strata_progress::order::analyze(
                &result,
                &mut SourceIndex::new(state.source_dirs.clone()),
            )
        });
        let (display, state) = Display::build(&result, &state, progress.as_ref())
            .or_else(|_| Display::build(&result, &ViewState::default(), None))
            .expect("the default view always builds");
        let samples = result.meta.sampling.samples.max(1);
        let threads = result.meta.sampling.threads;
        let mut app = App {
            result,
            progress,
            verdict: None,
            why_cursor: None,
            model_cursor: None,
            source,
            state,
            undo: Vec::new(),
            display,
            collapsed: HashSet::new(),
            rows: Vec::new(),
            selected: NodeId::ROOT,
            scroll: 0,
            page: 20,
            search: None,
            class_cursor: None,
            show_classes: false,
            prompt: None,
            dialog: None,
            message: None,
            busy: None,
            pending: None,
            samples,
            threads,
            this_host: this_host.to_string(),
        };
        app.refresh_rows();
        app.selected = app.rows.first().map_or(NodeId::ROOT, |r| r.node);
        if app.state.progress && app.source.live() {
            // Opened with --progress on a live job: the loop counters first, as `p` does.
            let state = app.state.clone();
            app.read_loop_variables(&state);
            if let Err(e) = app.rebuild(state) {
                app.error(e.to_string());
            }
        }
        app
    }

    // ----- what `ui` reads -----

    pub fn result(&self) -> &StrataResult {
        &self.result
    }
    pub fn state(&self) -> &ViewState {
        &self.state
    }
    pub fn display(&self) -> &Display {
        &self.display
    }
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }
    pub fn live(&self) -> bool {
        self.source.live()
    }
    /// Where the result comes from, for the status line ("attached", "detached", ...).
    pub fn source_state(&self) -> &'static str {
        self.source.state()
    }
    pub fn selected(&self) -> Option<NodeId> {
        (self.selected != NodeId::ROOT).then_some(self.selected)
    }
    /// The selected node's row.
    pub fn selected_row(&self) -> Option<usize> {
        self.rows.iter().position(|r| r.node == self.selected)
    }
    pub fn scroll(&self) -> usize {
        self.scroll
    }
    pub fn is_hit(&self, node: NodeId) -> bool {
        self.search.as_ref().is_some_and(|s| s.hits.contains(&node))
    }
    /// The search hits, in display order.
    pub fn hits(&self) -> &[NodeId] {
        self.search.as_ref().map_or(&[], |s| &s.hits)
    }
    pub fn class_cursor(&self) -> Option<usize> {
        self.class_cursor
    }
    pub fn show_classes(&self) -> bool {
        self.show_classes
    }
    pub fn prompt(&self) -> Option<&Prompt> {
        self.prompt.as_ref()
    }
    pub fn dialog(&self) -> Option<&Dialog> {
        self.dialog.as_ref()
    }
    pub fn message(&self) -> Option<&Message> {
        self.message.as_ref()
    }
    pub fn busy(&self) -> Option<&str> {
        self.busy.as_deref()
    }
    /// Whether the node's subtree is collapsed.
    pub fn is_collapsed(&self, node: NodeId) -> bool {
        self.collapsed.contains(&node)
    }

    /// Scrolls so that the selection is inside a window of `height` tree lines.
    pub fn scroll_into_view(&mut self, height: usize) {
        self.page = height.max(1);
        let row = self.selected_row().unwrap_or(0);
        let max_scroll = self.rows.len().saturating_sub(self.page);
        if row < self.scroll {
            self.scroll = row;
        } else if row >= self.scroll + self.page {
            self.scroll = row + 1 - self.page;
        }
        self.scroll = self.scroll.min(max_scroll);
    }

    /// Keeps a dialog's scroll inside its text, `height` lines being visible.
    pub fn clamp_dialog(&mut self, height: usize) {
        if let Some(d) = &mut self.dialog {
            d.scroll = d.scroll.min(d.lines.len().saturating_sub(height.max(1)));
        }
    }

    // ----- keys -----

    /// Handles one key press.
    pub fn handle_key(&mut self, key: KeyEvent) -> Step {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            // Raw mode turns Ctrl-C into a key: it means quit, wherever the user is.
            return Step::Quit;
        }
        if self.prompt.is_some() {
            return self.prompt_key(key);
        }
        if self.dialog.is_some() {
            return self.dialog_key(key);
        }
        self.message = None;
        if key
            .modifiers
            .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
        {
            return Step::Continue;
        }
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => self.move_by(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_by(1),
            KeyCode::PageUp => self.move_by(-(self.page as isize)),
            KeyCode::PageDown => self.move_by(self.page as isize),
            KeyCode::Home => self.move_to_row(0),
            KeyCode::End => self.move_to_row(self.rows.len().saturating_sub(1)),
            KeyCode::Left | KeyCode::Char('h') => self.collapse_or_parent(),
            KeyCode::Right | KeyCode::Char('l') => self.expand_or_child(),
            KeyCode::Enter | KeyCode::Char(' ') => self.toggle(),
            KeyCode::Char('e') => self.expand_subtree(),
            KeyCode::Char('f') => self.focus(),
            KeyCode::Char('F') => self.unfocus(),
            KeyCode::Char('c') => {
                let mut s = self.state.clone();
                s.opts.cut_below_mpi = !s.opts.cut_below_mpi;
                let what = if s.opts.cut_below_mpi {
                    "cut below MPI calls"
                } else {
                    "frames below MPI calls shown"
                };
                self.edit(s, what);
            }
            KeyCode::Char('s') => {
                // Full stacks: every frame as sampled, or back to the default view's
                // hiding and cutting.
                let mut s = self.state.clone();
                let full = s.opts.hide_start_up || s.opts.cut_below_mpi;
                s.opts.hide_start_up = !full;
                s.opts.hide_interpreter = !full;
                s.opts.cut_below_mpi = !full;
                s.opts.mpi_call_names = !full;
                s.opts.hide_runtime_threads = !full;
                let what = if full {
                    "full stacks: start-up and interpreter frames, frames below MPI calls, the library's names and MPI runtime threads shown"
                } else {
                    "start-up frames hidden, cut below MPI calls, named by their C names"
                };
                self.edit(s, what);
            }
            KeyCode::Char('x') => {
                let text = self.state.cut_pattern.clone().unwrap_or_default();
                self.ask(PromptKind::Cut, text);
            }
            KeyCode::Char('g') => {
                let mut s = self.state.clone();
                s.opts.granularity = s.next_granularity();
                let what = format!("{} granularity", s.opts.granularity);
                self.edit(s, &what);
            }
            KeyCode::Char('d') => {
                let mut s = self.state.clone();
                s.kind = match s.kind {
                    TreeKind::TwoD => TreeKind::ThreeD,
                    TreeKind::ThreeD => TreeKind::TwoD,
                };
                let what = match s.kind {
                    TreeKind::TwoD => "2D tree: the last sample of each rank",
                    TreeKind::ThreeD => "3D tree: all samples",
                };
                self.edit(s, what);
            }
            KeyCode::Char('u') => self.undo(),
            KeyCode::Char('/') => self.ask(PromptKind::Search, String::new()),
            KeyCode::Char('#') => self.ask(PromptKind::Rank, String::new()),
            KeyCode::Char('@') => self.ask(PromptKind::Host, String::new()),
            KeyCode::Char('n') => self.next_hit(1),
            KeyCode::Char('N') => self.next_hit(-1),
            KeyCode::Tab => self.next_class(1),
            KeyCode::BackTab => self.next_class(-1),
            KeyCode::Char('C') => self.show_classes = !self.show_classes,
            KeyCode::Char('[') => self.pick_leaf("shortest path", |d, n| d.tree.depth(n) as i64),
            KeyCode::Char(']') => self.pick_leaf("longest path", |d, n| -(d.tree.depth(n) as i64)),
            KeyCode::Char('<') => {
                self.pick_leaf("least tasks", |d, n| d.tree.tasks_ending_at(n).len() as i64)
            }
            KeyCode::Char('>') => self.pick_leaf("most tasks", |d, n| {
                -(d.tree.tasks_ending_at(n).len() as i64)
            }),
            KeyCode::Char('i') => self.rank_info(),
            KeyCode::Char('K') => return self.stacks(),
            KeyCode::Char('o') => self.listing(),
            KeyCode::Char('G') => self.handoff(),
            KeyCode::Char('r') => {
                return self.start(Work::Sample {
                    samples: self.samples,
                    threads: self.threads,
                    merge: false,
                });
            }
            KeyCode::Char('+') => self.ask_more_samples(),
            KeyCode::Char('t') => return self.toggle_threads(),
            KeyCode::Char('D') => return self.start(Work::Detach),
            KeyCode::Char('p') => self.toggle_progress(),
            KeyCode::Char('v') => self.ask(PromptKind::Variable, String::new()),
            KeyCode::Char('P') => self.progress_dialog(),
            KeyCode::Char('w') => self.why(),
            KeyCode::Char('W') => self.why_dialog(),
            KeyCode::Char('a') => self.singled_out(),
            KeyCode::Char('?') => self.open_help(),
            KeyCode::Char('q') => return Step::Quit,
            KeyCode::Esc => self.search = None,
            _ => {}
        }
        Step::Continue
    }

    fn prompt_key(&mut self, key: KeyEvent) -> Step {
        let Some(p) = &mut self.prompt else {
            return Step::Continue;
        };
        match key.code {
            KeyCode::Esc => self.prompt = None,
            KeyCode::Backspace => {
                p.text.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => p.text.clear(),
            KeyCode::Char(c)
                if !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                p.text.push(c)
            }
            KeyCode::Enter => {
                let p = self.prompt.take().expect("checked");
                return self.submit(p);
            }
            _ => {}
        }
        Step::Continue
    }

    fn dialog_key(&mut self, key: KeyEvent) -> Step {
        let page = self.page.max(1);
        let Some(d) = &mut self.dialog else {
            return Step::Continue;
        };
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') => self.dialog = None,
            KeyCode::Enter => {
                let run = d.run.take();
                self.dialog = None;
                if let Some(argv) = run {
                    self.busy = Some(format!("running {}", shell_line(&argv)));
                    return Step::Run(argv);
                }
            }
            KeyCode::Up | KeyCode::Char('k') => d.scroll = d.scroll.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => d.scroll += 1,
            KeyCode::PageUp => d.scroll = d.scroll.saturating_sub(page),
            KeyCode::PageDown | KeyCode::Char(' ') => d.scroll += page,
            KeyCode::Home => d.scroll = 0,
            KeyCode::End => d.scroll = d.lines.len(),
            _ => {}
        }
        Step::Continue
    }

    fn ask(&mut self, kind: PromptKind, text: String) {
        self.prompt = Some(Prompt { kind, text });
    }

    fn submit(&mut self, p: Prompt) -> Step {
        let text = p.text.trim().to_string();
        match p.kind {
            PromptKind::Search if text.is_empty() => self.search = None,
            PromptKind::Search => self.search_text(text),
            PromptKind::Rank => match text.parse::<u32>() {
                Ok(rank) => self.find_rank(rank),
                Err(_) => self.error(format!("'{text}' is not a rank number")),
            },
            PromptKind::Host if text.is_empty() => {}
            PromptKind::Host => self.find_host(text),
            PromptKind::Cut => {
                let mut s = self.state.clone();
                if text.is_empty() {
                    s.cut_pattern = None;
                    self.edit(s, "no cut below a pattern");
                } else if let Err(e) = cut_regex(&text) {
                    self.error(e.to_string());
                } else {
                    let what = format!("cut below frames matching /{text}/");
                    s.cut_pattern = Some(text);
                    self.edit(s, &what);
                }
            }
            PromptKind::Variable if text.is_empty() => {}
            PromptKind::Variable => return self.read_variable(&text),
            PromptKind::More => match text.parse::<u32>() {
                Ok(n @ 1..=10_000) => {
                    return self.start(Work::Sample {
                        samples: n,
                        threads: self.threads,
                        merge: true,
                    });
                }
                _ => self.error(format!(
                    "'{text}': give a number of samples from 1 to 10000"
                )),
            },
        }
        Step::Continue
    }

    fn info(&mut self, text: impl Into<String>) {
        self.message = Some(Message {
            text: text.into(),
            error: false,
        });
    }

    fn error(&mut self, text: impl Into<String>) {
        self.message = Some(Message {
            text: text.into(),
            error: true,
        });
    }

    // ----- moving -----

    fn refresh_rows(&mut self) {
        self.rows = self.display.rows(&self.collapsed);
    }

    fn move_to_row(&mut self, row: usize) {
        if let Some(r) = self.rows.get(row.min(self.rows.len().saturating_sub(1))) {
            self.selected = r.node;
        }
    }

    fn move_by(&mut self, delta: isize) {
        let row = self.selected_row().unwrap_or(0) as isize + delta;
        self.move_to_row(row.max(0) as usize);
    }

    /// Selects `node`, expanding its ancestors so that it is visible.
    fn select(&mut self, node: NodeId) {
        let mut cur = self.display.tree.node(node).parent;
        while let Some(p) = cur {
            self.collapsed.remove(&p);
            cur = self.display.tree.node(p).parent;
        }
        self.refresh_rows();
        self.selected = node;
    }

    fn current(&self) -> Option<&Row> {
        self.selected_row().map(|i| &self.rows[i])
    }

    fn collapse_or_parent(&mut self) {
        let Some(row) = self.current().cloned() else {
            return;
        };
        if row.expanded {
            self.collapsed.insert(row.node);
            self.refresh_rows();
        } else if let Some(p) = self.display.tree.node(row.node).parent
            && p != NodeId::ROOT
        {
            self.selected = p;
        }
    }

    fn expand_or_child(&mut self) {
        let Some(row) = self.current().cloned() else {
            return;
        };
        if row.has_children && !row.expanded {
            self.collapsed.remove(&row.node);
            self.refresh_rows();
        } else if let Some(&first) = self.display.children[row.node.index()].first() {
            self.selected = first;
        }
    }

    fn toggle(&mut self) {
        let Some(row) = self.current().cloned() else {
            return;
        };
        if row.has_children && !self.collapsed.remove(&row.node) {
            self.collapsed.insert(row.node);
        }
        self.refresh_rows();
    }

    fn expand_subtree(&mut self) {
        let Some(node) = self.selected() else {
            return;
        };
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            self.collapsed.remove(&n);
            stack.extend(&self.display.children[n.index()]);
        }
        self.refresh_rows();
    }

    // ----- view edits -----

    /// Switches to view `new` (pushing the current one on the undo stack) and says `what`.
    fn edit(&mut self, new: ViewState, what: &str) {
        if new == self.state {
            return;
        }
        let old = self.state.clone();
        let wanted_focus = new.focus.is_some();
        match self.rebuild(new) {
            Ok(()) => {
                self.undo.push(old);
                if wanted_focus && self.state.focus.is_none() {
                    self.info(format!(
                        "{what}; the focused path is not in this view: focus dropped (u undoes)"
                    ));
                } else {
                    self.info(format!("{what} (u undoes)"));
                }
            }
            Err(e) => self.error(e.to_string()),
        }
    }

    fn undo(&mut self) {
        match self.undo.pop() {
            Some(s) => match self.rebuild(s) {
                Ok(()) => self.info("undone"),
                Err(e) => self.error(e.to_string()),
            },
            None => self.info("nothing to undo"),
        }
    }

    /// Derives the display again (new state or new result), keeping the selection,
    /// collapsed nodes and the search where their paths still exist.
    fn rebuild(&mut self, state: ViewState) -> Result<(), BadRegex> {
        if state.progress && self.progress.is_none() {
            let mut sources = SourceIndex::new(state.source_dirs.clone());
            self.progress = Some(strata_progress::order::analyze(&self.result, &mut sources));
        }
        let (display, used) = Display::build(&self.result, &state, self.progress.as_ref())?;
        let selected = self.selected().map(|n| self.display.full_path(n));
        let collapsed: Vec<Vec<Frame>> = self
            .collapsed
            .iter()
            .map(|&n| self.display.full_path(n))
            .collect();
        self.display = display;
        self.state = used;
        self.collapsed = collapsed
            .iter()
            .filter_map(|p| match self.display.find(p) {
                Some((n, true)) => Some(n),
                _ => None,
            })
            .collect();
        // Another view has other classes: Tab starts again from the smallest.
        self.class_cursor = None;
        self.refresh_rows();
        match selected.and_then(|p| self.display.find(&p)) {
            Some((n, _)) => self.select(n),
            None => self.selected = self.rows.first().map_or(NodeId::ROOT, |r| r.node),
        }
        if let Some(s) = self.search.take() {
            let hits = self.hits_of(&s.query).unwrap_or_default();
            self.search = Some(Search {
                query: s.query,
                hits,
                current: None,
            });
        }
        Ok(())
    }

    /// `p`: the progress order on (labels, branches least progressed first, the cursor on
    /// the least progressed class) or off.
    fn toggle_progress(&mut self) {
        let mut state = self.state.clone();
        state.progress = !state.progress;
        let on = state.progress;
        if on && self.source.live() {
            self.read_loop_variables(&state);
        }
        self.undo.push(self.state.clone());
        if let Err(e) = self.rebuild(state) {
            self.error(e.to_string());
            return;
        }
        if !on {
            self.info("progress order off");
            return;
        }
        self.walk_to_least_progressed();
    }

    /// On a live job, reads the loop-order variables the progress order of the current
    /// result needs (as `attach --progress` does) into the result, once per result.
    fn read_loop_variables(&mut self, state: &ViewState) {
        let mut sources = SourceIndex::new(state.source_dirs.clone());
        let requests = strata_progress::order::loop_requests(&self.result, &mut sources);
        match self.read_missing(requests, false) {
            Ok(true) => {
                self.progress = None;
                self.verdict = None;
            }
            Ok(false) => {}
            Err(e) => self.error(format!("reading the loop counters: {e}")),
        }
    }

    /// Reads, in every sampled rank, those of `requests` the result does not hold yet, into
    /// the result (`for_verdict`: marked as the verdict's); whether any were read.
    fn read_missing(
        &mut self,
        requests: Vec<strata_proto::overlay::VariableRequest>,
        for_verdict: bool,
    ) -> Result<bool, String> {
        let missing: Vec<VariableSpec> = requests
            .into_iter()
            .filter(|r| {
                !self
                    .result
                    .meta
                    .variables
                    .iter()
                    .any(|v| v.function == r.function && v.variable == r.variable)
            })
            .map(|r| VariableSpec {
                function: r.function,
                variable: r.variable,
            })
            .collect();
        if missing.is_empty() {
            return Ok(false);
        }
        let ranks: Vec<u32> = self
            .result
            .tree_2d
            .node(NodeId::ROOT)
            .tasks
            .iter()
            .collect();
        let reads = self.source.read_variables(&ranks, &missing)?;
        self.result
            .meta
            .variables
            .extend(reads.into_iter().map(|mut r| {
                r.for_verdict = for_verdict;
                r
            }));
        Ok(true)
    }

    /// Selects where the least progressed class ends and says who it is.
    fn walk_to_least_progressed(&mut self) {
        let Some(order) = &self.progress else {
            return;
        };
        let Some(first) = order.classes.first() else {
            self.info("progress order: no stack traces");
            return;
        };
        let line = strata_progress::report::least_progressed(order);
        let notes = order.notes.len();
        let tasks = first.tasks.clone();
        if let Some(&node) = self.display.ending_nodes(&tasks).first() {
            self.select(node);
        }
        if notes > 0 {
            self.info(format!("{line} · {notes} source note(s): P shows them"));
        } else {
            self.info(format!("{line} · P: why"));
        }
    }

    /// `v`: a variable read in every rank of the selected node, in the innermost frame of
    /// the node's function (or of the function named as `FUNCTION:NAME`): live on an attached
    /// job, else from the values a saved result holds.
    fn read_variable(&mut self, text: &str) -> Step {
        let Some(node) = self.selected() else {
            return Step::Continue;
        };
        let spec = if text.contains(':') {
            match text.parse::<VariableSpec>() {
                Ok(s) => s,
                Err(e) => {
                    self.error(e);
                    return Step::Continue;
                }
            }
        } else {
            let function = self
                .display
                .tree
                .node_frame(node)
                .and_then(|f| f.code())
                .and_then(|c| c.function.clone());
            let Some(function) = function else {
                self.error("the selected frame has no function name: type FUNCTION:NAME");
                return Step::Continue;
            };
            VariableSpec {
                function,
                variable: text.to_string(),
            }
        };
        let ranks: Vec<u32> = self.display.tree.node(node).tasks.iter().collect();
        if self.source.live() {
            return self.start(Work::Variables(ranks, spec));
        }
        let saved: Vec<VariableReads> = self
            .result
            .meta
            .variables
            .iter()
            .filter(|v| v.function == spec.function && v.variable == spec.variable)
            .cloned()
            .collect();
        if saved.is_empty() {
            self.error(format!(
                "{spec} was not read in this saved result: attach to the job (strata attach -i) to read it live"
            ));
        } else {
            self.variables_dialog(&spec, &saved, "saved");
        }
        Step::Continue
    }

    fn variables_dialog(&mut self, spec: &VariableSpec, reads: &[VariableReads], how: &str) {
        let text = strata_result::variables::text(reads, 200);
        self.dialog = Some(Dialog::text(
            format!("{spec} ({how})"),
            text.lines().skip(1).map(String::from).collect(),
        ));
    }

    /// `P`: the whole progress report (classes, evidence, source notes) in a dialog.
    fn progress_dialog(&mut self) {
        if self.progress.is_none() {
            let mut sources = SourceIndex::new(self.state.source_dirs.clone());
            self.progress = Some(strata_progress::order::analyze(&self.result, &mut sources));
        }
        let text = strata_progress::report::text(self.progress.as_ref().expect("set"), 200);
        self.dialog = Some(Dialog::text(
            "progress order (least progressed first)".to_string(),
            text.lines().map(String::from).collect(),
        ));
    }

    fn focus(&mut self) {
        let Some(node) = self.selected() else {
            return;
        };
        let path = self.display.full_path(node);
        let what = format!("focused on {}", self.display.text(node));
        let mut s = self.state.clone();
        s.focus = Some(path);
        self.edit(s, &what);
    }

    fn unfocus(&mut self) {
        if self.state.focus.is_none() {
            self.info("not focused (f focuses on the selected node)");
            return;
        }
        let mut s = self.state.clone();
        s.focus = None;
        self.edit(s, "whole tree");
    }

    // ----- live work -----

    fn require_live(&mut self) -> bool {
        if !self.source.live() {
            self.error(
                "not attached: sampling and detaching need a live session (strata attach ... -i)",
            );
        }
        self.source.live()
    }

    fn ask_more_samples(&mut self) {
        if self.require_live() {
            self.ask(PromptKind::More, self.samples.to_string());
        }
    }

    fn toggle_threads(&mut self) -> Step {
        if !self.require_live() {
            return Step::Continue;
        }
        self.threads = !self.threads;
        self.start(Work::Sample {
            samples: self.samples,
            threads: self.threads,
            merge: false,
        })
    }

    fn start(&mut self, work: Work) -> Step {
        if !self.require_live() {
            return Step::Continue;
        }
        self.busy = Some(match &work {
            &Work::Sample {
                samples,
                threads,
                merge,
            } => format!(
                "sampling{} {samples} sample{}{}…",
                if merge { " more:" } else { ":" },
                if samples == 1 { "" } else { "s" },
                if threads { ", every thread" } else { "" }
            ),
            Work::Stacks(rank) => format!("reading the stacks of rank {rank}…"),
            Work::Variables(ranks, spec) => format!("reading {spec} in {} rank(s)…", ranks.len()),
            Work::Detach => "detaching…".to_string(),
        });
        self.pending = Some(work);
        Step::Busy
    }

    /// Runs the work a key left pending (see [`Step::Busy`]).
    pub fn perform(&mut self) {
        let Some(work) = self.pending.take() else {
            return;
        };
        self.busy = None;
        match work {
            Work::Sample {
                samples,
                threads,
                merge,
            } => match self.source.sample(samples, threads) {
                Ok(new) => {
                    self.result = if merge {
                        merge_more(&self.result, new)
                    } else {
                        new
                    };
                    // A new 2D tree: the order and the verdict are derived again when next
                    // shown, with the loop counters and peers of this moment.
                    self.progress = None;
                    self.verdict = None;
                    self.why_cursor = None;
                    self.model_cursor = None;
                    let state = self.state.clone();
                    if state.progress {
                        self.read_loop_variables(&state);
                    }
                    match self.rebuild(state) {
                        Ok(()) => self.info(format!(
                            "{} {samples} sample{}: {} in all",
                            if merge { "merged" } else { "took" },
                            if samples == 1 { "" } else { "s" },
                            self.result.meta.sampling.samples
                        )),
                        Err(e) => self.error(e.to_string()),
                    }
                }
                Err(e) => {
                    // The setting follows the result on the screen (`t` asked for a change
                    // that did not happen).
                    self.threads = self.result.meta.sampling.threads;
                    self.error(format!("sampling failed: {e}"));
                }
            },
            Work::Stacks(rank) => match self.source.stacks(&[rank]) {
                Ok(text) => {
                    self.dialog = Some(Dialog::text(
                        format!("stacks of rank {rank} (live)"),
                        text.lines().map(String::from).collect(),
                    ))
                }
                Err(e) => self.error(format!("stacks of rank {rank}: {e}")),
            },
            Work::Variables(ranks, spec) => {
                match self
                    .source
                    .read_variables(&ranks, std::slice::from_ref(&spec))
                {
                    Ok(reads) => self.variables_dialog(&spec, &reads, "live"),
                    Err(e) => self.error(format!("reading {spec}: {e}")),
                }
            }
            Work::Detach => match self.source.detach() {
                Ok(()) => self.info("detached: showing the last result"),
                Err(e) => self.error(format!("detach failed: {e}")),
            },
        }
    }

    /// Says how a hand-off command ended.
    pub fn command_finished(
        &mut self,
        argv: &[String],
        status: std::io::Result<std::process::ExitStatus>,
    ) {
        self.busy = None;
        let cmd = shell_line(argv);
        match status {
            Ok(s) if s.success() => self.info(format!("{cmd}: done")),
            Ok(s) => self.error(format!("{cmd}: {s}")),
            Err(e) => self.error(format!("cannot run {cmd}: {e}")),
        }
    }

    /// Before quitting: says the UI is detaching when live.
    pub fn begin_quit(&mut self) -> bool {
        if self.source.live() {
            self.busy = Some("detaching…".to_string());
        }
        self.source.live()
    }

    /// Detaches a live source; the error, if any, for the user.
    pub fn finish(&mut self) -> Option<String> {
        if !self.source.live() {
            return None;
        }
        self.source
            .detach()
            .err()
            .map(|e| format!("detach failed: {e}"))
    }
}
