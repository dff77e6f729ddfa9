! A receive cycle in Fortran: ranks 0 and 1 each receive from the other first; the others
! wait in a barrier. The MPI calls are Fortran's (mpi_recv_, mpi_barrier_).
!
! strata-corpus: ranks 4
! strata-expect: state 0-1 in_mpi MPI_Recv @RECV unchanged
! strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
! strata-expect: verdict deadlock_cycle 0-1 @RECV
program fortran_cycle
  use mpi
  implicit none
  integer :: rank, nranks, ierr, x, status(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  print '(A,I0,A,I0,A,I0,A)', 'rank ', rank, '/', nranks, ' pid ', getpid(), ' host x'
  flush (6)
  x = 0
  if (rank < 2) then
    call MPI_Recv(x, 1, MPI_INTEGER, 1 - rank, 0, MPI_COMM_WORLD, status, ierr) ! @RECV
    call MPI_Send(x, 1, MPI_INTEGER, 1 - rank, 0, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Barrier(MPI_COMM_WORLD, ierr) ! @BARRIER
  call MPI_Finalize(ierr)
end program fortran_cycle
