/* A collective mismatch: ranks 0 and 1 call MPI_Allreduce while 2 and 3 call MPI_Barrier
 * on the same communicator. Neither collective can complete.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-1 in_mpi MPI_Allreduce @ALLREDUCE unchanged
 * strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict collective_mismatch 0-3
 */
#include "announce.h"

int main(int argc, char **argv) {
    int in = 1, out = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank < 2)
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @ALLREDUCE */
    else
        MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
