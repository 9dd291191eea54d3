#!/usr/bin/env python3
"""mig_classify.py PERF_SCRIPT_TXT -- where the CPU migrations of libnth
kernel processes (lu-nth, sor-nth) come from: reads the output of
`perf script --show-task-events` over a `perf record -a -e
sched:sched_migrate_task` of a workload run and counts, per migrated
thread's role (main = VP 0, new thread = a VP before it named itself,
nth-vp1, nth-cpumgr, nth-watchdog ...), who moved it: the thread itself,
another thread of its process (a VP's creator: glibc's affinity of a new
thread; the cpumgr watcher: bounded reclaim), the migration stopper (a
running thread's affinity changed: a VP binding itself back), the cpumgr
daemon (--enforce), or the kernel's balancing (any other task context).
Used for bench/RESULTS.md "mig2":
  perf record -o mig.data -a -e sched:sched_migrate_task -- bench/highprio.sh \\
      python3 bench/workload --short --builds nth-malleable --no-sweep --no-seq-mix --no-plot --quiet
  perf script -i mig.data --show-task-events > mig.txt; bench/mig_classify.py mig.txt
With --per-process, also one line per lu-nth/sor-nth process: its birth
(ms after the first one's), its lifetime, and each migration of one of its
threads at its offset from the birth (role, who moved it, CPUs): which
tells a process's first run on another CPU at a rotation (a quantum after
its birth) from one at its start (bench/RESULTS.md "eff").
"""
import re, sys, collections
args = [a for a in sys.argv[1:] if a != '--per-process']
per_process = len(args) != len(sys.argv) - 1
if len(args) != 1:
    sys.stderr.write("usage: mig_classify.py [--per-process] PERF_SCRIPT_TXT\n")
    sys.exit(2)
ev = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_migrate_task: comm=(\S+) pid=(\d+) prio=\d+ orig_cpu=(\d+) dest_cpu=(\d+)')
fork = re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
comm = re.compile(r'PERF_RECORD_COMM( exec)?: (\S+):(\d+)/(\d+)')
exit_ = re.compile(r'PERF_RECORD_EXIT\((\d+):(\d+)\)')
stamp = re.compile(r'\s(\d+\.\d+):\s')
born = {}    # pid -> time of its fork (s)
died = {}    # pid -> time of its exit (s)
moves = collections.defaultdict(list)  # pid -> [(time, role, who, orig, dest)]
proc = {}    # tid -> pid
pname = {}   # pid -> exe comm
tname = {}   # tid -> thread name
counts = collections.Counter()
per_proc = collections.Counter()
try:
    lines = open(args[0]).readlines()
except OSError as e:
    sys.stderr.write("mig_classify.py: %s: %s\n" % (args[0], e.strerror))
    sys.exit(1)
for line in lines:
    m = fork.search(line)
    if m:
        pid, tid = int(m.group(1)), int(m.group(2))
        proc[tid] = pid
        t = stamp.search(line)
        if pid == tid and t:
            born[pid] = float(t.group(1))
        tname.setdefault(tid, tname.get(int(m.group(4)), '?') if pid == int(m.group(3)) and tid != pid else '?')
        continue
    m = comm.search(line)
    if m:
        pid, tid = int(m.group(3)), int(m.group(4))
        proc[tid] = pid
        if m.group(1):
            pname[pid] = m.group(2)
        tname[tid] = m.group(2)
        continue
    m = exit_.search(line)
    if m:
        t = stamp.search(line)
        if m.group(1) == m.group(2) and t:
            died[int(m.group(1))] = float(t.group(1))
        continue
    m = ev.match(line)
    if not m:
        continue
    actor, apid = m.group(1).strip(), int(m.group(2))
    tid = int(m.group(6))
    pid = proc.get(tid)
    if pid is None or pname.get(pid) not in ('lu-nth', 'sor-nth'):
        continue
    role = tname.get(tid, '?')
    if tid == pid:
        role = 'main(vp0)'
    elif role in ('lu-nth', 'sor-nth', '?'):
        role = 'new thread'
    if apid == tid:
        who = 'self'
    elif proc.get(apid) == pid and apid != tid:
        who = 'own process: ' + tname.get(apid, '?')
        if apid == pid:
            who = 'own process: main(vp0)'
    elif actor.startswith('migration/'):
        who = 'stopper (affinity of a running thread)'
    elif actor == 'cpumgr':
        who = 'cpumgr daemon'
    else:
        who = 'other (load balance/wakeup): '
        who += 'swapper' if actor == 'swapper' else 'other task'
    counts[(role, who)] += 1
    per_proc[pid] += 1
    moves[pid].append((float(m.group(4)), role, who, m.group(7), m.group(8)))
tot = sum(counts.values())
print("total migrations of lu-nth/sor-nth threads: %d in %d processes (%d nth processes seen)"
      % (tot, len(per_proc), sum(1 for p in pname.values() if p in ('lu-nth','sor-nth'))))
for (role, who), c in counts.most_common():
    print("%5d  %-14s moved by %s" % (c, role, who))
if per_process:
    nth = sorted((p for p in pname if pname[p] in ('lu-nth', 'sor-nth') and p in born), key=lambda p: born[p])
    t0 = born[nth[0]] if nth else 0.0
    for p in nth:
        life = "%.0f ms" % ((died[p] - born[p]) * 1e3) if p in died else "?"
        line = "%-8s %7d born %+9.1f ms, lived %s:" % (pname[p], p, (born[p] - t0) * 1e3, life)
        for t, role, who, o, d in moves[p]:
            line += " [%+.0f ms %s by %s %s->%s]" % ((t - born[p]) * 1e3, role, who, o, d)
        print(line)
