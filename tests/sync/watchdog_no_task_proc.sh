#!/bin/sh
# The stall watchdog reads its VPs' kernel-thread state from /proc/TID/stat,
# never from /proc/self/task/TID/stat: a file opened under
# /proc/PID/task/TID/ makes the process dear to reap (its parent spends up
# to 100 ms of CPU in wait4; bench/RESULTS.md "mal3", "mig"). test-watchdog
# stalls VPs in raw read()s, so the monitor reads the state of their
# threads; under strace, none of its opens (O_RDONLY|O_CLOEXEC, as
# watchdog.c opens it; the test's own fopen()s carry no O_CLOEXEC) may name
# a per-thread file under /proc/self/task/.
set -u
b=${top_builddir:-.}
t=$b/tests/sync/test-watchdog
[ -x "$t" ] || { echo "test-watchdog not built"; exit 77; }
command -v strace >/dev/null || { echo "strace missing"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "strace cannot trace here"; exit 77; }
# LeakSanitizer's exit check stops the world with ptrace, which fails in a
# process strace already traces (ASan builds): leaks are not this test's.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
strace -f -qq -e trace=openat,open -o "$out/trace" "$t" >"$out/log" 2>&1 || {
    echo "FAIL: test-watchdog failed under strace"; tail -n 20 "$out/log"; exit 1; }
reads=$(grep -cE '"/proc/[0-9]+/stat", O_RDONLY\|O_CLOEXEC' "$out/trace")
[ "$reads" -gt 0 ] || { echo "FAIL: the monitor read no thread state (no stall seen?)"; exit 1; }
if grep -E '"/proc/(self|[0-9]+)/task/[0-9]+/stat", O_RDONLY\|O_CLOEXEC' "$out/trace" >"$out/hits"; then
    echo "FAIL: the watchdog opened $(wc -l <"$out/hits") per-thread /proc files, e.g.:"; head -n 3 "$out/hits"; exit 1
fi
echo "ok: $reads thread-state reads, none under /proc/self/task/"
