//! Through the SourceIndex: the paper's Figure 1, a line that starts no loop, two loops on a line.

use super::*;

#[test]
fn the_papers_figure_1_loop_has_it_as_its_loop_order_variable() {
    // Section 4.2: "Our algorithm identifies it in Figure 1 as a LOV [...] with respect
    // to the loop that spans (4) and (21)", by the `it++` at (20).
    let mut index = SourceIndex::new(Vec::new());
    let path = testdata("poisson.c");
    let found = index.loop_variables(&path, 4).expect("the while loop");
    assert_eq!(found.kind, "while");
    assert_eq!(found.file, path);
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("it", Direction::Increasing, "it++", 20)]
    );
    // `norm` is a double set from a call: not listed. The inner loop's `row` is.
    assert_eq!(
        found.rejected,
        vec![rejected(
            "row",
            11,
            "the induction variable of the inner for at line 11"
        )]
    );
    let reduction = index.loop_variables(&path, 28).expect("get_norm's loop");
    assert_eq!(
        no_steps(&reduction.candidates),
        vec![candidate(
            "i",
            Direction::Increasing,
            "for-loop induction (i++)",
            28
        )]
    );
}

#[test]
fn a_line_that_starts_no_loop_is_an_error() {
    let mut index = SourceIndex::new(Vec::new());
    let path = testdata("poisson.c");
    // Line 5 is inside the loop, but the loop starts at line 4.
    let error = index
        .loop_variables(&path, 5)
        .expect_err("no loop starts there");
    assert_eq!(
        error,
        SourceError::NoLoopAt {
            path: path.clone(),
            line: 5
        }
    );
    assert!(
        error
            .to_string()
            .contains(&format!("{path}:5 starts no loop")),
        "{error}"
    );
    assert!(matches!(
        index.loop_variables(&path, 0),
        Err(SourceError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        index.loop_variables(&path, 10_000),
        Err(SourceError::LineOutOfRange { .. })
    ));
    assert!(matches!(
        index.loop_variables("/nonexistent/strata/solver.c", 3),
        Err(SourceError::Unreadable { .. })
    ));
    assert!(matches!(
        index.loop_variables("notes.txt", 3),
        Err(SourceError::UnknownLanguage { .. })
    ));
}

#[test]
fn the_first_of_two_loops_on_one_line_is_the_outer_one() {
    let text = "\
void grid(int n) {
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) cell(i, j);
}
";
    let found = c(text, "for (int i");
    assert_eq!(candidate_names(&found), vec!["i"]);
    assert_eq!(
        rejection(&found, "j").why,
        "the induction variable of the inner for at line 2"
    );
}
