//! Python: for and while loops, if/elif/else chains, try and match arms, methods, and a
//! module's own code (the interpreter's `<module>` frame).

use super::*;

const SOLVER: &str = "\
import sys

def solve(comm, n):
    setup(comm)
    for it in range(n):
        exchange(comm)
        if it % 10 == 0:
            report(comm)
        elif it % 5 == 0:
            log(comm)
        else:
            rest(comm)
        compute(it)
    finish(comm)

class Solver:
    def step(self):
        while not self.done():
            self.wait()
        try:
            self.commit()
        except OSError:
            self.undo()
        finally:
            self.close()

    def route(self, kind):
        match kind:
            case 1:
                self.one()
            case _:
                self.other()

for i in range(3):
    solve(comm, i)
print(sys.argv)
";

fn at(marker: &str) -> ProgramPoint {
    snippet_point(Language::Python, SOLVER, marker)
}

#[test]
fn python_loops_and_the_code_around_them() {
    let (setup, exchange, compute, finish) = (
        at("setup(comm)"),
        at("exchange(comm)"),
        at("compute(it)"),
        at("finish(comm)"),
    );
    assert_eq!(setup.function.as_deref(), Some("solve"));
    assert_eq!(setup.function_lines, (3, 14));
    assert_eq!(exchange.to_string(), "solve@<2,it(for@5),1>");
    assert_eq!(compare(&setup, &exchange), Relation::Before);
    assert_eq!(
        compare(&exchange, &compute),
        needs_iteration(5, "for", Relation::Before)
    );
    assert_eq!(compare(&compute, &finish), Relation::Before);
    // The loop's header runs on every iteration, before its body.
    assert_eq!(
        compare(&at("for it in range(n)"), &exchange),
        needs_iteration(5, "for", Relation::Before)
    );
    let wait = at("self.wait()");
    assert_eq!(wait.function.as_deref(), Some("step"));
    assert_eq!(wait.to_string(), "step@<1,it(while@18),1>");
}

#[test]
fn python_if_elif_else_nests_like_c() {
    let (report, log, rest) = (at("report(comm)"), at("log(comm)"), at("rest(comm)"));
    let in_loop = |then| needs_iteration(5, "for", then);
    assert_eq!(
        compare(&report, &log),
        in_loop(incomparable(7, "if", (1, 2)))
    );
    assert_eq!(compare(&log, &rest), in_loop(incomparable(9, "if", (1, 2))));
    // The condition is evaluated before either arm.
    assert_eq!(
        compare(&at("if it % 10 == 0"), &report),
        needs_iteration(5, "for", Relation::Before)
    );
}

#[test]
fn python_try_and_match_arms() {
    let (commit, undo, close) = (at("self.commit()"), at("self.undo()"), at("self.close()"));
    assert_eq!(compare(&commit, &undo), incomparable(20, "try", (1, 2)));
    assert_eq!(compare(&undo, &close), incomparable(20, "try", (2, 3)));
    assert_eq!(
        compare(&at("self.one()"), &at("self.other()")),
        incomparable(28, "match", (1, 2))
    );
    // Before the try, in the same method: ordered by line.
    assert_eq!(compare(&at("self.wait()"), &commit), Relation::Before);
}

#[test]
fn python_module_code_is_the_module_function() {
    let (call, print) = (at("solve(comm, i)"), at("print(sys.argv)"));
    assert_eq!(call.function.as_deref(), Some("<module>"));
    assert_eq!(call.function_lines.0, 1);
    assert_eq!(call.to_string(), "<module>@<33,it(for@34),1>");
    assert_eq!(compare(&call, &print), Relation::Before);
    // A function's line is not the module's.
    assert!(matches!(
        compare(&at("setup(comm)"), &call),
        Relation::Unrelated(_)
    ));
}

#[test]
fn python_loops_get_loop_order_variables_through_the_index() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("solver.py");
    std::fs::write(&file, SOLVER).expect("write");
    let mut index = SourceIndex::new(Vec::new());
    let found = index
        .loop_variables(file.to_str().expect("utf-8"), 5)
        .expect("a loop at line 5");
    assert_eq!(found.kind, "for");
    let best = found.best().expect("a candidate");
    assert_eq!(
        (best.variable.as_str(), best.direction, best.step),
        ("it", crate::lov::Direction::Increasing, Some(1)),
        "{found:?}"
    );
}
