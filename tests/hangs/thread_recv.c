/* Threads: rank 1's main thread waits in pthread_join for a helper thread that waits in
 * MPI_Recv for a message rank 0 never sends; the others wait in a barrier. Sampled with
 * --threads, rank 1 is its thread inside MPI.
 *
 * strata-corpus: ranks 4 threads
 * strata-expect: state 1 in_mpi MPI_Recv @RECV unchanged other_thread
 * strata-expect: state 0,2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict collective_mismatch 1 @RECV
 */
#include "announce.h"
#include <pthread.h>

static void *helper(void *arg) {
    int x = 0;
    (void)arg;
    MPI_Recv(&x, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    pthread_t thread;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank = announce();
    if (rank == 1) {
        pthread_create(&thread, NULL, helper, NULL);
        pthread_join(thread, NULL);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return 0;
}
