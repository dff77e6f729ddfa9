/* Rank 0 sends synchronously to rank 3 with MPI_Issend and waits for the request; rank 3
 * never posts the receive: it and the others are in MPI_Finalize. Rank 0 sends only once
 * they are there: MPICH's MPI_Finalize aborts the job when it finds a message nobody
 * received, which makes a crash of this hang when the message comes first. Rank 0
 * announces itself only once it has sent, so a test that attaches after every rank spoke
 * never sees it still sleeping.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0 in_mpi MPI_Wait @WAIT unchanged
 * strata-expect: state 1-3 in_mpi MPI_Finalize @FINALIZE unchanged
 * strata-expect: verdict message_never_sent 0 @WAIT
 *
 * Without strata's PMPI library the request's peer is the MPI library's: rank 0 is the one
 * rank left waiting (likely). With it, the request is a send to rank 3, which has finished:
 * proved.
 */
#include "announce.h"
#include <unistd.h>

int main(int argc, char **argv) {
    int x = 1;
    MPI_Request request;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        usleep(500 * 1000);
        MPI_Issend(&x, 1, MPI_INT, 3, 9, MPI_COMM_WORLD, &request);
        announce();
        MPI_Wait(&request, MPI_STATUS_IGNORE); /* @WAIT */
    } else {
        announce();
    }
    MPI_Finalize(); /* @FINALIZE */
    return 0;
}
