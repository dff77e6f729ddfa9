/* Rank 0 sends synchronously to rank 3, which went to the barrier instead of receiving:
 * the send cannot complete. Ranks 1-3 wait in the barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Ssend @SSEND unchanged
 * strata-expect: state 1-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict collective_mismatch 0 @SSEND
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 1;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 0)
        MPI_Ssend(&x, 1, MPI_INT, 3, 6, MPI_COMM_WORLD); /* @SSEND */
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
