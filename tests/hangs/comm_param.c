/* A halo exchange written as library code: the communicator and the neighbours are the
 * function's parameters (Open MPI's C communicator is a pointer, to ompi_mpi_comm_world
 * here). Every rank receives from its left neighbour before it sends to its right one: a
 * ring of four, deadlocked.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-3 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: verdict deadlock_cycle 0-3 @RECV
 */
#include "announce.h"

static void halo(MPI_Comm comm, int left, int right, int *cell) {
    int ghost = 0;
    MPI_Recv(&ghost, 1, MPI_INT, left, 7, comm, MPI_STATUS_IGNORE); /* @RECV */
    MPI_Send(cell, 1, MPI_INT, right, 7, comm);
    *cell += ghost;
}

int main(int argc, char **argv) {
    int size, cell = 1;
    MPI_Init(&argc, &argv);
    int rank = announce();
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    halo(MPI_COMM_WORLD, (rank + size - 1) % size, (rank + 1) % size, &cell);
    MPI_Finalize();
    return 0;
}
