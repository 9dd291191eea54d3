#!/usr/bin/env python3
"""trace_lu_prof.py -- where a traced LU run's extra CPU goes, by function.

Reads what bench/trace_lu_prof.sh leaves for one build: per process P,
runsP.jsonl (lu-trace-ab --json: each run's arm and CLOCK_MONOTONIC start
t0_mono and length) and scriptP.txt (`perf script -F time,ip,sym` of a
`perf record -k CLOCK_MONOTONIC` of that process, reduced to "time sym").
Each sample is given to the run it fell in (between runs: dropped; block 0,
the warm-up: dropped). perf samples cpu-clock, so a sample is CPU time of
some thread of the process (at 9999 Hz, 0.1 ms); a thread descheduled by
the kernel takes none.

Prints, per group of functions, the samples per run of each arm and the
on - off and aa - off differences, paired per block, with 95 % bootstrap
confidence intervals over the blocks (2,000 resamples, fixed seed), then
(--symbols N) the N functions whose on - off difference is largest. The
groups: all samples; the trace record path (nth_trace*, the trace clock);
the ready queue's push and pop; LU's own work (update_columns); the
region's join (join_members, where the caller waits); the idle loop,
stealing and its clock reads.

usage: trace_lu_prof.py DIR [--symbols N] [--json]
"""
import bisect, collections, glob, json, os, random, re, statistics, sys

GROUPS = [
    ('all', None),
    ('trace record path', re.compile(r'nth_trace|trace_now|tsc')),
    ('ready queue push/pop', re.compile(r'^(nth_rq_push|nth_rq_pop|pop_locked|nth_rq_trypop)$')),
    ('LU work (update_columns)', re.compile(r'^update_columns$')),
    ('region join wait (join_members)', re.compile(r'^join_members$')),
    ('idle loop, stealing, clock', re.compile(r'idle_loop|nth_steal|clock_gettime|sched_pick')),
]

def load(d):
    per = collections.defaultdict(collections.Counter)   # (proc, run) -> sym -> samples
    arms = {}
    procs = sorted(int(re.sub(r'\D', '', os.path.basename(f))) for f in glob.glob(os.path.join(d, 'runs*.jsonl')))
    if not procs:
        sys.exit("trace_lu_prof.py: no runsP.jsonl in %s" % d)
    for p in procs:
        runs = [json.loads(l) for l in open(os.path.join(d, 'runs%d.jsonl' % p)) if l.startswith('{')]
        if runs and 't0_mono' not in runs[0]:
            sys.exit("trace_lu_prof.py: %s: runs without t0_mono (lu-trace-ab older than this script)" % d)
        iv = sorted((o['t0_mono'], o['t0_mono'] + o['value'], o['run']) for o in runs)
        for o in runs:
            arms[(p, o['run'])] = o['arm']
        starts = [x[0] for x in iv]
        for line in open(os.path.join(d, 'script%d.txt' % p)):
            f = line.split()
            if len(f) < 2:
                continue
            try:
                t = float(f[0].rstrip(':'))
            except ValueError:
                continue
            i = bisect.bisect_right(starts, t) - 1
            if i < 0 or t > iv[i][1]:
                continue
            per[(p, iv[i][2])][f[1]] += 1
    blocks = collections.defaultdict(dict)
    for (p, r), arm in arms.items():
        if r >= 3:
            blocks[(p, r // 3)][arm] = per.get((p, r), collections.Counter())
    return [b for b in blocks.values() if len(b) == 3]

def main():
    args = sys.argv[1:]
    if not args or args[0].startswith('-'):
        sys.exit(__doc__.strip().splitlines()[-1])
    d, nsym, as_json = args[0], 0, '--json' in args
    if '--symbols' in args:
        nsym = int(args[args.index('--symbols') + 1])
    blocks = load(d)
    rng = random.Random(7)
    def ci(v):
        s = sorted(statistics.fmean([v[rng.randrange(len(v))] for _ in v]) for _ in range(2000))
        return [round(s[50], 2), round(s[1949], 2)]
    def grp(c, rx):
        return sum(n for s, n in c.items() if rx is None or rx.search(s))
    if not as_json:
        print("%s: %d blocks; samples of 0.1 ms per run; differences paired per block, mean [95 %% CI]" % (d, len(blocks)))
        print("%-32s %9s %9s %9s %24s %24s" % ("functions", "on", "off", "aa", "on - off", "aa - off"))
    for name, rx in GROUPS:
        v = {a: [grp(b[a], rx) for b in blocks] for a in ('on', 'off', 'aa')}
        don = [x - y for x, y in zip(v['on'], v['off'])]
        daa = [x - y for x, y in zip(v['aa'], v['off'])]
        if as_json:
            print(json.dumps({"bench": "trace_lu_prof", "group": name, "unit": "samples/run",
                              "on": round(statistics.fmean(v['on']), 2), "off": round(statistics.fmean(v['off']), 2),
                              "on_minus_off": round(statistics.fmean(don), 2), "ci95": ci(don),
                              "aa_minus_off": round(statistics.fmean(daa), 2), "ci95_aa": ci(daa),
                              "blocks": len(blocks), "dir": d}, separators=(',', ':')))
        else:
            c1, c2 = ci(don), ci(daa)
            print("%-32s %9.2f %9.2f %9.2f %+8.2f [%+.2f, %+.2f] %+8.2f [%+.2f, %+.2f]" % (
                name, statistics.fmean(v['on']), statistics.fmean(v['off']), statistics.fmean(v['aa']),
                statistics.fmean(don), c1[0], c1[1], statistics.fmean(daa), c2[0], c2[1]))
    if nsym and not as_json:
        tot = {a: collections.Counter() for a in ('on', 'off', 'aa')}
        for b in blocks:
            for a in tot:
                tot[a].update(b[a])
        n = len(blocks)
        print("largest on - off by function (samples per run):")
        for s in sorted(set(tot['on']) | set(tot['off']), key=lambda s: -(tot['on'][s] - tot['off'][s]))[:nsym]:
            print("  %-40s on %8.2f  off %8.2f  aa %8.2f" % (s[:40], tot['on'][s] / n, tot['off'][s] / n, tot['aa'][s] / n))

main()
