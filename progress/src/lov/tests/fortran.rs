//! Fortran: do loops and their steps, cycle and exit, types and implicit typing, fixed form.

use super::*;

#[test]
fn fortran_do_loops_and_their_steps() {
    let text = "\
subroutine sweeps(n, s)
  implicit none
  integer, intent(in) :: n, s
  integer, parameter :: back = -2
  integer :: i, j, k
  do i = n, 1, -1
    call down(i)
  end do
  do j = 1, n, s
    call strided(j)
  end do
  do k = 1, n
    call up(k)
  end do
  do i = n, 1, back
    call named(i)
  end do
end subroutine sweeps
";
    let down = fortran(text, "do i = n, 1, -1");
    assert_eq!(down.kind, "do");
    assert_eq!(
        no_steps(&down.candidates),
        vec![candidate(
            "i",
            Direction::Decreasing,
            "do-loop index (step -1)",
            6
        )]
    );
    let strided = fortran(text, "do j");
    assert_eq!(
        no_steps(&strided.candidates),
        vec![candidate(
            "j",
            Direction::Unknown,
            "do-loop index (step s)",
            9
        )]
    );
    let up = fortran(text, "do k");
    assert_eq!(
        no_steps(&up.candidates),
        vec![candidate(
            "k",
            Direction::Increasing,
            "do-loop index (step 1)",
            12
        )]
    );
    let named = fortran(text, "do i = n, 1, back");
    assert_eq!(
        no_steps(&named.candidates),
        vec![candidate(
            "i",
            Direction::Decreasing,
            "do-loop index (step back) (back = -2)",
            15
        )]
    );
}

#[test]
fn fortran_do_while_and_endless_do_with_counters() {
    let text = "\
program drive
  implicit none
  integer :: k
  integer(kind=8) :: c8
  real(8) :: x
  k = 0
  DO WHILE (k < 10)
    K = K + 1
  END DO
  do ! endless
    if (c8 < 0) exit
    c8 = c8 - 1_8
    x = x + 1
  end do
end program drive
";
    let found = fortran(text, "DO WHILE");
    assert_eq!(found.kind, "do-while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate("k", Direction::Increasing, "K = K + 1", 8)]
    );
    let endless = fortran(text, "! endless");
    assert_eq!(endless.kind, "do");
    assert_eq!(
        no_steps(&endless.candidates),
        vec![candidate(
            "c8",
            Direction::Decreasing,
            "c8 = c8 - 1_8 (a exit at line 11 may end the last iteration before it)",
            12
        )]
    );
    assert_eq!(
        endless.rejected,
        vec![rejected("x", 13, "a real, not an integer")]
    );
}

#[test]
fn fortran_cycle_exit_and_goto() {
    let text = "\
subroutine jumps(n)
  implicit none
  integer :: n, a, b, c, d, i, j
  outer: do
    a = a + 1
    inner: do j = 1, n
      if (j > 2) cycle inner
      if (j > 3) exit outer
    end do inner
    if (a > 5) cycle
    b = b + 1
  end do outer
  do i = 1, n
    if (i > 2) cycle
    c = c + 2
    if (i > 3) go to 10
    d = d - 1
  end do
10 continue
  do ! tangled
    d = d + 1
    if (d > 4) go to 20
20  continue
  end do
end subroutine jumps
";
    // The exit of the outer loop at line 8 is inside the inner do, before b and after
    // a; the cycle of the inner loop is the inner loop's.
    let outer = fortran(text, "outer: do");
    assert_eq!(
        no_steps(&outer.candidates),
        vec![candidate("a", Direction::Increasing, "a = a + 1", 5)]
    );
    assert_eq!(
        outer.rejected,
        vec![
            rejected("j", 6, "the induction variable of the inner do at line 6"),
            rejected("b", 11, "after the cycle at line 10, which may skip it"),
        ]
    );
    // A cycle does not skip a do index; it skips c.
    let counted = fortran(text, "do i = 1, n");
    assert_eq!(candidate_names(&counted), vec!["i"]);
    assert_eq!(
        rejection(&counted, "c").why,
        "after the cycle at line 14, which may skip it"
    );
    assert_eq!(
        rejection(&counted, "d").why,
        "after the cycle at line 14, which may skip it"
    );
    let tangled = fortran(text, "! tangled");
    assert_eq!(
        tangled.rejected,
        vec![rejected(
            "d",
            21,
            "a go to at line 22 jumps inside the loop and may skip or repeat it"
        )]
    );
}

#[test]
fn fortran_types_implicit_typing_and_concurrent_loops() {
    let text = "\
subroutine typed(n)
  integer, dimension(4) :: counts
  logical :: done
  integer :: n
  do concurrent (i = 1:n)
    counts(i) = 0
  end do
  do while (.not. done)
    nsteps = nsteps + 1
    xsum = xsum + 1
    block
      integer :: local
      local = local + 1
    end block
    counts = counts + 1
  end do
end subroutine typed
";
    let concurrent = fortran(text, "do concurrent");
    assert_eq!(concurrent.kind, "do concurrent");
    assert!(concurrent.candidates.is_empty());
    assert_eq!(
        concurrent.rejected,
        vec![rejected(
            "i",
            5,
            "the index of a do concurrent, whose iterations run in no fixed order"
        )]
    );
    // No `implicit none`: nsteps is implicitly an integer, xsum a real.
    let found = fortran(text, "do while");
    assert_eq!(
        no_steps(&found.candidates),
        vec![candidate(
            "nsteps",
            Direction::Increasing,
            "nsteps = nsteps + 1 (implicitly an integer)",
            9
        )]
    );
    assert_eq!(
        found.rejected,
        vec![
            rejected(
                "xsum",
                10,
                "implicitly a real (no declaration, and the name does not start with i-n)"
            ),
            rejected(
                "local",
                12,
                "declared inside the loop (line 12): a new variable every iteration"
            ),
            rejected("counts", 15, "an array, not an integer scalar"),
        ]
    );
}

#[test]
fn fortran_without_a_declaration_under_implicit_none_is_not_seen() {
    let text = "\
subroutine modular()
  use counters
  implicit none
  do while (running())
    total_steps = total_steps + 1
  end do
end subroutine modular
";
    assert_eq!(
        no_steps(&fortran(text, "do while").candidates),
        vec![candidate(
            "total_steps",
            Direction::Increasing,
            "total_steps = total_steps + 1 (declaration not seen)",
            5
        )]
    );
}

#[test]
fn a_loop_invariant_induction_ranks_after_a_literal_body_counter() {
    let text = "\
void ranked(int n, int s) {
    int sweeps = 0;
    for (int i = 0; i < n; i += s) {
        sweeps++;
    }
}
";
    let found = c(text, "for (");
    assert_eq!(
        no_steps(&found.candidates),
        vec![
            candidate("sweeps", Direction::Increasing, "sweeps++", 4),
            candidate("i", Direction::Unknown, "for-loop induction (i += s)", 3),
        ]
    );
}

#[test]
fn fixed_form_labelled_do_loops() {
    let text = "\
      subroutine old(n)
      integer n, i, m
      do 10 i = 1, n
         m = m + 2
         call work(i)
 10   continue
      end
";
    let found = fortran(text, "do 10");
    assert_eq!(
        no_steps(&found.candidates),
        vec![
            candidate("i", Direction::Increasing, "do-loop index (step 1)", 3),
            candidate("m", Direction::Increasing, "m = m + 2", 4),
        ]
    );
}
