/* Rank 1 is interrupted by SIGALRM while it waits in MPI_Recv, and its handler never
 * returns: the rank is in the handler, not in MPI. The others wait in a barrier. Rank 1
 * announces itself from the handler, so the test attaches once it runs.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 1 outside_mpi @HANDLER unchanged signal_handler
 * strata-expect: state 0,2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict stuck_outside_mpi 1 @HANDLER
 */
#include "announce.h"
#include <signal.h>
#include <string.h>

static char line[300];

static void on_alarm(int sig) {
    (void)sig;
    (void)!write(1, line, strlen(line));
    for (;;) pause(); /* @HANDLER */
}

int main(int argc, char **argv) {
    int rank, size, x = 0;
    char host[256] = "?";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 1) {
        announce();
        MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    } else {
        gethostname(host, sizeof host);
        snprintf(line, sizeof line, "rank %d/%d pid %d host %s\n", rank, size, (int)getpid(), host);
        signal(SIGALRM, on_alarm);
        alarm(1);
        MPI_Recv(&x, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
