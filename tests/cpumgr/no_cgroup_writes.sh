#!/bin/sh
# Issue 5, "no root and no cgroup writes": the daemon and a malleable
# client it serves, each under strace, open no file under /sys/fs/cgroup
# for writing and create or remove nothing there (the runtime only reads
# cpu.max). Two malleable LU processes share 2 CPUs, so the daemon runs
# its passes and takes CPUs back; the attach line in the daemon's log
# shows the clients were served.
set -u
b=${top_builddir:-.}
cm=$b/cpumgr/cpumgr
lu=$b/bench/lu-nth
[ -x "$lu" ] && [ -x "$cm" ] || { echo "lu-nth or cpumgr not built"; exit 77; }
command -v strace >/dev/null || { echo "strace missing"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "strace cannot trace here"; exit 77; }
# LeakSanitizer's exit check uses ptrace, which fails under strace.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
out=$(mktemp -d)
seg=/nth-nocg-$$
spid=
cleanup() {
    [ -n "$spid" ] && kill "$spid" 2>/dev/null
    rm -rf "$out"; rm -f "/dev/shm$seg"
}
trap cleanup EXIT
. "$(dirname "$0")/../wait_bounded.sh"   # wait_bounded: a hang fails with its stacks
calls=open,openat,openat2,creat,mkdir,mkdirat,rmdir,unlink,unlinkat,rename,renameat,renameat2,truncate
strace -f -qq -e trace=$calls -o "$out/daemon.trace" "$cm" run --foreground --name "$seg" \
    --period 2 --quantum 5 2>"$out/daemon.err" &
spid=$!
i=0
while ! grep -q ready "$out/daemon.err" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
grep -q ready "$out/daemon.err" || { echo "FAIL: the daemon did not start: $(cat "$out/daemon.err")"; exit 1; }
pids=
for k in 1 2; do
    NTH_CPUMGR=$seg strace -f -qq -e trace=$calls -o "$out/lu$k.trace" \
        "$lu" --malleable --threads 2 --size 300 --runs 10 --json >"$out/lu$k" 2>&1 &
    pids="$pids $!"
done
fail=0
for p in $pids; do wait_bounded "$p" "lu-nth (under strace)" || { echo "FAIL: lu-nth exited non-zero ($?; 124: hung)"; fail=1; }; done
dpid=$(ps -o pid= --ppid "$spid" | tr -d ' ' | head -n 1)
[ -n "$dpid" ] && kill "$dpid"
wait_bounded "$spid" "the daemon under strace, after SIGTERM"
spid=
[ $fail -eq 0 ] || { cat "$out"/lu?; exit 1; }
n=$(grep -c "attached to slot" "$out/daemon.err")
[ "$n" -ge 2 ] || { echo "FAIL: $n of 2 clients attached: $(cat "$out/daemon.err")"; exit 1; }
for t in "$out"/*.trace; do
    # A write open (O_WRONLY, O_RDWR, O_CREAT, O_TRUNC) or a change of the
    # tree under /sys/fs/cgroup, as far as strace names the path.
    if grep -E '"/sys/fs/cgroup[^"]*"' "$t" |
       grep -E 'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|^[0-9]+ +(creat|mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|renameat2|truncate)\(' \
       >"$out/hits"; then
        echo "FAIL: $(basename "$t" .trace) wrote under /sys/fs/cgroup:"
        head -n 3 "$out/hits"
        exit 1
    fi
done
echo "ok: daemon and 2 clients, no cgroup file written ($(cat "$out"/lu?.trace | grep -c "\"/sys/fs/cgroup") cgroup opens by the clients, all read-only)"
