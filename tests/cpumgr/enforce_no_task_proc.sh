#!/bin/sh
# The daemon's enforcement pass (cpumgr/enforce.c) opens no file under
# /proc/PID/task/TID/ of its clients: each such file made the client cost
# the process that reaps it 0.3-2 s of CPU per workload mix on this VM
# (bench/RESULTS.md "mig"). Three malleable LU processes asking for 2 CPUs
# each share 2 CPUs by rotation (quantum 5 ms, period 2 ms), so CPUs are taken from
# them again and again and every take is followed by a pass; the daemon
# runs under strace. The pass must have run (it lists /proc/PID/task) and
# must not have opened /proc/PID/task/TID/anything.
set -u
b=${top_builddir:-.}
cm=$b/cpumgr/cpumgr
lu=$b/bench/lu-nth
[ -x "$lu" ] && [ -x "$cm" ] || { echo "lu-nth or cpumgr not built"; exit 77; }
command -v strace >/dev/null || { echo "strace missing"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "strace cannot trace here"; exit 77; }
# LeakSanitizer's exit check stops the world with ptrace, which fails in a
# process strace already traces (ASan builds): leaks are not this test's.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
cpus=$("$b/bench/lu-seq" --print-cpus)
[ "$cpus" -ge 2 ] || { echo "needs 2 CPUs, have $cpus"; exit 77; }
out=$(mktemp -d)
seg=/nth-enfproc-$$
spid=
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    rm -rf "$out"; rm -f "/dev/shm$seg"
}
trap cleanup EXIT
strace -f -qq -e trace=openat,open -o "$out/trace" "$cm" run --foreground --name "$seg" --period 2 --quantum 5 \
    2>"$out/daemon.err" &
spid=$!
i=0
while [ ! -e "/dev/shm$seg" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "/dev/shm$seg" ] || { echo "FAIL: the daemon did not start: $(cat "$out/daemon.err")"; exit 1; }
pids=
for k in 1 2 3; do
    NTH_CPUMGR=$seg "$lu" --malleable --threads 2 --size 400 --runs 40 --json >"$out/lu$k" 2>&1 &
    pids="$pids $!"
done
fail=0
for p in $pids; do wait "$p" || { echo "FAIL: lu-nth exited non-zero"; fail=1; }; done
# The daemon is strace's child: stop it, strace ends with it.
dpid=$(ps -o pid= --ppid "$spid" | tr -d ' ' | head -n 1)
[ -n "$dpid" ] && kill "$dpid"
wait "$spid"
spid=
[ $fail -eq 0 ] || { cat "$out"/lu*; exit 1; }
passes=$(grep -cE '"/proc/[0-9]+/task", O_RDONLY\|O_NONBLOCK\|O_CLOEXEC\|O_DIRECTORY' "$out/trace")
[ "$passes" -gt 0 ] || { echo "FAIL: no enforcement pass seen (no rotation?)"; exit 1; }
if grep -E '"/proc/[0-9]+/task/[0-9]+/' "$out/trace" >"$out/hits"; then
    echo "FAIL: $(wc -l <"$out/hits") per-thread /proc files opened in $passes passes, e.g.:"
    head -n 3 "$out/hits"
    exit 1
fi
echo "ok: $passes enforcement passes, no /proc/PID/task/TID/ file opened ($(grep -cE '"/proc/[0-9]+/stat"' "$out/trace") /proc/N/stat reads)"
