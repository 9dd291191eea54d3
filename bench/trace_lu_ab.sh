#!/bin/bash
# trace_lu_ab.sh -- tracing overhead on LU (issue 7: < 1 % on LU 1000), on
# and off alternated inside each process (bench/lu-trace-ab), with the A/A
# control in the same sequence.
#
# Each of PROCS processes runs BLOCKS blocks of three LU factorisations:
# traced ("on"), untraced ("off") and untraced again ("aa"), the order
# rotating and reversing from block to block (bench/trace_lu_ab.c). Tracing
# is started once per process (NTH_TRACE=FILE.bin: binary records only) and
# only the record flag changes between runs, so on and off share the VPs,
# the matrix, the caches and the neighbours of the moment. Per block:
#   on / off - 1   the overhead        aa / off - 1   the A/A noise
# for the wall time of the factorisation and for its CPU time (all threads
# of the process: VPs, the trace writers; CLOCK_PROCESS_CPUTIME_ID), over
# all blocks but each process's first (warm-up). Printed, one JSON object
# per line: the median and the mean of each, with 95 % percentile-bootstrap
# confidence intervals (10,000 resamples of the blocks, fixed seed).
# After each run, untimed, lu-trace-ab writes the records the run left
# (else the writer would write them during a later run, whatever its arm);
# that write's wall and CPU time are charged to the run: "wall" and "cpu"
# include it (an upper bound: done serially), "wall_run" and "cpu_run" do
# not. Use BLOCKS = 6k + 1: the six orders of the arms, each k times.
# The writer threads' CPU time and time slices go to stderr per process.
# Last line: each arm's page faults and context switches per run (getrusage
# of the process around each run), sum, median and maximum.
#
# usage: bench/trace_lu_ab.sh [BUILDDIR [PROCS [BLOCKS [SIZE]]]]   (default build 4 13 1000)
# Extra arguments for lu-trace-ab: TRACE_AB_ARGS (e.g. "--threads 2").
set -euo pipefail
bdir=${1:-build}; procs=${2:-4}; blocks=${3:-13}; size=${4:-1000}
(( blocks > 1 && (blocks - 1) % 6 == 0 )) || echo "trace_lu_ab.sh: BLOCKS=$blocks: not 6k+1, the arms' orders are not balanced" >&2
lu=$bdir/bench/lu-trace-ab
[ -x "$lu" ] || { echo "trace_lu_ab.sh: $lu not built (make -C $bdir bench/lu-trace-ab)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "trace_lu_ab.sh: needs python3" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-ab.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for ((p = 0; p < procs; p++)); do
    rm -f "$tmp"/t.bin
    # shellcheck disable=SC2086
    NTH_TRACE=$tmp/t.bin timeout -s KILL 600 "$lu" --size "$size" --runs $((3 * blocks)) --json ${TRACE_AB_ARGS:-} \
        > "$tmp/out" 2>> "$tmp/err" || { echo "trace_lu_ab.sh: lu-trace-ab failed: $(cat "$tmp/err")" >&2; exit 1; }
    grep -q '"ok":false' "$tmp/out" && { echo "trace_lu_ab.sh: a run failed its check" >&2; exit 1; }
    sed "s/^/$p /" "$tmp/out" >> "$tmp/all"
    echo $(( ($(stat -c %s "$tmp"/t.bin) - 64) / 32 )) >> "$tmp/recs"
    grep '^lu-trace-ab: nth-trace' "$tmp/err" >&2 || true
    : > "$tmp/err"
done
python3 - "$tmp/all" "$tmp/recs" "$procs" "$blocks" "$size" "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)" "${TRACE_AB_ARGS:-}" <<'PY'
import json, random, statistics, sys
path, recs_path, procs, blocks, size, load0, load1, extra = sys.argv[1:9]
procs, blocks = int(procs), int(blocks)
runs = {}
for line in open(path):
    p, j = line.split(' ', 1)
    o = json.loads(j)
    runs[(int(p), o['run'])] = o
recs = [int(x) for x in open(recs_path)]
on_runs_per_proc = blocks
ratios = {(w, a): [] for w in ('wall', 'cpu', 'wall_run', 'cpu_run') for a in ('on', 'aa')}
settle = []
med_t = {'on': [], 'off': [], 'aa': []}
for p in range(procs):
    for b in range(1, blocks):        # block 0: warm-up
        arm = {runs[(p, 3 * b + k)]['arm']: runs[(p, 3 * b + k)] for k in range(3)}
        val = {'wall': lambda o: o['value'] + o['settle_s'], 'cpu': lambda o: o['cpu_s'] + o['settle_cpu_s'],
               'wall_run': lambda o: o['value'], 'cpu_run': lambda o: o['cpu_s']}
        for what, f in val.items():
            for a in ('on', 'aa'):
                ratios[(what, a)].append((f(arm[a]) / f(arm['off']) - 1) * 100)
        settle.append(arm['on']['settle_s'])
        for a in med_t:
            med_t[a].append(arm[a]['value'])
rng = random.Random(7)
def boot(v, f, n=10000):
    s = sorted(f([v[rng.randrange(len(v))] for _ in v]) for _ in range(n))
    return [round(s[int(0.025 * n)], 3), round(s[int(0.975 * n) - 1], 3)]
for (what, a), v in ratios.items():
    out = {"bench": "trace_overhead_lu_ab", "impl": "nth" if a == "on" else "control-aa",
           "metric": what, "value": round(statistics.median(v), 3), "unit": "%",
           "ci95_median": boot(v, statistics.median),
           "mean": round(statistics.fmean(v), 3), "ci95_mean": boot(v, statistics.fmean),
           "params": {"size": int(size), "procs": procs, "blocks_per_proc": blocks, "blocks_used": len(v),
                      "args": extra, "load_start": load0, "load_end": load1}}
    if a == "on":
        out["records_per_lu"] = round(statistics.median(recs) / on_runs_per_proc)
        out["median_s"] = {k: round(statistics.median(x), 6) for k, x in med_t.items()}
        out["settle_on_median_ms"] = round(statistics.median(settle) * 1e3, 3)
    print(json.dumps(out, separators=(',', ':')))
# The kernel's counts per run (bench/kernels/harness.c: getrusage of the
# whole process over the run), by arm: page faults and context switches,
# which a clock's noise does not blur. Sums and medians over the used blocks.
cnt = {}
for p in range(procs):
    for b in range(1, blocks):
        for k in range(3):
            o = runs[(p, 3 * b + k)]
            if 'minflt' not in o:
                continue
            for f in ('minflt', 'nvcsw', 'nivcsw'):
                cnt.setdefault((o['arm'], f), []).append(o[f])
if cnt:
    print(json.dumps({"bench": "trace_overhead_lu_ab_counts", "unit": "per run",
                      "arms": {a: {f: {"sum": sum(cnt[(a, f)]), "median": statistics.median(cnt[(a, f)]),
                                       "max": max(cnt[(a, f)])} for f in ('minflt', 'nvcsw', 'nivcsw')}
                               for a in ('on', 'off', 'aa')},
                      "params": {"size": int(size), "procs": procs, "blocks_used": len(ratios[('wall', 'on')])}},
                     separators=(',', ':')))
PY
