//! C: the rules one by one, jumps, types, scopes, preprocessor blocks and macros.

use super::*;

#[test]
fn a_for_loops_induction_variable_is_the_best() {
    let text = "\
void solve(int n) {
    for (int it = 0; it < n; it++) {
        step(it);
    }
}
";
    let found = c(text, "for (");
    assert_eq!(found.kind, "for");
    assert_eq!(found.loop_line, 2);
    assert_eq!(found.file, "snippet");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate(
            "it",
            Direction::Increasing,
            "for-loop induction (it++)",
            2
        )]
    );
    assert_eq!(found.best(), found.candidates.first());
    assert!(found.rejected.is_empty(), "{:#?}", found.rejected);
}

#[test]
fn a_while_loops_counter_in_the_body() {
    let text = "\
void poll(void) {
    int it = 0, done = 0;
    while (!done) {
        work();
        it++;
    }
}
";
    let found = c(text, "while");
    assert_eq!(found.kind, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("it", Direction::Increasing, "it++", 5)]
    );
}

#[test]
fn an_endless_for_with_a_literal_step() {
    let text = "\
void spin(void) {
    long step = 0;
    for (;;) {
        step += 2;
    }
}
";
    let found = c(text, "for (;;)");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("step", Direction::Increasing, "step += 2", 4)]
    );
}

#[test]
fn every_monotonic_form_and_its_direction() {
    let text = "\
void forms(void) {
    int a = 0, b = 0, d = 0, e = 0, f = 0, g = 0, h = 0, k = 0, m = 0;
    while (go()) {
        a--;
        --b;
        d -= 1;
        e = e - 3;
        f = 4 + f;
        g -= -2;
        h += -1;
        k = (k + 0x10);
        ++m;
    }
}
";
    let found = c(text, "while");
    let directions: Vec<(&str, Direction)> = found
        .candidates
        .iter()
        .map(|candidate| (candidate.variable.as_str(), candidate.direction))
        .collect();
    assert_eq!(
        directions,
        vec![
            ("a", Direction::Decreasing),
            ("b", Direction::Decreasing),
            ("d", Direction::Decreasing),
            ("e", Direction::Decreasing),
            ("f", Direction::Increasing),
            ("g", Direction::Increasing),
            ("h", Direction::Decreasing),
            ("k", Direction::Increasing),
            ("m", Direction::Increasing),
        ]
    );
    assert_eq!(found.candidates[3].how, "e = e - 3");
}

#[test]
fn products_copies_and_zero_steps_are_rejected() {
    let text = "\
void shapes(int y) {
    int x = 1, z = 0, w = 0, q = 0, r = 0;
    while (go()) {
        x *= 2;
        z = y + 1;
        w = f(w);
        q += 0;
        r += 2 * y;
    }
}
";
    let found = c(text, "while");
    assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
    assert_eq!(
        found.rejected,
        vec![
            rejected("x", 4, "x *= 2 is not monotonic by a constant step"),
            rejected(
                "z",
                5,
                "z = y + 1 sets it from other values, not by a step from its own"
            ),
            rejected("w", 6, "w = f(w) is not monotonic by a constant step"),
            rejected("q", 7, "q += 0 does not change it (step 0)"),
            rejected(
                "r",
                8,
                "r += 2 * y: the step 2 * y is neither an integer literal nor a single \
                     variable"
            ),
        ]
    );
}

#[test]
fn an_increment_in_an_if_is_rejected_with_the_ifs_line() {
    let text = "\
void sometimes(int n) {
    int hits = 0, i;
    for (i = 0; i < n; i++) {
        if (check(i))
            hits++;
        int t = cond() ? hits2++ : 0;
        if (ready() && flag++) {}
        switch (i) { case 1: cases++; break; }
    }
}
";
    let found = c(text, "for (");
    assert_eq!(candidate_names(&found), vec!["i"]);
    assert_eq!(
        rejection(&found, "hits"),
        &rejected("hits", 5, "assigned only in a branch (if at line 4)")
    );
    assert_eq!(
        rejection(&found, "hits2").why,
        "assigned only in a branch (?: at line 6)"
    );
    assert_eq!(
        rejection(&found, "flag").why,
        "assigned only in a branch (&& at line 7)"
    );
    assert_eq!(
        rejection(&found, "cases").why,
        "assigned only in a branch (switch at line 8)"
    );
    // `t` is an integer declared in the body: a new variable every iteration.
    assert_eq!(
        rejection(&found, "t").why,
        "declared inside the loop (line 6): a new variable every iteration"
    );
}

#[test]
fn an_increment_in_an_if_condition_runs_every_iteration() {
    let text = "\
void counted(void) {
    int calls = 0;
    while (1) {
        if (++calls > 10) {
            report();
        }
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("calls", Direction::Increasing, "++calls", 4)]
    );
}

#[test]
fn two_definitions_per_iteration_are_rejected() {
    let text = "\
void twice(int n) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        k++;
        i += 2;
        k += 1;
    }
}
";
    let found = c(text, "for (");
    assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
    assert_eq!(
        found.rejected,
        vec![
            rejected("i", 3, "assigned twice per iteration (lines 3 and 5)"),
            rejected("k", 4, "assigned twice per iteration (lines 4 and 6)"),
        ]
    );
}

#[test]
fn one_unconditional_and_one_conditional_definition_says_both() {
    let text = "\
void mixed(void) {
    int k = 0;
    while (go()) {
        k++;
        if (extra()) k++;
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        rejection(&found, "k").why,
        "assigned at lines 4 and 5; at line 5: assigned only in a branch (if at line 5)"
    );
}

#[test]
fn a_loop_with_nothing_usable_says_why() {
    let text = "\
void relax(double *u, int n) {
    double t = 0.0;
    double norm = 1.0;
    int *p = 0;
    while (norm > 1e-6) {
        norm = sweep(u, n);
        t += 1;
        p++;
        u[0] += 1;
        grid.cells++;
    }
}
";
    let found = c(text, "while");
    assert!(found.candidates.is_empty(), "{:#?}", found.candidates);
    assert_eq!(found.best(), None);
    // `norm` is neither an integer nor counter-like: not listed. Elements and fields
    // are skipped.
    assert_eq!(
        found.rejected,
        vec![
            rejected("t", 7, "a double, not an integer"),
            rejected("p", 8, "a pointer, not an integer"),
        ]
    );
}

#[test]
fn nested_loops_keep_their_own_variables() {
    let text = "\
void nest(int n, int m) {
    int j;
    for (int i = 0; i < n; i++) {
        for (j = 0; j < m; j++) {
            inner(i, j);
        }
        while (more()) { drained++; }
    }
}
";
    let outer = c(text, "for (int i");
    assert_eq!(candidate_names(&outer), vec!["i"]);
    assert_eq!(
        rejection(&outer, "j"),
        &rejected("j", 4, "the induction variable of the inner for at line 4")
    );
    assert_eq!(
        rejection(&outer, "drained").why,
        "assigned only inside the inner while at line 7, which may run any number of \
             times per iteration"
    );
    let inner = c(text, "for (j");
    assert_eq!(
        no_steps(&inner.candidates),
        vec![candidate(
            "j",
            Direction::Increasing,
            "for-loop induction (j++)",
            4
        )]
    );
    assert!(inner.rejected.is_empty(), "{:#?}", inner.rejected);
}

#[test]
fn a_loop_invariant_step_ranks_after_a_literal_one() {
    let text = "\
void strided(int stride, int n) {
    int it = 0, count = 0, pos = 0, jump = 1;
    while (it < n) {
        it += stride;
        pos -= jump;
        count++;
        jump = next(jump);
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![
            candidate("count", Direction::Increasing, "count++", 6),
            candidate("it", Direction::Unknown, "it += stride", 4),
        ]
    );
    assert_eq!(
        rejection(&found, "pos"),
        &rejected("pos", 5, "the step jump is assigned in the loop")
    );
}

#[test]
fn named_constant_steps_have_a_direction() {
    let text = "\
#define STRIDE (4)
void constants(void) {
    const int down = -2;
    int a = 0, b = 0, c = 0;
    for (;;) {
        a += down;
        b -= STRIDE;
        c += STRIDE;
    }
}
";
    let found = c(text, "for (;;)");
    assert_eq!(
        no_steps(&found.candidates),
        vec![
            candidate("a", Direction::Decreasing, "a += down (down = -2)", 6),
            candidate("b", Direction::Decreasing, "b -= STRIDE (STRIDE = 4)", 7),
            candidate("c", Direction::Increasing, "c += STRIDE (STRIDE = 4)", 8),
        ]
    );
}

#[test]
fn a_do_while_body_runs_once_per_iteration() {
    let text = "\
void retry(void) {
    unsigned attempts = 0;
    do {
        attempts++;
    } while (!try_once());
}
";
    let found = c(text, "do {");
    assert_eq!(found.kind, "do-while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate(
            "attempts",
            Direction::Increasing,
            "attempts++",
            4
        )]
    );
}

#[test]
fn a_counter_in_the_loop_condition() {
    let text = "\
void countdown(int n) {
    while (--n > 0) {
        tick();
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate(
            "n",
            Direction::Decreasing,
            "--n in the loop condition",
            2
        )]
    );
}

#[test]
fn a_continue_before_the_counter_rejects_it_and_a_break_is_noted() {
    let text = "\
void jumps(void) {
    int skipped = 0, counted = 0, before = 0;
    while (go()) {
        before++;
        if (stalled()) continue;
        skipped++;
    }
    while (more()) {
        if (finished()) break;
        counted++;
        for (int r = 0; r < 4; r++) { if (r == 2) continue; }
        switch (counted) { case 3: break; }
    }
}
";
    let skipping = c(text, "while (go())");
    assert_eq!(
        no_steps(&skipping.candidates),
        vec![candidate("before", Direction::Increasing, "before++", 4)]
    );
    assert_eq!(
        skipping.rejected,
        vec![rejected(
            "skipped",
            6,
            "after the continue at line 5, which may skip it"
        )]
    );
    // The inner loop's continue and the switch's break are theirs, not this loop's:
    // only the break at line 9 is noted.
    let breaking = c(text, "while (more())");
    assert_eq!(
        no_steps(&breaking.candidates),
        vec![candidate(
            "counted",
            Direction::Increasing,
            "counted++ (a break at line 9 may end the last iteration before it)",
            10
        )]
    );
}

#[test]
fn a_continue_does_not_skip_a_for_loops_increment() {
    let text = "\
void each(int n) {
    for (int i = 0; i < n; i++) {
        if (skip(i)) continue;
        work(i);
    }
}
";
    assert_eq!(candidate_names(&c(text, "for (")), vec!["i"]);
}

#[test]
fn a_goto_inside_the_loop_tangles_it_and_one_out_of_it_leaves() {
    let text = "\
void gotos(void) {
    int k = 0, m = 0;
    while (go()) {
again:
        k++;
        if (retry()) goto again;
    }
    while (more()) {
        if (failed()) goto out;
        m++;
    }
out:
    return;
}
";
    let tangled = c(text, "while (go())");
    assert_eq!(
        tangled.rejected,
        vec![rejected(
            "k",
            5,
            "a goto at line 6 jumps inside the loop and may skip or repeat it"
        )]
    );
    let left = c(text, "while (more())");
    assert_eq!(
        no_steps(&left.candidates),
        vec![candidate(
            "m",
            Direction::Increasing,
            "m++ (a goto at line 9 may end the last iteration before it)",
            10
        )]
    );
}

#[test]
fn integer_types_are_recognised_and_others_rejected() {
    let text = "\
#include <stdint.h>
typedef long idx_t;
typedef idx_t *idx_ptr;
typedef float real_t;
extern int global_steps;
void types(size_t m, unsigned long long big, my_count_t opaque, idx_ptr ip) {
    int64_t i64 = 0;
    idx_t idx = 0;
    real_t r = 0;
    _Bool flag = 0;
    struct cell c;
    enum phase ph;
    char letters[4];
    while (go()) {
        m++;
        big--;
        i64 += 8;
        idx++;
        global_steps++;
        undeclared++;
        opaque++;
        r += 1;
        flag++;
        c++;
        ph++;
        letters++;
        ip++;
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![
            candidate("m", Direction::Increasing, "m++", 15),
            candidate("big", Direction::Decreasing, "big--", 16),
            candidate("i64", Direction::Increasing, "i64 += 8", 17),
            candidate("idx", Direction::Increasing, "idx++", 18),
            candidate("global_steps", Direction::Increasing, "global_steps++", 19),
            candidate(
                "undeclared",
                Direction::Increasing,
                "undeclared++ (declaration not seen)",
                20
            ),
            candidate(
                "opaque",
                Direction::Increasing,
                "opaque++ (type my_count_t: a typedef not seen, assumed an integer)",
                21
            ),
        ]
    );
    assert_eq!(
        found.rejected,
        vec![
            rejected("r", 22, "real_t is a float, not an integer"),
            rejected("flag", 23, "a bool, not an integer"),
            rejected("c", 24, "a struct, not an integer"),
            rejected("ph", 25, "an enum, not an integer"),
            rejected("letters", 26, "an array, not an integer scalar"),
            rejected("ip", 27, "idx_ptr is a pointer, not an integer"),
        ]
    );
}

#[test]
fn a_shadowing_declaration_in_a_block_is_the_one_seen() {
    let text = "\
void shadow(void) {
    double k = 0;
    {
        int k = 0;
        while (go()) {
            k++;
        }
    }
}
";
    assert_eq!(candidate_names(&c(text, "while")), vec!["k"]);
}

#[test]
fn preprocessor_blocks_are_straight_line_code() {
    let text = "\
void traced(void) {
#ifdef USE_LONG
    long n = 0;
#else
    int n = 0;
#endif
    while (go()) {
#if TRACE
        trace(n);
#endif
        n++;
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("n", Direction::Increasing, "n++", 11)]
    );
}

#[test]
fn a_block_after_a_macro_may_be_a_loop() {
    let text = "\
void ranks(void) {
    int sent = 0, rounds = 0;
    while (go()) {
        FOR_EACH_RANK(r) { sent++; }
        rounds++;
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("rounds", Direction::Increasing, "rounds++", 5)]
    );
    assert_eq!(
        found.rejected,
        vec![rejected(
            "sent",
            4,
            "assigned inside the block after a macro at line 4, which may loop or not run"
        )]
    );
}
