//! Drawing the [`App`] with ratatui. Everything here reads state; the only thing it writes
//! back is the scroll position, which depends on the size of the screen.
//!
//! Layout, top to bottom: two status lines, the focus header (when focused), the tree,
//! the class list (toggled with `C`), and one line for the prompt, a message or the keys.
//! Dialogs are drawn over the tree. With `color` off no colour is used at all (`NO_COLOR`):
//! selection and matches are shown by reverse video, bold and underline.

use super::app::App;
use super::keys::FOOTER;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use strata_filters::NodeClass;
use strata_result::render::label::{count_label, edge_label};
use strata_result::render::text::path_tail;
use strata_result::render::{frame_text, header_parts};

/// Class colours, smallest class first: the outliers get the loudest.
const PALETTE: [Color; 12] = [
    Color::Red,
    Color::Green,
    Color::Yellow,
    Color::Blue,
    Color::Magenta,
    Color::Cyan,
    Color::LightRed,
    Color::LightGreen,
    Color::LightYellow,
    Color::LightBlue,
    Color::LightMagenta,
    Color::LightCyan,
];

/// Most lines of the class list.
const CLASS_LINES: usize = 8;

/// Styles, or none at all without colour.
#[derive(Clone, Copy)]
struct Theme {
    color: bool,
}

impl Theme {
    fn fg(self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
    }
    fn class(self, class: usize) -> Style {
        self.fg(PALETTE[class % PALETTE.len()])
    }
    fn error(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }
    fn dim(self) -> Style {
        if self.color {
            Style::new().fg(Color::DarkGray)
        } else {
            Style::new()
        }
    }
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &mut App, color: bool) {
    let theme = Theme { color };
    let area = frame.area();
    let focused = app.state().focus.is_some();
    let class_height = if app.show_classes() && !app.display().classes.is_empty() {
        (app.display().classes.len() + 1).min(CLASS_LINES) as u16
    } else {
        0
    };
    let [status, header, tree, classes, footer] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(u16::from(focused)),
        Constraint::Min(1),
        Constraint::Length(class_height),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_status(frame, app, theme, status);
    if focused {
        draw_focus(frame, app, theme, header);
    }
    draw_tree(frame, app, theme, tree);
    if class_height > 0 {
        draw_classes(frame, app, theme, classes);
    }
    draw_footer(frame, app, theme, footer);
    if app.dialog().is_some() {
        draw_dialog(frame, app, theme, tree.union(classes));
    }
}

/// Job, ranks, samples, view, missing ranks and whether the job is live, wrapped over two
/// lines.
fn draw_status(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let result = app.result();
    let state = app.state();
    let bold = Style::new().add_modifier(Modifier::BOLD);
    let mut parts: Vec<(String, Style)> = header_parts(result, state.kind, state.opts)
        .into_iter()
        .map(|p| (p, bold))
        .collect();
    if let Some(p) = &state.cut_pattern {
        parts.push((format!("cut below /{p}/"), bold));
    }
    let missing: u64 = result
        .meta
        .missing
        .iter()
        .filter_map(|m| strata_filters::taskset::parse_ranges(&m.ranks).ok())
        .flatten()
        .map(|(a, b)| u64::from(b - a))
        .sum();
    if missing > 0 {
        parts.push((format!("{missing} ranks missing"), theme.error()));
    }
    parts.push((app.source_state().to_string(), theme.dim()));
    let width = area.width as usize;
    let mut lines: Vec<Vec<Span>> = vec![Vec::new()];
    let mut used = 0;
    for (text, style) in parts {
        let len = text.chars().count();
        if used > 0 && used + 3 + len > width && lines.len() < 2 {
            lines.push(Vec::new());
            used = 0;
        }
        let line = lines.last_mut().expect("one line at least");
        if used > 0 {
            line.push(Span::styled(" · ", theme.dim()));
            used += 3;
        }
        line.push(Span::styled(text, style));
        used += len;
    }
    let text: Vec<Line> = lines.into_iter().map(Line::from).collect();
    frame.render_widget(Paragraph::new(text), area);
}

/// The focused node's ancestors, outermost first, shortened from the left to fit.
fn draw_focus(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let names: Vec<String> = app.display().prefix.iter().map(frame_text).collect();
    let lead = "focus: ";
    let room = (area.width as usize).saturating_sub(lead.len() + 4);
    let mut skip = 0;
    let path = loop {
        let mut parts: Vec<&str> = names[skip..].iter().map(String::as_str).collect();
        if skip > 0 {
            parts.insert(0, "…");
        }
        parts.push("");
        let text = parts.join(" > ");
        if text.chars().count() <= room || skip >= names.len() {
            break text;
        }
        skip += 1;
    };
    let line = Line::from(vec![
        Span::styled(lead, Style::new().add_modifier(Modifier::BOLD)),
        Span::styled(path, theme.dim()),
        Span::styled("(F unfocuses)", theme.dim()),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_tree(frame: &mut Frame, app: &mut App, theme: Theme, area: Rect) {
    let height = area.height as usize;
    app.scroll_into_view(height);
    if app.rows().is_empty() {
        frame.render_widget(Paragraph::new("(no stack traces)"), area);
        return;
    }
    let width = area.width as usize;
    let d = app.display();
    let selected = app.selected();
    let lines: Vec<Line> = app
        .rows()
        .iter()
        .skip(app.scroll())
        .take(height)
        .map(|row| {
            let node = row.node;
            let name = d.text(node);
            let marker = match (row.has_children, row.expanded) {
                (true, true) => "▾ ",
                (true, false) => "▸ ",
                (false, _) => "  ",
            };
            let count = d.tree.node(node).tasks.len().to_string();
            // What is left for the rank list once everything else on the line is placed.
            let fixed = row.prefix.chars().count() + 2 + count.len() + 3 + 2 + name.chars().count();
            let max_list = width.saturating_sub(fixed).min(width * 2 / 5).max(16);
            let label = edge_label(&d.tree, node, max_list);
            let class_style = match d.class_of[node.index()] {
                NodeClass::One(c) => theme.class(c),
                NodeClass::Mixed => Style::new(),
            };
            let mut name_style = class_style;
            if !d.tree.tasks_ending_at(node).is_empty() {
                name_style = name_style.add_modifier(Modifier::BOLD);
            }
            if app.is_hit(node) {
                name_style = name_style.add_modifier(Modifier::UNDERLINED);
            }
            let mut line = Line::from(vec![
                Span::styled(row.prefix.clone(), theme.dim()),
                Span::raw(marker),
                Span::styled(label, class_style),
                Span::raw("  "),
                Span::styled(name, name_style),
            ]);
            if Some(node) == selected {
                line = line.patch_style(Style::new().add_modifier(Modifier::REVERSED));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), area);
}

fn draw_classes(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let d = app.display();
    let n = d.classes.len();
    let title = format!(
        " {n} class{} (smallest first) · Tab jumps · C hides ",
        if n == 1 { "" } else { "es" }
    );
    let block = Block::new().borders(Borders::TOP).title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let height = inner.height as usize;
    let cursor = app.class_cursor();
    let first = cursor.map_or(0, |c| c.saturating_sub(height.saturating_sub(1)));
    let width = inner.width as usize;
    let labels: Vec<String> = d
        .classes
        .iter()
        .map(|c| count_label(&c.tasks, width / 3))
        .collect();
    let wide = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let lines: Vec<Line> = d
        .classes
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(i, class)| {
            let leaves = class.leaves.len().max(1);
            let room = width.saturating_sub(wide + 4 + 5 * (leaves - 1)) / leaves;
            let paths: Vec<String> = class
                .leaves
                .iter()
                .map(|&leaf| path_tail(&d.tree, leaf, 3, room))
                .collect();
            let mark = if cursor == Some(i) { "▶ " } else { "  " };
            let mut line = Line::from(vec![
                Span::raw(mark),
                Span::styled(format!("{:<wide$}", labels[i]), theme.class(i)),
                Span::raw("  "),
                Span::raw(paths.join("  |  ")),
            ]);
            if cursor == Some(i) {
                line = line.patch_style(Style::new().add_modifier(Modifier::BOLD));
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

fn draw_footer(frame: &mut Frame, app: &App, theme: Theme, area: Rect) {
    let line = if let Some(p) = app.prompt() {
        Line::from(vec![
            Span::styled(p.kind.label(), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(p.text.clone()),
            Span::styled(" ", Style::new().add_modifier(Modifier::REVERSED)),
            Span::styled("  Enter: ok · Esc: cancel", theme.dim()),
        ])
    } else if let Some(b) = app.busy() {
        Line::styled(b.to_string(), Style::new().add_modifier(Modifier::BOLD))
    } else if let Some(m) = app.message() {
        let style = if m.error { theme.error() } else { Style::new() };
        Line::styled(m.text.clone(), style)
    } else {
        Line::styled(FOOTER, theme.dim())
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_dialog(frame: &mut Frame, app: &mut App, theme: Theme, over: Rect) {
    let Some(d) = app.dialog() else {
        return;
    };
    let longest = d.lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let title_len = d.title.chars().count() + 4;
    let width = (longest.max(title_len) + 4).min(over.width as usize) as u16;
    let height = (d.lines.len() + 2).min(over.height as usize).max(3) as u16;
    let area = Rect {
        x: over.x + (over.width - width) / 2,
        y: over.y + (over.height - height) / 2,
        width,
        height,
    };
    let visible = height.saturating_sub(2) as usize;
    app.clamp_dialog(visible);
    let d = app.dialog().expect("checked");
    let hint = if d.run.is_some() {
        " Enter: run · Esc: close "
    } else if d.lines.len() > visible {
        " j/k PgUp/PgDn: scroll · Esc: close "
    } else {
        " Esc: close "
    };
    let block = Block::bordered()
        .title(format!(" {} ", d.title))
        .title_bottom(Line::styled(hint, theme.dim()));
    let lines: Vec<Line> = d
        .lines
        .iter()
        .enumerate()
        .skip(d.scroll)
        .take(visible)
        .map(|(i, l)| {
            let line = Line::raw(format!(" {l}"));
            if d.marked == Some(i) {
                line.patch_style(Style::new().add_modifier(Modifier::REVERSED))
            } else {
                line
            }
        })
        .collect();
    frame.render_widget(Clear, area);
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// The text of a screen, one line per row, trailing spaces removed: for tests and the
/// screen capture in `docs/TUI.md`.
pub fn screen_text(buffer: &ratatui::buffer::Buffer) -> String {
    let width = buffer.area.width as usize;
    let mut out = String::new();
    for row in buffer.content.chunks(width) {
        let line: String = row.iter().map(|c| c.symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// For tests: whether any cell of the screen has a colour.
pub fn has_color(buffer: &ratatui::buffer::Buffer) -> bool {
    buffer
        .content
        .iter()
        .any(|c| c.fg != Color::Reset || c.bg != Color::Reset)
}
