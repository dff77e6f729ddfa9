//! The page: the sections a reader must see written as HTML (they print and read without
//! the script), the data for the script, the style and the script itself, all in one file.

use crate::data::{ReportData, VIEWS, ViewData};
use crate::escape::escape;
use crate::inputs::{Analyses, Options};
use strata_result::StrataResult;
use strata_result::annotation::Annotation;

const STYLE: &str = include_str!("../assets/report.css");
const SCRIPT: &str = include_str!("../assets/report.js");

/// Most rows of a class table; the rest are counted (`result.json` has them all).
const MAX_CLASS_ROWS: usize = 1_000;
/// Rank lists in the static sections are shortened to this many characters.
const MAX_LIST: usize = 160;
/// Most culprit groups, evidence and seen lines listed in the verdict: a fragmented job
/// can have thousands, and the verdict must stay above the fold's reach. result.json and
/// the classes table have the rest.
const MAX_VERDICT_ITEMS: usize = 20;

/// The whole document.
pub fn render(
    result: &StrataResult,
    analyses: Analyses,
    options: &Options,
    data: &ReportData,
) -> String {
    let m = &result.meta;
    let first = &data.views[0].1;
    let mut body = String::new();
    body.push_str(&format!(
        "<header><h1>strata: job {}</h1><p id=\"job-line\">{}</p>",
        escape(&m.job.id),
        escape(&first.header)
    ));
    for missing in &m.missing {
        body.push_str(&format!(
            "<p class=\"missing\">Missing ranks [{}]: {}</p>",
            escape(&missing.ranks),
            escape(&missing.reason)
        ));
    }
    if options.redact {
        body.push_str(
            "<p class=\"note\">Redacted: source lines, host names and executables' paths are \
             left out.</p>",
        );
    }
    body.push_str("</header>");
    body.push_str(&verdict_section(analyses, data));
    body.push_str(&tree_section());
    body.push_str(&classes_section(data));
    body.push_str(&rank_section(data));
    if let Some(p) = analyses.progress {
        let text = p.report_text(MAX_LIST);
        if !text.is_empty() {
            body.push_str(&format!(
                "<section id=\"progress\"><h2>Progress order</h2><pre>{}</pre></section>",
                escape(text.trim_end())
            ));
        }
    }
    let asked: Vec<_> = m
        .variables
        .iter()
        .filter(|v| !v.for_verdict)
        .cloned()
        .collect();
    if !asked.is_empty() {
        let text = strata_result::variables::text(&asked, MAX_LIST);
        body.push_str(&format!(
            "<section id=\"variables\"><h2>Variables</h2><pre>{}</pre></section>",
            escape(text.trim_end())
        ));
    }
    if let Some(graph) = &analyses.verdict.decision.wait_for {
        body.push_str(&format!(
            "<section id=\"waitfor\"><h2>Wait-for graph</h2>{}</section>",
            crate::wait_for::html(graph)
        ));
    }
    body.push_str(&format!(
        "<footer>strata {} · result assembled {} · samples {} to {}</footer>",
        escape(&m.strata_version),
        escape(&m.created),
        escape(&m.sampling.started),
        escape(&m.sampling.finished)
    ));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>strata: job {}</title><style>{STYLE}</style></head><body>{body}\
         <script type=\"application/json\" id=\"report-data\">{}</script>\
         <script>{SCRIPT}</script></body></html>\n",
        escape(&m.job.id),
        data.to_script_json()
    )
}

fn rank_link(rank: u32) -> String {
    format!("<a href=\"#rank\" class=\"rank\" data-rank=\"{rank}\">{rank}</a>")
}

fn verdict_section(analyses: Analyses, data: &ReportData) -> String {
    let d = &analyses.verdict.decision;
    let (title, summary) = strata_verdict::text::title(d);
    let mut s = format!(
        "<section id=\"verdict\" class=\"verdict-{}\"><h2>{}</h2><p class=\"summary\">{}.</p>",
        d.kind.as_str(),
        escape(&title),
        escape(summary)
    );
    if !d.culprits.is_empty() {
        s.push_str("<h3>Ranks to debug</h3><ul class=\"culprits\">");
        for c in d.culprits.iter().take(MAX_VERDICT_ITEMS) {
            let at =
                c.at.as_ref()
                    .map(|p| format!(" at {}", escape(&p.short())))
                    .unwrap_or_default();
            let first = c
                .set
                .min()
                .map(|r| format!(" (stack of rank {})", rank_link(r)))
                .unwrap_or_default();
            s.push_str(&format!(
                "<li><b>[{}]</b>: {}{at}{first}</li>",
                escape(&strata_filters::taskset::format_set_shortened(
                    &c.set, MAX_LIST
                )),
                escape(&c.doing)
            ));
        }
        s.push_str(&more_items(d.culprits.len(), "groups of ranks"));
        s.push_str("</ul>");
    }
    if !d.evidence.is_empty() {
        s.push_str("<h3>Evidence</h3><ul class=\"evidence\">");
        for e in d.evidence.iter().take(MAX_VERDICT_ITEMS) {
            s.push_str(&format!("<li>{}</li>", escape(e)));
        }
        s.push_str(&more_items(d.evidence.len(), "lines of evidence"));
        s.push_str("</ul>");
    }
    if let Some(would) = &d.would_decide {
        s.push_str(&format!(
            "<p class=\"would\"><b>Would decide:</b> {}</p>",
            escape(would)
        ));
    }
    // The states seen, unless the evidence already says each of them.
    if data.seen.iter().any(|(_, line)| !d.evidence.contains(line)) {
        s.push_str("<h3>Seen</h3><ul class=\"seen\">");
        for (_, line) in data.seen.iter().take(MAX_VERDICT_ITEMS) {
            s.push_str(&format!("<li>{}</li>", escape(line)));
        }
        s.push_str(&more_items(data.seen.len(), "states"));
        s.push_str("</ul>");
    }
    s.push_str("</section>");
    s
}

/// The last item of a list cut at [`MAX_VERDICT_ITEMS`]: how many more, and where they are.
fn more_items(total: usize, what: &str) -> String {
    if total <= MAX_VERDICT_ITEMS {
        return String::new();
    }
    format!(
        "<li class=\"note\">{} more {what}: result.json lists them all, the classes \
         table their paths</li>",
        total - MAX_VERDICT_ITEMS
    )
}

fn tree_section() -> String {
    let mut s = String::from(
        "<section id=\"tree\"><h2>Prefix tree</h2>\
         <noscript><p>The tree needs scripts; <code>tree.txt</code> beside this report has \
         it as text.</p></noscript>\
         <div class=\"controls\" role=\"toolbar\" aria-label=\"tree view\">\
         <fieldset><legend>Tree</legend>\
         <label><input type=\"radio\" name=\"kind\" value=\"3d\" checked> 3D (all samples)</label>\
         <label><input type=\"radio\" name=\"kind\" value=\"2d\"> 2D (last sample)</label>\
         </fieldset><fieldset><legend>Granularity</legend>\
         <label><input type=\"radio\" name=\"granularity\" value=\"function\" checked> function</label>\
         <label><input type=\"radio\" name=\"granularity\" value=\"line\"> line</label>\
         </fieldset>\
         <button type=\"button\" id=\"zoom-in\" aria-label=\"zoom in\">+</button>\
         <button type=\"button\" id=\"zoom-out\" aria-label=\"zoom out\">−</button>\
         <button type=\"button\" id=\"zoom-fit\">fit</button>\
         <button type=\"button\" id=\"expand-all\">expand all</button>\
         <button type=\"button\" id=\"collapse-all\">collapse all</button></div>",
    );
    s.push_str(
        "<div class=\"graph-area\"><div id=\"graph\" tabindex=\"-1\"></div>\
         <aside id=\"details\" aria-live=\"polite\"><p>Select a node: click it, or Tab to \
         the tree and move with the arrow keys.</p></aside></div>\
         <p class=\"keys\">Keys on a node: ↑ parent, ↓ first child, ← → siblings, Enter or \
         Space expand or collapse, + − zoom, 0 fit. Drag to pan, wheel to zoom.</p></section>",
    );
    s
}

fn classes_section(data: &ReportData) -> String {
    let mut s = String::from(
        "<section id=\"classes\"><h2>Equivalence classes</h2>\
         <p>Ranks whose stacks took the same paths; debug one representative of each.</p>",
    );
    for (i, (key, view)) in data.views.iter().enumerate() {
        let hidden = if i == 0 { "" } else { " hidden" };
        let (kind, granularity) = VIEWS
            .iter()
            .find(|(k, ..)| k == key)
            .map(|(_, k, g)| (k.as_str().to_uppercase(), g.as_str()))
            .unwrap_or_default();
        s.push_str(&format!(
            "<div class=\"class-table\" data-view=\"{key}\"{hidden}>\
             <table><caption>{} classes, {kind} tree, {granularity} granularity</caption>\
             <thead><tr><th scope=\"col\">class</th><th scope=\"col\">ranks</th>\
             <th scope=\"col\">representative</th><th scope=\"col\">where their paths end</th>\
             </tr></thead><tbody>",
            view.classes.len()
        ));
        for (c, class) in view.classes.iter().take(MAX_CLASS_ROWS).enumerate() {
            let ends: Vec<String> = class
                .leaves
                .iter()
                .take(4)
                .map(|&leaf| escape(&path_text(data, view, leaf as usize)))
                .collect();
            let more = class.leaves.len().saturating_sub(4);
            let more = if more > 0 {
                format!("<br>and {more} more paths")
            } else {
                String::new()
            };
            s.push_str(&format!(
                "<tr class=\"c{}\" data-class=\"{c}\"><td><span class=\"swatch\"></span>C{}</td>\
                 <td>{}:[{}]</td><td>{}</td><td>{}{more}</td></tr>",
                c % 12,
                c + 1,
                class.count,
                escape(&shorten_list(&class.ranks)),
                rank_link(class.representative),
                ends.join("<br>")
            ));
        }
        s.push_str("</tbody></table>");
        if view.classes.len() > MAX_CLASS_ROWS {
            s.push_str(&format!(
                "<p>{} more classes: see result.json.</p>",
                view.classes.len() - MAX_CLASS_ROWS
            ));
        }
        s.push_str("</div>");
    }
    s.push_str("</section>");
    s
}

fn rank_section(data: &ReportData) -> String {
    let max = data.job_size.saturating_sub(1);
    format!(
        "<section id=\"rank\"><h2>A rank's stack</h2>\
         <form id=\"rank-form\"><label>Rank <input id=\"rank-input\" type=\"number\" min=\"0\" \
         max=\"{max}\" required></label> <button type=\"submit\">show its stack</button></form>\
         <div id=\"stack\" aria-live=\"polite\"><p>Click a rank anywhere in the report, or \
         type one.</p></div></section>"
    )
}

/// `main > solve > MPI_Recv`: the frames from the root to `node`.
fn path_text(data: &ReportData, view: &ViewData, node: usize) -> String {
    let mut names = Vec::new();
    let mut cur = node as i64;
    while cur > 0 {
        names.push(data.strings[view.text[cur as usize] as usize].as_str());
        cur = view.parent[cur as usize];
    }
    names.reverse();
    names.join(" > ")
}

fn shorten_list(list: &str) -> String {
    if list.len() <= MAX_LIST {
        return list.to_string();
    }
    let cut = list[..MAX_LIST].rfind(',').unwrap_or(MAX_LIST);
    format!("{},…", &list[..cut])
}
