//! Temporal order analysis: which ranks are behind, from where they are in the source.
//!
//! STAT's prefix tree groups ranks by call path; it cannot say which group is behind. The
//! temporal order analysis of Ahn et al. ("Scalable Temporal Order Analysis for Large Scale
//! Debugging", SC 2009) orders the frames of one function by where their lines sit in the
//! function's control structure: a line earlier in straight-line code is less progressed, a
//! line in a loop needs the loop's iteration count, and lines in different arms of one
//! conditional are never ordered.
//!
//! * [`point`]: the program point (the paper's lexicographic tuple, Section 3) and its
//!   comparison.
//! * [`source`]: from a frame's DWARF `file:line` to a program point, by parsing the C, C++
//!   or Fortran source with tree-sitter (the paper's "program point rewriting system",
//!   Section 4.1).
//! * [`lov`]: a loop's loop-order variables (Section 4.2), read to order ranks in one loop.
//! * [`order`]: the walk down the prefix tree that orders the groups parting at every
//!   branching point by their first divergent frame, and labels tasks `T1.2` (Section 4.3).
//! * [`report`]: the order as a user reads it (text, JSON), with the evidence, and the
//!   [`Annotation`](strata_result::annotation::Annotation) that draws it on the renderings.
//!
//! Design constraints: pure analysis over a [`StrataResult`](strata_result::StrataResult)
//! and the job's source files, which it only reads. No ptrace, no network, no terminal: the
//! values of loop-order variables are read by the daemons and reach this crate as data in
//! the result. Whatever cannot be decided (sources missing, different branches, no loop
//! variable) is reported as undecided with the reason, never guessed.

pub mod loops;
pub mod lov;
pub mod order;
pub mod point;
pub mod report;
pub mod source;

/// Helpers shared by the tests of the modules above.
#[cfg(test)]
pub(crate) mod testing {
    /// The 1-based line holding `marker`, which must be on exactly one line (tests name
    /// lines by their code, not by numbers that drift when a snippet is edited).
    pub(crate) fn line_of(text: &str, marker: &str) -> u32 {
        let lines: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| line.contains(marker))
            .map(|(index, _)| index + 1)
            .collect();
        assert_eq!(lines.len(), 1, "marker {marker:?} is on lines {lines:?}");
        u32::try_from(lines[0]).expect("small snippet")
    }

    /// The path of a fixture under `src/testdata`.
    pub(crate) fn testdata(name: &str) -> String {
        format!("{}/src/testdata/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// The text of a fixture under `src/testdata`.
    pub(crate) fn read_testdata(name: &str) -> String {
        std::fs::read_to_string(testdata(name)).expect("test fixture")
    }
}
