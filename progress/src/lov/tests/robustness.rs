//! Robustness: broken and deep code, random token soup.

use super::*;
use proptest::prelude::*;

#[test]
fn a_broken_loop_is_analysed_and_says_so() {
    let text = "\
void broken(int n) {
    int k = 0;
    while (k < n) {
        k++;
        x = = 3;
    }
}
";
    let found = c(text, "while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate(
            "k",
            Direction::Increasing,
            "k++ (the parser could not read all of the loop)",
            4
        )]
    );
}

#[test]
fn deep_nesting_does_not_exhaust_the_stack() {
    let depth = 20_000;
    let text = format!(
        "void deep(void) {{\n    int k = 0;\n    while (go()) {{\n        k = {}1{};\n        k++;\n    }}\n}}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let found = c(&text, "while");
    // The source is shortened in the one-line reason.
    let why = &rejection(&found, "k").why;
    assert!(
        why.starts_with("k = ((((")
            && why.ends_with("... sets it from other values, not by a step from its own"),
        "{why}"
    );
    assert!(why.len() < 200, "{why}");
}

/// Source-like token soup: loops, jumps, assignments and declarations in random order
/// and nesting, so that malformed trees meet every branch of the analysis.
fn soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("for (int i = 0; i < n; i++) {\n"),
        Just("while (go()) {\n"),
        Just("do {\n"),
        Just("} while (k);\n"),
        Just("for (auto& x : v) {\n"),
        Just("if (c) {\n"),
        Just("} else {\n"),
        Just("}\n"),
        Just("k++;\n"),
        Just("k += s;\n"),
        Just("s = k * 2;\n"),
        Just("int k = 0;\n"),
        Just("double d;\n"),
        Just("continue;\n"),
        Just("break;\n"),
        Just("goto l;\n"),
        Just("l: ;\n"),
        Just("switch (k) { case 1:\n"),
        Just("try {\n"),
        Just("} catch (...) {\n"),
        Just("[&]() { k--; };\n"),
        Just("x = c ? k++ : 0;\n"),
        Just("#if A\n"),
        Just("#endif\n"),
    ];
    proptest::collection::vec(token, 0..40)
        .prop_map(|tokens| format!("void f(int n, int s) {{\n{}}}\n", tokens.concat()))
}

fn fortran_soup() -> impl Strategy<Value = String> {
    let token = prop_oneof![
        Just("do i = 1, n\n"),
        Just("do while (k < n)\n"),
        Just("outer: do\n"),
        Just("end do\n"),
        Just("if (k > 2) then\n"),
        Just("else\n"),
        Just("end if\n"),
        Just("k = k + 1\n"),
        Just("k = k * 2\n"),
        Just("cycle\n"),
        Just("exit outer\n"),
        Just("go to 10\n"),
        Just("10 continue\n"),
        Just("integer :: k\n"),
        Just("block\n"),
        Just("end block\n"),
    ];
    proptest::collection::vec(token, 0..40)
        .prop_map(|tokens| format!("subroutine f(n)\n{}end subroutine f\n", tokens.concat()))
}

/// Every loop line of a parsed text analysed: no panic, and the invariants hold.
fn check_every_loop(language: Language, text: &str) -> Result<(), TestCaseError> {
    let tree = parse(text, language, "soup").expect("parses");
    let lines = u32::try_from(text.lines().count()).unwrap_or(u32::MAX);
    for line in 1..=lines {
        let Some(found) = loop_variables_in_tree(&tree, text, language, "soup", line) else {
            continue;
        };
        prop_assert_eq!(found.loop_line, line);
        for candidate in &found.candidates {
            // A variable is a candidate or rejected, never both.
            prop_assert!(
                !found
                    .rejected
                    .iter()
                    .any(|rejected| rejected.variable == candidate.variable),
                "{:?} both ways in {:#?}",
                candidate.variable,
                found
            );
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn c_and_cpp_soup_never_panics(text in soup()) {
        check_every_loop(Language::C, &text)?;
        check_every_loop(Language::Cpp, &text)?;
    }

    #[test]
    fn fortran_soup_never_panics(text in fortran_soup()) {
        check_every_loop(Language::Fortran, &text)?;
    }
}
