# A hung mpi4py job (at least 6 ranks), each rank stopped where a real one would be:
#   rank 0  gather_results: comm.recv from rank 1, which never sends
#   rank 1  wait_for_input: time.sleep in a loop (the straggler)
#   rank 2  compute: a pure-Python loop that never ends
#   rank 3  exchange_halo: comm.recv from rank 2, on another line of another function
#   others  synchronize: comm.Barrier
# The test finds those lines by their @ markers. Every rank prints "rank R/N pid P host H"
# before it goes there.
import os
import socket
import sys
import time

from mpi4py import MPI


def gather_results(comm):
    return comm.recv(source=1, tag=7)  # @gather


def wait_for_input():
    while True:
        time.sleep(0.5)  # @sleep


def compute():
    total, running = 0, [True]
    while running[0]: total += 1  # noqa: E701 @spin (one line: every sample sees it)
    return total


def exchange_halo(comm):
    halo = comm.recv(source=2, tag=9)  # @halo
    return halo


def synchronize(comm):
    comm.Barrier()  # @barrier


def main():
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    # One write: print's text and its newline would be two, which the launcher may
    # interleave with another rank's.
    sys.stdout.write(f"rank {rank}/{comm.Get_size()} pid {os.getpid()} host {socket.gethostname()}\n")
    sys.stdout.flush()
    if rank == 0:
        gather_results(comm)
    elif rank == 1:
        wait_for_input()
    elif rank == 2:
        compute()
    elif rank == 3:
        exchange_halo(comm)
    else:
        synchronize(comm)


main()
