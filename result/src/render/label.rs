//! How the things a tree shows read in a label: a frame in a view (`main @ ring.c:38`),
//! with its progress label (`get_norm@[T1.2]`), and a rank set (`254:[0,2-255]`).

use crate::annotation::Label;
use strata_filters::taskset::{TaskSet, format_set_shortened};
use strata_filters::{Frame, NodeId, PrefixTree, RankSet};

/// What a frame looks like in a label of the given view. The frame is already projected
/// to the view's granularity, so what it carries is what the view shows.
pub fn frame_text(frame: &Frame) -> String {
    let Some(c) = frame.code() else {
        return frame.name();
    };
    let mut s = frame.name();
    if let (Some(_), Some(file), Some(line)) = (&c.function, &c.file, c.line) {
        let base = file.rsplit('/').next().unwrap_or(file);
        s.push_str(&format!(" @ {base}:{line}"));
    }
    if c.is_recovered_call() {
        s.push_str(" [called]");
    } else if c.inlined {
        s.push_str(" [inlined]");
    }
    s
}

/// [`frame_text`] with a progress label after the function name, as in STAT's temporal
/// order views: `get_norm@[T1.2] @ solver.c:58`.
pub fn frame_text_labelled(frame: &Frame, label: Option<&Label>) -> String {
    let text = frame_text(frame);
    let Some(label) = label.filter(|l| !l.is_empty()) else {
        return text;
    };
    let name = frame.name();
    match text.strip_prefix(&name) {
        Some(rest) => format!("{name}@[{label}]{rest}"),
        None => format!("{text}@[{label}]"),
    }
}

/// A rank set as STAT labels it, `count:[ranks]`, the list shortened to `max_list`
/// characters.
pub fn count_label<S: TaskSet>(set: &S, max_list: usize) -> String {
    format!("{}:[{}]", set.count(), format_set_shortened(set, max_list))
}

/// Label of an edge: `count:[ranks]`, plus the thread count when threads were sampled.
pub fn edge_label(tree: &PrefixTree<RankSet>, id: NodeId, max_list: usize) -> String {
    let n = tree.node(id);
    let mut s = count_label(&n.tasks, max_list);
    if tree.has_threads() {
        s.push_str(&format!(" ({} thr)", n.threads.count()));
    }
    s
}
