/* Rank 2 never leaves a loop of its own; the others wait for it in MPI_Allreduce.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 2 outside_mpi @SPIN unchanged
 * strata-expect: state 0-1,3 in_mpi MPI_Allreduce @ALLREDUCE unchanged
 * strata-expect: verdict stuck_outside_mpi 2 @SPIN
 */
#include "announce.h"

static volatile long counter;

__attribute__((noinline)) static void spin_forever(void) {
    for (;;) counter = counter * 3 + 1; /* @SPIN */
}

int main(int argc, char **argv) {
    int in = 1, out = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 2) spin_forever();
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @ALLREDUCE */
    MPI_Finalize();
    return 0;
}
