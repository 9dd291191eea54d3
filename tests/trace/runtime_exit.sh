#!/bin/bash
# Ways out of a real nthlib program under NTH_TRACE: exit() and SIGTERM and
# abort() from a nano-thread each leave a JSON file that parses, and a
# nano-thread's stack overflow prints the core's overflow line, then the
# trace is written, then the process dies of SIGSEGV. So does a SIGSEGV
# sent by raise(), by kill(getpid()) and by another process (kill -SEGV):
# no fault, but the same trace and the same death.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:detect_stack_use_after_return=0"
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_signal_unsafe=0:handle_segv=0"
for mode in exit sigterm abort overflow segv-raise segv-kill segv-wait; do
    if [ $mode = segv-wait ]; then
        ( ulimit -c 0; NTH_VPS=2 NTH_TRACE=$mode.json exec "$DEMO" $mode ) >$mode.out 2>$mode.err &
        pid=$!
        for _ in $(seq 600); do   # up to 60 s for the demo's first phases
            grep -q 'leaver waiting' $mode.out && break
            sleep 0.1
        done
        grep -q 'leaver waiting' $mode.out || { kill -KILL $pid; fail "segv-wait: the leaver never waited: $(cat $mode.err)"; }
        kill -SEGV $pid
        wait_bounded $pid "segv-wait after kill -SEGV"; st=$?
    else
        ( ulimit -c 0; NTH_VPS=2 NTH_TRACE=$mode.json exec "$DEMO" $mode ) >$mode.out 2>$mode.err &
        wait_bounded $! "rt_demo $mode"; st=$?
    fi
    [ "$st" != 124 ] || fail "$mode: hung (wait_bounded)"
    case $mode in
        exit) want=0 ;;
        sigterm) want=$((128 + 15)) ;;
        abort) want=$((128 + 6)) ;;
        overflow|segv-*) want=$((128 + 11)) ;;
    esac
    [ "$st" = "$want" ] || fail "$mode: exit status $st, expected $want: $(cat $mode.err)"
    [ -s $mode.json ] || fail "$mode: no JSON written: $(cat $mode.err)"
    check_json $mode.json
    # Ids are unique, not sequential (per-VP id blocks): find it by name.
    [ -n "$(jq -r '.traceEvents[] | select(.ph=="M" and .name=="thread_name" and (.args.name | startswith("leaver #"))) | .tid' $mode.json)" ] \
        || fail "$mode: no track for the nano-thread that left"
    [ "$(jq '[.traceEvents[]|select(.ph=="i" and .cat=="event" and .args.type==1 and .args.value==42)]|length' $mode.json)" = 1 ] \
        || fail "$mode: the leaver's last event is missing"
done
grep -q '^nthlib: stack overflow in nano-thread [0-9]* (leaver)$' overflow.err \
    || fail "overflow: no overflow line: $(cat overflow.err)"
# the order: overflow line first, then the trace's report
first=$(grep -n 'stack overflow' overflow.err | cut -d: -f1)
wrote=$(grep -n 'trace: wrote' overflow.err | cut -d: -f1)
[ -n "$wrote" ] && [ "$first" -lt "$wrote" ] || fail "overflow: line and trace out of order: $(cat overflow.err)"
exit 0
