/* Ranks 0 and 1 exchange with MPI_Sendrecv but receive with another tag than the other
 * sends: both sends go out, neither receive matches. Ranks 2 and 3 wait in a barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-1 in_mpi MPI_Sendrecv @SENDRECV unchanged
 * strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict deadlock_cycle 0-1 @SENDRECV
 */
#include "announce.h"

int main(int argc, char **argv) {
    int out = 1, in = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank < 2) {
        int peer = 1 - rank;
        /* A call over two lines is called from its first. */
        MPI_Sendrecv(&out, 1, MPI_INT, peer, 10 + rank, &in, 1, MPI_INT, /* @SENDRECV */
                     peer, 10 + rank, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
