/* Shared by the hung programs of this folder: MPI up, each rank prints
 * "rank R/N pid P host H" (what the tests wait for before they attach). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

static int announce(void) {
    int rank, size;
    char host[256] = "?";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host);
    printf("rank %d/%d pid %d host %s\n", rank, size, (int)getpid(), host);
    fflush(stdout);
    return rank;
}
