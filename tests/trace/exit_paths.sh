#!/bin/bash
# Every way out of a traced process leaves a trace that opens: exit(),
# return from main, SIGTERM, SIGINT, SIGHUP, SIGQUIT, abort(), SIGSEGV,
# SIGBUS, SIGFPE (sent, and a real division by zero), SIGILL, SIGTRAP and
# SIGSYS write the chosen format (then the signal's default action ends the process), also a SIGSEGV
# raised inside malloc with its lock held (malloc-segv: the handler must not
# call malloc; trace_sim exits 99 if it does, 77 in sanitizer builds); _exit() and
# SIGKILL leave the binary file as flushed up to the last flush interval,
# which nth-trace convert turns into a trace with a warning.
. "$top_srcdir/tests/trace/lib.sh"
# Under ASan/TSan the sanitizer's own SIGSEGV handler would come first in the chain
# (and exit 1): test nthlib's handler with the kernel's default behind it.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_sigtrap=0"
# The fatal-signal handler only writes (write(2)) and starts nth-trace in a
# fresh process: ThreadSanitizer's signal-unsafe report stays on.
export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_sigtrap=0"
for mode in return exit sigterm sigint sighup sigquit abort segv sigbus sigfpe fpe sigill sigtrap sigsys malloc-segv; do
    ( ulimit -c 0; exec "$SIM" $mode $mode.json ) 2>$mode.err
    st=$?
    [ $mode = malloc-segv ] && [ "$st" = 77 ] && continue   # sanitizer build
    case $mode in
        return|exit) want=0 ;;
        sigterm) want=$((128 + 15)) ;;
        sigint) want=$((128 + 2)) ;;
        sighup) want=$((128 + $(kill -l HUP))) ;;
        sigquit) want=$((128 + $(kill -l QUIT))) ;;
        sigbus) want=$((128 + $(kill -l BUS))) ;;
        sigfpe|fpe) want=$((128 + $(kill -l FPE))) ;;
        sigill) want=$((128 + $(kill -l ILL))) ;;
        sigtrap) want=$((128 + $(kill -l TRAP))) ;;
        sigsys) want=$((128 + $(kill -l SYS))) ;;
        abort) want=$((128 + 6)) ;;
        segv|malloc-segv) want=$((128 + 11)) ;;
    esac
    [ "$st" = "$want" ] || fail "$mode: exit status $st, expected $want (the default action after the trace): $(cat $mode.err)"
    [ -s $mode.json ] || fail "$mode: no JSON written"
    check_json $mode.json
    case $mode in
        return|exit) ;;
        *) grep -q "^nthlib: trace: wrote $(pwd -P)/$mode.json ([0-9]* bytes from [0-9]* records, 0 events lost" $mode.err \
               || fail "$mode: no line saying the trace was written: $(cat $mode.err)" ;;
    esac
    # the fatal modes died with slices open: they were closed at the last timestamp
    [ "$(jq '[.traceEvents[]|select(.ph=="X" and .args.object=="b1")]|length' $mode.json)" = 1 ] \
        || fail "$mode: worker-b's SYNCH on b1 missing"
done
# SIGINT ignored on entry (how a shell starts a background job): tracing
# leaves it ignored, and the process traces on to a normal end.
( trap '' INT; ulimit -c 0; exec "$SIM" sigint-ignored ign.json ) 2>ign.err; st=$?
[ "$st" = 0 ] || fail "sigint-ignored: exit status $st, expected 0: $(cat ign.err)"
check_json ign.json
# SIGHUP ignored on entry (nohup): the same.
( trap '' HUP; ulimit -c 0; exec "$SIM" sighup-ignored hup.json ) 2>hup.err; st=$?
[ "$st" = 0 ] || fail "sighup-ignored: exit status $st, expected 0: $(cat hup.err)"
check_json hup.json
# _exit() and SIGKILL: no exit path runs; what the writer flushed is in the
# binary file, which nth-trace convert turns into a trace (with a warning).
for mode in _exit sigkill; do
    ( exec "$SIM" $mode x$mode.json ) 2>/dev/null; st=$?
    want=0; [ $mode = sigkill ] && want=$((128 + 9))
    [ "$st" = $want ] || fail "$mode: status $st, expected $want"
    [ ! -e x$mode.json ] || fail "$mode ran the exit path"
    bin=$(ls x$mode.json.*.bin) || fail "$mode: no binary file"
    "$TOOL" convert "$bin" -o x$mode.json 2>err.txt; st=$?
    [ "$st" = 1 ] || fail "convert of an $mode file: status $st, expected 1 (converted with warnings)"
    grep -q "no end record" err.txt || fail "$mode: no warning about the missing end: $(cat err.txt)"
    check_json x$mode.json
    # everything up to phase 3 was flushed (flush interval 20 ms, 300 ms before the end)
    [ "$(jq '[.traceEvents[]|select(.ph=="X" and .args.object=="b1")]|length' x$mode.json)" = 1 ] \
        || fail "$mode: phase 3 not flushed"
done
exit 0
