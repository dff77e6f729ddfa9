//! Graphviz accepts our DOT at a million tasks with fragmented rank sets, and reads the
//! chunked `bv` attribute back as the full rank list (LLNL/STAT#17: long rank lists broke
//! Graphviz). Needs `dot` (Debian package graphviz, installed by the README's test
//! command); without it this test fails, it does not skip.

use std::process::Command;
use strata_filters::taskset::format_set;
use strata_filters::{Frame, NodeId, PrefixTree, RankSet, ViewOptions};
use strata_result::render::dot;
use strata_result::{ResultMeta, StrataResult, TreeKind};

const TASKS: u32 = 1 << 20;

/// main -> PMPI_Barrier (even ranks), PMPI_Waitall (odd ranks except every 7th),
/// compute (every 7th odd rank): three heavily fragmented rank sets.
fn million_task_result() -> (StrataResult, Vec<String>) {
    let even = RankSet::from_sorted_iter((0..TASKS).step_by(2)).unwrap();
    let compute = RankSet::from_sorted_iter((1..TASKS).step_by(2).filter(|r| r % 7 == 0)).unwrap();
    let odd = RankSet::from_sorted_iter((1..TASKS).step_by(2)).unwrap();
    let waitall = &odd - &compute;
    let all = RankSet::from_sorted_iter(0..TASKS).unwrap();
    let mut tree: PrefixTree<RankSet> = PrefixTree::new(TASKS, 0);
    let main = tree.intern(&Frame::function("main"));
    let main_node = tree.child_or_insert(NodeId::ROOT, main);
    *tree.node_sets_mut(NodeId::ROOT).0 = all.clone();
    *tree.node_sets_mut(main_node).0 = all;
    let mut expected = Vec::new();
    for (name, set) in [
        ("PMPI_Barrier", even),
        ("PMPI_Waitall", waitall),
        ("compute", compute),
    ] {
        let f = tree.intern(&Frame::function(name));
        let n = tree.child_or_insert(main_node, f);
        expected.push(format!("[{}]", format_set(&set)));
        *tree.node_sets_mut(n).0 = set;
    }
    let meta = ResultMeta {
        job_size: TASKS,
        ..ResultMeta::default()
    };
    (
        StrataResult {
            meta,
            tree_2d: tree.clone(),
            tree_3d: tree,
        },
        expected,
    )
}

/// Every value of attribute `name` in DOT text, with `"a" + "b"` joined, `\`-newline
/// continuations removed and escapes undone.
fn attribute_values(dot: &str, name: &str) -> Vec<String> {
    let bytes = dot.as_bytes();
    let key = format!("{name}=");
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(at) = dot[pos..].find(&key) {
        let start = pos + at + key.len();
        let preceded_ok = pos + at == 0 || !bytes[pos + at - 1].is_ascii_alphanumeric();
        pos = start;
        if !preceded_ok || bytes.get(start) != Some(&b'"') {
            continue;
        }
        let mut value = String::new();
        let mut i = start;
        loop {
            // One quoted string.
            assert_eq!(bytes[i], b'"');
            i += 1;
            while bytes[i] != b'"' {
                if bytes[i] == b'\\' {
                    match bytes[i + 1] {
                        b'\n' => {}
                        c => value.push(c as char),
                    }
                    i += 2;
                } else {
                    value.push(bytes[i] as char);
                    i += 1;
                }
            }
            i += 1;
            // A '+' joins the next quoted string.
            let rest = dot[i..].trim_start();
            if let Some(after) = rest.strip_prefix('+') {
                i = dot.len() - after.trim_start().len();
            } else {
                break;
            }
        }
        pos = i;
        out.push(value);
    }
    out
}

#[test]
fn graphviz_reads_million_task_dot() {
    let (result, expected) = million_task_result();
    let text = dot::render(&result, TreeKind::ThreeD, ViewOptions::default());
    // Our own guarantee: no quoted string over Graphviz's 16,384-character limit.
    for piece in text.split('"').skip(1).step_by(2) {
        assert!(
            piece.len() <= 16_384,
            "a quoted string of {} characters",
            piece.len()
        );
    }
    assert!(
        expected[0].len() > 16_384,
        "the test must exercise chunking"
    );
    // Our reader sees the full lists.
    let ours = attribute_values(&text, "bv");
    for e in &expected {
        assert!(
            ours.contains(e),
            "bv list of {} characters not found in our DOT",
            e.len()
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("million.dot");
    std::fs::write(&path, &text).unwrap();
    let svg = Command::new("dot")
        .arg("-Tsvg")
        .arg(&path)
        .arg("-o")
        .arg(dir.path().join("million.svg"))
        .output()
        .expect("`dot` runs: install Debian's graphviz package (the README's test command does)");
    assert!(
        svg.status.success(),
        "dot -Tsvg failed: {}",
        String::from_utf8_lossy(&svg.stderr)
    );
    let svg_text = std::fs::read_to_string(dir.path().join("million.svg")).unwrap();
    assert!(
        svg_text.contains("MPI_Barrier") && svg_text.contains("524288:["),
        "labels drawn"
    );

    // Graphviz's own reading of the attributes: -Tcanon writes back what it parsed.
    let canon = Command::new("dot")
        .arg("-Tcanon")
        .arg(&path)
        .output()
        .expect("dot runs");
    assert!(
        canon.status.success(),
        "{}",
        String::from_utf8_lossy(&canon.stderr)
    );
    let canon = String::from_utf8(canon.stdout).unwrap();
    let theirs = attribute_values(&canon, "bv");
    for e in &expected {
        assert!(
            theirs.contains(e),
            "Graphviz did not read back a bv of {} characters",
            e.len()
        );
    }
}
