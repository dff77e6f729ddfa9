/* Rank 0 probes for a message from any source that nobody sends; the others wait for it
 * in an allreduce.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Probe @PROBE unchanged
 * strata-expect: state 1-3 in_mpi MPI_Allreduce @ALLREDUCE unchanged
 * strata-expect: verdict collective_mismatch 0 @PROBE
 */
#include "announce.h"

int main(int argc, char **argv) {
    int in = 1, out = 0;
    MPI_Status status;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 0)
        MPI_Probe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &status); /* @PROBE */
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @ALLREDUCE */
    MPI_Finalize();
    return 0;
}
