# A Python program that hangs where the test says: its main thread in nested calls of
# Solver.step ending in time.sleep ("sleep") or an Event wait ("wait"), and a second
# thread, "waiter", blocked on an event. Prints "ready" once both are in place.
import sys
import threading
import time


def wait_forever(event, started):
    started.set()
    event.wait()


class Solver:
    def step(self, n, where):
        if n == 0:
            if where == "sleep":
                time.sleep(1000)
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
