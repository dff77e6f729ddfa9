/* Not a hang: rank 2 is slow, working through three phases of 100 ms each before it joins
 * the allreduce the others wait in. Rank 2 is seen moving; the others wait, unchanged.
 *
 * strata-corpus: ranks 4
 * strata-expect: state 0-1,3 in_mpi MPI_Allreduce @ALLREDUCE unchanged
 * strata-expect: motion 2 changed
 * strata-expect: verdict no_hang_seen 2
 */
#include "announce.h"
#include "work.h"

__attribute__((noinline)) static void assemble(void) { work_for(0.1); }
__attribute__((noinline)) static void solve(void) { work_for(0.1); }
__attribute__((noinline)) static void update(void) { work_for(0.1); }

int main(int argc, char **argv) {
    int in = 1, out = 0;
    MPI_Init(&argc, &argv);
    int rank = announce();
    if (rank == 2)
        for (;;) {
            assemble();
            solve();
            update();
        }
    MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* @ALLREDUCE */
    MPI_Finalize();
    return 0;
}
