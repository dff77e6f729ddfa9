/* Ranks 0 and 1 each send synchronously to the other first: neither send can complete
 * until the other receives. Ranks 2 and 3 wait in a barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-1 in_mpi MPI_Ssend @SSEND unchanged
 * strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict deadlock_cycle 0-1 @SSEND
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 1, y = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank < 2) {
        MPI_Ssend(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD); /* @SSEND */
        MPI_Recv(&y, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
