#!/usr/bin/env python3
"""Times strata's HTML report in a real headless Chromium (Debian's chromium-driver), over
the W3C WebDriver protocol: first contentful paint, the script's `strata-tree-drawn` mark,
expanding one node, "expand all", and opening the stack of a rank. Medians of RUNS fresh
page loads per report. A benchmark (docs/PERFORMANCE.md), run by tests/bench/report.sh.

    python3 tests/bench/report.py LABEL=report.html ...
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

RUNS = int(os.environ.get("RUNS", "5"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    def __init__(self):
        self.port = free_port()
        self.driver = subprocess.Popen(
            ["chromedriver", f"--port={self.port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("chromedriver did not start")
                time.sleep(0.05)
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "args": [
                            "--headless=new",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--window-size=1400,1000",
                            "--disable-dev-shm-usage",
                        ]
                    },
                    "timeouts": {"script": 120000, "pageLoad": 300000},
                }
            }
        }
        self.session = self.call("POST", "/session", caps)["sessionId"]

    def call(self, method, path, body=None):
        if path != "/session":
            path = f"/session/{self.session}{path}"
        req = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                return json.load(r)["value"]
        except urllib.error.HTTPError as e:
            v = json.load(e)["value"]
            sys.exit(f"WebDriver {method} {path}: {v.get('error')}: {v.get('message')}")

    def run(self, script, *args):
        return self.call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def run_async(self, script, *args):
        return self.call("POST", "/execute/async", {"script": script, "args": list(args)})

    def close(self):
        try:
            self.call("DELETE", "")
        finally:
            self.driver.terminate()
            self.driver.wait()


# The time from a click to the next frame: the handler runs, then requestAnimationFrame's
# callback comes before the frame is painted, and a task queued from it runs after.
AFTER_NEXT_FRAME = """
const done = arguments[arguments.length - 1];
const t0 = performance.now();
(%s)();
requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
"""

EXPAND_ONE = AFTER_NEXT_FRAME % """() => {
  // The collapsed node with the most children: the largest redraw one click can ask.
  let best = null, most = -1;
  for (const n of document.querySelectorAll('#graph g.node[aria-expanded="false"]')) {
    const k = +(n.querySelector('text').textContent.match(/▸(\\d+)$/) || [0, 0])[1];
    if (k > most) { most = k; best = n; }
  }
  if (!best) throw new Error('no collapsed node');
  best.querySelector('g.knob').dispatchEvent(new MouseEvent('click', {bubbles: true}));
}"""

EXPAND_ALL = AFTER_NEXT_FRAME % """() => document.getElementById('expand-all').click()"""

# The highest rank's stack: the walk covers the whole tree.
RANK_STACK = AFTER_NEXT_FRAME % """() => {
  document.getElementById('rank-input').value = String(arguments[0]);
  document.getElementById('rank-form').requestSubmit();
}"""


def measure(b, path, run):
    b.call("POST", "/url", {"url": "about:blank"})
    b.call("POST", "/url", {"url": f"file://{os.path.abspath(path)}?run={run}"})
    # Paint entries are queued after the frame: wait for them (buffered) rather than read.
    paint = b.run_async(
        "const done = arguments[0];"
        "new PerformanceObserver((list, obs) => {"
        "  const p = list.getEntriesByName('first-contentful-paint')[0];"
        "  if (!p) return;"
        "  obs.disconnect();"
        "  const m = performance.getEntriesByName('strata-tree-drawn')[0];"
        "  done([p.startTime, m ? m.startTime : null,"
        "        document.querySelectorAll('#graph g.node').length]);"
        "}).observe({type: 'paint', buffered: true});"
    )
    if paint[0] is None or paint[1] is None:
        sys.exit(f"{path}: no first paint or no strata-tree-drawn mark: {paint}")
    # A small tree opens fully expanded: then a node is collapsed first (not timed).
    b.run(
        "if (!document.querySelector('#graph g.node[aria-expanded=\"false\"]')) {"
        "  const n = document.querySelector('#graph g.node[aria-expanded=\"true\"]:not([data-i=\"0\"])');"
        "  n.querySelector('g.knob').dispatchEvent(new MouseEvent('click', {bubbles: true}));"
        "}"
    )
    one = b.run_async(EXPAND_ONE)
    everything = b.run_async(EXPAND_ALL)
    shown = b.run("return document.querySelectorAll('#graph g.node').length;")
    size = b.run("return JSON.parse(document.getElementById('report-data').textContent).job_size;")
    stack = b.run_async(RANK_STACK, size - 1)
    return {
        "fcp": paint[0],
        "drawn": paint[1],
        "first_nodes": paint[2],
        "expand_one": one,
        "expand_all": everything,
        "all_nodes": shown,
        "rank_stack": stack,
    }


def main():
    b = Browser()
    try:
        print(
            f"{'report':<14} {'size':>9} {'first paint':>12} {'tree drawn':>11} "
            f"{'expand 1':>9} {'expand all':>11} {'rank stack':>11}  (medians of {RUNS}, ms)"
        )
        for arg in sys.argv[1:]:
            label, path = arg.split("=", 1)
            runs = [measure(b, path, r) for r in range(RUNS)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            size = os.path.getsize(path)
            print(
                f"{label:<14} {size / 1e3:>7.0f}KB {med['fcp']:>12.0f} {med['drawn']:>11.0f} "
                f"{med['expand_one']:>9.0f} {med['expand_all']:>11.0f} {med['rank_stack']:>11.0f}"
                f"  ({med['first_nodes']:.0f} nodes first, {med['all_nodes']:.0f} expanded)"
            )
            sys.stdout.flush()
    finally:
        b.close()


if __name__ == "__main__":
    main()
