//! STAT-compatible DOT.
//!
//! Two readers matter. STAT's viewer reads its own attributes: per node `function`,
//! `source`, `line`, `module`, `offset` (and the `label`), per edge `bv` (the full rank
//! list), `count`, and with threads `tbv`/`tcount`. Plain Graphviz (`dot -Tsvg`) draws only
//! `label`s, so every label is filled in (STAT's files have empty ones outside its viewer,
//! LLNL/STAT#39).
//!
//! Graphviz rejects a quoted string longer than 16,384 characters (LLNL/STAT#17 is what
//! happens with long rank lists): labels are shortened, and a long `bv` is written as
//! `"..." + "..."` chunks, which the DOT grammar joins back into one string.

use super::frame_text;
use crate::render::text::edge_label;
use crate::result::{StrataResult, TreeKind};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;
use strata_filters::taskset::format_set;
use strata_filters::{TaskSet, ViewOptions, view};

/// Longest quoted string we write in one piece; Graphviz's limit is 16,384.
pub const MAX_QUOTED: usize = 8_000;
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

/// Renders tree `kind` of `result` in view `opts` as DOT.
pub fn render(result: &StrataResult, kind: TreeKind, opts: ViewOptions) -> String {
    let tree = view(result.tree(kind), opts);
    let mut out = String::new();
    out.push_str("digraph G {\n");
    let _ = writeln!(
        out,
        "\tgraph [label={}, labelloc=t, fontname=\"Helvetica\"];",
        quoted_chunks(&super::header_line(result, kind, opts))
    );
    out.push_str(
        "\tnode [shape=box, style=filled, fontname=\"Helvetica\", fillcolor=\"#ffffff\"];\n",
    );
    out.push_str("\tedge [fontname=\"Helvetica\"];\n");
    let mut colours: FxHashMap<Vec<(u32, u32)>, &str> = FxHashMap::default();
    for id in tree.node_ids() {
        let n = tree.node(id);
        let mut attrs: Vec<(&str, String)> = Vec::new();
        match tree.node_frame(id) {
            None => {
                attrs.push(("label", quoted_chunks("/")));
                attrs.push(("function", quoted_chunks("/")));
            }
            Some(frame) => {
                attrs.push(("label", quoted_chunks(&frame_text(frame))));
                attrs.push(("function", quoted_chunks(&frame.name())));
                if let Some(c) = frame.code() {
                    if let Some(file) = &c.file {
                        attrs.push(("source", quoted_chunks(file)));
                    }
                    if let Some(line) = c.line {
                        attrs.push(("line", format!("\"{line}\"")));
                    }
                    if let Some(m) = &c.module {
                        attrs.push(("module", quoted_chunks(&m.path)));
                        if let Some(b) = &m.build_id {
                            attrs.push(("build_id", quoted_chunks(b)));
                        }
                    }
                    if let Some(off) = c.offset {
                        attrs.push(("offset", format!("\"{off:#x}\"")));
                    }
                    if c.inlined {
                        attrs.push(("inlined", "\"true\"".to_string()));
                    }
                }
                let next = PALETTE[colours.len() % PALETTE.len()];
                let fill = *colours.entry(n.tasks.runs()).or_insert(next);
                attrs.push(("fillcolor", format!("\"{fill}\"")));
            }
        }
        let _ = writeln!(out, "\t{} [{}];", id.0, join_attrs(&attrs));
    }
    for id in tree.node_ids().skip(1) {
        let n = tree.node(id);
        let parent = n.parent.expect("non-root");
        let mut attrs: Vec<(&str, String)> = vec![
            ("label", quoted_chunks(&edge_label(&tree, id, LABEL_LIST))),
            ("bv", quoted_chunks(&format!("[{}]", format_set(&n.tasks)))),
            ("count", format!("\"{}\"", n.tasks.len())),
        ];
        if tree.has_threads() {
            attrs.push((
                "tbv",
                quoted_chunks(&format!("[{}]", format_set(&n.threads))),
            ));
            attrs.push(("tcount", format!("\"{}\"", n.threads.len())));
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
