# Python threads with names, for comparing strata's thread names with py-spy's: the main
# thread; "waiter", named when made; one renamed after it started; "with-dict", whose
# attributes were reached through __dict__ (an instance dict of its own, from 3.11 not the
# usual layout); and one started by _thread, which threading does not know (no name).
# Prints "ready" once all five wait.
import _thread
import threading


def wait(event, started):
    started.set()
    event.wait()


never = threading.Event()
started = [threading.Event() for _ in range(4)]
named = threading.Thread(target=wait, args=(never, started[0]), name="waiter", daemon=True)
renamed = threading.Thread(target=wait, args=(never, started[1]), daemon=True)
with_dict = threading.Thread(
    target=wait, args=(never, started[2]), name="with-dict", daemon=True
)
for t in (named, renamed, with_dict):
    t.start()
renamed.name = "renamed"
with_dict.__dict__["extra"] = 1
_thread.start_new_thread(wait, (never, started[3]))
for s in started:
    s.wait()
print("ready", flush=True)
never.wait()
