#!/usr/bin/env python3
"""grant_gaps.py TRACE.json [--cpus N] [--min-ms MS] -- when the cpumgr
daemon left CPUs granted to nobody, from its trace (`cpumgr --trace
FILE.bin`, then `nth-trace convert FILE.bin -o TRACE.json`): one counter
record per change of an application's CPU count ("CPUs granted to NAME
(pid P)", args.cpus).

Prints every interval, longer than --min-ms (default 0.5 ms), in which
fewer than N CPUs were granted (N: --cpus, default the largest total
granted at any instant), then the ungranted CPU-milliseconds over the
trace's span (first to last record) and their share of N x span.

Why: /proc/stat idle time says nothing on a machine shared with other
jobs (they fill every idle CPU), and a CPU granted to nobody is not idle
either while the next instance of a batch starts on it; this says where
the daemon's grants leave room, so that a loss of workload efficiency can
be told apart from work that got slower (bench/RESULTS.md "eff").
"""
import argparse
import json
import sys


def intervals(events):
    """[(start_ms, end_ms, granted)] between consecutive counter records."""
    cur, last, out = {}, None, []
    for e in sorted(events, key=lambda e: e["ts"]):
        t = e["ts"] / 1000.0
        if last is not None and t > last:
            out.append((last, t, sum(cur.values())))
        cur[e["name"]] = int(e["args"]["cpus"])
        last = t
    return out


def main():
    ap = argparse.ArgumentParser(description="CPUs the cpumgr daemon granted to nobody, from its trace.")
    ap.add_argument("trace", help="JSON of a daemon trace (nth-trace convert)")
    ap.add_argument("--cpus", type=int, help="CPUs managed (default: the largest total granted)")
    ap.add_argument("--min-ms", type=float, default=0.5, help="shortest interval listed (default 0.5)")
    a = ap.parse_args()
    if a.cpus is not None and a.cpus < 1:
        sys.stderr.write("grant_gaps.py: --cpus: expects an integer of at least 1\n")
        return 2
    try:
        with open(a.trace) as f:
            d = json.load(f)
        ev = d["traceEvents"] if isinstance(d, dict) else d
        grants = [e for e in ev if e.get("ph") == "C" and str(e.get("name", "")).startswith("CPUs granted to ")]
        iv = intervals(grants)
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("grant_gaps.py: %s: not a cpumgr trace in JSON (%s)\n" % (a.trace, e))
        return 1
    if not iv:
        sys.stderr.write("grant_gaps.py: %s: fewer than two grant records\n" % a.trace)
        return 1
    n = a.cpus or max(g for _, _, g in iv) or 1
    lost = 0.0
    for s, e, g in iv:
        if g < n:
            lost += (n - g) * (e - s)
            if e - s >= a.min_ms:
                print("%10.1f .. %10.1f ms (%7.1f ms): %d of %d CPU%s granted"
                      % (s, e, e - s, g, n, "" if n == 1 else "s"))
    span = iv[-1][1] - iv[0][0]
    print("ungranted: %.1f CPU-ms of %d x %.1f ms (%.2f %%)" % (lost, n, span, 100.0 * lost / (n * span)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
