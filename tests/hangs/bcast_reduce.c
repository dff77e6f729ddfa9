/* A collective mismatch between a broadcast and a reduction: ranks 0-2 wait in MPI_Bcast
 * for data from root 3; rank 3, the root of an MPI_Reduce instead, waits for their
 * contributions. Every byte either call needs comes from the other side, so neither can
 * complete, whatever algorithm the library picks.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-2 in_mpi MPI_Bcast @BCAST unchanged
 * strata-expect: state 3 in_mpi MPI_Reduce @REDUCE unchanged
 * strata-expect: verdict collective_mismatch 3 @REDUCE
 */
#include "announce.h"

int main(int argc, char **argv) {
    int value = 1, sum = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 3)
        MPI_Reduce(&value, &sum, 1, MPI_INT, MPI_SUM, 3, MPI_COMM_WORLD); /* @REDUCE */
    else
        MPI_Bcast(&value, 1, MPI_INT, 3, MPI_COMM_WORLD); /* @BCAST */
    MPI_Finalize();
    return sum == 42;
}
