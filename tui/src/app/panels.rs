//! The panels over the tree: help, a node's ranks, a rank's stacks, source lines, the
//! debugger hand-off.

use super::{App, Dialog, Step, Work};
use crate::handoff::{debugger_command, representative, shell_line};
use crate::keys::KEYS;
use crate::listing::read_listing;
use crate::source::saved_stacks;
use std::path::{Path, PathBuf};
use strata_filters::taskset::format_set_shortened;
use strata_filters::{Frame, NodeId};

/// Most ranks listed by `i` (the list is built when the panel opens).
const MAX_INFO_RANKS: usize = 10_000;
/// Source lines shown on each side of a frame's line.
const LISTING_CONTEXT: u32 = 5;

impl App {
    pub(super) fn rank_info(&mut self) {
        let Some(node) = self.selected() else {
            return;
        };
        let tasks = &self.display.tree.node(node).tasks;
        let meta = &self.result.meta;
        let info = |r: u32| meta.ranks.iter().find(|i| i.rank == r);
        let shown: Vec<u32> = tasks.iter().take(MAX_INFO_RANKS).collect();
        let host_w = shown
            .iter()
            .filter_map(|&r| info(r)?.host.as_ref().map(|h| h.chars().count()))
            .max()
            .unwrap_or(1)
            .clamp(4, 30);
        let rank_w = shown.last().map_or(4, |r| r.to_string().len().max(4));
        let mut lines = vec![format!(
            "{:>rank_w$}  {:<host_w$}  {:>8}  state  error",
            "rank", "host", "pid"
        )];
        for r in shown {
            let i = info(r);
            let host = i.and_then(|i| i.host.as_deref()).unwrap_or("-");
            let pid = i
                .and_then(|i| i.pid)
                .map_or("-".to_string(), |p| p.to_string());
            let state = i.and_then(|i| i.state.as_deref()).unwrap_or("-");
            let error = i.and_then(|i| i.error.as_deref()).unwrap_or("");
            lines.push(format!(
                "{r:>rank_w$}  {host:<host_w$}  {pid:>8}  {state:<5}  {error}"
            ));
        }
        if tasks.len() as usize > MAX_INFO_RANKS {
            lines.push(format!(
                "… and {} more ranks",
                tasks.len() as usize - MAX_INFO_RANKS
            ));
        }
        let title = format!(
            "{}:[{}] at {}",
            tasks.len(),
            format_set_shortened(tasks, 30),
            self.display.text(node)
        );
        self.dialog = Some(Dialog::text(title, lines));
    }

    pub(super) fn stacks(&mut self) -> Step {
        let Some(node) = self.selected() else {
            return Step::Continue;
        };
        let Some(rank) = self.display.tree.node(node).tasks.min() else {
            return Step::Continue;
        };
        if self.source.live() {
            return self.start(Work::Stacks(rank));
        }
        let text = saved_stacks(&self.result, rank);
        self.dialog = Some(Dialog::text(
            format!("stacks of rank {rank} (saved)"),
            text.lines().map(String::from).collect(),
        ));
        Step::Continue
    }

    /// The file and line of the selected frame, and where a relative file may live. At a
    /// granularity without lines, the line is the one most ranks were sampled at among the
    /// sampled frames the view's frame stands for.
    pub(super) fn source_location(
        &self,
        node: NodeId,
    ) -> Result<(String, u32, Vec<PathBuf>, String), String> {
        let frame = self.display.tree.node_frame(node).expect("not the root");
        let Some(code) = frame.code() else {
            return Err(format!("{} is not code: it has no source", frame.name()));
        };
        let mut note = String::new();
        let (file, line, module) = match (&code.file, code.line) {
            (Some(f), Some(l)) => (f.clone(), l, code.module.clone()),
            _ => {
                let fine = self.sampled_frames(node);
                let mut lines: Vec<(u64, &Frame)> = fine
                    .iter()
                    .filter(|(_, f)| {
                        f.code()
                            .is_some_and(|c| c.file.is_some() && c.line.is_some())
                    })
                    .map(|(count, f)| (*count, f))
                    .collect();
                lines.sort_by_key(|(count, _)| std::cmp::Reverse(*count));
                let Some((_, best)) = lines.first() else {
                    return Err(format!(
                        "{}: no source line was recorded for this frame (no debug information?)",
                        frame.name()
                    ));
                };
                let c = best.code().expect("filtered");
                if lines.len() > 1 {
                    let others: Vec<String> = lines[1..]
                        .iter()
                        .filter_map(|(_, f)| f.code().and_then(|c| c.line))
                        .map(|l| l.to_string())
                        .collect();
                    note = format!(
                        "also sampled at line(s) {} (g: line granularity)",
                        others.join(", ")
                    );
                }
                (
                    c.file.clone().expect("filtered"),
                    c.line.expect("filtered"),
                    c.module.clone(),
                )
            }
        };
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut add = |p: &str| {
            if let Some(d) = Path::new(p).parent()
                && !dirs.iter().any(|x| x == d)
            {
                dirs.push(d.to_path_buf());
            }
        };
        if let Some(m) = &module {
            add(&m.path);
        }
        if let Some(rank) = self.display.tree.node(node).tasks.min()
            && let Some(exe) = self
                .result
                .meta
                .ranks
                .iter()
                .find(|r| r.rank == rank)
                .and_then(|r| r.executable.as_deref())
        {
            add(exe);
        }
        Ok((file, line, dirs, note))
    }

    /// The sampled (finest) frames the view's `node` stands for, with the tasks at each:
    /// the sampled tree walked along the node's path, a frame matching where its
    /// projection to the view ([`strata_filters::ViewOptions::project`]) is the view's frame.
    pub(super) fn sampled_frames(&self, node: NodeId) -> Vec<(u64, Frame)> {
        let tree = self.result.tree(self.state.kind);
        let opts = self.state.opts;
        let mut at: Vec<NodeId> = vec![NodeId::ROOT];
        for want in self.display.full_path(node) {
            at = at
                .iter()
                .flat_map(|&n| tree.node(n).children.iter().copied())
                .filter(|&c| tree.node_frame(c).is_some_and(|f| opts.project(f) == want))
                .collect();
        }
        let mut out: Vec<(u64, Frame)> = Vec::new();
        for n in at {
            let f = tree.node_frame(n).expect("not the root").clone();
            let count = tree.node(n).tasks.len();
            match out.iter_mut().find(|(_, g)| *g == f) {
                Some((c, _)) => *c += count,
                None => out.push((count, f)),
            }
        }
        out
    }

    pub(super) fn listing(&mut self) {
        let Some(node) = self.selected() else {
            return;
        };
        let (file, line, dirs, note) = match self.source_location(node) {
            Ok(x) => x,
            Err(e) => return self.error(e),
        };
        match read_listing(&file, line, LISTING_CONTEXT, &dirs) {
            Ok(l) => {
                let mut lines = Vec::new();
                if !note.is_empty() {
                    lines.push(note);
                }
                let width = (l.first as usize + l.lines.len()).to_string().len();
                let mut marked = None;
                for (i, text) in l.lines.iter().enumerate() {
                    let n = l.first + i as u32;
                    let mark = if n == l.marked {
                        marked = Some(lines.len());
                        "▶"
                    } else {
                        " "
                    };
                    lines.push(format!("{mark}{n:>width$} │ {text}"));
                }
                let mut d = Dialog::text(
                    format!("{}:{line} · {}", l.path.display(), self.display.text(node)),
                    lines,
                );
                d.marked = marked;
                self.dialog = Some(d);
            }
            Err(e) => self.error(e),
        }
    }

    pub(super) fn handoff(&mut self) {
        let Some(node) = self.selected() else {
            return;
        };
        let Some(ci) = self.display.class_for(node) else {
            return self.error("no class holds this node's ranks");
        };
        let class = &self.display.classes[ci];
        let meta = &self.result.meta;
        let Some(rank) = representative(meta, &class.tasks) else {
            return;
        };
        let argv = match debugger_command(meta, rank, &self.this_host) {
            Ok(a) => a,
            Err(e) => return self.error(e),
        };
        let info = meta.ranks.iter().find(|r| r.rank == rank);
        let host = info.and_then(|i| i.host.as_deref()).unwrap_or("this host");
        let mut lines = vec![
            format!(
                "class {} of {}: {}:[{}]",
                ci + 1,
                self.display.classes.len(),
                class.tasks.len(),
                format_set_shortened(&class.tasks, 50)
            ),
            format!(
                "representative: rank {rank} on {host}, pid {}",
                info.and_then(|i| i.pid)
                    .map_or("?".into(), |p| p.to_string())
            ),
            String::new(),
            format!("  $ {}", shell_line(&argv)),
            String::new(),
        ];
        if !self.source.live() {
            lines.push("From a saved result: the process may have ended since.".to_string());
        }
        lines.push("Enter runs it here (strata leaves the screen until it exits).".to_string());
        let mut d = Dialog::text("debugger hand-off", lines);
        d.run = Some(argv);
        self.dialog = Some(d);
    }
}

/// The help panel, from the key table.
fn help_dialog() -> Dialog {
    let width = KEYS
        .iter()
        .flat_map(|(_, keys)| keys.iter())
        .map(|k| k.keys.chars().count())
        .max()
        .unwrap_or(0);
    let mut lines = Vec::new();
    for (section, keys) in KEYS {
        if !lines.is_empty() {
            lines.push(String::new());
        }
        lines.push((*section).to_string());
        for k in *keys {
            lines.push(format!("  {:<width$}  {}", k.keys, k.what));
        }
    }
    Dialog::text("keys (Esc closes, j/k scroll)", lines)
}

impl App {
    /// `?`: the help panel, every key of [`KEYS`].
    pub(super) fn open_help(&mut self) {
        self.dialog = Some(help_dialog());
    }
}
