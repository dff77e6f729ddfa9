/* No hang: every rank computes in three phases of about 15 ms each, then joins an
 * allreduce, over and over. Every rank is seen moving.
 *
 * strata-corpus: ranks 4
 * strata-expect: motion 0-3 changed
 * strata-expect: verdict no_hang_seen 0-3
 */
#include "announce.h"
#include "work.h"

__attribute__((noinline)) static void phase_a(void) { work_for(0.015); }
__attribute__((noinline)) static void phase_b(void) { work_for(0.015); }
__attribute__((noinline)) static void phase_c(void) { work_for(0.015); }

int main(int argc, char **argv) {
    double in = 1, out = 0;
    MPI_Init(&argc, &argv);
    announce();
    for (;;) {
        phase_a();
        phase_b();
        phase_c();
        MPI_Allreduce(&in, &out, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
