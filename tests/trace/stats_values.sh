#!/bin/bash
# Values, not line shapes, from a real runtime trace (sync_demo sync, one VP):
#  - the JSON's timestamps are relative to the trace start: none negative,
#    none later than the run's own wall time (an absolute CLOCK_MONOTONIC
#    value, hours since boot, would be), and they keep nanoseconds: every ts
#    has 3 decimals and their last digits are not all the same (a clock or a
#    writer rounding to microseconds would end them all in 0);
#  - `nth-trace stats` on the .bin: each nano-thread's time per state equals
#    the sum of its slices of that state recomputed from the JSON of the
#    same run (python3; within the 3 decimals stats prints);
#  - `nth-trace stats run.json.gz` (the converted trace, not the .bin) says
#    which file to give it, naming the run.json.gz.PID.bin beside it.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/sync_demo
command -v python3 >/dev/null || { echo "python3 missing: scripts/install-deps.sh installs it"; exit 99; }
t0=$(date +%s%N)
NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE=r.json.gz "$DEMO" sync > r.out 2> r.err \
    || fail "sync_demo exited $?: $(cat r.err)"
t1=$(date +%s%N)
bin=$(ls r.json.gz.*.bin 2>/dev/null)
[ -n "$bin" ] && [ "$(echo "$bin" | wc -l)" = 1 ] || fail "expected one r.json.gz.PID.bin, found: $bin"
gzip -dc r.json.gz > r.json
check_json r.json

# -- timestamps relative to the trace start, nanoseconds kept ---------------
wall_us=$(( (t1 - t0) / 1000 ))
jq -e --argjson w "$wall_us" '[.traceEvents[]|select(.ts != null)|.ts] | (min >= 0 and max <= $w)' r.json >/dev/null \
    || fail "ts not within [0, $wall_us] us (the run's wall time): min $(jq '[.traceEvents[]|.ts//empty]|min' r.json), max $(jq '[.traceEvents[]|.ts//empty]|max' r.json)"
grep -oE '"ts":[^,}]*' r.json > ts.txt
[ -s ts.txt ] || fail "no ts in r.json"
bad=$(grep -cvE '^"ts":[0-9]+\.[0-9]{3}$' ts.txt || true)
[ "$bad" = 0 ] || fail "$bad ts not written as microseconds with 3 decimals: $(grep -vE '^"ts":[0-9]+\.[0-9]{3}$' ts.txt | head -n 3)"
digits=$(sed 's/.*\(.\)$/\1/' ts.txt | sort -u | wc -l)
[ "$digits" -ge 3 ] || fail "the ts's nanosecond digits take only $digits values over $(wc -l < ts.txt) events: precision lost"

# -- stats: time per state per nano-thread equals the JSON's slices ----------
"$TOOL" stats "$bin" > stats.txt || fail "stats status $?"
python3 - r.json stats.txt <<'PY' || fail "stats disagree with the JSON (above)"
import json, re, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "thread_name"}
# nano-thread tracks are named "NAME #ID" (VP tracks "VP n", region and
# function tracks carry a suffix after the id)
want = {}
for e in ev:
    t = e.get("tid")
    if t not in names or not re.fullmatch(r".* #[0-9]+", names[t]):
        continue
    if e["ph"] == "X":
        k = (names[t], e.get("args", {}).get("state", e["name"]))
        want[k] = want.get(k, 0.0) + e["dur"] / 1000.0
got = {}
sec = open(sys.argv[2]).read().split("\n\n")
table = [s for s in sec if s.lstrip().startswith("nano-thread") and "time (ms)" in s.splitlines()[0]]
assert table, "no per-nano-thread table in stats"
for line in table[0].splitlines()[1:]:
    m = re.fullmatch(r"(.* #[0-9]+) +(\S+) +([0-9]+\.[0-9]{3})", line.rstrip())
    assert m, "unparsed stats line: %r" % line
    got[(m.group(1).rstrip(), m.group(2))] = float(m.group(3))
bad = 0
for k in sorted(set(want) | set(got)):
    w, g = want.get(k), got.get(k)
    if w is None or g is None or abs(w - g) > 0.0011:
        print("%s %s: stats %s ms, JSON slices %s ms" % (k[0], k[1], g, w if w is None else round(w, 6)))
        bad += 1
runs = [k for k in got if k[1] == "RUN"]
if len(runs) < 5:
    print("only %d nano-threads with RUN time in stats" % len(runs)); bad += 1
sys.exit(1 if bad else 0)
PY

# -- stats given the converted trace: names the .bin -----------------------
"$TOOL" stats r.json.gz > gz.out 2> gz.err; rc=$?
[ "$rc" = 3 ] || fail "stats r.json.gz: status $rc, expected 3"
[ "$(wc -l < gz.err)" = 1 ] || fail "stats r.json.gz: not one line: $(cat gz.err)"
grep -q "r.json.gz: a gzip file.*$bin" gz.err || fail "stats r.json.gz does not name $bin: $(cat gz.err)"
# r.json (decompressed here, no r.json.PID.bin beside it): what it is, and
# that no binary file goes with it
"$TOOL" stats r.json > j.out 2> j.err; rc=$?
[ "$rc" = 3 ] && grep -q "r.json: a JSON trace.*(none found here)" j.err || fail "stats r.json: status $rc, $(cat j.err)"
"$TOOL" convert "$PWD/r.json.gz" -o x.prv 2> c.err; rc=$?
[ "$rc" = 3 ] && grep -q "$PWD/$bin" c.err || fail "convert of a full path to r.json.gz: status $rc, $(cat c.err)"
exit 0
