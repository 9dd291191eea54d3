#!/usr/bin/python3
"""trace_big_read.py -- read a Chrome trace-event JSON (.json or .json.gz)
whole with a streaming parser (ijson, the yajl2_c backend: Debian's
python3-ijson) and check its structure in bounded memory: what a viewer must
get through, without holding the trace (python3's json.load of a 10 M-event
trace took > 5 GB and did not finish in 20 min).

Checked, as tests/trace/check_json.jq does for small traces: the document
parses; every timed event has a numeric ts >= 0, in non-decreasing order in
the file; every X has a dur >= 0 and nests on its (pid, tid) track (a slice
that begins inside another ends no later, in whole ns); B/E pair up per
track. Memory: one stack of open slice ends per track.

Prints one JSON object (DESIGN "Benchmark output"): events by phase, tracks,
deepest nesting, problems (and the first), seconds, peak RSS in KiB.
usage: trace_big_read.py FILE.json[.gz]
"""
import gzip, json, resource, sys, time

try:
    import ijson
except ImportError:
    sys.exit("trace_big_read.py: needs python3-ijson (apt-get install python3-ijson; run with /usr/bin/python3)")


def main(path):
    t0 = time.monotonic()
    f = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    counts, tracks, depth = {}, {}, {}
    problems, first = 0, None
    last, maxdepth = -1, 0

    def bad(msg):
        nonlocal problems, first
        problems += 1
        if first is None:
            first = msg

    try:
        for e in ijson.items(f, "traceEvents.item", use_float=True):
            ph = e.get("ph")
            counts[ph] = counts.get(ph, 0) + 1
            if ph == "M":
                continue
            ts = e.get("ts")
            if not isinstance(ts, (int, float)) or ts < 0:
                bad("bad ts: %r" % (e,))
                continue
            if ts < last:
                bad("ts not sorted in the file at %r after %r" % (ts, last))
            last = ts
            if ph not in ("X", "B", "E"):
                continue
            key = (e.get("pid"), e.get("tid"))
            b = round(ts * 1000)
            if ph == "X":
                dur = e.get("dur")
                if not isinstance(dur, (int, float)) or dur < 0:
                    bad("X without a duration: %r" % (e,))
                    continue
                stop = b + round(dur * 1000)
                st = tracks.setdefault(key, [])
                while st and st[-1] <= b:
                    st.pop()
                if st and stop > st[-1]:
                    bad("X not nested on track %s/%s at %r" % (key[0], key[1], ts))
                st.append(stop)
                maxdepth = max(maxdepth, len(st))
            elif ph == "B":
                depth[key] = depth.get(key, 0) + 1
            elif depth.get(key, 0) == 0:
                bad("E without B on track %s/%s at %r" % (key[0], key[1], ts))
            else:
                depth[key] -= 1
    except Exception as x:   # ijson's parse errors, gzip's truncation
        bad("does not parse: %s" % x)
    for key, d in depth.items():
        if d:
            bad("%d B without E on track %s/%s" % (d, key[0], key[1]))
    print(json.dumps({"bench": "trace_big_read", "impl": "ijson-" + ijson.backend,
                      "value": round(time.monotonic() - t0, 1), "unit": "s",
                      "events": sum(counts.values()), "by_phase": counts,
                      "tracks": len(set(tracks) | set(depth)), "max_depth": maxdepth,
                      "problems": problems, "first_problem": first,
                      "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "params": {"file": path}}))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: trace_big_read.py FILE.json[.gz]")
    sys.exit(main(sys.argv[1]))
