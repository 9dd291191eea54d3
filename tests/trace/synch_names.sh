#!/bin/bash
# Every SYNCH slice says what it waits for (fresh11 minor 5), and a
# nano-thread's "regions" and "functions" tracks are named only when they
# hold slices (minor 6):
#   - a sleeping nano-thread shows "SYNCH sleep" (args.kind "sleep");
#   - a team member waiting for the next region "SYNCH team idle";
#   - under the pthread shim, pthread_join shows "SYNCH join NAME #ID", as
#     nth_join does, not the shim's own semaphore;
#   - no bare "SYNCH" in these traces.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/sync_demo
# bare SYNCH slices and the names of tracks that hold no slice, of FILE
bare() { jq '[.traceEvents[] | select(.ph=="X" and .name == "SYNCH")] | length' "$1"; }
empty_tracks() {
    jq -r '(.traceEvents | map(select(.ph=="X" or .ph == "X")) | map("\(.pid) \(.tid)") | unique) as $used
           | .traceEvents[] | select(.ph == "M" and .name == "thread_name" and .tid >= 8192)
           | select(("\(.pid) \(.tid)") as $k | $used | index($k) | not) | .args.name' "$1"
}

NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE=sl.json "$DEMO" sleep >sl.out 2>sl.err || fail "sleep: status $?: $(cat sl.err)"
check_json sl.json
id=$(sed -n 's/^sleeper=//p' sl.out)
tid=$(tid_of sl.json "sleeper #$id"); [ -n "$tid" ] || fail "no track for sleeper #$id"
jq -e --argjson t "$tid" '[.traceEvents[] | select(.tid == $t and .ph=="X" and .name == "SYNCH sleep"
      and (.args.state // .name) == "SYNCH" and .args.kind == "sleep" and .args.object == "sleep")] | length >= 1' sl.json >/dev/null ||
    fail "the sleeper shows no 'SYNCH sleep': $(jq -c --argjson t "$tid" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]' sl.json)"
[ "$(bare sl.json)" = 0 ] || fail "bare SYNCH slices in sl.json: $(bare sl.json)"
# no regions, no probes: no regions or functions track at all
! jq -e '[.traceEvents[] | select(.ph == "M" and .name == "thread_name" and (.args.name | test(" (regions|functions)$")))]
         | length > 0' sl.json >/dev/null || fail "regions/functions tracks without regions or probes: $(empty_tracks sl.json)"

# After the region the members (one VP: they block at once) wait for the next
NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE=r.json "$DEMO" regions >r.out 2>r.err || fail "regions: status $?: $(cat r.err)"
check_json r.json
jq -e '[.traceEvents[] | select(.ph=="X" and .name == "SYNCH team idle" and .args.kind == "team idle")] | length >= 1' \
    r.json >/dev/null || fail "no 'SYNCH team idle': $(jq -c '[.traceEvents[]|select(.ph=="X" and (.name|startswith("SYNCH")))|.name]|unique' r.json)"
[ "$(bare r.json)" = 0 ] || fail "bare SYNCH slices in r.json: $(bare r.json)"
jq -e '[.traceEvents[] | select(.ph == "M" and .name == "thread_name" and (.args.name | endswith(" regions")))] | length >= 3' \
    r.json >/dev/null || fail "the members' regions tracks are not named"
e=$(empty_tracks r.json); [ -z "$e" ] || fail "named tracks without a slice: $e"

# pthread_join under the shim
nthrun=$top_builddir/pthread-shim/nthrun
[ "${NTH_SHIM_BUILT:-no}" = yes ] && [ -x "$nthrun" ] || { echo "the pthread shim is not built: join under the shim not checked"; exit 0; }
[ -z "$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")" ] || { echo "sanitizer build: the shim is not preloaded"; exit 0; }
cat > pj.c <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
static void *work(void *a) { volatile double x = 0; for (int i = 0; i < 100000; i++) x += i; return a; }
int main(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, work, NULL) || pthread_setname_np(t, "worker") || pthread_join(t, NULL))
        return 1;
    puts("done");
    return 0;
}
C
cc -O0 -pthread pj.c -o pj || fail "cc pj.c"
NTH_VPS=1 timeout -s KILL 120 "$nthrun" --vps 1 --trace "$work/pj.json" -- ./pj >pj.out 2>pj.err || fail "pj: status $?: $(cat pj.err)"
check_json pj.json
jq -e '[.traceEvents[] | select(.ph=="X" and (.args.state // .name) == "SYNCH" and .args.kind == "join"
      and (.name | test("^SYNCH join worker #[0-9]+$")))] | length == 1' pj.json >/dev/null ||
    fail "pthread_join shows no 'SYNCH join worker #ID': $(jq -c '[.traceEvents[]|select(.ph=="X" and (.name|startswith("SYNCH")))|.name]' pj.json)"
! jq -e '[.traceEvents[] | select(.ph=="X" and .args.kind == "semaphore")] | length > 0' pj.json >/dev/null ||
    fail "the shim's join semaphore shows: $(jq -c '[.traceEvents[]|select(.args.kind=="semaphore")|.name]' pj.json)"
exit 0
