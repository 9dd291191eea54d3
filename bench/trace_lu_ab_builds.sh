#!/bin/bash
# trace_lu_ab_builds.sh -- tracing's overhead on LU (issue 7: < 1 % on LU
# 1000) in two builds at once: a before/after of a change to the record
# path that noise between runs minutes apart cannot fake.
#
# Processes of bench/lu-trace-ab from BASE and from NEW alternate (BASE
# first in even rounds, NEW first in odd ones), ROUNDS of each, BLOCKS blocks
# per process; inside each process on/off/aa alternate as in
# bench/trace_lu_ab.sh (see there, and bench/trace_lu_ab.c). Per block:
#   on / off - 1   the overhead        aa / off - 1   the A/A noise
# for wall_run and cpu_run (the run itself, the settle write excluded),
# all blocks but each process's first. Printed, one JSON object per line:
# per build and metric the median and mean with 95 % percentile-bootstrap
# confidence intervals over the blocks (10,000 resamples, fixed seed); then
# per metric NEW - BASE of the mean overhead (points), with its bootstrap
# CI (blocks of each build resampled apart), and NEW's untraced LU time
# over BASE's (median "off" runs), which says whether the change touched
# the untraced path.
#
# usage: bench/trace_lu_ab_builds.sh BASEDIR NEWDIR [ROUNDS [BLOCKS [SIZE]]]   (default 4 13 1000)
# Each DIR holds bench/lu-trace-ab (a build directory, or a copy of its
# bench/lu-trace-ab: the program is linked statically with libnth).
# Extra arguments for lu-trace-ab: TRACE_AB_ARGS (e.g. "--threads 2").
set -euo pipefail
base=${1:?usage: trace_lu_ab_builds.sh BASEDIR NEWDIR [ROUNDS [BLOCKS [SIZE]]]}
new=${2:?usage: trace_lu_ab_builds.sh BASEDIR NEWDIR [ROUNDS [BLOCKS [SIZE]]]}
rounds=${3:-4}; blocks=${4:-13}; size=${5:-1000}
[[ $rounds =~ ^[1-9][0-9]*$ && $blocks =~ ^[1-9][0-9]*$ && $size =~ ^[1-9][0-9]*$ ]] ||
    { echo "trace_lu_ab_builds.sh: ROUNDS, BLOCKS and SIZE must be positive integers" >&2; exit 2; }
(( blocks > 1 && (blocks - 1) % 6 == 0 )) || echo "trace_lu_ab_builds.sh: BLOCKS=$blocks: not 6k+1, the arms' orders are not balanced" >&2
for d in "$base" "$new"; do
    [ -x "$d/bench/lu-trace-ab" ] || { echo "trace_lu_ab_builds.sh: $d/bench/lu-trace-ab not built (make -C $d bench/lu-trace-ab)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "trace_lu_ab_builds.sh: needs python3" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-ab2.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
one() {   # one() TAG DIR PROC
    rm -f "$tmp"/t.bin
    # shellcheck disable=SC2086
    NTH_TRACE=$tmp/t.bin timeout -s KILL 600 "$2/bench/lu-trace-ab" --size "$size" --runs $((3 * blocks)) --json ${TRACE_AB_ARGS:-} \
        > "$tmp/out" 2> "$tmp/err" || { echo "trace_lu_ab_builds.sh: $2/bench/lu-trace-ab failed: $(cat "$tmp/err")" >&2; exit 1; }
    grep -q '"ok":false' "$tmp/out" && { echo "trace_lu_ab_builds.sh: a run failed its check ($2)" >&2; exit 1; }
    sed "s/^/$1 $3 /" "$tmp/out" >> "$tmp/all"
    c=$(grep -m1 '^lu-trace-ab: nth-trace clock:' "$tmp/err" | sed 's/^lu-trace-ab: nth-trace clock: //') || true
    echo "$1: ${c:-not said (an lu-trace-ab older than trace9)}" > "$tmp/clock.$1"
}
for ((r = 0; r < rounds; r++)); do
    if (( r % 2 == 0 )); then one base "$base" "$r"; one new "$new" "$r"
    else one new "$new" "$r"; one base "$base" "$r"; fi
done
# The records' clock per build (the VM's clock source decides "auto").
echo "trace_lu_ab_builds.sh: trace clock: $(cat "$tmp/clock.base" 2>/dev/null), $(cat "$tmp/clock.new" 2>/dev/null)" >&2
python3 - "$tmp/all" "$blocks" "$size" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "${TRACE_AB_ARGS:-}" <<'PY'
import json, random, statistics, sys
path, blocks, size, load0, load1, extra = sys.argv[1:7]
blocks = int(blocks)
runs = {}
for line in open(path):
    tag, p, j = line.split(' ', 2)
    o = json.loads(j)
    runs[(tag, int(p), o['run'])] = o
procs = sorted({(t, p) for t, p, _ in runs})
val = {'wall_run': lambda o: o['value'], 'cpu_run': lambda o: o['cpu_s']}
ratios = {(t, w, a): [] for t in ('base', 'new') for w in val for a in ('on', 'aa')}
off = {'base': [], 'new': []}
for tag, p in procs:
    for b in range(1, blocks):        # block 0: warm-up
        arm = {runs[(tag, p, 3 * b + k)]['arm']: runs[(tag, p, 3 * b + k)] for k in range(3)}
        for what, f in val.items():
            for a in ('on', 'aa'):
                ratios[(tag, what, a)].append((f(arm[a]) / f(arm['off']) - 1) * 100)
        off[tag].append(arm['off']['value'])
rng = random.Random(7)
N = 10000
def boot(v, f):
    s = sorted(f([v[rng.randrange(len(v))] for _ in v]) for _ in range(N))
    return [round(s[int(0.025 * N)], 3), round(s[int(0.975 * N) - 1], 3)]
params = {"size": int(size), "rounds": len(procs) // 2, "blocks_per_proc": blocks, "args": extra,
          "load_start": load0, "load_end": load1}
for (tag, what, a), v in ratios.items():
    print(json.dumps({"bench": "trace_overhead_lu_ab_builds", "build": tag, "impl": "nth" if a == "on" else "control-aa",
                      "metric": what, "value": round(statistics.median(v), 3), "unit": "%",
                      "ci95_median": boot(v, statistics.median), "mean": round(statistics.fmean(v), 3),
                      "ci95_mean": boot(v, statistics.fmean), "blocks_used": len(v), "params": params},
                     separators=(',', ':')))
for what in val:
    vb, vn = ratios[('base', what, 'on')], ratios[('new', what, 'on')]
    d = sorted(statistics.fmean([vn[rng.randrange(len(vn))] for _ in vn]) -
               statistics.fmean([vb[rng.randrange(len(vb))] for _ in vb]) for _ in range(N))
    print(json.dumps({"bench": "trace_overhead_lu_ab_builds", "impl": "new-minus-base", "metric": what,
                      "value": round(statistics.fmean(vn) - statistics.fmean(vb), 3), "unit": "points",
                      "ci95": [round(d[int(0.025 * N)], 3), round(d[int(0.975 * N) - 1], 3)],
                      "untraced_new_over_base": round(statistics.median(off['new']) / statistics.median(off['base']), 4),
                      "params": params}, separators=(',', ':')))
PY
