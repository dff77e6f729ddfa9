/* C++ at -O2: ranks 0 and 1 exchange through a member function the compiler inlines, each
 * receiving first (a cycle); ranks 2 and 3 wait in a barrier.
 *
 * strata-corpus: ranks 4 flags -O2
 * strata-expect: state 0-1 in_mpi MPI_Recv @RECV unchanged
 * strata-expect: state 2-3 in_mpi MPI_Barrier @BARRIER unchanged
 * strata-expect: verdict deadlock_cycle 0-1 @RECV
 */
#include "announce.h"

namespace solver {
template <typename T> struct Exchange {
    T value{};
    void with(int peer) {
        MPI_Recv(&value, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* @RECV */
        MPI_Send(&value, 1, MPI_INT, peer, 0, MPI_COMM_WORLD);
    }
};
} // namespace solver

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = announce();
    solver::Exchange<int> exchange;
    if (rank < 2) exchange.with(1 - rank);
    MPI_Barrier(MPI_COMM_WORLD); /* @BARRIER */
    MPI_Finalize();
    return exchange.value;
}
