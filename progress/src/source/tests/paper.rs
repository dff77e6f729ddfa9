//! The paper's Figure 1 (`testdata/poisson.c`): its tuples and its Table 1.

use super::*;

#[test]
fn poisson_fixture_has_the_papers_line_numbers() {
    let text = read_testdata("poisson.c");
    let expected = [
        ("void poisson(", 1),
        ("while (norm > TOLERANCE", 4),
        ("exchange_band(", 5),
        ("sweep_band(", 6),
        ("if (norm <= TOLERANCE)", 14),
        ("handle_converged(", 15),
        ("} else {", 16),
        ("handle_not(", 17),
        ("it++", 20),
    ];
    for (marker, line) in expected {
        assert_eq!(line_of(&text, marker), line, "{marker}");
    }
}

#[test]
fn poisson_points_are_the_papers_tuples() {
    let mut index = SourceIndex::new(Vec::new());
    let exchange = point_of(&mut index, "poisson.c", "exchange_band(");
    assert_eq!(exchange.function.as_deref(), Some("poisson"));
    assert_eq!(exchange.function_lines, (1, 23));
    assert_eq!(exchange.line, 5);
    // <(4-1), (iterCount), (5-4)>
    let while_loop = Step::Iteration {
        line: 4,
        kind: "while",
    };
    assert_eq!(
        exchange.steps,
        vec![Step::Offset(3), while_loop.clone(), Step::Offset(1)]
    );
    // <3, iterCount, 0^(in 10), 1>: the then arm starts on the if's line.
    let converged = point_of(&mut index, "poisson.c", "handle_converged(");
    let then_arm = Step::Arm {
        line: 14,
        arm: 1,
        kind: "if",
    };
    assert_eq!(
        converged.steps,
        vec![
            Step::Offset(3),
            while_loop.clone(),
            Step::Offset(10),
            then_arm,
            Step::Offset(1)
        ]
    );
    // <3, iterCount, 2^(in 10), 1>: the else arm starts at line 16, 17 is 1 past it.
    let not_converged = point_of(&mut index, "poisson.c", "handle_not(");
    let else_arm = Step::Arm {
        line: 14,
        arm: 2,
        kind: "if",
    };
    assert_eq!(
        not_converged.steps,
        vec![
            Step::Offset(3),
            while_loop,
            Step::Offset(10),
            else_arm,
            Step::Offset(1)
        ]
    );
    assert_eq!(
        not_converged.to_string(),
        "poisson@<3,it(while@4),10,br(if@14:2),1>"
    );
}

#[test]
fn poisson_points_are_ordered_as_table_1_says() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "poisson.c", marker);
    let (five, six) = (at("exchange_band("), at("sweep_band("));
    let (fifteen, seventeen) = (at("handle_converged("), at("handle_not("));
    let after_loop = at("finish(u, n)");
    // (5) before (6) in one iteration; the counts decide otherwise.
    assert_eq!(
        compare(&five, &six),
        needs_iteration(4, "while", Relation::Before)
    );
    // (15) and (17) are never ordered in one iteration.
    assert_eq!(
        compare(&fifteen, &seventeen),
        needs_iteration(4, "while", incomparable(14, "if", (1, 2)))
    );
    assert_eq!(
        compare(&five, &fifteen),
        needs_iteration(4, "while", Relation::Before)
    );
    assert_eq!(
        compare(&seventeen, &five),
        needs_iteration(4, "while", Relation::After)
    );
    // Whatever the iteration, the loop comes before what follows it.
    assert_eq!(compare(&five, &after_loop), Relation::Before);
    assert_eq!(compare(&after_loop, &seventeen), Relation::After);
    assert_eq!(compare(&six, &six.clone()), Relation::Same);
}

#[test]
fn a_second_function_in_the_file_is_its_own() {
    let mut index = SourceIndex::new(Vec::new());
    let reduce = point_of(&mut index, "poisson.c", "MPI_Allreduce(");
    assert_eq!(reduce.function.as_deref(), Some("get_norm"));
    assert_eq!(reduce.function_lines, (26, 33));
    assert_eq!(reduce.to_string(), "get_norm@<5>");
    let exchange = point_of(&mut index, "poisson.c", "exchange_band(");
    assert!(matches!(
        compare(&reduce, &exchange),
        Relation::Unrelated(_)
    ));
}
