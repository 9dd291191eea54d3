#!/bin/sh
# The daemon's enforcement pass (cpumgr/enforce.c) opens no file under
# /proc/PID/task/TID/ of its clients: each such file made the client cost
# the process that reaps it 0.3-2 s of CPU per workload mix on this VM
# (bench/RESULTS.md "mig"). Three malleable LU processes asking for 2 CPUs
# each share 2 CPUs by rotation (quantum 5 ms, period 2 ms), so CPUs are taken from
# them again and again and every take is followed by a pass; the daemon
# runs under strace. The pass must have run (it lists /proc/PID/task) and
# must not have opened /proc/PID/task/TID/anything.
# A pass runs only on an application that still has a CPU after the take
# (2 -> 1; 1 -> 0 leaves it nowhere to be moved to), which the rotation of
# three arrivals gave or not as they happened to start (0 passes, 1 run
# of many at load ~20; 1-7 passes in runs at load ~25). So the first LU runs
# alone until it holds both CPUs, the second then takes one of them (1
# each, no rotation yet), and the third starts once the trace shows the
# pass that take is certain to bring.
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
. "$(dirname "$0")/../wait_bounded.sh"   # wait_bounded: a hang fails with its stacks
strace -f -qq -e trace=openat,open -o "$out/trace" "$cm" run --foreground --name "$seg" --period 2 --quantum 5 \
    2>"$out/daemon.err" &
spid=$!
i=0
while [ ! -e "/dev/shm$seg" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "/dev/shm$seg" ] || { echo "FAIL: the daemon did not start: $(cat "$out/daemon.err")"; exit 1; }
pids=
pass_re='"/proc/[0-9]+/task", O_RDONLY\|O_NONBLOCK\|O_CLOEXEC\|O_DIRECTORY'
start_lu() {
    NTH_CPUMGR=$seg "$lu" --malleable --threads 2 --size 400 --runs 40 --json >"$out/lu$1" 2>&1 &
    pids="$pids $!"
    last=$!
}
# The CPUs the daemon gives pid (its status table's ASSIG column), or -.
assigned() {
    "$cm" status --name "$seg" 2>/dev/null | awk -v p="$1" '$3 == p { print $6; f = 1 } END { if (!f) print "-" }'
}
# Wait (20 s at most) until cond (a shell command) holds; 1 if it never did.
wait_for() {
    i=0
    while ! eval "$1"; do
        i=$((i + 1)); [ $i -lt 2000 ] || return 1
        sleep 0.01
    done
}
alive() { kill -0 "$1" 2>/dev/null; }
start_lu 1; lu1=$last
wait_for '[ "$(assigned $lu1)" = 2 ] || ! alive $lu1' || { echo "FAIL: lu-nth 1 never held 2 CPUs"; exit 1; }
alive $lu1 || { echo "FAIL: lu-nth 1 ended before it held 2 CPUs: $(cat "$out/lu1")"; exit 1; }
start_lu 2; lu2=$last
# lu 1 keeps a CPU after the take, so the daemon's pass for it comes
# after --enforce (2 ms) unless it exits first.
wait_for 'grep -qE "$pass_re" "$out/trace" || ! alive $lu1' ||
    { echo "FAIL: no enforcement pass 20 s after lu-nth 1 lost a CPU to lu-nth 2"; exit 1; }
start_lu 3
fail=0
for p in $pids; do wait_bounded "$p" "lu-nth (under strace)" || { echo "FAIL: lu-nth exited non-zero ($?; 124: hung)"; fail=1; }; done
# The daemon is strace's child: stop it, strace ends with it.
dpid=$(ps -o pid= --ppid "$spid" | tr -d ' ' | head -n 1)
[ -n "$dpid" ] && kill "$dpid"
wait_bounded "$spid" "the daemon under strace, after SIGTERM"
spid=
[ $fail -eq 0 ] || { cat "$out"/lu*; exit 1; }
passes=$(grep -cE "$pass_re" "$out/trace")
[ "$passes" -gt 0 ] || { echo "FAIL: no enforcement pass seen (no rotation?)"; exit 1; }
if grep -E '"/proc/[0-9]+/task/[0-9]+/' "$out/trace" >"$out/hits"; then
    echo "FAIL: $(wc -l <"$out/hits") per-thread /proc files opened in $passes passes, e.g.:"
    head -n 3 "$out/hits"
    exit 1
fi
echo "ok: $passes enforcement passes, no /proc/PID/task/TID/ file opened ($(grep -cE '"/proc/[0-9]+/stat"' "$out/trace") /proc/N/stat reads)"
