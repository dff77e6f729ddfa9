/* Rank 3 waits in MPI_Wait for a receive from rank 0 that rank 0 never sends; the others
 * wait in a barrier.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 3 in_mpi MPI_Wait @WAIT unchanged
 * strata-expect: state 0-2 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict message_never_sent 3 @WAIT
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 0;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 3) {
        MPI_Irecv(&x, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &request);
        MPI_Wait(&request, MPI_STATUS_IGNORE); /* @WAIT */
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
