#!/bin/bash
# NTH_PROBES_MIN_NS as a threshold, not only as 0 (everything) or 10^12 ns
# (nothing, probes_fortran.sh): with a threshold between a short function
# (a few instructions) and a long one (sleeps 30 ms: at least that long on
# any machine), the trace keeps every long call, each at least the
# threshold long, and none of the short ones; with 0 both are kept. A short
# call lasts 10 ms only if the kernel takes its CPU away for that long
# mid-call, which the 5 calls here make unlikely even on a loaded machine.
. "$top_srcdir/tests/trace/lib.sh"
libs=$top_builddir/.libs
[ -e "$libs/libnth-probes.so" ] || fail "libnth-probes.so not built"
san=$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")
cat > demo.c <<'C'
#include <time.h>
static volatile int sink;
static __attribute__((noinline)) void short_fn(int i) { sink += i; }
static __attribute__((noinline)) void long_fn(void)
{
    struct timespec ts = { 0, 30 * 1000 * 1000 };
    while (nanosleep(&ts, &ts))
        ;
}
int main(void)
{
    for (int i = 0; i < 5; i++) {
        short_fn(i);
        long_fn();
    }
    return 0;
}
C
cc -g -O0 -fPIE -pie -finstrument-functions $san demo.c -o demo \
    -L"$libs" -Wl,--no-as-needed -lnth-probes -lnth -Wl,-rpath,"$libs" || fail "cc build"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
run() {   # run OUT MIN_NS
    NTH_TRACE=$1 NTH_PROBES_MIN_NS=$2 timeout -s KILL 60 ./demo || fail "demo (min $2) exited $?"
    check_json "$1"
    fns=$(tid_of "$1" "main #1 functions")
    [ -n "$fns" ] || fail "$1: no function track for main"
}
count() {   # count FILE NAME: slices of NAME on main's function track
    jq --argjson t "$fns" --arg n "$2" '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.name|startswith($n + " (")))]|length' "$1"
}
run all.json 0
[ "$(count all.json short_fn)" = 5 ] && [ "$(count all.json long_fn)" = 5 ] \
    || fail "NTH_PROBES_MIN_NS=0: short_fn $(count all.json short_fn), long_fn $(count all.json long_fn) slices, 5 each expected"
run cut.json 10000000
[ "$(count cut.json long_fn)" = 5 ] || fail "threshold 10 ms dropped long calls: $(count cut.json long_fn) of 5 long_fn kept"
[ "$(count cut.json short_fn)" = 0 ] || fail "threshold 10 ms kept $(count cut.json short_fn) short_fn calls"
# every slice kept on the function track lasts at least the threshold
jq -e --argjson t "$fns" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.dur]
    | length > 0 and all(.[]; . >= 10000)' cut.json >/dev/null \
    || fail "a slice shorter than 10 ms kept: $(jq -c --argjson t "$fns" '[.traceEvents[]|select(.tid==$t and .ph=="X")|{ts,dur,name}]' cut.json)"
exit 0
