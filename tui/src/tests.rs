//! Tests of the terminal UI: key sequences as state changes (selection, expansion, search
//! hits, class jumps, view edits, live work against a scripted source), and snapshots of
//! the screens ratatui's `TestBackend` draws after them.
//!
//! Snapshots live in `snapshots/`; review changes with `cargo insta review`.

use super::app::{App, Step};
use super::source::{Saved, Source};
use super::view::ViewState;
use super::{session, ui};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use std::cell::RefCell;
use std::rc::Rc;
use strata_filters::synth::{SynthJob, SynthParams};
use strata_filters::{CodeFrame, Frame, Granularity, PrefixTree, RankSet};
use strata_result::example::ring_result;
use strata_result::{
    JobInfo, RankInfo, ResultMeta, SamplingInfo, StrataResult, ThreadInfo, TreeKind,
};

use strata_result::variables::{ReadClass, Reading, VariableReads, VariableSpec};

// ----- helpers -----

/// Keys as a user types them: characters, and names in angle brackets (`<Down>`, `<Tab>`,
/// `<S-Tab>`, `<Enter>`, `<Esc>`, `<Space>`, `<PgDn>`, `<C-c>`, `<lt>`, `<gt>`...).
/// The view with every start-up frame shown: most tests walk the ring's whole stacks
/// (`_start` first), as they were written before start-up frames were hidden by default.
fn raw() -> ViewState {
    let mut v = ViewState::default();
    v.opts.hide_start_up = false;
    v
}

fn keys(spec: &str) -> Vec<KeyEvent> {
    let mut out = Vec::new();
    let mut chars = spec.chars();
    while let Some(c) = chars.next() {
        if c != '<' {
            out.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
            continue;
        }
        let name: String = chars.by_ref().take_while(|&c| c != '>').collect();
        let (code, mods) = match name.as_str() {
            "Up" => (KeyCode::Up, KeyModifiers::NONE),
            "Down" => (KeyCode::Down, KeyModifiers::NONE),
            "Left" => (KeyCode::Left, KeyModifiers::NONE),
            "Right" => (KeyCode::Right, KeyModifiers::NONE),
            "PgUp" => (KeyCode::PageUp, KeyModifiers::NONE),
            "PgDn" => (KeyCode::PageDown, KeyModifiers::NONE),
            "Home" => (KeyCode::Home, KeyModifiers::NONE),
            "End" => (KeyCode::End, KeyModifiers::NONE),
            "Enter" => (KeyCode::Enter, KeyModifiers::NONE),
            "Esc" => (KeyCode::Esc, KeyModifiers::NONE),
            "Tab" => (KeyCode::Tab, KeyModifiers::NONE),
            "S-Tab" => (KeyCode::BackTab, KeyModifiers::SHIFT),
            "Space" => (KeyCode::Char(' '), KeyModifiers::NONE),
            "BS" => (KeyCode::Backspace, KeyModifiers::NONE),
            "C-c" => (KeyCode::Char('c'), KeyModifiers::CONTROL),
            "lt" => (KeyCode::Char('<'), KeyModifiers::NONE),
            "gt" => (KeyCode::Char('>'), KeyModifiers::NONE),
            other => panic!("unknown key <{other}>"),
        };
        out.push(KeyEvent::new(code, mods));
    }
    out
}

/// Presses `spec`, doing pending work at once (the loop would draw first); the steps.
fn press(app: &mut App, spec: &str) -> Vec<Step> {
    keys(spec)
        .into_iter()
        .map(|k| {
            let step = app.handle_key(k);
            if step == Step::Busy {
                app.perform();
            }
            step
        })
        .collect()
}

fn ring_app() -> App {
    App::new(ring_result(), Box::new(Saved), raw(), "node1")
}

/// The selected node's frame text.
fn selected(app: &App) -> String {
    app.display().text(app.selected().expect("a selection"))
}

/// The visible rows' frame texts.
fn visible(app: &App) -> Vec<String> {
    app.rows()
        .iter()
        .map(|r| app.display().text(r.node))
        .collect()
}

fn message(app: &App) -> String {
    app.message().map(|m| m.text.clone()).unwrap_or_default()
}

fn is_error(app: &App) -> bool {
    app.message().is_some_and(|m| m.error)
}

fn draw(app: &mut App, width: u16, height: u16, color: bool) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    t.draw(|f| ui::draw(f, app, color)).unwrap();
    t.backend().buffer().clone()
}

/// The screen column where `needle` starts in a line of `screen_text` (characters, not
/// bytes: the tree's connectors are multi-byte).
fn column(line: &str, needle: &str) -> u16 {
    line[..line.find(needle).expect("on the line")]
        .chars()
        .count() as u16
}

fn screen(app: &mut App, width: u16, height: u16) -> String {
    ui::screen_text(&draw(app, width, height, false))
}

/// A source that plays a live job: hands out the given results in turn and logs calls.
struct Scripted {
    live: bool,
    results: Vec<StrataResult>,
    log: Rc<RefCell<Vec<String>>>,
}

impl Source for Scripted {
    fn live(&self) -> bool {
        self.live
    }
    fn sample(&mut self, samples: u32, threads: bool) -> Result<StrataResult, String> {
        self.log
            .borrow_mut()
            .push(format!("sample {samples} threads={threads}"));
        if self.results.is_empty() {
            return Err("the job ended".into());
        }
        let mut r = self.results.remove(0);
        r.meta.sampling.samples = samples;
        Ok(r)
    }
    fn stacks(&mut self, ranks: &[u32]) -> Result<String, String> {
        self.log.borrow_mut().push(format!("stacks {ranks:?}"));
        Ok(format!("Thread 1 of rank {}\n  #0 live_frame", ranks[0]))
    }
    fn detach(&mut self) -> Result<(), String> {
        self.log.borrow_mut().push("detach".into());
        self.live = false;
        Ok(())
    }
    fn read_variables(
        &mut self,
        ranks: &[u32],
        variables: &[VariableSpec],
    ) -> Result<Vec<VariableReads>, String> {
        self.log
            .borrow_mut()
            .push(format!("variables {ranks:?} {}", variables[0]));
        Ok(vec![VariableReads {
            for_verdict: false,
            function: variables[0].function.clone(),
            variable: variables[0].variable.clone(),
            classes: vec![ReadClass {
                reading: Reading::Integer(7),
                ranks: "0-7".into(),
                at: None,
            }],
        }])
    }
}

fn live_app(results: Vec<StrataResult>) -> (App, Rc<RefCell<Vec<String>>>) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let source = Scripted {
        live: true,
        results,
        log: Rc::clone(&log),
    };
    let app = App::new(ring_result(), Box::new(source), raw(), "node1");
    (app, log)
}

/// A synthetic job straight from `filters::synth`, with hosts and pids.
fn synth_result(params: SynthParams) -> StrataResult {
    let job = SynthJob::new(params.clone());
    let t = params.threads_per_task;
    let ranks = job.ranks();
    StrataResult {
        meta: ResultMeta {
            strata_version: "test".into(),
            created: "2026-11-22T00:00:00Z".into(),
            job: JobInfo {
                id: "4242".into(),
                resource_manager: "slurm".into(),
                ..Default::default()
            },
            sampling: SamplingInfo {
                samples: params.samples,
                interval_ms: 100,
                threads: t > 0,
                started: "2026-11-22T00:00:00Z".into(),
                finished: "2026-11-22T00:00:01Z".into(),
            },
            job_size: ranks,
            ranks: (0..ranks)
                .map(|r| RankInfo {
                    rank: r,
                    host: Some(format!("n{:02}", r / params.tasks_per_daemon)),
                    pid: Some(1000 + r),
                    state: Some("R".into()),
                    ..Default::default()
                })
                .collect(),
            threads: (0..ranks * t)
                .map(|id| ThreadInfo {
                    id,
                    rank: id / t,
                    tid: 5000 + id,
                    name: None,
                    runtime: false,
                })
                .collect(),
            missing: Vec::new(),
            variables: Vec::new(),
        },
        tree_2d: job.direct_tree(params.samples - 1),
        tree_3d: job.direct_tree(0),
    }
}

// ----- moving, expanding, collapsing -----

#[test]
fn it_starts_on_the_first_frame_with_every_node_expanded() {
    let app = ring_app();
    assert_eq!(selected(&app), "_start");
    assert_eq!(visible(&app).len(), 9);
    assert!(app.rows().iter().all(|r| r.expanded || !r.has_children));
}

#[test]
fn start_up_frames_are_hidden_at_start_and_s_shows_the_full_stacks() {
    let mut app = App::new(
        ring_result(),
        Box::new(Saved),
        ViewState::default(),
        "node1",
    );
    assert_eq!(selected(&app), "main", "_start and libc's start-up hidden");
    assert_eq!(visible(&app).len(), 6);
    press(&mut app, "s");
    assert_eq!(visible(&app)[0], "_start");
    // And what lies below the MPI calls.
    assert!(visible(&app).len() > 9, "{:?}", visible(&app));
    assert!(message(&app).contains("full stacks"), "{}", message(&app));
    assert!(!app.state().opts.cut_below_mpi && !app.state().opts.hide_start_up);
    press(&mut app, "s");
    assert_eq!(app.state(), &ViewState::default());
    press(&mut app, "su");
    assert_eq!(app.state(), &ViewState::default(), "u undoes it");
}

#[test]
fn arrows_and_vi_keys_move_collapse_and_expand() {
    let mut app = ring_app();
    press(&mut app, "jjj<Down>j");
    assert_eq!(selected(&app), "sleep");
    press(&mut app, "h");
    assert!(!app.rows()[5].expanded, "sleep collapsed");
    assert_eq!(visible(&app).len(), 7);
    press(&mut app, "h");
    assert_eq!(selected(&app), "main", "a second h goes to the parent");
    press(&mut app, "l");
    assert_eq!(
        selected(&app),
        "MPI_Barrier",
        "l on an expanded node: first child"
    );
    press(&mut app, "<End>");
    assert_eq!(selected(&app), "MPI_Waitall");
    press(&mut app, "<Home><PgDn>");
    assert_eq!(
        selected(&app),
        "MPI_Waitall",
        "a page down stops at the last line"
    );
    press(&mut app, "<PgUp>");
    assert_eq!(selected(&app), "_start");
    // Enter collapses the whole tree at its top; e expands the subtree again.
    press(&mut app, "<Enter>");
    assert_eq!(visible(&app), ["_start"]);
    press(&mut app, "<Space>");
    assert_eq!(visible(&app).len(), 7, "sleep stays collapsed");
    press(&mut app, "e");
    assert_eq!(visible(&app).len(), 9);
    press(&mut app, "<Up>k");
    assert_eq!(selected(&app), "_start", "no row above the first");
}

// ----- view edits and undo -----

#[test]
fn focus_shows_the_subtree_and_undo_walks_back() {
    let mut app = ring_app();
    press(&mut app, "jjjjj");
    press(&mut app, "f");
    assert_eq!(
        visible(&app),
        ["sleep", "__GI___nanosleep", "__GI___clock_nanosleep"]
    );
    assert_eq!(app.display().prefix.len(), 4);
    assert_eq!(selected(&app), "sleep", "the selection survives the focus");
    press(&mut app, "F");
    assert_eq!(visible(&app).len(), 9);
    assert_eq!(selected(&app), "sleep");
    press(&mut app, "u");
    assert!(app.state().focus.is_some(), "undo restores the focus");
    press(&mut app, "u");
    assert_eq!(app.state(), &raw());
    press(&mut app, "u");
    assert_eq!(message(&app), "nothing to undo");
}

#[test]
fn cuts_below_mpi_and_below_a_regex_can_be_undone() {
    let mut app = ring_app();
    press(&mut app, "c");
    assert!(!app.state().opts.cut_below_mpi);
    assert!(visible(&app).contains(&"ompi_coll_base_barrier_intra_recursivedoubling".to_string()));
    press(&mut app, "x^(sleep|PMPI_.*)$<Enter>");
    assert_eq!(
        app.state().cut_pattern.as_deref(),
        Some("^(sleep|PMPI_.*)$")
    );
    let rows = visible(&app);
    assert!(
        !rows
            .iter()
            .any(|r| r.contains("nanosleep") || r.starts_with("ompi_")),
        "{rows:?}"
    );
    // A bad regex is refused and changes nothing.
    press(&mut app, "x<BS><BS>(<Enter>");
    assert!(
        is_error(&app) && message(&app).contains("bad regex"),
        "{}",
        message(&app)
    );
    assert_eq!(
        app.state().cut_pattern.as_deref(),
        Some("^(sleep|PMPI_.*)$")
    );
    press(&mut app, "u");
    assert_eq!(app.state().cut_pattern, None);
    press(&mut app, "u");
    assert!(app.state().opts.cut_below_mpi);
    assert_eq!(visible(&app).len(), 9);
}

#[test]
fn granularity_cycles_and_the_tree_switches_between_2d_and_3d() {
    let mut app = ring_app();
    press(&mut app, "jjj");
    press(&mut app, "g");
    assert_eq!(app.state().opts.granularity, Granularity::Line);
    // At line granularity main splits by call site; the selection finds one by name.
    let mains: Vec<String> = visible(&app)
        .into_iter()
        .filter(|r| r.starts_with("main"))
        .collect();
    assert_eq!(
        mains,
        ["main @ ring.c:47", "main @ ring.c:38", "main @ ring.c:45"]
    );
    assert!(selected(&app).starts_with("main @"), "{}", selected(&app));
    press(&mut app, "g");
    assert_eq!(app.state().opts.granularity, Granularity::Module);
    assert!(visible(&app).iter().any(|r| r.starts_with("libc.so.6+0x")));
    press(&mut app, "g");
    assert_eq!(app.state().opts.granularity, Granularity::Function);
    press(&mut app, "d");
    assert_eq!(app.state().kind, TreeKind::TwoD);
    assert_eq!(
        app.display()
            .tree
            .node(strata_filters::NodeId::ROOT)
            .tasks
            .len(),
        8
    );
    press(&mut app, "uuuu");
    assert_eq!(app.state(), &raw());
}

// ----- finding -----

#[test]
fn search_finds_frames_in_any_case_and_n_walks_the_matches() {
    let mut app = ring_app();
    press(&mut app, "jjjjjh"); // collapse sleep: matches below it must be shown again
    press(&mut app, "/NANOSLEEP<Enter>");
    assert_eq!(app.hits().len(), 2);
    assert_eq!(selected(&app), "__GI___nanosleep");
    assert!(message(&app).contains("1 of 2"), "{}", message(&app));
    press(&mut app, "n");
    assert_eq!(selected(&app), "__GI___clock_nanosleep");
    press(&mut app, "n");
    assert_eq!(selected(&app), "__GI___nanosleep", "n wraps around");
    press(&mut app, "N");
    assert_eq!(selected(&app), "__GI___clock_nanosleep");
    press(&mut app, "/no_such_frame<Enter>");
    assert!(is_error(&app));
    assert!(app.hits().is_empty());
    press(&mut app, "n");
    assert!(message(&app).contains("no search"));
}

#[test]
fn ranks_and_hosts_are_found_where_their_ranks_end() {
    let mut app = ring_app();
    press(&mut app, "#2<Enter>");
    assert_eq!(selected(&app), "MPI_Waitall");
    press(&mut app, "#9<Enter>");
    assert!(
        is_error(&app) && message(&app).contains("ranks 0-7"),
        "{}",
        message(&app)
    );
    press(&mut app, "#x<Enter>");
    assert!(message(&app).contains("not a rank number"));
    press(&mut app, "@node1<Enter>");
    // Ranks 0-3: 0 and 3 end in the barrier, 1 in the sleep, 2 in the wait.
    let hits: Vec<String> = app.hits().iter().map(|&n| app.display().text(n)).collect();
    assert_eq!(
        hits,
        ["MPI_Barrier", "__GI___clock_nanosleep", "MPI_Waitall"]
    );
    assert_eq!(selected(&app), "MPI_Barrier");
    press(&mut app, "@node2.cluster.example<Enter>");
    assert_eq!(
        app.hits().len(),
        1,
        "a fully qualified name finds the short one"
    );
    press(&mut app, "@login<Enter>");
    assert!(
        message(&app).contains("hosts: node1, node2"),
        "{}",
        message(&app)
    );
}

#[test]
fn tab_visits_the_classes_smallest_first() {
    let mut app = ring_app();
    press(&mut app, "<Tab>");
    assert_eq!(app.class_cursor(), Some(0));
    assert_eq!(selected(&app), "__GI___clock_nanosleep");
    assert!(
        message(&app).starts_with("class 1 of 3: 1:[1]"),
        "{}",
        message(&app)
    );
    press(&mut app, "<Tab>");
    assert_eq!(selected(&app), "MPI_Waitall");
    press(&mut app, "<Tab>");
    assert_eq!(selected(&app), "MPI_Barrier");
    press(&mut app, "<Tab>");
    assert_eq!(app.class_cursor(), Some(0), "Tab wraps");
    press(&mut app, "<S-Tab>");
    assert_eq!(app.class_cursor(), Some(2));
    assert_eq!(selected(&app), "MPI_Barrier");
}

#[test]
fn shortest_longest_least_and_most_visit_the_leaves() {
    let mut app = ring_app();
    press(&mut app, "[");
    assert_eq!(selected(&app), "MPI_Barrier", "depth 5, first of two");
    press(&mut app, "[");
    assert_eq!(
        selected(&app),
        "MPI_Waitall",
        "again: the other one as short"
    );
    press(&mut app, "]");
    assert_eq!(selected(&app), "__GI___clock_nanosleep");
    press(&mut app, "<lt>");
    assert_eq!(
        selected(&app),
        "MPI_Waitall",
        "one task ends in each; the selection was one, so the next"
    );
    press(&mut app, "<lt>");
    assert_eq!(selected(&app), "__GI___clock_nanosleep");
    press(&mut app, "<gt>");
    assert_eq!(selected(&app), "MPI_Barrier", "six tasks end there");
}

// ----- inspecting -----

#[test]
fn rank_info_lists_host_pid_and_state() {
    let mut app = ring_app();
    press(&mut app, "jjjj"); // MPI_Barrier: ranks 0,3-7
    press(&mut app, "i");
    let d = app.dialog().expect("info panel");
    assert!(
        d.title.starts_with("6:[0,3-7] at MPI_Barrier"),
        "{}",
        d.title
    );
    assert_eq!(d.lines.len(), 7);
    assert!(
        d.lines[3].contains("node2") && d.lines[3].contains("42212"),
        "{:?}",
        d.lines
    );
    press(&mut app, "<Esc>");
    assert!(app.dialog().is_none());
}

#[test]
fn full_stacks_of_a_saved_rank_come_from_the_3d_tree() {
    let mut app = ring_app();
    press(&mut app, "jjjjj");
    press(&mut app, "K");
    let d = app.dialog().expect("stacks panel");
    assert_eq!(d.title, "stacks of rank 1 (saved)");
    assert!(
        d.lines
            .iter()
            .any(|l| l.contains("#0   __GI___clock_nanosleep"))
    );
}

#[test]
fn source_lines_are_shown_when_the_file_is_readable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("solver.c");
    let body: String = (1..=30).map(|i| format!("code line {i}\n")).collect();
    std::fs::write(&file, body).unwrap();
    let frame = |function: &str, line: u32| {
        Frame::Code(CodeFrame {
            function: Some(function.into()),
            file: Some(file.display().to_string()),
            line: Some(line),
            ..CodeFrame::default()
        })
    };
    let mut tree: PrefixTree<RankSet> = PrefixTree::new(3, 0);
    tree.add_trace(&[frame("main", 12), frame("solve", 20)], 0, None);
    tree.add_trace(&[frame("main", 12), frame("solve", 20)], 1, None);
    tree.add_trace(&[frame("main", 12), frame("solve", 24)], 2, None);
    tree.add_trace(
        &[Frame::Special(strata_filters::Special::TaskExited)],
        2,
        None,
    );
    let mut r = ring_result();
    r.meta.job_size = 3;
    r.meta.ranks.truncate(3);
    r.tree_2d = tree.clone();
    r.tree_3d = tree;
    let mut app = App::new(r, Box::new(Saved), raw(), "node1");
    press(&mut app, "j"); // solve, at function granularity: lines 20 (2 ranks) and 24
    assert_eq!(selected(&app), "solve");
    press(&mut app, "o");
    let d = app.dialog().expect("listing");
    assert!(
        d.lines[0].contains("also sampled at line(s) 24"),
        "{:?}",
        d.lines
    );
    let marked = d.marked.expect("a marked line");
    assert!(
        d.lines[marked].starts_with("▶20 │ code line 20"),
        "{:?}",
        d.lines
    );
    assert_eq!(d.lines.len(), 12);
    press(&mut app, "<Esc>G"); // the special frame has no source
    press(&mut app, "<Esc><End>o");
    assert!(
        is_error(&app) && message(&app).contains("not code"),
        "{}",
        message(&app)
    );
}

#[test]
fn unreadable_sources_give_a_message() {
    let mut app = ring_app();
    press(&mut app, "jjjo");
    assert!(is_error(&app));
    // main's most sampled line (6 ranks) is ring.c:47, looked for next to the binary too.
    assert!(
        message(&app).contains("ring.c:47 (tried ring.c, /home/alice/ring/ring.c)"),
        "{}",
        message(&app)
    );
}

#[test]
fn the_debugger_hand_off_shows_the_command_and_enter_runs_it() {
    let mut app = ring_app();
    press(&mut app, "jjjjjG");
    let d = app.dialog().expect("hand-off panel");
    assert!(
        d.lines.iter().any(|l| l == "  $ gdb -p 41203"),
        "{:?}",
        d.lines
    );
    assert!(
        d.lines.iter().any(|l| l.contains("rank 1 on node1")),
        "{:?}",
        d.lines
    );
    let steps = press(&mut app, "<Enter>");
    assert_eq!(
        steps,
        [Step::Run(vec!["gdb".into(), "-p".into(), "41203".into()])]
    );
    assert!(app.dialog().is_none());
    // From another host, a local job's rank is reached over ssh; the barrier's class has
    // rank 0 as its representative.
    let mut app = App::new(ring_result(), Box::new(Saved), raw(), "login");
    press(&mut app, "jjjjG");
    let d = app.dialog().unwrap();
    assert!(
        d.lines.iter().any(|l| l == "  $ ssh -t node1 gdb -p 41200"),
        "{:?}",
        d.lines
    );
    assert_eq!(press(&mut app, "<Esc>"), [Step::Continue]);
    assert!(app.dialog().is_none());
}

// ----- live work -----

#[test]
fn a_saved_result_refuses_live_keys() {
    let mut app = ring_app();
    for k in ["r", "+", "t", "D"] {
        assert_eq!(press(&mut app, k), [Step::Continue], "{k}");
        assert!(
            is_error(&app) && message(&app).contains("not attached"),
            "{k}"
        );
        assert!(app.prompt().is_none());
    }
}

#[test]
fn a_live_source_samples_merges_reads_stacks_and_detaches() {
    let (mut app, log) = live_app(vec![ring_result(), ring_result(), ring_result()]);
    assert!(app.live());
    assert_eq!(press(&mut app, "r"), [Step::Busy]);
    assert_eq!(app.result().meta.sampling.samples, 10);
    press(&mut app, "+<BS><BS>5<Enter>");
    assert_eq!(app.result().meta.sampling.samples, 15, "merged: 10 + 5");
    press(&mut app, "t");
    assert!(message(&app).is_empty() || !is_error(&app));
    press(&mut app, "jjjjK");
    assert_eq!(app.dialog().unwrap().title, "stacks of rank 0 (live)");
    press(&mut app, "<Esc>D");
    assert!(!app.live());
    press(&mut app, "r");
    assert!(is_error(&app));
    assert_eq!(
        *log.borrow(),
        [
            "sample 10 threads=false",
            "sample 5 threads=false",
            "sample 10 threads=true",
            "stacks [0]",
            "detach"
        ]
    );
}

#[test]
fn a_failed_sampling_keeps_the_last_result() {
    let (mut app, _log) = live_app(Vec::new());
    press(&mut app, "r");
    assert!(is_error(&app) && message(&app).contains("the job ended"));
    assert_eq!(app.result().meta.sampling.samples, 10);
    press(&mut app, "+<BS><BS>0<Enter>");
    assert!(
        message(&app).contains("from 1 to 10000"),
        "{}",
        message(&app)
    );
}

#[test]
fn ctrl_c_quits_from_anywhere() {
    let mut app = ring_app();
    assert_eq!(press(&mut app, "<C-c>"), [Step::Quit]);
    press(&mut app, "/abc");
    assert!(app.prompt().is_some());
    assert_eq!(press(&mut app, "<C-c>"), [Step::Quit]);
    let mut app = ring_app();
    press(&mut app, "?");
    assert_eq!(press(&mut app, "q"), [Step::Continue], "q closes the help");
    assert_eq!(press(&mut app, "q"), [Step::Quit]);
}

#[test]
fn the_loop_runs_the_hand_off_and_detaches_a_live_source_on_quit() {
    let (mut app, log) = live_app(vec![ring_result()]);
    let mut events = keys("jjjjjG<Enter>rq").into_iter().map(Event::Key);
    let mut ran: Vec<Vec<String>> = Vec::new();
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let (outcome, detach_error) = session(
        &mut t,
        &mut app,
        false,
        || Ok(events.next().expect("the loop stops at q")),
        |argv| {
            ran.push(argv.to_vec());
            // What `true` returns: a successful status.
            std::process::Command::new("true").status()
        },
    );
    outcome.unwrap();
    assert_eq!(detach_error, None);
    assert_eq!(ran, [vec!["gdb".to_string(), "-p".into(), "41203".into()]]);
    assert_eq!(*log.borrow(), ["sample 10 threads=false", "detach"]);
    assert!(!app.live());
    // The last screen said it was detaching.
    assert!(ui::screen_text(t.backend().buffer()).contains("detaching…"));
}

// ----- drawing -----

#[test]
fn no_colour_at_all_when_colour_is_off() {
    let mut app = ring_app();
    press(&mut app, "C/main<Enter>");
    assert!(!ui::has_color(&draw(&mut app, 80, 24, false)));
    let buf = draw(&mut app, 80, 24, true);
    assert!(ui::has_color(&buf));
    // The sleeping rank's class (the smallest, first colour) paints its branch.
    let text = ui::screen_text(&buf);
    let (y, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("1:[1]  sleep"))
        .unwrap();
    let x = column(line, "1:[1]");
    assert_eq!(buf[(x, y as u16)].fg, ratatui::style::Color::Red);
}

#[test]
fn the_selection_scrolls_into_view_on_a_small_screen() {
    let r = synth_result(SynthParams {
        daemons: 4,
        tasks_per_daemon: 8,
        classes: 5,
        noise: 0.2,
        ..SynthParams::default()
    });
    let mut app = App::new(r, Box::new(Saved), raw(), "n00");
    assert!(app.rows().len() > 21);
    press(&mut app, "<End>");
    let text = screen(&mut app, 80, 24);
    let last = visible(&app).last().unwrap().clone();
    assert!(text.contains(&last), "{text}");
    assert!(app.scroll() > 0);
    assert!(text.lines().all(|l| l.chars().count() <= 80));
}

/// Screens after key sequences on the ring example: (snapshot name, keys, width, height).
const RING_SCREENS: &[(&str, &str, u16, u16)] = &[
    ("ring_80x24", "", 80, 24),
    ("ring_classes_search_80x24", "C<Tab>/barrier<Enter>", 80, 24),
    ("ring_focus_line_uncut_120x30", "jjjjfgc", 120, 30),
    ("help_80x24", "?", 80, 24),
    ("help_scrolled_80x24", "?<PgDn><PgDn>", 80, 24),
    ("rank_info_80x24", "jjjji", 80, 24),
    ("hand_off_80x24", "jjjjG", 80, 24),
];

#[test]
fn snapshots_of_the_ring_after_key_sequences() {
    for &(name, keys, width, height) in RING_SCREENS {
        let mut app = ring_app();
        press(&mut app, keys);
        insta::assert_snapshot!(name, screen(&mut app, width, height), keys);
    }
}

#[test]
fn snapshot_synthetic_threads_and_noise_wide() {
    let r = synth_result(SynthParams {
        daemons: 4,
        tasks_per_daemon: 16,
        classes: 4,
        noise: 0.05,
        threads_per_task: 2,
        ..SynthParams::default()
    });
    let mut app = App::new(r, Box::new(Saved), raw(), "n00");
    press(&mut app, "C<Tab><Tab>");
    insta::assert_snapshot!("synth_threads_classes_120x30", screen(&mut app, 120, 30));
}

#[test]
fn partial_results_show_missing_ranks_in_red() {
    let mut r = ring_result();
    // Two ranks of a 10-rank job are not in the trees.
    r.meta.job_size = 10;
    r.meta.missing.push(strata_result::MissingRanks {
        ranks: "8-9".into(),
        reason: "daemon 1 did not answer".into(),
    });
    let mut app = App::new(r, Box::new(Saved), raw(), "node1");
    let buf = draw(&mut app, 80, 24, true);
    let text = ui::screen_text(&buf);
    let (y, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("2 ranks missing"))
        .unwrap();
    let x = column(line, "2 ranks missing");
    assert_eq!(buf[(x, y as u16)].fg, ratatui::style::Color::Red);
    press(&mut app, "#9<Enter>");
    assert!(
        message(&app).contains("daemon 1 did not answer"),
        "{}",
        message(&app)
    );
}

#[test]
fn the_help_fits_80_columns_and_lists_every_key() {
    let mut app = ring_app();
    press(&mut app, "?");
    let d = app.dialog().expect("help");
    // 80 columns less the borders and the margin.
    let widest = d.lines.iter().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 77, "{widest}");
    for (_, keys) in super::keys::KEYS {
        for k in *keys {
            assert!(
                d.lines
                    .iter()
                    .any(|l| l.contains(k.keys) && l.contains(k.what)),
                "{}",
                k.keys
            );
        }
    }
    assert!(super::keys::FOOTER.chars().count() <= 80);
}

/// `docs/TUI.md` shows a screen: the one this code draws (the block after the marker).
#[test]
fn the_user_guide_shows_the_screen_the_code_draws() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/TUI.md"))
        .expect("docs/TUI.md");
    let marker = "<!-- screen: strata view docs/examples/ring-8.json, keys C Tab, 80x24 -->";
    let block: String = doc
        .split_once(marker)
        .expect("the marker")
        .1
        .lines()
        .skip(2) // the marker's line end and the opening fence
        .take_while(|l| !l.starts_with("```"))
        .map(|l| format!("{l}\n"))
        .collect();
    // What a user sees: the default view.
    let mut app = App::new(
        ring_result(),
        Box::new(Saved),
        ViewState::default(),
        "node1",
    );
    press(&mut app, "C<Tab>");
    let drawn = screen(&mut app, 80, 24);
    assert_eq!(
        block, drawn,
        "docs/TUI.md's screen differs; the screen now:\n{drawn}"
    );
}

#[test]
fn p_orders_by_progress_labels_frames_and_walks_to_the_least_progressed() {
    let mut app = ring_app();
    // Rank order first: the barrier branch (rank 0) is drawn before the sleeping rank's.
    let before = visible(&app);
    let pos = |rows: &[String], f: &str| rows.iter().position(|r| r.starts_with(f)).unwrap();
    assert!(
        pos(&before, "MPI_Barrier") < pos(&before, "sleep"),
        "{before:?}"
    );
    press(&mut app, "p");
    // The example's sources are not on this machine: line numbers order main's calls,
    // and the message says who is behind.
    assert!(
        message(&app).contains("Least progressed: T1 (1 rank [1])"),
        "{}",
        message(&app)
    );
    assert!(selected(&app).contains("@[T1]"), "{}", selected(&app));
    let after = visible(&app);
    assert!(
        pos(&after, "sleep@[T1]") < pos(&after, "MPI_Waitall@[T2]"),
        "{after:?}"
    );
    assert!(
        pos(&after, "MPI_Waitall@[T2]") < pos(&after, "MPI_Barrier@[T3]"),
        "{after:?}"
    );
    press(&mut app, "P");
    let d = app.dialog().expect("progress panel");
    assert!(d.title.starts_with("progress order"), "{}", d.title);
    assert!(
        d.lines.iter().any(|l| l.contains("T1 before T2")),
        "{:?}",
        d.lines
    );
    press(&mut app, "<Esc>p");
    assert!(!visible(&app).iter().any(|r| r.contains("@[T")));
    // u undoes the toggle like any view change.
    press(&mut app, "u");
    assert!(visible(&app).iter().any(|r| r.contains("@[T")));
}

#[test]
fn w_goes_to_the_ranks_the_verdict_names_and_capital_w_says_why() {
    let mut app = ring_app();
    press(&mut app, "w");
    // The example's rank 1 sleeps outside MPI while the others wait: the verdict names it,
    // and `w` selects where its stack ends.
    let node = app.selected().expect("a selection");
    let ranks: Vec<u32> = app.display().tree.node(node).tasks.iter().collect();
    assert_eq!(ranks, [1], "{}", selected(&app));
    assert!(
        message(&app).starts_with("why: [1] outside MPI in main"),
        "{}",
        message(&app)
    );
    assert!(message(&app).contains("W: details"), "{}", message(&app));
    press(&mut app, "W");
    let d = app.dialog().expect("the verdict's panel");
    assert_eq!(d.title, "why it hangs");
    assert_eq!(d.lines[0], "Why it hangs (likely)");
    assert!(
        d.lines
            .iter()
            .any(|l| l.starts_with("  debug [1]: outside MPI")),
        "{:?}",
        d.lines
    );
    // Focused away from rank 1, `w` says where to look instead of selecting nothing.
    press(&mut app, "<Esc>gg");
    let mut focused = ring_app();
    press(&mut focused, "/Barrier<Enter>f");
    press(&mut focused, "w");
    assert!(is_error(&focused), "{}", message(&focused));
    assert!(
        message(&focused).contains("not in this view"),
        "{}",
        message(&focused)
    );
}

#[test]
fn v_reads_a_variable_of_the_selected_function_in_its_ranks() {
    let (mut app, log) = live_app(vec![]);
    // The first rows are _start, __libc_start_main_impl, __libc_start_call_main, main.
    press(&mut app, "jjj");
    assert!(selected(&app).starts_with("main"), "{}", selected(&app));
    press(&mut app, "vit<Enter>");
    assert_eq!(
        log.borrow().last().unwrap(),
        "variables [0, 1, 2, 3, 4, 5, 6, 7] main:it"
    );
    let d = app.dialog().expect("values panel");
    assert_eq!(d.title, "main:it (live)");
    assert!(
        d.lines.iter().any(|l| l.contains("7  8:[0-7]")),
        "{:?}",
        d.lines
    );
    // An explicit FUNCTION:NAME, and a bad one.
    press(&mut app, "<Esc>vsolve:n<Enter>");
    assert_eq!(
        log.borrow().last().unwrap(),
        "variables [0, 1, 2, 3, 4, 5, 6, 7] solve:n"
    );
    press(&mut app, "<Esc>v:n<Enter>");
    assert!(is_error(&app), "{}", message(&app));
    // A saved result holds no live processes.
    let mut saved = ring_app();
    press(&mut saved, "jjjvit<Enter>");
    assert!(is_error(&saved) && message(&saved).contains("was not read in this saved result"));
}

/// The ring with MPI histories, as strata's PMPI library would have kept them: every rank
/// looping on a receive from its left and a send to its right, 1 ms of computation between,
/// all blocked in the receive for 5 s but rank 1, computing after its send for 5 s (the
/// ring example's rank 1 sleeps outside MPI).
fn ring_with_histories() -> App {
    use strata_result::pmpi::{
        PmpiEvent, PmpiHistory, PmpiRecord, PmpiSite, PmpiTimes, PmpiTransition,
    };
    let times = |ns: u64| PmpiTimes {
        mean_ns: ns,
        sd_ns: ns / 10,
        max_ns: ns * 3 / 2,
    };
    let mut result = ring_result();
    for r in &mut result.meta.ranks {
        let stuck = r.rank == 1;
        let site = |index: u32, call: &str, line: u32| PmpiSite {
            index,
            call: call.into(),
            address: 0x40_1000 + 16 * u64::from(index),
            function: Some("main".into()),
            file: Some("ring.c".into()),
            line: Some(line),
            entered: 100 + u64::from(index == 0 && !stuck),
            completed: 100,
            ..PmpiSite::default()
        };
        let step = |from: u32, to: u32, count: u64, between: u64| PmpiTransition {
            from: Some(from),
            to,
            count,
            between: Some(times(between)),
            within: Some(times(20_000)),
        };
        let history = PmpiHistory {
            sites: vec![site(0, "MPI_Recv", 20), site(1, "MPI_Send", 22)],
            transitions: vec![
                PmpiTransition {
                    from: None,
                    to: 0,
                    count: 1,
                    ..PmpiTransition::default()
                },
                step(0, 1, 100, 1_000_000),
                step(1, 0, if stuck { 99 } else { 100 }, 1_000_000),
            ],
            events: vec![PmpiEvent {
                call: "MPI_Send".into(),
                site: Some(1),
                ..PmpiEvent::default()
            }],
            calls: 200,
            in_call_ns: (!stuck).then_some(5_000_000_000),
            since_return_ns: stuck.then_some(5_000_000_000),
            ..PmpiHistory::default()
        };
        r.pmpi = Some(PmpiRecord {
            history: Some(history),
            ..PmpiRecord::default()
        });
    }
    App::new(result, Box::new(Saved), raw(), "node1")
}

#[test]
fn a_goes_to_the_ranks_the_mpi_histories_single_out() {
    let mut app = ring_with_histories();
    press(&mut app, "a");
    assert!(!is_error(&app), "{}", message(&app));
    let node = app.selected().expect("a selection");
    let ranks: Vec<u32> = app.display().tree.node(node).tasks.iter().collect();
    assert_eq!(ranks, [1], "{} · {}", selected(&app), message(&app));
    // Rank 1 is behind the others by its history, and unlike them.
    assert!(
        message(&app).starts_with("least progressed: [1] after MPI_Send in main (ring.c:22)"),
        "{}",
        message(&app)
    );
    // Its abnormal and apart findings name the same rank: shown once, so `a` again stays.
    let first = message(&app);
    assert!(!first.contains("a: next"), "{first}");
    press(&mut app, "kka");
    assert_eq!(message(&app), first);
    assert_eq!(app.selected(), Some(node));
    // A result without histories says how to get them.
    let mut plain = ring_app();
    press(&mut plain, "a");
    assert!(
        message(&plain).starts_with("no MPI histories in this result"),
        "{}",
        message(&plain)
    );
}
