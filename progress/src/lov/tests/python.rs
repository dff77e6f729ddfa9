//! Python: a for loop's own counter (range, enumerate), updates in the body, where they
//! run, jumps, module-level constants as steps.

use super::*;

fn python(text: &str, loop_marker: &str) -> LoopVariables {
    analyse(Language::Python, text, loop_marker)
}

const NOTE: &str = "Python: its type is checked when read";

#[test]
fn a_for_over_a_range_counts_by_its_step() {
    let text = "\
STEP = 2

def sweeps(n, s):
    for i in range(n):
        work(i)
    for j in range(n, 0, -1):
        work(j)
    for k in range(0, n, s):
        work(k)
    for m in range(0, n, STEP):
        work(m)
    for q in range(0, n, -STEP):
        work(q)
";
    let up = python(text, "for i in");
    assert_eq!(up.kind, "for");
    assert_eq!(
        up.candidates,
        vec![Candidate {
            step: Some(1),
            ..candidate(
                "i",
                Direction::Increasing,
                &format!("for-loop induction (i in range(n)) ({NOTE})"),
                4
            )
        }]
    );
    let down = python(text, "for j in");
    assert_eq!(down.candidates[0].direction, Direction::Decreasing);
    assert_eq!(down.candidates[0].step, Some(-1));
    let strided = python(text, "for k in");
    assert_eq!(strided.candidates[0].direction, Direction::Unknown);
    let constant = python(text, "for m in");
    assert_eq!(constant.candidates[0].direction, Direction::Increasing);
    assert!(
        constant.candidates[0].how.contains("STEP = 2"),
        "{:?}",
        constant.candidates[0]
    );
    let negated = python(text, "for q in");
    assert_eq!(negated.candidates[0].direction, Direction::Decreasing);
}

#[test]
fn enumerate_counts_and_an_iterables_element_does_not() {
    let text = "\
def walk(items):
    count = 0
    for idx, item in enumerate(items):
        use(item)
    for item in items:
        count += 1
";
    let numbered = python(text, "for idx");
    assert_eq!(candidate_names(&numbered), vec!["idx"]);
    assert!(
        rejection(&numbered, "item")
            .why
            .contains("counts no iterations"),
        "{numbered:#?}"
    );
    let plain = python(text, "for item in items");
    assert_eq!(
        no_steps(&plain.candidates),
        vec![candidate(
            "count",
            Direction::Increasing,
            &format!("count += 1 ({NOTE})"),
            6
        )]
    );
    assert!(
        rejection(&plain, "item")
            .why
            .contains("counts no iterations")
    );
}

#[test]
fn while_loops_count_by_their_updates() {
    let text = "\
def solve(n):
    it = 0
    left = n
    while it < n:
        step()
        it = it + 1
        left -= 2
        scale *= 2
        t += 0.5
";
    let found = python(text, "while it");
    assert_eq!(found.kind, "while");
    assert_eq!(candidate_names(&found), vec!["it", "left"]);
    assert_eq!(found.candidates[1].direction, Direction::Decreasing);
    assert_eq!(found.candidates[1].step, Some(-2));
    assert_eq!(
        rejection(&found, "scale").why,
        "scale *= 2 is not monotonic by a constant step"
    );
    assert_eq!(
        rejection(&found, "t").why,
        "t += 0.5: the step 0.5 is not an integer"
    );
}

#[test]
fn updates_that_may_not_run_every_iteration_are_rejected() {
    let text = "\
def solve(n, flags):
    a = b = c = d = e = f = g = 0
    for i in range(n):
        if flags[i]:
            a += 1
        elif i:
            b += 1
        try:
            c += 1
        except ValueError:
            d += 1
        for j in range(i):
            e += 1
        def inner():
            g = 5
        g += 1
        if skip(i):
            continue
        f += 1
";
    let found = python(text, "for i in");
    assert_eq!(candidate_names(&found), vec!["i", "g"]);
    assert_eq!(
        rejection(&found, "a").why,
        "assigned only in a branch (if at line 4)"
    );
    assert_eq!(
        rejection(&found, "b").why,
        "assigned only in a branch (if at line 4)"
    );
    assert_eq!(
        rejection(&found, "c").why,
        "assigned only in a try block (line 8): an exception may skip it"
    );
    assert_eq!(
        rejection(&found, "d").why,
        "assigned only in a branch (except at line 10)"
    );
    assert_eq!(
        rejection(&found, "j").why,
        "the induction variable of the inner for at line 12"
    );
    assert!(
        rejection(&found, "e")
            .why
            .starts_with("assigned only inside the inner for at line 12"),
        "{found:#?}"
    );
    assert_eq!(
        rejection(&found, "f").why,
        "after the continue at line 18, which may skip it"
    );
}

#[test]
fn a_break_before_the_update_is_noted_and_the_else_clause_ignored() {
    let text = "\
def solve(n):
    k = 0
    while True:
        if done():
            break
        k += 1
    else:
        k = 100
";
    let found = python(text, "while True");
    assert_eq!(candidate_names(&found), vec!["k"]);
    assert!(
        found.candidates[0]
            .how
            .contains("a break at line 5 may end the last iteration before it"),
        "{:?}",
        found.candidates[0]
    );
}

#[test]
fn python_integer_literals() {
    use super::super::step::python_integer;
    assert_eq!(python_integer("42"), Some(42));
    assert_eq!(python_integer("1_000"), Some(1000));
    assert_eq!(python_integer("0x10"), Some(16));
    assert_eq!(python_integer("0o17"), Some(15));
    assert_eq!(python_integer("0b101"), Some(5));
    assert_eq!(python_integer("1.5"), None);
    assert_eq!(python_integer("3j"), None);
}
