//! Conditionals: which arm holds a line, and arms against each other.

use super::*;

const BRANCHES_C: &str = "\
int branches(int x) {
    if (check(x)) {
        on_true();
    } else if (big(x)) {
        on_big();
    } else {
        on_other();
    }
    switch (x) {
    case 1:
        case_one();
        break;
    case 2:
        case_two();
        break;
    default:
        case_default();
    }
    if (x) quick();
    after_if();
    return x;
}
";

#[test]
fn the_condition_comes_before_every_arm() {
    let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
    let condition = at("check(x)");
    assert_eq!(
        condition.steps[1],
        Step::Arm {
            line: 2,
            arm: 0,
            kind: "if"
        }
    );
    assert_eq!(compare(&condition, &at("on_true()")), Relation::Before);
    assert_eq!(compare(&condition, &at("on_other()")), Relation::Before);
    assert_eq!(compare(&at("on_big()"), &condition), Relation::After);
}

#[test]
fn then_and_else_are_incomparable() {
    let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
    assert_eq!(
        compare(&at("on_true()"), &at("on_other()")),
        incomparable(2, "if", (1, 2))
    );
}

#[test]
fn an_else_if_chain_nests_and_its_arms_are_pairwise_incomparable() {
    let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
    let (on_true, on_big, on_other) = (at("on_true()"), at("on_big()"), at("on_other()"));
    assert_eq!(compare(&on_true, &on_big), incomparable(2, "if", (1, 2)));
    assert_eq!(compare(&on_big, &on_other), incomparable(4, "if", (1, 2)));
    assert_eq!(compare(&on_other, &on_true), incomparable(2, "if", (2, 1)));
    assert_eq!(
        on_other.steps,
        vec![
            Step::Offset(1),
            Step::Arm {
                line: 2,
                arm: 2,
                kind: "if"
            },
            Step::Offset(0),
            Step::Arm {
                line: 4,
                arm: 2,
                kind: "if"
            },
            Step::Offset(1),
        ]
    );
    // The inner condition runs after the outer one failed, before its own arms.
    let inner_condition = at("big(x)");
    assert_eq!(compare(&inner_condition, &on_big), Relation::Before);
    assert_eq!(compare(&inner_condition, &on_other), Relation::Before);
    assert_eq!(
        compare(&inner_condition, &on_true),
        incomparable(2, "if", (2, 1))
    );
}

#[test]
fn switch_cases_are_incomparable_arms() {
    let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
    let (one, two, default) = (at("case_one()"), at("case_two()"), at("case_default()"));
    assert_eq!(compare(&one, &two), incomparable(9, "switch", (1, 2)));
    assert_eq!(compare(&two, &default), incomparable(9, "switch", (2, 3)));
    assert_eq!(compare(&default, &one), incomparable(9, "switch", (3, 1)));
    assert_eq!(compare(&at("switch (x)"), &two), Relation::Before);
}

#[test]
fn a_one_line_if_puts_the_call_in_its_arm() {
    let quick = snippet_point(Language::C, BRANCHES_C, "quick()");
    assert_eq!(
        quick.steps[1],
        Step::Arm {
            line: 19,
            arm: 1,
            kind: "if"
        }
    );
}

#[test]
fn a_point_after_a_conditional_is_after_all_its_arms() {
    let at = |marker| snippet_point(Language::C, BRANCHES_C, marker);
    let after = at("after_if()");
    for arm in [
        "on_true()",
        "on_big()",
        "on_other()",
        "case_one()",
        "quick()",
    ] {
        assert_eq!(compare(&after, &at(arm)), Relation::After, "{arm}");
    }
}
