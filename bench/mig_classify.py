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
"""
import re, sys, collections
ev = re.compile(r'^\s*(\S.*?)\s+(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_migrate_task: comm=(\S+) pid=(\d+) prio=\d+ orig_cpu=(\d+) dest_cpu=(\d+)')
fork = re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
comm = re.compile(r'PERF_RECORD_COMM( exec)?: (\S+):(\d+)/(\d+)')
proc = {}    # tid -> pid
pname = {}   # pid -> exe comm
tname = {}   # tid -> thread name
counts = collections.Counter()
per_proc = collections.Counter()
for line in open(sys.argv[1]):
    m = fork.search(line)
    if m:
        pid, tid = int(m.group(1)), int(m.group(2))
        proc[tid] = pid
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
tot = sum(counts.values())
print("total migrations of lu-nth/sor-nth threads: %d in %d processes (%d nth processes seen)"
      % (tot, len(per_proc), sum(1 for p in pname.values() if p in ('lu-nth','sor-nth'))))
for (role, who), c in counts.most_common():
    print("%5d  %-14s moved by %s" % (c, role, who))
