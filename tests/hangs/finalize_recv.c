/* Rank 0 waits for a message rank 1 never sends: rank 1 and the others are already in
 * MPI_Finalize (Open MPI's PMPI_Finalize reaches its internals by a tail call).
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: state 1-3 in_mpi MPI_Finalize @FINALIZE unchanged
 * strata-expect: verdict message_never_sent 0 @RECV
 */
#include "announce.h"

int main(int argc, char **argv) {
    int x = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 0)
        MPI_Recv(&x, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
    MPI_Finalize(); /* @FINALIZE */
    return 0;
}
