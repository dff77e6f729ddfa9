/* C at -O2: the exchange is inlined into main, and rank 1 sleeps (outside MPI) before its
 * part. Ranks 0 and 2 wait for rank 1's message, rank 3 for rank 2's.
 *
 * strata-corpus: ranks 4 flags -O2
 * strata-expect: state 0,2-3 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: state 1 outside_mpi @SLEEP unchanged
 * strata-expect: verdict stuck_outside_mpi 1 @SLEEP
 */
#include "announce.h"

static inline void exchange(int rank, int *x) {
    if (rank == 1) {
        sleep(1000); /* @SLEEP */
        return;
    }
    int from = rank == 3 ? 2 : 1;
    MPI_Recv(x, 1, MPI_INT, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
}

int main(int argc, char **argv) {
    int x = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    exchange(rank, &x);
    MPI_Finalize();
    return x;
}
