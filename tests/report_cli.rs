//! The HTML report (`report.html` in every result directory, `strata view -f html`) in a
//! real headless Chromium, driven over WebDriver: the report of a real hung Open MPI ring
//! shows its verdict and classes, a node expands and collapses by click and by key, the
//! granularity switches, a rank's stack opens on click, the console stays clean, and the
//! PDF Chromium prints from it carries the verdict and every class.

#[path = "support/mpi.rs"]
mod mpi;
mod support;
#[path = "support/target.rs"]
mod target;
#[path = "support/webdriver.rs"]
mod webdriver;

use mpi::MpiJob;
use serde_json::{Value, json};
use support::{parts, strata};
use webdriver::Browser;

/// A hung 4-rank ring's result directory (with its report) and the result's JSON.
fn hung_ring_result() -> (tempfile::TempDir, std::path::PathBuf, Value) {
    let job = MpiJob::ring(4);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result");
    let (code, stdout, stderr) = parts(&strata(&[
        "attach",
        "--launcher-pid",
        &job.mpirun.id().to_string(),
        "-n",
        "3",
        "--interval",
        "50ms",
        "-o",
        out.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    drop(job);
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("result.json")).unwrap()).unwrap();
    (dir, out, result)
}

fn squeezed(s: &str) -> String {
    s.split_whitespace().collect()
}

fn node_count(b: &Browser) -> u64 {
    b.run(
        "return document.querySelectorAll('#graph g.node').length;",
        json!([]),
    )
    .as_u64()
    .unwrap()
}

#[test]
fn a_hung_rings_report_answers_clicks_and_keys_in_a_real_browser() {
    let (_dir, out, result) = hung_ring_result();
    let report = out.join("report.html");
    let html = std::fs::read_to_string(&report).unwrap();
    // Self-contained: nothing is fetched from anywhere.
    for external in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!html.contains(external), "the report loads {external}");
    }
    let b = Browser::start();
    b.open(&format!("file://{}", report.display()));

    // The verdict first, in the words of result.json.
    let summary = result["verdict"]["summary"].as_str().unwrap();
    let verdict = b.text("#verdict");
    assert!(
        verdict.contains(summary),
        "verdict section: {verdict}\nwanted: {summary}"
    );
    // Every class of the default view, with its rank list.
    let classes = b.text(".class-table[data-view=\"3d-function\"]");
    for class in result["classes"].as_array().unwrap() {
        let ranks = class["ranks"].as_str().unwrap();
        let count = class["count"].as_u64().unwrap();
        assert!(
            classes.contains(&format!("{count}:[{ranks}]")),
            "class {ranks} not shown: {classes}"
        );
    }

    // Collapse a node by its knob, and expand it again.
    let shown = node_count(&b);
    let knob = b.find("#graph g.node[aria-expanded=\"true\"] g.knob");
    b.click(&knob);
    let collapsed = node_count(&b);
    assert!(
        collapsed < shown,
        "collapsing left {collapsed} of {shown} nodes"
    );
    b.click(&b.find("#graph g.node[aria-expanded=\"false\"] g.knob"));
    assert_eq!(
        node_count(&b),
        shown,
        "expanding did not bring the nodes back"
    );

    // Keyboard: Tab to a node, Down moves to its first child, Enter collapses it.
    b.run(
        "document.querySelector('#graph g.node[aria-expanded=\"true\"][tabindex=\"0\"]').focus();",
        json!([]),
    );
    let before = b.run("return +document.activeElement.dataset.i;", json!([]));
    press(&b, "\u{E015}"); // ArrowDown
    let after = b.run("return +document.activeElement.dataset.i;", json!([]));
    assert_ne!(before, after, "ArrowDown did not move the focus");
    let details = b.text("#details");
    assert!(
        details.contains("took this edge"),
        "details pane: {details}"
    );
    let focused_expanded = b.run(
        "return document.activeElement.getAttribute('aria-expanded');",
        json!([]),
    );
    if focused_expanded == json!("true") {
        let n = node_count(&b);
        press(&b, "\u{E007}"); // Enter
        assert!(
            node_count(&b) < n,
            "Enter did not collapse the focused node"
        );
    }

    // Line granularity: the header says so and frames carry their lines.
    b.click(&b.find("input[name=granularity][value=line]"));
    let header = b.text("#job-line");
    assert!(header.contains("line"), "header after the switch: {header}");
    let texts = b.run(
        "return [...document.querySelectorAll('#graph g.node text')].map(t => t.textContent).join('\\n');",
        json!([]),
    );
    assert!(
        texts.as_str().unwrap().contains("mpi_ring.c:"),
        "no line in the line view: {texts}"
    );

    // A representative's stack, by click.
    let link = b.find(".class-table:not([hidden]) a.rank");
    b.click(&link);
    let stack = b.text("#stack");
    assert!(stack.contains("Rank "), "stack pane: {stack}");
    assert!(
        stack.contains("main"),
        "the rank's stack has no main: {stack}"
    );
    // Each source line at the start of a line of its own, below the one before (the
    // highlighted line once pushed the next one off to its right).
    let places = b.run(
        "return [...document.querySelectorAll('#stack pre.snippet')].map(p => \
         [...p.querySelectorAll('span')].map(s => { \
           const r = s.getBoundingClientRect(); return [r.left, r.top]; }));",
        json!([]),
    );
    let places = places.as_array().unwrap();
    assert!(
        !places.is_empty(),
        "no source snippet in the stack: {stack}"
    );
    for snippet in places {
        let p: Vec<(f64, f64)> = snippet
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v[0].as_f64().unwrap(), v[1].as_f64().unwrap()))
            .collect();
        let laid_out = p
            .windows(2)
            .all(|w| w[1].1 > w[0].1 && (w[1].0 - p[0].0).abs() < 1.0);
        assert!(laid_out, "source lines out of place (left, top): {p:?}");
    }
    assert!(
        stack.contains("MPI_"),
        "the rank's stack has no MPI call: {stack}"
    );

    let errors: Vec<_> = b
        .console()
        .into_iter()
        .filter(|(level, _)| level == "SEVERE" || level == "WARNING")
        .collect();
    assert!(errors.is_empty(), "console: {errors:?}");
}

fn press(b: &Browser, key: &str) {
    b.call(
        "POST",
        "/actions",
        Some(
            json!({"actions": [{"type": "key", "id": "keyboard", "actions": [
            {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]}),
        ),
    );
}

#[test]
fn the_printed_report_carries_the_verdict_and_every_class() {
    let (dir, out, result) = hung_ring_result();
    let pdf = dir.path().join("report.pdf");
    let status = std::process::Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-pdf-header-footer",
        ])
        .arg(format!("--print-to-pdf={}", pdf.display()))
        .arg(format!("file://{}", out.join("report.html").display()))
        .stderr(std::process::Stdio::null())
        .status()
        .expect("chromium runs (tests/run-all.sh installs it)");
    assert!(status.success(), "chromium --print-to-pdf failed");
    let text = std::process::Command::new("pdftotext")
        .arg(&pdf)
        .arg("-")
        .output()
        .expect("pdftotext runs (poppler-utils)");
    let text = squeezed(&String::from_utf8_lossy(&text.stdout));
    let summary = squeezed(result["verdict"]["summary"].as_str().unwrap());
    assert!(
        text.contains(&summary),
        "PDF lacks the verdict {summary}: {text}"
    );
    for class in result["classes"].as_array().unwrap() {
        let shown = format!("{}:[{}]", class["count"], class["ranks"].as_str().unwrap());
        assert!(text.contains(&shown), "PDF lacks class {shown}: {text}");
    }
}

#[test]
fn view_writes_the_report_where_asked_and_redacts_on_request() {
    let (dir, out, _) = hung_ring_result();
    let file = dir.path().join("mine.html");
    let (code, stdout, stderr) = parts(&strata(&[
        "view",
        out.join("result.json").to_str().unwrap(),
        "-f",
        "html",
        "--redact",
        "-o",
        file.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let html = std::fs::read_to_string(&file).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Redacted"));
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let data = html.split("id=\"report-data\">").nth(1).unwrap();
    assert!(
        !data.contains(&format!("\"host\":\"{}\"", host.trim())),
        "host name kept"
    );
    assert!(data.contains("\"list\":[]"), "snippets kept under --redact");
    // Unredacted, the ring's own source is quoted.
    let full = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        full.contains("mpi_ring.c\",\"line\":"),
        "no source snippet of the ring in the report"
    );
}

/// A wide tree (a node with more branches than the page draws at once), from `strata bench
/// --output`: every node is placed (no NaN), the view opens readable rather than fitted to
/// a line of dots, and "+N more branches" draws the next ones.
#[test]
fn a_wide_trees_report_places_every_node_and_shows_more_on_click() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("result");
    let (code, stdout, stderr) = parts(&strata(&[
        "bench",
        "--daemons",
        "2",
        "--tasks-per-daemon",
        "100",
        "--eqclasses",
        "2",
        "--noise",
        "0.9",
        "--emulators",
        "1",
        "--output",
        out.to_str().unwrap(),
    ]));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let bench: Value = serde_json::from_str(&stdout).unwrap();
    assert!(bench["output"]["report_html_bytes"].as_u64().unwrap() > 0);
    let b = Browser::start();
    b.open(&format!("file://{}", out.join("report.html").display()));
    let placed = b.run(
        "return [...document.querySelectorAll('#graph g.node, #graph g.viewport')]\
         .map(n => n.getAttribute('transform')).filter(t => t.includes('NaN'));",
        json!([]),
    );
    assert_eq!(placed, json!([]), "nodes without a place");
    let scale = b.run(
        "return +document.querySelector('#graph g.viewport').getAttribute('transform')\
         .match(/scale\\(([^)]+)\\)/)[1];",
        json!([]),
    );
    assert!(scale.as_f64().unwrap() >= 0.5, "first view scale {scale}");
    let before = node_count(&b);
    let more = b.find("#graph g.node.more");
    let label = b.run("return arguments[0].textContent;", json!([more]));
    assert!(label.as_str().unwrap().contains("more branches"), "{label}");
    b.run(
        "arguments[0].dispatchEvent(new MouseEvent('click', {bubbles: true}));",
        json!([more]),
    );
    let after = node_count(&b);
    assert!(after > before, "{before} nodes, then {after}");
    let bad: Vec<_> = b
        .console()
        .into_iter()
        .filter(|(level, _)| level == "SEVERE" || level == "WARNING")
        .collect();
    assert!(bad.is_empty(), "console: {bad:?}");
}
