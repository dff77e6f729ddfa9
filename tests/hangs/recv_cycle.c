/* Ranks 0 and 1 each receive from the other first: a receive cycle. Ranks 2 and 3 wait
 * for them in a barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-1 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict deadlock_cycle 0-1 @RECV
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank < 2) {
        MPI_Recv(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
        MPI_Send(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
