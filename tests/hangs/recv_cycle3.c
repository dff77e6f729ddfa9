/* A receive cycle of three: rank 0 waits for 2, 1 for 0, 2 for 1, each before it sends.
 * Rank 3 waits in a barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-2 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: state 3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict deadlock_cycle 0-2 @RECV
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank < 3) {
        int from = (rank + 2) % 3, to = (rank + 1) % 3;
        MPI_Recv(&x, 1, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
        MPI_Send(&x, 1, MPI_INT, to, 0, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
