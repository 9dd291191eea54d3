#!/bin/bash
# The Paraver writer sorts its records in bounded memory (issue 7: a trace of
# 10 million events stays convertible): chunks sorted in memory, spilled to
# temporary files as runs, merged at the end. NTH_TEST_PRV_CHUNK makes a run
# of every few records, so that small traces take the merge path: its .prv,
# .pcf and .row are byte for byte those of the in-memory sort, for one file
# and for a merge of several (runs holding several applications), and the
# .prv is one Paraver reads (check_prv).
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" return a.bin || fail "simulation a"
"$SIM" return b.bin || fail "simulation b"
"$SIM" many c.bin >/dev/null || fail "simulation c (many)"
same() {   # same OUT CHUNK INPUTS...: OUT via runs of CHUNK records equals OUT in memory
    local out=$1 chunk=$2; shift 2
    "$TOOL" merge -q "$@" -o "mem.$out.prv" 2>mem.err || fail "$out in memory: status $?: $(cat mem.err)"
    NTH_TEST_PRV_CHUNK=$chunk "$TOOL" merge -q "$@" -o "run.$out.prv" 2>run.err ||
        fail "$out by runs of $chunk: status $?: $(cat run.err)"
    [ "$(wc -l < "mem.$out.prv")" -gt $((chunk * 3)) ] || fail "$out: too few records for several runs of $chunk"
    for x in prv pcf row; do
        cmp -s "mem.$out.$x" "run.$out.$x" || fail "$out.$x by runs of $chunk differs from the in-memory sort: $(diff "mem.$out.$x" "run.$out.$x" | head -5)"
    done
    check_prv "run.$out.prv"
}
same a 7 a.bin
same a1 1 a.bin
same abc 5 a.bin b.bin c.bin
same cc 64 c.bin c.bin
exit 0
