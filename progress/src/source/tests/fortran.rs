//! Fortran: do loops, if chains, select, procedures, fixed form, preprocessor blocks.

use super::*;

#[test]
fn fortran_do_loops() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.f90", marker);
    let (setup, exchange, sweep) = (
        at("call setup(n)"),
        at("call exchange(i)"),
        at("call sweep(i)"),
    );
    assert_eq!(setup.function.as_deref(), Some("iterate"));
    assert_eq!(setup.function_lines, (4, 40));
    assert_eq!(exchange.to_string(), "iterate@<5,it(do@9),1>");
    assert_eq!(compare(&setup, &exchange), Relation::Before);
    assert_eq!(
        compare(&exchange, &sweep),
        needs_iteration(9, "do", Relation::Before)
    );
    let (step, increment) = (at("call step(it)"), at("it = it + 1"));
    assert_eq!(
        compare(&increment, &step),
        needs_iteration(29, "do-while", Relation::After)
    );
    assert_eq!(
        compare(&at("do while"), &step),
        needs_iteration(29, "do-while", Relation::Before)
    );
}

#[test]
fn fortran_if_chains_nest_like_c() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.f90", marker);
    let (finish, refine, retry) = (at("call finish()"), at("call refine()"), at("call retry()"));
    assert_eq!(compare(&finish, &refine), incomparable(13, "if", (1, 2)));
    assert_eq!(compare(&refine, &retry), incomparable(15, "if", (1, 2)));
    assert_eq!(compare(&retry, &finish), incomparable(13, "if", (2, 1)));
    // The same shape as C's `else if`: arm 2 of the outer if holds the inner if.
    assert_eq!(
        retry.steps,
        vec![
            Step::Offset(9),
            Step::Arm {
                line: 13,
                arm: 2,
                kind: "if"
            },
            Step::Offset(0),
            Step::Arm {
                line: 15,
                arm: 2,
                kind: "if"
            },
            Step::Offset(1),
        ]
    );
    let inner_condition = at("else if (n > 10)");
    assert_eq!(compare(&inner_condition, &refine), Relation::Before);
    assert_eq!(
        compare(&inner_condition, &finish),
        incomparable(13, "if", (2, 1))
    );
    assert_eq!(
        compare(&at("if (converged) then"), &finish),
        Relation::Before
    );
    // `end if` closes every arm.
    let end_if = at("end if");
    for arm in [&finish, &refine, &retry] {
        assert_eq!(compare(&end_if, arm), Relation::After);
    }
    // A logical if: the call is in its arm.
    let nothing = at("call nothing()");
    assert_eq!(
        nothing.steps[1],
        Step::Arm {
            line: 33,
            arm: 1,
            kind: "if"
        }
    );
}

#[test]
fn fortran_select_case_arms_are_incomparable() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.f90", marker);
    let (one, few, many) = (at("call one()"), at("call few()"), at("call many()"));
    assert_eq!(compare(&one, &few), incomparable(20, "select case", (1, 2)));
    assert_eq!(
        compare(&many, &few),
        incomparable(20, "select case", (3, 2))
    );
    assert_eq!(compare(&at("select case (n)"), &many), Relation::Before);
}

#[test]
fn fortran_internal_procedures_and_programs_are_functions() {
    let mut index = SourceIndex::new(Vec::new());
    let mut at = |marker| point_of(&mut index, "solver.f90", marker);
    let inner = at("norm = m * 2");
    assert_eq!(inner.function.as_deref(), Some("norm"));
    assert_eq!(inner.function_lines, (36, 39));
    assert_eq!(inner.steps, vec![Step::Offset(2)]);
    let main = at("call iterate(3, done)");
    assert_eq!(main.function.as_deref(), Some("main"));
    assert_eq!(main.function_lines, (43, 47));
    // The host's own lines end before `contains`.
    assert_eq!(
        compare(&at("call report("), &at("call sweep(i)")),
        Relation::After
    );
}

#[test]
fn fortran_loop_and_select_kinds() {
    let text = "\
subroutine kinds(p, n)
  do concurrent (i = 1:n)
    call in_concurrent(i)
  end do
  forall (i = 1:n)
    x(i) = in_forall(i)
  end forall
  do
    call in_endless()
  end do
  select type (p)
  type is (integer)
    call is_integer()
  class default
    call is_other()
  end select
end subroutine kinds
";
    let at = |marker| snippet_point(Language::Fortran, text, marker);
    assert_eq!(
        at("in_concurrent").steps[1],
        Step::Iteration {
            line: 2,
            kind: "do concurrent"
        }
    );
    assert_eq!(
        at("in_forall").steps[1],
        Step::Iteration {
            line: 5,
            kind: "forall"
        }
    );
    assert_eq!(
        at("in_endless").steps[1],
        Step::Iteration {
            line: 8,
            kind: "do"
        }
    );
    assert_eq!(
        compare(&at("is_integer"), &at("is_other")),
        incomparable(11, "select type", (1, 2))
    );
}

#[test]
fn simple_fixed_form_fortran_is_read() {
    let text = "\
      subroutine old(n)
      integer n, i
      do 10 i = 1, n
         call work(i)
 10   continue
      call done()
      end
";
    assert_eq!(Language::from_path("legacy/old.f"), Some(Language::Fortran));
    let at = |marker| snippet_point(Language::Fortran, text, marker);
    let work = at("call work(i)");
    assert_eq!(work.function.as_deref(), Some("old"));
    assert_eq!(work.to_string(), "old@<2,it(do@3),1>");
    assert_eq!(compare(&work, &at("call done()")), Relation::Before);
}

#[test]
fn preprocessor_blocks_are_transparent() {
    let fortran = "\
subroutine s(n)
#ifdef USE_MPI
  call mpi_barrier(comm, ierr)
#endif
  do i = 1, n
#if DEBUG
    call dbg(i)
#endif
    call work(i)
  end do
end subroutine s
";
    let at = |marker| snippet_point(Language::Fortran, fortran, marker).to_string();
    assert_eq!(at("mpi_barrier"), "s@<2>");
    assert_eq!(at("dbg(i)"), "s@<4,it(do@5),2>");
    assert_eq!(at("work(i)"), "s@<4,it(do@5),4>");
    let c = "\
void s(int n) {
    for (int i = 0; i < n; i++) {
#ifdef DEBUG
        dbg(i);
#endif
        work(i);
    }
}
";
    let at = |marker| snippet_point(Language::C, c, marker).to_string();
    assert_eq!(at("dbg(i)"), "s@<1,it(for@2),2>");
    assert_eq!(at("work(i)"), "s@<1,it(for@2),4>");
}
