# A Python program that hangs where the test says: its main thread in nested calls of
# Solver.step ending in time.sleep ("sleep"), an Event wait ("wait") or a loop that keeps the
# GIL ("spin"), and a second
# thread, "waiter", blocked on an event. Prints "ready" once both are in place.
import sys
import threading
import time


def wait_forever(event, started):
    started.set()
    event.wait()


def spin_holding_the_gil():
    while True:
        pass


class Solver:
    def step(self, n, where):
        if n == 0:
            if where == "sleep":
                time.sleep(1000)
            elif where == "spin":
                spin_holding_the_gil()
            else:
                threading.Event().wait()
        else:
            self.step(n - 1, where)


def main():
    started = threading.Event()
    waiter = threading.Thread(
        target=wait_forever, args=(threading.Event(), started), name="waiter", daemon=True
    )
    waiter.start()
    started.wait()
    print("ready", flush=True)
    Solver().step(2, sys.argv[1] if len(sys.argv) > 1 else "sleep")


main()
