//! Robustness and properties: macros, broken and deep code, every line of the fixtures.

use super::*;
use proptest::prelude::*;

#[test]
fn unknown_macros_do_not_hide_functions() {
    let text = "\
#define API __attribute__((visibility(\"default\")))
API int exported(int x) {
    return forward(x);
}
BEGIN_DECLS
int looping(void) {
    for (;;) { spin(); }
}
END_DECLS
static void sender(void) NOTHROW {
    FOR_EACH_RANK(r) {
        send(r);
    }
    after_ranks();
}
";
    let at = |marker| snippet_point(Language::C, text, marker);
    assert_eq!(at("forward(x)").function.as_deref(), Some("exported"));
    assert_eq!(at("spin()").function.as_deref(), Some("looping"));
    assert_eq!(
        at("spin()").steps[1],
        Step::Iteration {
            line: 7,
            kind: "for"
        }
    );
    // The macro's block is the enclosing function's code, not a function of its own.
    let (send, after) = (at("send(r)"), at("after_ranks()"));
    assert_eq!(send.function.as_deref(), Some("sender"));
    assert_eq!(compare(&send, &after), Relation::Before);
}

#[test]
fn a_wrecked_function_is_an_error_not_a_crash() {
    // An unbalanced parenthesis swallows the next function into the parser's error
    // recovery: the line has no readable enclosing function.
    let text = "void broken( {\n  garbage here ;;; ))\n}\nvoid fine(void) {\n  work();\n}\n";
    let tree = parse(text, Language::C, "snippet").expect("parses");
    for line in 1..=6 {
        assert_eq!(
            point_in_tree(&tree, text, Language::C, "snippet", line),
            None
        );
    }
}

#[test]
fn bad_bytes_are_no_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Latin-1 in a comment: decoded lossily, the code is still read.
    let latin1 = dir.path().join("latin1.f90");
    let mut bytes = b"! r\xe9solution\nsubroutine s()\n  call t()\nend subroutine s\n".to_vec();
    std::fs::write(&latin1, &bytes).expect("write");
    let mut index = SourceIndex::new(Vec::new());
    let point = index
        .point(latin1.to_str().expect("utf-8"), 3)
        .expect("point");
    assert_eq!(point.function.as_deref(), Some("s"));
    // Binary noise under a source name: an error or a point, never a panic.
    bytes = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let noise = dir.path().join("noise.cpp");
    std::fs::write(&noise, &bytes).expect("write");
    let noise = noise.to_str().expect("utf-8");
    let lines = u32::try_from(String::from_utf8_lossy(&bytes).lines().count()).expect("small");
    for line in (1..=lines).step_by(
        std::env::var("STEP")
            .map(|s| s.parse().unwrap())
            .unwrap_or(1),
    ) {
        let _ = index.point(noise, line);
    }
}

#[test]
fn deep_nesting_does_not_exhaust_the_stack() {
    // Test threads have small stacks: the walks must be loops, not recursion.
    const DEPTH: u32 = 3000;
    const TERMS: usize = 20_000;
    let mut text = String::from("void deep(int x) {\n");
    text += &"if (x) {\n".repeat(DEPTH as usize);
    text += "innermost();\n";
    text += &"}\n".repeat(DEPTH as usize);
    text += "}\nint sum(int a) {\n  return a\n";
    text += &"    + a\n".repeat(TERMS);
    text += "    + last_term(a);\n}\n";
    let innermost = snippet_point(Language::C, &text, "innermost()");
    // An offset and an arm per if, and the last offset.
    assert_eq!(innermost.steps.len(), 2 * DEPTH as usize + 1);
    assert_eq!(
        innermost.to_string().matches("br(if@").count(),
        DEPTH as usize
    );
    let last_term = snippet_point(Language::C, &text, "last_term(a)");
    assert_eq!(last_term.function.as_deref(), Some("sum"));
    assert_eq!(last_term.steps, vec![Step::Offset(1 + TERMS as u32 + 1)]);
}

// ---- Properties over every line of the fixtures ----------------------------------

/// Every line of the fixtures that has a point.
fn fixture_points() -> Vec<ProgramPoint> {
    let mut index = SourceIndex::new(Vec::new());
    let mut points = Vec::new();
    for name in ["poisson.c", "solver.cpp", "solver.f90"] {
        let path = testdata(name);
        let lines = u32::try_from(read_testdata(name).lines().count()).expect("small");
        points.extend((1..=lines).filter_map(|line| index.point(&path, line).ok()));
    }
    points
}

#[test]
fn only_lines_outside_functions_lack_points() {
    // Includes, blank lines and comments between functions, a class's declarations,
    // a template head, a module's specification part and its end.
    let outside: [(&str, Vec<u32>); 3] = [
        ("poisson.c", vec![24, 25]),
        (
            "solver.cpp",
            [1, 2, 3, 4, 5, 11, 12, 13, 14, 15, 16, 37, 38].into(),
        ),
        ("solver.f90", vec![1, 2, 3, 41, 42]),
    ];
    let mut index = SourceIndex::new(Vec::new());
    for (name, expected) in outside {
        let path = testdata(name);
        let lines = u32::try_from(read_testdata(name).lines().count()).expect("small");
        let mut missing = Vec::new();
        for line in (1..=lines).step_by(
            std::env::var("STEP")
                .map(|s| s.parse().unwrap())
                .unwrap_or(1),
        ) {
            match index.point(&path, line) {
                Ok(point) => assert_eq!(point.line, line),
                Err(SourceError::NotInFunction { .. }) => missing.push(line),
                Err(error) => panic!("{error}"),
            }
        }
        assert_eq!(missing, expected, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn fixture_points_compare_consistently(
        (a, b, c) in {
            let points = fixture_points();
            let pick = proptest::sample::select(points);
            (pick.clone(), pick.clone(), pick)
        }
    ) {
        prop_assert_eq!(compare(&a, &a), Relation::Same);
        let forward = compare(&a, &b);
        prop_assert_eq!(compare(&b, &a), forward.reversed());
        // Before means earlier in the text: line offsets never run backwards, and a
        // condition precedes its arms.
        if forward == Relation::Before {
            prop_assert!(a.line <= b.line, "{} before {}", a, b);
            if compare(&b, &c) == Relation::Before {
                prop_assert_eq!(compare(&a, &c), Relation::Before);
            }
        }
        if a.function_lines == b.function_lines && a.file == b.file {
            prop_assert!(!matches!(forward, Relation::Unrelated(_)), "{} vs {}", a, b);
        }
    }
}
