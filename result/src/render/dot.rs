//! STAT-compatible DOT.
//!
//! Two readers matter. STAT's viewer (STATview) reads the attributes STAT's graphlib
//! writes: root node `0`; per node `function`, `source`, `line`, `module`, `offset`, `vars`,
//! `pc` (every one present, `"(null)"` when unknown, because the viewer indexes them); per
//! edge `bv` (the rank list `[0,2-255]`), `count`, `rep`, `sum`, `tbv`, `tcount`, `tbvsum`.
//! It builds its own labels from those. Plain Graphviz (`dot -Tsvg`) draws only `label`s,
//! so strata fills every label in (STAT's own files have empty node labels, which is why they
//! look blank outside its viewer, LLNL/STAT#39).
//!
//! Graphviz rejects a quoted string longer than 16,384 characters (LLNL/STAT#17 is what
//! happens with long rank lists): labels are shortened, and a longer `bv` is written as
//! `"..." + "..."` chunks, which the DOT grammar joins back into one string.

use super::label::frame_text_labelled;
use crate::annotation::Annotation;
use crate::model::{StrataResult, TreeKind};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use strata_filters::taskset::{format_set, format_set_shortened};
use strata_filters::{NodeId, TaskSet, ViewOptions, view};

/// Longest quoted string we write in one piece; Graphviz's limit is 16,384.
pub const MAX_QUOTED: usize = 16_000;
/// Longest rank list shown in an edge label (the full list is in `bv`).
const LABEL_LIST: usize = 60;

/// Pastel fills, one per distinct rank set, so nodes taken by the same ranks share a colour.
const PALETTE: [&str; 12] = [
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
];

/// Escapes a string for a DOT double-quoted string.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            _ => out.push(c),
        }
    }
    out
}

/// A quoted DOT string, split into `"a" + "b"` chunks of at most [`MAX_QUOTED`] characters.
/// Chunks end after a comma when possible, so each chunk is a readable piece of a rank list.
pub fn quoted_chunks(s: &str) -> String {
    let escaped = escape(s);
    if escaped.len() <= MAX_QUOTED {
        return format!("\"{escaped}\"");
    }
    let mut parts = Vec::new();
    let mut rest = escaped.as_str();
    while rest.len() > MAX_QUOTED {
        let mut cut = rest[..MAX_QUOTED].rfind(',').map_or(MAX_QUOTED, |i| i + 1);
        // Never split an escape sequence or a UTF-8 character.
        while !rest.is_char_boundary(cut) || rest[..cut].ends_with('\\') {
            cut -= 1;
        }
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    parts.push(rest);
    parts
        .iter()
        .map(|p| format!("\"{p}\""))
        .collect::<Vec<_>>()
        .join(" + ")
}

/// STAT's placeholder for an attribute without a value; its viewer compares against it.
const NULL: &str = "\"(null)\"";

/// Renders tree `kind` of `result` in view `opts` as DOT.
pub fn render(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> String {
    render_annotated(result, kind, opts, None)
}

/// [`render`] with the progress order's labels: `get_norm@[T1]` in the node label, as in
/// STAT's temporal order views, and the label alone in a `progress` attribute.
pub fn render_annotated(
    result: &StrataResult,
    kind: TreeKind,
    opts: ViewOptions,
    annotation: Option<&dyn Annotation>,
) -> String {
    let tree = view(result.tree(kind), opts);
    let labels = annotation.and_then(|a| a.node_labels(&tree));
    let label_of = |id: NodeId| {
        labels
            .as_ref()
            .and_then(|l| l[id.index()].as_ref())
            .filter(|l| !l.is_empty())
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// strata {} (STAT-compatible call-graph prefix tree)",
        env!("CARGO_PKG_VERSION")
    );
    out.push_str("digraph G {\n");
    // STAT's viewer reads `type` (it refuses only "dysect"); `label` titles plain renderings.
    let _ = writeln!(
        out,
        "\tgraph [type=\"stat_4_0\", label={}, labelloc=t, fontname=\"Helvetica\"];",
        quoted_chunks(&super::header_line(result, kind, opts))
    );
    out.push_str(
        "\tnode [shape=box, style=filled, labeljust=c, height=0.2, fontname=\"Helvetica\"];\n",
    );
    out.push_str("\tedge [fontname=\"Helvetica\"];\n");
    let mut colours: FxHashMap<Vec<(u32, u32)>, &str> = FxHashMap::default();
    for id in tree.node_ids() {
        let n = tree.node(id);
        let quoted = |v: Option<String>| v.map_or(NULL.to_string(), |v| quoted_chunks(&v));
        let (label, code, fill) = match tree.node_frame(id) {
            // STAT's viewer finds the root by its id, 0, and draws it grey.
            None => ("/".to_string(), None, "#DDDDDD"),
            Some(frame) => {
                let next = PALETTE[colours.len() % PALETTE.len()];
                let fill = *colours.entry(n.tasks.runs()).or_insert(next);
                (frame_text_labelled(frame, label_of(id)), Some(frame), fill)
            }
        };
        let c = code.and_then(|f| f.code());
        // The seven node attributes STAT writes, in its order, "(null)" when unknown:
        // parts of its viewer index every one of them.
        let mut attrs: Vec<(&str, String)> = vec![
            ("label", quoted_chunks(&label)),
            ("fillcolor", format!("\"{fill}\"")),
            ("fontcolor", "\"#000000\"".to_string()),
            (
                "function",
                quoted(Some(code.map_or("/".to_string(), |f| f.name()))),
            ),
            ("source", quoted(c.and_then(|c| c.file.clone()))),
            (
                "line",
                quoted(c.and_then(|c| c.line).map(|l| l.to_string())),
            ),
            // STAT's viewer labels a node `module+offset` whenever `module` is set and
            // `source` is not, so like STAT, `module` goes with `offset` (module view) only.
            (
                "module",
                quoted(
                    c.filter(|c| c.offset.is_some())
                        .and_then(|c| c.module.as_ref())
                        .map(|m| m.path.clone()),
                ),
            ),
            (
                "offset",
                quoted(
                    c.and_then(|c| c.module.as_ref().and(c.offset))
                        .map(|o| format!("+{o:#x}")),
                ),
            ),
            ("vars", NULL.to_string()),
            ("pc", NULL.to_string()),
        ];
        if let Some(b) = c
            .and_then(|c| c.module.as_ref())
            .and_then(|m| m.build_id.clone())
        {
            attrs.push(("build_id", quoted_chunks(&b)));
        }
        if c.is_some_and(|c| c.inlined) {
            attrs.push(("inlined", "\"true\"".to_string()));
        }
        if let Some(l) = label_of(id) {
            attrs.push(("progress", format!("\"{l}\"")));
        }
        let _ = writeln!(out, "\t{} [{}];", id.0, join_attrs(&attrs));
    }
    for id in tree.node_ids().skip(1) {
        let n = tree.node(id);
        let parent = n.parent.expect("non-root");
        let count = n.tasks.len();
        let list = format_set_shortened(&n.tasks, LABEL_LIST);
        // STAT's viewer labels thread-sampled edges `ranks(threads):[...]`; no spaces, as
        // its older versions split edge lines on whitespace.
        let label = if tree.has_threads() {
            format!("{count}({}):[{list}]", n.threads.len())
        } else {
            format!("{count}:[{list}]")
        };
        let rep = n
            .tasks
            .min()
            .map_or(NULL.to_string(), |r| format!("\"{r}\""));
        // STAT's seven edge attributes, in its order. Like STAT, `tbv` carries the number
        // of threads; strata adds the thread ids in `threads`.
        let mut attrs: Vec<(&str, String)> = vec![
            ("label", quoted_chunks(&label)),
            ("bv", quoted_chunks(&format!("[{}]", format_set(&n.tasks)))),
            ("count", format!("\"{count}\"")),
            ("rep", rep),
            ("sum", format!("\"{count}\"")),
        ];
        if tree.has_threads() {
            let t = n.threads.len();
            attrs.push(("tbv", format!("\"{t}\"")));
            attrs.push(("tcount", format!("\"{t}\"")));
            attrs.push(("tbvsum", format!("\"{t}\"")));
            attrs.push((
                "threads",
                quoted_chunks(&format!("[{}]", format_set(&n.threads))),
            ));
        } else {
            for k in ["tbv", "tcount", "tbvsum"] {
                attrs.push((k, NULL.to_string()));
            }
        }
        let _ = writeln!(out, "\t{} -> {} [{}];", parent.0, id.0, join_attrs(&attrs));
    }
    out.push_str("}\n");
    out
}

fn join_attrs(attrs: &[(&str, String)]) -> String {
    attrs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_stay_under_the_graphviz_limit_and_join_back() {
        let list: String = (0..20_000)
            .map(|i| (i * 2).to_string())
            .collect::<Vec<_>>()
            .join(",");
        let q = quoted_chunks(&list);
        let parts: Vec<&str> = q.split(" + ").collect();
        assert!(parts.len() > 1);
        let mut joined = String::new();
        for p in parts {
            assert!(p.len() <= MAX_QUOTED + 2, "chunk of {}", p.len());
            joined.push_str(&p[1..p.len() - 1]);
        }
        assert_eq!(joined, list);
    }

    #[test]
    fn escapes_quotes_and_backslashes() {
        assert_eq!(quoted_chunks(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
