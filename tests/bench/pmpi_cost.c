/* The PMPI library's cost (tests/bench/pmpi.sh).
 *   pmpi_cost probe N   one rank: N calls of MPI_Iprobe that find nothing; rank 0 prints
 *                       "ns_per_call X".
 *   pmpi_cost halo N M W  a ring halo exchange of M doubles (default 64) per message: each
 *                       iteration posts a receive from both neighbours, sends to both,
 *                       waits for the four requests (MPI_Waitall), updates W doubles of its
 *                       own (a 3-point stencil, default 0: no computation), and every 100th
 *                       iteration joins an MPI_Allreduce; rank 0 prints
 *                       "seconds X iterations_per_second Y". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long n = argc > 2 ? atol(argv[2]) : 1000000;
    if (argc > 1 && strcmp(argv[1], "probe") == 0) {
        int flag = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (long i = 0; i < n; i++)
            MPI_Iprobe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        t = MPI_Wtime() - t;
        if (rank == 0)
            printf("ns_per_call %.2f\n", t / n * 1e9);
    } else {
        long m = argc > 3 ? atol(argv[3]) : 64;
        long w = argc > 4 ? atol(argv[4]) : 0;
        double *grid[2] = {calloc(w + 2, sizeof(double)), calloc(w + 2, sizeof(double))};
        double *halo[2] = {calloc(m, sizeof(double)), calloc(m, sizeof(double))};
        double *out[2] = {calloc(m, sizeof(double)), calloc(m, sizeof(double))};
        double sum = 0, all = 0;
        int left = (rank + size - 1) % size, right = (rank + 1) % size;
        MPI_Request r[4];
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
        for (long i = 0; i < n; i++) {
            MPI_Irecv(halo[0], (int)m, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &r[0]);
            MPI_Irecv(halo[1], (int)m, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &r[1]);
            MPI_Isend(out[0], (int)m, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &r[2]);
            MPI_Isend(out[1], (int)m, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &r[3]);
            MPI_Waitall(4, r, MPI_STATUSES_IGNORE);
            out[0][i % m] = halo[0][i % m] + 1;
            out[1][i % m] = halo[1][i % m] + 1;
            if (w > 0) {
                double *from = grid[i % 2], *to = grid[(i + 1) % 2];
                from[0] = halo[0][0];
                from[w + 1] = halo[1][0];
                for (long j = 1; j <= w; j++)
                    to[j] = 0.25 * from[j - 1] + 0.5 * from[j] + 0.25 * from[j + 1];
                out[0][0] = to[1];
                out[1][0] = to[w];
            }
            if (i % 100 == 0) {
                sum = out[0][0];
                MPI_Allreduce(&sum, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            }
        }
        t = MPI_Wtime() - t;
        if (rank == 0)
            printf("seconds %.4f iterations_per_second %.0f\n", t, n / t);
    }
    MPI_Finalize();
    return 0;
}
