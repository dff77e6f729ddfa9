/* A ring exchange where rank 3 takes no part: every other rank posts receives from both
 * neighbours, sends to both, and waits for all four requests. Rank 3 goes on to the
 * barrier, so ranks 0 and 2 (its neighbours) wait forever for its messages, while rank 1,
 * whose exchange completed, waits in the barrier with rank 3.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0,2 in_mpi MPI_Waitall @WAITALL unchanged
 * strata-expect: state 1,3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict least_progressed 0,2 @WAITALL
 *
 * Without strata's PMPI library the requests' peers are the MPI library's: the verdict can
 * only guess, by progress, that ranks 0 and 2 are behind. With it, each waits on a receive
 * from rank 3, which is in the barrier waiting for them: proved.
 */
#include "announce.h"

int main(int argc, char **argv) {
    int in[2] = {0, 0}, out = 1;
    MPI_Request requests[4];
    MPI_Init(&argc, &argv);
    int rank = announce(), size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    if (rank != 3) {
        MPI_Irecv(&in[0], 1, MPI_INT, left, 1, MPI_COMM_WORLD, &requests[0]);
        MPI_Irecv(&in[1], 1, MPI_INT, right, 1, MPI_COMM_WORLD, &requests[1]);
        MPI_Isend(&out, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &requests[2]);
        MPI_Isend(&out, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &requests[3]);
        MPI_Waitall(4, requests, MPI_STATUSES_IGNORE); /* @WAITALL */
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
