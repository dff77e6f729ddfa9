/* Rank 0 posts receives from ranks 1 and 2 and waits for both; rank 1 sends, rank 2 forgets
 * to, and both go on to MPI_Finalize with rank 3.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Waitall @WAITALL unchanged
 * strata-expect: state 1-3 in_mpi MPI_Finalize @FINALIZE unchanged
 * strata-expect: verdict message_never_sent 0 @WAITALL
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x[2] = {0, 0}, one = 1;
    MPI_Request requests[2];
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 0) {
        MPI_Irecv(&x[0], 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(&x[1], 1, MPI_INT, 2, 2, MPI_COMM_WORLD, &requests[1]);
        MPI_Waitall(2, requests, MPI_STATUSES_IGNORE); /* @WAITALL */
    } else if (rank == 1) {
        MPI_Send(&one, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
    MPI_Finalize(); /* @FINALIZE */
    return 0;
}
