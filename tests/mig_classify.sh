#!/bin/sh
# bench/mig_classify.py on a `perf script --show-task-events` text made up
# here: one lu-nth process (pid 100, born at 10.000 s, exits at 10.300 s)
# whose VP 1 (tid 101) is moved by the main thread 100 ms after its birth,
# and a migration of another program's thread that must not count. The
# summary counts one move, --per-process gives the process's line with the
# move at +100 ms; a wrong argument list is a usage line and exit 2, a
# missing file one line and exit 1.
set -u
src=${top_srcdir:-..}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/t.txt" <<'T'
         python3    50 [000]     9.990000: PERF_RECORD_FORK(100:100):(50:50)
          lu-nth   100 [001]    10.000000: PERF_RECORD_COMM exec: lu-nth:100/100
          lu-nth   100 [001]    10.000000: PERF_RECORD_FORK(100:100):(50:50)
          lu-nth   100 [001]    10.002000: PERF_RECORD_FORK(100:101):(100:100)
         nth-vp1   101 [001]    10.002100: PERF_RECORD_COMM: nth-vp1:100/101
          lu-nth   100 [000]    10.100000: sched:sched_migrate_task: comm=nth-vp1 pid=101 prio=120 orig_cpu=1 dest_cpu=0
             gcc   70 [000]    10.150000: sched:sched_migrate_task: comm=gcc pid=70 prio=120 orig_cpu=0 dest_cpu=1
          lu-nth   100 [000]    10.300000: PERF_RECORD_EXIT(100:100):(50:50)
T
python3 "$src/bench/mig_classify.py" "$out/t.txt" >"$out/o" || { echo "FAIL: exit $?"; exit 1; }
cat "$out/o"
grep -q '^total migrations of lu-nth/sor-nth threads: 1 in 1 processes (1 nth processes seen)$' "$out/o" || {
    echo "FAIL: summary total"; exit 1; }
grep -Eq '^ +1  nth-vp1 +moved by own process: main\(vp0\)$' "$out/o" || { echo "FAIL: classification"; exit 1; }
grep -q 'born' "$out/o" && { echo "FAIL: per-process lines without --per-process"; exit 1; }
python3 "$src/bench/mig_classify.py" --per-process "$out/t.txt" >"$out/p" || { echo "FAIL: --per-process exit $?"; exit 1; }
grep -Eq '^lu-nth +100 born +\+0\.0 ms, lived 300 ms: \[\+100 ms nth-vp1 by own process: main\(vp0\) 1->0\]$' "$out/p" || {
    echo "FAIL: per-process line:"; cat "$out/p"; exit 1; }
python3 "$src/bench/mig_classify.py" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || { echo "FAIL: no argument: rc $rc, want 2"; exit 1; }
python3 "$src/bench/mig_classify.py" "$out/missing.txt" >/dev/null 2>"$out/e"; rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$out/e")" = 1 ] || { echo "FAIL: missing file: rc $rc: $(cat "$out/e")"; exit 1; }
echo "ok: mig_classify.py"
