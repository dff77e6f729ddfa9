module solver
  implicit none
contains
  subroutine iterate(n, converged)
    integer, intent(in) :: n
    logical, intent(inout) :: converged
    integer :: i, it
    call setup(n)
    do i = 1, n
      call exchange(i)
      call sweep(i)
    end do
    if (converged) then
      call finish()
    else if (n > 10) then
      call refine()
    else
      call retry()
    end if
    select case (n)
    case (1)
      call one()
    case (2:5)
      call few()
    case default
      call many()
    end select
    it = 0
    do while (.not. converged)
      call step(it)
      it = it + 1
    end do
    if (n == 0) call nothing()
    call report(norm(n))
  contains
    integer function norm(m)
      integer, intent(in) :: m
      norm = m * 2
    end function norm
  end subroutine iterate
end module solver

program main
  use solver
  logical :: done = .false.
  call iterate(3, done)
end program main
