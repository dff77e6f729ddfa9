/* A ring at -O2: every rank sends synchronously to its right neighbour before it receives
 * from its left one, so all four wait in MPI_Ssend for a receive nobody posts. Optimised:
 * the destination is an expression of rank and size, read where -O2 kept them; the
 * communicator is read from what the call was passed (its DWARF call-site parameter).
 *
 * strata-corpus: ranks 4 flags -O2
 * strata-expect: state 0-3 in_mpi MPI_Ssend @SSEND unchanged
 * strata-expect: verdict deadlock_cycle 0-3 @SSEND
 */
#include "announce.h"

int main(int argc, char **argv) {
    int size, out = 1, in = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Ssend(&out, 1, MPI_INT, (rank + 1) % size, 3, MPI_COMM_WORLD); /* @SSEND */
    MPI_Recv(&in, 1, MPI_INT, (rank + size - 1) % size, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return in == 42;
}
