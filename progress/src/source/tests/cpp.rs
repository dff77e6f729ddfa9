//! C++: methods, declarators, lambdas, try/catch, templates.

use super::*;

#[test]
fn methods_are_named_as_declared() {
    let mut index = SourceIndex::new(Vec::new());
    let in_class = point_of(&mut index, "solver.cpp", "smooth(i)");
    assert_eq!(in_class.function.as_deref(), Some("relax"));
    assert_eq!(in_class.function_lines, (6, 10));
    assert_eq!(in_class.to_string(), "relax@<1,it(for@7),1>");
    let out_of_line = point_of(&mut index, "solver.cpp", "update(value)");
    assert_eq!(out_of_line.function.as_deref(), Some("Solver::step"));
    assert_eq!(out_of_line.function_lines, (17, 36));
    assert_eq!(
        out_of_line.steps[1],
        Step::Iteration {
            line: 19,
            kind: "range-for"
        }
    );
}

#[test]
fn declarators_are_unwrapped_to_the_name() {
    let text = "\
int *make_buffer(int n) {
    return alloc_ints(n);
}
double& Grid::at(int i) {
    return cell_ref(i);
}
bool Grid::operator()(int i) const {
    return test_cell(i);
}
Grid::~Grid() {
    release_all();
}
static int (*pick_handler(int kind))(int) {
    return lookup_handler(kind);
}
";
    let name = |marker| snippet_point(Language::Cpp, text, marker).function;
    assert_eq!(name("alloc_ints").as_deref(), Some("make_buffer"));
    assert_eq!(name("cell_ref").as_deref(), Some("Grid::at"));
    assert_eq!(name("test_cell").as_deref(), Some("Grid::operator()"));
    assert_eq!(name("release_all").as_deref(), Some("Grid::~Grid"));
    assert_eq!(name("lookup_handler").as_deref(), Some("pick_handler"));
}

#[test]
fn a_lambda_is_its_own_function_after_its_first_line() {
    let mut index = SourceIndex::new(Vec::new());
    let send = point_of(&mut index, "solver.cpp", "send_to(rank)");
    assert_eq!(send.function, None);
    assert_eq!(send.function_lines, (22, 26));
    assert_eq!(
        send.steps,
        vec![
            Step::Offset(1),
            Step::Arm {
                line: 23,
                arm: 1,
                kind: "if"
            },
            Step::Offset(1)
        ]
    );
    // The line that creates the lambda is the enclosing function's.
    let creation = point_of(&mut index, "solver.cpp", "auto visit =");
    assert_eq!(creation.function.as_deref(), Some("Solver::step"));
    assert!(matches!(compare(&send, &creation), Relation::Unrelated(_)));
}

#[test]
fn try_and_catch_clauses_are_incomparable_arms() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.cpp", marker);
    let (body, handler, catch_all) = (at("communicate()"), at("report(error)"), at("abort_all()"));
    assert_eq!(compare(&body, &handler), incomparable(28, "try", (1, 2)));
    assert_eq!(
        compare(&catch_all, &handler),
        incomparable(28, "try", (3, 2))
    );
    let after = at("wait_all()");
    for point in [&body, &handler, &catch_all] {
        assert_eq!(compare(&after, point), Relation::After);
    }
    assert_eq!(compare(&at("visit(1)"), &body), Relation::Before);
}

#[test]
fn template_functions_and_if_constexpr() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.cpp", marker);
    let reduce = at("reduce_one(item)");
    assert_eq!(reduce.function.as_deref(), Some("accumulate"));
    assert_eq!(
        reduce.steps[1],
        Step::Iteration {
            line: 41,
            kind: "range-for"
        }
    );
    let (wide, narrow) = (at("wide_path("), at("narrow_path("));
    assert_eq!(
        compare(&wide, &narrow),
        incomparable(44, "if constexpr", (1, 2))
    );
    assert_eq!(compare(&reduce, &wide), Relation::Before);
}
