/* A rank missing from a collective on a sub-communicator: MPI_Comm_split makes {0,2} and
 * {1,3}; rank 0 joins an allreduce on its half, rank 2 skips it and goes on to a barrier on
 * the world communicator, where 1 and 3 (whose allreduce completed) wait too.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Allreduce @HALF unchanged
 * strata-expect: state 1-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict undecided 0 @HALF
 *
 * Rank 0's communicator is a derived one whose members only the MPI library knows: the
 * verdict cannot tell that rank 2 skipped the allreduce, and must not blame rank 0 (which
 * waits rightly); it names rank 0 as waiting and leaves the question open.
 */
#include "announce.h"

int main(int argc, char **argv) {
    int in = 1, out = 0;
    MPI_Comm half;
    MPI_Init(&argc, &argv);
    int rank = announce();
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    if (rank != 2)
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, half); /* @HALF */
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
