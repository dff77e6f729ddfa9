/* Peers kept in an array (strata does not evaluate `left[round]`), so the wait-for graph
 * has no edges. Every rank sends to its right neighbour and receives from its left one,
 * twice; rank 3 skips its first send. Rank 0 waits in the first receive; ranks 1-3 got
 * their first message and wait in the second. Rank 0 is behind the others by code order.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Recv @FIRST unchanged
 * strata-expect: state 1-3 in_mpi MPI_Recv @SECOND unchanged
 * strata-expect: verdict least_progressed 0 @FIRST
 */
#include "announce.h"

int main(int argc, char **argv) {
    int size, x = 0, left[2], right[2];
    MPI_Request sent;
    MPI_Init(&argc, &argv);
    int rank = announce();
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int round = 0; round < 2; round++) {
        left[round] = (rank + size - 1) % size;
        right[round] = (rank + 1) % size;
    }
    if (rank != 3)
        MPI_Isend(&rank, 1, MPI_INT, right[0], 0, MPI_COMM_WORLD, &sent);
    MPI_Recv(&x, 1, MPI_INT, left[0], 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @FIRST */
    MPI_Recv(&x, 1, MPI_INT, left[1], 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @SECOND */
    MPI_Finalize();
    return 0;
}
