#!/bin/bash
# libnth-probes.so preloaded into a pthread program run by nthrun --trace:
# one true message each. The probes' constructor starts the trace (from
# NTH_TRACE) before the shim starts the runtime, whose own start then said
# "cannot trace: Device or resource busy; running untraced" and, at exit,
# "wrote FILE"; a bad NTH_PROBES_MIN_NS was said by nthrun's process and
# again by the program's.
. "$top_srcdir/tests/trace/lib.sh"
libs=$top_builddir/.libs
nthrun=$top_builddir/pthread-shim/nthrun
[ "${NTH_SHIM_BUILT:-no}" = yes ] && [ -x "$nthrun" ] || { echo "the pthread shim is not built"; exit 77; }
san=$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")
# Preloading a sanitizer build of the shim is not supported (run-compare.sh).
[ -z "$san" ] || { echo "sanitizer build: the shim is not preloaded"; exit 77; }
cat > demo.c <<'C'
#include <pthread.h>
#include <stdio.h>
static void *work(void *a) { volatile double x = 0; for (int i = 0; i < 1000; i++) x += i; return a; }
int main(void)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    puts("done");
    return 0;
}
C
cc -g -O0 -finstrument-functions -pthread demo.c -o demo || fail "cc build"
LD_PRELOAD=$libs/libnth-probes.so NTH_PROBES_MIN_NS=abc timeout -s KILL 120 \
    "$nthrun" --trace "$work/demo.json" -- ./demo >out.txt 2>err.txt || fail "status $?: $(cat err.txt)"
[ "$(cat out.txt)" = done ] || fail "output: $(cat out.txt)"
n=$(grep -c "NTH_PROBES_MIN_NS='abc' is not valid" err.txt)
[ "$n" = 1 ] || fail "bad NTH_PROBES_MIN_NS said $n times: $(cat err.txt)"
grep -q "cannot trace" err.txt && fail "'cannot trace' though the trace is written: $(cat err.txt)"
[ "$(grep -c "^nthlib: trace: wrote $work/demo.json " err.txt)" = 1 ] || fail "no 'wrote' line: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 2 ] || fail "stderr has more than the two lines: $(cat err.txt)"
check_json demo.json
jq -e '[.traceEvents[] | select(.ph=="X" and (.name | startswith("work")))] | length == 2' demo.json >/dev/null ||
    fail "no probe slice for each work() call"
exit 0
