//! Loops: iteration placeholders, nesting, do-while conditions.

use super::*;

const LOOPS_C: &str = "\
void loops(int n) {
    prepare();
    for (int i = 0; i < n; i++) {
        first_in_loop(i);
        for (int j = 0; j < n; j++) {
            inner_a(i, j);
            inner_b(i, j);
        }
        second_in_loop(i);
    }
    do {
        body_line();
    } while (keep_going());
    while (!converged()) {
        iterate();
    }
    after_all();
}
";

#[test]
fn a_call_before_a_loop_is_before_every_call_in_it() {
    let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
    assert_eq!(
        compare(&at("prepare()"), &at("first_in_loop(")),
        Relation::Before
    );
    assert_eq!(compare(&at("prepare()"), &at("inner_b(")), Relation::Before);
    assert_eq!(
        compare(&at("after_all()"), &at("body_line()")),
        Relation::After
    );
}

#[test]
fn two_lines_of_one_loop_need_the_iteration_count() {
    let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
    let (first, second) = (at("first_in_loop("), at("second_in_loop("));
    assert_eq!(
        compare(&first, &second),
        needs_iteration(3, "for", Relation::Before)
    );
    assert_eq!(
        compare(&second, &first),
        needs_iteration(3, "for", Relation::After)
    );
    // The header (condition and increment) runs each iteration: it is in the loop.
    let header = at("for (int i = 0");
    assert_eq!(
        header.steps[1],
        Step::Iteration {
            line: 3,
            kind: "for"
        }
    );
    assert_eq!(
        compare(&header, &first),
        needs_iteration(3, "for", Relation::Before)
    );
}

#[test]
fn nested_loops_let_the_outer_offset_decide_first() {
    let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
    let (inner_a, inner_b) = (at("inner_a("), at("inner_b("));
    assert_eq!(
        inner_a.steps,
        vec![
            Step::Offset(2),
            Step::Iteration {
                line: 3,
                kind: "for"
            },
            Step::Offset(2),
            Step::Iteration {
                line: 5,
                kind: "for"
            },
            Step::Offset(1),
        ]
    );
    // Both loops' counts matter for two lines of the inner loop.
    assert_eq!(
        compare(&inner_a, &inner_b),
        needs_iteration(3, "for", needs_iteration(5, "for", Relation::Before))
    );
    // Against a line of the outer body only the outer count matters.
    assert_eq!(
        compare(&inner_b, &at("second_in_loop(")),
        needs_iteration(3, "for", Relation::Before)
    );
    assert_eq!(
        compare(&inner_a, &at("first_in_loop(")),
        needs_iteration(3, "for", Relation::After)
    );
}

#[test]
fn a_do_while_condition_comes_after_its_body() {
    let at = |marker| snippet_point(Language::C, LOOPS_C, marker);
    let condition = at("keep_going()");
    assert_eq!(
        condition.steps[1],
        Step::Iteration {
            line: 11,
            kind: "do-while"
        }
    );
    assert_eq!(
        compare(&condition, &at("body_line()")),
        needs_iteration(11, "do-while", Relation::After)
    );
    let while_condition = at("converged()");
    assert_eq!(
        while_condition.steps[1],
        Step::Iteration {
            line: 14,
            kind: "while"
        }
    );
    assert_eq!(
        compare(&while_condition, &at("iterate()")),
        needs_iteration(14, "while", Relation::Before)
    );
}
