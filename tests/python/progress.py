# A Python program that stops at one of three places of one function, by its argument:
#   before  in setup, before the solver's loop
#   inside  in the loop's body, waiting for a message that never comes
#   after   in finish, after the loop
# and prints "ready" when it is there. Three of them, one at each place, are three ranks at
# three points of `solve`, which `--progress` orders by code order alone (no loop count is
# needed: the loop lies between the two others). The test finds lines by their @ markers.
import sys
import threading
import time


def wait_here():
    print("ready", flush=True)
    threading.Event().wait()


def solve(where, steps):
    if where == "before":
        wait_here()  # @before
    for step in range(steps):
        if where == "inside":
            wait_here()  # @inside
        time.sleep(0)
    if where == "after":
        wait_here()  # @after


solve(sys.argv[1], 3)
