#!/bin/sh
# The kernel programs count their CPU migrations without opening per-thread
# files under /proc (/proc/self/task/TID/...): each such file makes the
# process dear to reap, 60-100 ms of the reaper's CPU per child on this VM
# (bench/RESULTS.md "mal3", "mig"), which the workload driver paid at every
# restart. Every threaded build runs 2 threads under strace; a path of the
# form /proc/<self|pid>/task/<tid>/... fails the test. And the JSON says
# where its "migrations" come from.
set -u
b=${top_builddir:-.}/bench
command -v strace >/dev/null || { echo "strace missing"; exit 77; }
command -v jq >/dev/null || { echo "jq missing"; exit 77; }
strace -f -o /dev/null true 2>/dev/null || { echo "strace cannot trace here (ptrace refused)"; exit 77; }
# LeakSanitizer's exit check stops the world with ptrace, which fails in a
# process strace already traces (ASan builds): leaks are not this test's.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"; export ASAN_OPTIONS
OMP_WAIT_POLICY=passive; export OMP_WAIT_POLICY
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
for impl in glibc openmp nth; do
    [ -x "$b/lu-$impl" ] || continue
    for k in lu sor; do
        strace -f -qq -e trace=open,openat,openat2 -o "$out/trace" \
            "$b/$k-$impl" --size 60 --threads 2 --runs 3 --json >"$out/json" 2>"$out/err" || {
            echo "FAIL: $k-$impl exited non-zero: $(cat "$out/err")"; fail=1; continue; }
        if grep -E '"/proc/(self|thread-self|[0-9]+)/task/[0-9]+/' "$out/trace" >"$out/hits"; then
            echo "FAIL: $k-$impl opened per-thread /proc files:"; head -n 5 "$out/hits"; fail=1; continue
        fi
        jq -e -s 'length == 3 and all(.migrations_source | IN("perf", "none")) and
                  all(if .migrations_source == "perf" then .migrations >= 0 else .migrations == -1 end)' \
            "$out/json" >/dev/null || { echo "FAIL: $k-$impl: bad migrations fields:"; cat "$out/json"; fail=1; continue; }
        echo "ok: $k-$impl ($(jq -r -s '.[-1].migrations_source' "$out/json"))"
    done
done
exit $fail
