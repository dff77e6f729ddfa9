//! Where a thread's Python frames go among its native frames.
//!
//! Each call of the evaluator (`_PyEval_EvalFrameDefault`) runs one group of Python
//! frames: one frame up to 3.10, from 3.11 a frame and the Python functions it called
//! without a C call in between (the group ends at its "entry" frame). The groups, innermost
//! first, belong to the evaluator's C frames, innermost first, and go just inside them:
//! `... MPI_Barrier < Comm.Barrier < (C call machinery) < step < <module> <
//! _PyEval_EvalFrameDefault < ... < main`.
//!
//! The two are matched from the outermost end: a thread caught between an evaluator's
//! entry and its first frame (or after its last) has one more C frame than groups at the
//! inner end, never at the outer one. Groups left over at the inner end (a native walk cut
//! short) go with the innermost evaluator frame; without any evaluator frame (an
//! interpreter without symbols), every Python frame goes inside the innermost frame of the
//! interpreter's image, or at the outer end of the stack.

use std::ops::Range;

use super::threads::PyFrame;

/// The evaluator function's name; a build may give it a suffix (`.lto_priv.0`).
pub fn is_evaluator(function: &str) -> bool {
    function == "_PyEval_EvalFrameDefault" || function.starts_with("_PyEval_EvalFrameDefault.")
}

/// For a thread's native frames (innermost first), of which `evaluators` (ascending) are
/// evaluator calls and `interpreter` (ascending) are in the interpreter's image: which
/// Python frames (a range of `python`, innermost first) go just inside which native frame
/// (an index; `native_len` for the outer end). Ranges come innermost first.
pub fn place(
    python: &[PyFrame],
    evaluators: &[usize],
    interpreter: &[usize],
    native_len: usize,
) -> Vec<(usize, Range<usize>)> {
    if python.is_empty() {
        return Vec::new();
    }
    let groups = groups(python);
    if evaluators.is_empty() {
        let at = interpreter.first().copied().unwrap_or(native_len);
        return vec![(at, 0..python.len())];
    }
    // Outermost group with outermost evaluator, and so on inwards.
    let mut placed: Vec<(usize, Range<usize>)> = groups
        .iter()
        .rev()
        .zip(evaluators.iter().rev())
        .map(|(g, &at)| (at, g.clone()))
        .collect();
    placed.reverse();
    // Inner groups without an evaluator of their own join the innermost one placed.
    let unplaced = groups.len().saturating_sub(evaluators.len());
    if unplaced > 0 {
        placed[0].1.start = 0;
    }
    placed
}

/// The groups of frames one evaluator call each runs, innermost first.
fn groups(python: &[PyFrame]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, f) in python.iter().enumerate() {
        if f.entry {
            out.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < python.len() {
        // Frames past the last entry (a walk cut short): the outermost evaluator's.
        out.push(start..python.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(entries: &[bool]) -> Vec<PyFrame> {
        entries
            .iter()
            .enumerate()
            .map(|(i, &entry)| PyFrame {
                function: format!("f{i}"),
                file: "x.py".into(),
                line: Some(i as u32 + 1),
                entry,
                address: 0,
                code: 0,
            })
            .collect()
    }

    #[test]
    fn groups_go_inside_their_evaluator_frames() {
        // 3.11: frames 0-1 run by one evaluator call, 2-3 by another.
        let p = py(&[false, true, false, true]);
        assert_eq!(
            place(&p, &[4, 9], &[3, 4, 8, 9, 10], 12),
            vec![(4, 0..2), (9, 2..4)]
        );
        // 3.10: one frame each.
        let p = py(&[true, true, true]);
        assert_eq!(
            place(&p, &[2, 5, 7], &[], 9),
            vec![(2, 0..1), (5, 1..2), (7, 2..3)]
        );
    }

    #[test]
    fn mismatches_are_matched_from_the_outer_end() {
        // An evaluator just entered, its first frame not pushed yet: the innermost
        // evaluator frame gets nothing.
        let p = py(&[true, true]);
        assert_eq!(place(&p, &[1, 4, 6], &[], 8), vec![(4, 0..1), (6, 1..2)]);
        // More groups than evaluator frames: the inner ones join the innermost placed.
        let p = py(&[true, true, true]);
        assert_eq!(place(&p, &[5], &[], 8), vec![(5, 0..3)]);
        // No evaluator frame: inside the interpreter's innermost frame, or at the end.
        assert_eq!(place(&p, &[], &[3, 6], 8), vec![(3, 0..3)]);
        assert_eq!(place(&p, &[], &[], 8), vec![(8, 0..3)]);
        assert!(place(&[], &[1], &[1], 3).is_empty());
    }

    #[test]
    fn frames_past_the_last_entry_belong_to_the_outermost_group() {
        let p = py(&[true, false, false]);
        assert_eq!(place(&p, &[2, 6], &[], 8), vec![(2, 0..1), (6, 1..3)]);
    }
}
