//! C++: range-for, members of a method's class, iterators, try blocks and lambdas.

use super::*;

#[test]
fn a_range_for_has_no_induction_variable_but_a_counter_works() {
    let text = "\
void visit(std::vector<Cell>& cells) {
    std::size_t count = 0;
    for (auto& cell : cells) {
        relax(cell);
        ++count;
    }
    for (const Cell& c : cells) {
        relax(c);
    }
}
";
    let found = cpp(text, "for (auto& cell");
    assert_eq!(found.kind, "range-for");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("count", Direction::Increasing, "++count", 5)]
    );
    let bare = cpp(text, "for (const Cell& c");
    assert!(bare.candidates.is_empty());
    assert_eq!(
        bare.rejected,
        vec![rejected(
            "c",
            7,
            "the range-for's element: a range-for has no induction variable"
        )]
    );
}

#[test]
fn a_method_loop_finds_the_member_type() {
    let text = "\
class Solver {
    std::size_t sweeps_;
    double residual_;
    void inline_loop() {
        for (;;) { sweeps_ += 2u; }
    }
    void step();
};
void Solver::step() {
    while (residual_ > tolerance_) {
        residual_ = sweep();
        ++sweeps_;
        this->calls++;
    }
}
";
    let inline = cpp(text, "for (;;)");
    assert_eq!(
        no_steps(&inline.candidates),
        vec![candidate(
            "sweeps_",
            Direction::Increasing,
            "sweeps_ += 2u",
            5
        )]
    );
    let out_of_line = cpp(text, "while");
    assert_eq!(
        no_steps(&out_of_line.candidates),
        vec![candidate("sweeps_", Direction::Increasing, "++sweeps_", 12)]
    );
    // residual_ is a double set from a call: not listed; this->calls is a field.
    assert!(
        out_of_line.rejected.is_empty(),
        "{:#?}",
        out_of_line.rejected
    );
}

#[test]
fn cpp_iterators_try_blocks_and_lambdas_are_not_candidates() {
    let text = "\
void walk(std::map<int, int>& m) {
    int tries = 0, inside = 0, caught = 0;
    auto seven = 7;
    for (auto it = m.begin(); it != m.end(); ++it) {
        try { tries++; } catch (...) { caught++; }
        auto bump = [&]() { inside++; };
        seven -= 7;
    }
}
";
    let found = cpp(text, "for (auto it");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("seven", Direction::Decreasing, "seven -= 7", 7)]
    );
    assert_eq!(
        rejection(&found, "it").why,
        "declared auto from m.begin(): not known to be an integer"
    );
    assert_eq!(
        rejection(&found, "tries").why,
        "assigned only in a try block (line 5): an exception may skip it"
    );
    assert_eq!(
        rejection(&found, "caught").why,
        "assigned only in a branch (catch at line 5)"
    );
    assert_eq!(
        rejection(&found, "inside").why,
        "assigned inside a lambda (line 6), which the loop may call any number of times"
    );
}
