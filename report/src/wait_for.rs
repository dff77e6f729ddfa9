//! The verdict's wait-for graph drawn as inline SVG, with the same edges as a list (which
//! a screen reader and `pdftotext` read): rank groups on a circle, an arrow from the
//! waiting ranks to the ranks they wait for, stuck waits drawn thick and said so.

use crate::escape::{cut, escape};
use strata_verdict::graph::GraphFile;

/// Most groups drawn; a larger graph is listed only (a circle of hundreds is unreadable).
const MAX_DRAWN: usize = 40;

/// The section's inner HTML: the picture (when small enough), the edges, the cycles and
/// the ranks whose waits are not known.
pub fn html(graph: &GraphFile) -> String {
    let mut out = String::new();
    let mut groups: Vec<&str> = Vec::new();
    for e in &graph.edges {
        for g in [e.from.as_str(), e.to.as_str()] {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    if !groups.is_empty() && groups.len() <= MAX_DRAWN {
        out.push_str(&svg(graph, &groups));
    }
    if !graph.edges.is_empty() {
        out.push_str("<ul class=\"edges\">");
        for e in &graph.edges {
            let whom = if e.semantics == "any" {
                "one of"
            } else {
                "all of"
            };
            let mut line = format!("[{}] waits for {whom} [{}]", escape(&e.from), escape(&e.to));
            if let Some(call) = &e.call {
                line.push_str(&format!(" in {}", escape(call)));
            }
            if let Some(comm) = &e.communicator {
                line.push_str(&format!(" on {}", escape(comm)));
            }
            if e.stuck {
                line.push_str(" <strong>(stuck)</strong>");
            }
            out.push_str(&format!("<li>{line}</li>"));
        }
        out.push_str("</ul>");
    }
    for cycle in &graph.cycles {
        let ring: Vec<String> = cycle.iter().map(|g| format!("[{}]", escape(g))).collect();
        out.push_str(&format!(
            "<p>Cycle: {} → {}</p>",
            ring.join(" → "),
            ring.first().cloned().unwrap_or_default()
        ));
    }
    for u in &graph.unknown {
        let call = u
            .call
            .as_deref()
            .map(|c| format!(" in {}", escape(c)))
            .unwrap_or_default();
        out.push_str(&format!(
            "<p>Not known whom [{}]{call} wait for: {}</p>",
            escape(&u.ranks),
            escape(&u.why)
        ));
    }
    out
}

fn svg(graph: &GraphFile, groups: &[&str]) -> String {
    let n = groups.len();
    let radius = if n <= 2 { 90.0 } else { 60.0 + 22.0 * n as f64 };
    let (w, h) = (2.0 * radius + 260.0, 2.0 * radius + 120.0);
    let (cx, cy) = (w / 2.0, h / 2.0);
    let at = |i: usize| {
        let a = std::f64::consts::TAU * i as f64 / n as f64 - std::f64::consts::FRAC_PI_2;
        (cx + radius * a.cos(), cy + radius * a.sin())
    };
    let mut s = format!(
        "<svg class=\"waitfor\" role=\"img\" aria-label=\"wait-for graph\" \
         viewBox=\"0 0 {w:.0} {h:.0}\" width=\"{w:.0}\" height=\"{h:.0}\">\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
         <path d=\"M0,0 L10,5 L0,10 z\"/></marker></defs>"
    );
    let index = |g: &str| {
        groups
            .iter()
            .position(|x| *x == g)
            .expect("every end is a group")
    };
    for e in &graph.edges {
        let (a, b) = (index(&e.from), index(&e.to));
        let class = if e.stuck { "edge stuck" } else { "edge" };
        let dash = if e.semantics == "any" {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        let label = escape(e.call.as_deref().unwrap_or(""));
        if a == b {
            let (x, y) = at(a);
            s.push_str(&format!(
                "<path class=\"{class}\"{dash} marker-end=\"url(#arrow)\" \
                 d=\"M{:.1},{:.1} c-40,-60 40,-60 12,-14\"><title>{label}</title></path>",
                x - 6.0,
                y - 14.0
            ));
            continue;
        }
        let ((x1, y1), (x2, y2)) = (at(a), at(b));
        // Stop short of the label box, so the arrowhead shows.
        let (dx, dy) = (x2 - x1, y2 - y1);
        let len = (dx * dx + dy * dy).sqrt().max(1.0);
        let shrink = 18.0 / len;
        s.push_str(&format!(
            "<line class=\"{class}\"{dash} marker-end=\"url(#arrow)\" x1=\"{:.1}\" y1=\"{:.1}\" \
             x2=\"{:.1}\" y2=\"{:.1}\"><title>{label}</title></line>",
            x1 + dx * shrink,
            y1 + dy * shrink,
            x2 - dx * shrink,
            y2 - dy * shrink
        ));
        s.push_str(&format!(
            "<text class=\"elabel\" x=\"{:.1}\" y=\"{:.1}\">{label}</text>",
            (x1 + x2) / 2.0,
            (y1 + y2) / 2.0 - 4.0
        ));
    }
    for (i, g) in groups.iter().enumerate() {
        let (x, y) = at(i);
        let text = cut(g, 24);
        let width = 16.0 + 7.5 * text.chars().count() as f64 + 2.0;
        s.push_str(&format!(
            "<g class=\"wnode\"><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"24\" \
             rx=\"5\"/><text x=\"{x:.1}\" y=\"{:.1}\">[{}]</text></g>",
            x - width / 2.0,
            y - 12.0,
            y + 4.5,
            escape(&text)
        ));
    }
    s.push_str("</svg>");
    s
}
