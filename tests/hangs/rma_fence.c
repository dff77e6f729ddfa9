/* A one-sided epoch that never closes: ranks 0-2 call MPI_Win_fence on a window of the
 * world communicator, rank 3 goes to a barrier instead.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-2 in_mpi MPI_Win_fence @FENCE unchanged
 * strata-expect: state 3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict collective_mismatch 3 @BARRIER
 */
#include "announce.h"

int main(int argc, char **argv) {
    int *base;
    MPI_Win win;
    MPI_Init(&argc, &argv);
    int rank = announce();
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_fence(0, win);
    if (rank < 3)
        MPI_Win_fence(0, win); /* @FENCE */
    else
        MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
