#!/bin/bash
# libnth-malloc.so preloaded as the README says, around a shell that runs the
# application and other programs (fresh11 F5): every child inherits the
# preload and NTH_TRACE and traces itself. The rule: the first process of the
# tree that traces writes NTH_TRACE; every process below it writes the name
# with its pid before the suffix and says so. Here: one output per traced
# process, each holding its own process (no one overwrote another's), and the
# application's trace, with its memory counters, in the file its line names.
. "$top_srcdir/tests/trace/lib.sh"
lib=$top_builddir/.libs/libnth-malloc.so
case "$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")" in
    *sanitize*) echo "a malloc interposer cannot be preloaded under a sanitizer's own malloc"; exit 77 ;;
esac
[ -e "$lib" ] || fail "libnth-malloc.so not built"
here=$(pwd -P)
DEMO=$top_builddir/tests/trace/malloc_demo
LD_PRELOAD="$lib" NTH_TRACE_MALLOC=1 NTH_TRACE=sh.json \
    sh -c 'echo $$ >sh.pid; "$1" 2>demo.err & echo $! >demo.pid; wait; ls >/dev/null; true' sh "$DEMO" 2>sh.err \
    || fail "sh exited $?: $(cat sh.err)"
sh_pid=$(cat sh.pid) demo_pid=$(cat demo.pid)
pid_in() { jq -r '[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .pid] | unique | join(" ")' "$1"; }
# sh traced first: the name is its own (dash leaves through _exit(), so it
# leaves only sh.json.PID.bin, and no process below it wrote sh.json)
[ -s "sh.json.$sh_pid.bin" ] || fail "the shell did not trace first: $(ls)"
if [ -e sh.json ]; then
    check_json sh.json
    [ "$(pid_in sh.json)" = "$sh_pid" ] || fail "sh.json holds process $(pid_in sh.json), not the shell's ($sh_pid)"
fi
# the demo writes sh.PID.json
[ -s "sh.$demo_pid.json" ] || fail "the application's trace sh.$demo_pid.json is missing: $(ls)"
check_json "sh.$demo_pid.json"
[ "$(pid_in "sh.$demo_pid.json")" = "$demo_pid" ] || fail "sh.$demo_pid.json holds process $(pid_in "sh.$demo_pid.json")"
jq -e '[.traceEvents[] | select(.ph == "C" and .name == "malloc bytes in use")] | length > 0' "sh.$demo_pid.json" >/dev/null ||
    fail "the application's trace has no memory counters"
grep -q "^nthlib: trace: wrote $here/sh.$demo_pid.json (" demo.err || fail "the application's line: $(cat demo.err)"
# every other traced process (the demo, ls: one .bin each) has an output of its own
nbin=$(ls sh.json.*.bin | wc -l) njson=$(ls sh.[0-9]*.json | wc -l)
[ "$nbin" -ge 3 ] || fail "expected sh, the demo and ls traced, found $(ls sh.json.*.bin)"
[ "$njson" = $((nbin - 1)) ] || fail "$nbin processes traced, $njson outputs of child processes: $(ls)"
for f in sh.[0-9]*.json; do
    p=${f#sh.}; p=${p%.json}
    [ "$(pid_in "$f")" = "$p" ] || fail "$f holds process $(pid_in "$f")"
done
exit 0
