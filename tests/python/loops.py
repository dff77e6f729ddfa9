# A Python program that stops inside a loop at the iteration its arguments name, and
# prints "ready" there:
#   function N LABEL  in solve's `for it in range(10)` loop, at it == N;
#   module N          in the script's top-level `while` loop, at count == N.
# Several of them stopped at different iterations are ranks only the loop's counter can
# order (`--progress` reads it as a loop-order variable); `--var` reads solve's locals,
# whose values follow from N and LABEL. The test finds lines by their @ markers.
import sys
import threading


def wait_here():
    print("ready", flush=True)
    threading.Event().wait()


def solve(stop_at, label):
    total = 0.5
    name = "phase-" + label
    flag = stop_at > 1
    nothing = None
    big = -(2**70) - stop_at
    items = [stop_at]

    def report():
        return total, items

    for it in range(10):
        if it == stop_at:
            wait_here()  # @function
        total += 0.25
    return report, name, flag, nothing, big


where, stop_at = sys.argv[1], int(sys.argv[2])
if where == "function":
    solve(stop_at, sys.argv[3])
else:
    count = 0
    while True:
        if count == stop_at:
            wait_here()  # @module
        count += 1
