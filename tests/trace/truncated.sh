#!/bin/bash
# A binary file cut anywhere, or overwritten with garbage, converts with a
# warning (status 1) and a well-formed trace, or is refused (status 3) when
# not even the header is left; never a crash.
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" return t.bin || fail "trace_sim exited $?"
size=$(stat -c %s t.bin)
[ "$size" -gt 1000 ] || fail "binary trace unexpectedly small ($size)"
"$TOOL" convert t.bin -o full.json 2>/dev/null || fail "the complete file does not convert cleanly"
check_json full.json
for cut in 0 10 63 64 80 100 $((size / 3)) $((size / 2 + 7)) $((size - 33)) $((size - 1)); do
    head -c $cut t.bin > cut.bin
    "$TOOL" convert cut.bin -o cut.json 2>err.txt; st=$?
    if [ $cut -lt 64 ]; then
        [ $st = 3 ] || fail "cut at $cut: status $st, expected 3 (no header)"
        continue
    fi
    [ $st = 1 ] || fail "cut at $cut: status $st, expected 1: $(cat err.txt)"
    grep -q warning err.txt || fail "cut at $cut: no warning"
    check_json cut.json
    "$TOOL" convert cut.bin -o cut.prv 2>/dev/null; st=$?
    [ $st = 1 ] || fail "cut at $cut: .prv status $st"
done
# garbage over the middle of the file (deterministic bytes)
cp t.bin bad.bin
awk 'BEGIN { srand(7); for (i = 0; i < 700; i++) printf "%c", int(rand() * 256) }' > noise
dd if=noise of=bad.bin bs=1 seek=200 conv=notrunc status=none
"$TOOL" convert bad.bin -o bad.json 2>/dev/null; st=$?
[ $st = 0 ] || [ $st = 1 ] || fail "garbage: status $st"
check_json bad.json
"$TOOL" stats bad.bin >/dev/null 2>&1; st=$?
[ $st = 0 ] || [ $st = 1 ] || fail "stats on garbage: status $st"
# A file that is no trace at all, or too short for a header: one line
# naming the reason, status 3, nothing written ("(version 1)" then
# "Invalid argument" was what /etc/passwd got).
printf 'root:x:0:0:root:/root:/bin/bash\n%.0s' $(seq 10) > notrace.txt
head -c 10 t.bin > short.bin
for f in notrace.txt short.bin; do
    case $f in notrace.txt) why='not an nthlib trace (bad magic)' ;;
               short.bin) why='not an nthlib trace (shorter than a trace header)' ;; esac
    for cmd in "stats $f" "convert $f -o $f.json"; do
        # shellcheck disable=SC2086
        "$TOOL" $cmd >out.txt 2>err.txt; st=$?
        [ $st = 3 ] || fail "$cmd: status $st, expected 3"
        [ "$(cat err.txt)" = "nth-trace: $f: $why" ] || fail "$cmd: stderr is not one line '$why': $(cat err.txt)"
        [ ! -s out.txt ] && [ ! -e $f.json ] || fail "$cmd: wrote something"
    done
done
# Another format version: named as such, with both versions.
cp t.bin v9.bin
printf '\011' | dd of=v9.bin bs=1 seek=8 conv=notrunc status=none
"$TOOL" stats v9.bin >/dev/null 2>err.txt; st=$?
[ $st = 3 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q "format version 9 .*this build reads version 1" err.txt ||
    fail "version 9: status $st: $(cat err.txt)"
exit 0
