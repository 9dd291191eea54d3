#!/bin/bash
# Tracing onto a full file system (a 64 KiB tmpfs, issue 7 T2): the writer
# says once, in one line, which file it cannot write and why (ENOSPC); the
# binary file never ends in a torn record; the conversion names the real
# cause, not a kill; a failed output leaves no (empty) file; gzip output
# reports the errno too; the converted trace and nth-trace stats say records
# are missing; the exit line counts the lost events whatever the format
# (also .bin, and when the output cannot be written either). Needs root for
# the mount: skipped otherwise.
. "$top_srcdir/tests/trace/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to mount a small tmpfs"; exit 77; }
mkdir full
mount -t tmpfs -o size=64k nth-full-test full 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'umount "$work/full" 2>/dev/null; rm -rf "$work"' EXIT
nospc=$(python3 -c 'import os,errno; print(os.strerror(errno.ENOSPC))' 2>/dev/null || echo "No space left on device")
here=$(pwd -P)   # what getcwd(3) gives the traced program
# lost_line FMT BIN: the exit line counts the events lost, naming the cause,
# whether the output was written ("wrote ..., N events lost") or not.
lost_line() {
    grep -Eq "^nthlib: trace: wrote [^ ]* \([0-9]+ bytes from [0-9]+ records, [1-9][0-9]* events lost" "e.$1" ||
        grep -Eq "^nthlib: trace: [1-9][0-9]* events lost \($nospc writing $2\)$" "e.$1" ||
        fail "$1: no exit line counts the lost events: $(cat "e.$1")"
}
# the records only: no conversion, the count is the exit line's alone
rm -f full/*
NTH_TRACE_FLUSH_MS=1 "$SIM" lost-env full/t.bin 2>e.bin; st=$?
[ $st = 0 ] || fail "bin: status $st: $(cat e.bin)"
grep -q "cannot write $here/full/t.bin: $nospc; events from now on" e.bin || fail "bin: no write error: $(cat e.bin)"
lost_line bin "$here/full/t.bin"
for fmt in json json.gz prv; do
    rm -f full/*
    NTH_TRACE_FLUSH_MS=1 "$SIM" lost-env "full/t.$fmt" 2>"e.$fmt"; st=$?
    [ $st = 0 ] || fail "$fmt: status $st: $(cat "e.$fmt")"
    # the messages name the files by the absolute name tracing resolved at start
    bin=$(ls "$here"/full/t.$fmt.*.bin 2>/dev/null) || fail "$fmt: no binary file left: $(ls full)"
    n=$(grep -c "cannot write $bin: $nospc; events from now on are counted as lost" "e.$fmt")
    [ "$n" = 1 ] || fail "$fmt: the write error is said $n times, not once: $(cat "e.$fmt")"
    ! grep -q "killed or left through _exit" "e.$fmt" || fail "$fmt: blames a kill: $(cat "e.$fmt")"
    grep -q "writing this file failed during the run ($nospc)" "e.$fmt" || fail "$fmt: cause not named: $(cat "e.$fmt")"
    size=$(stat -c %s "$bin")
    [ $(( (size - 64) % 32 )) = 0 ] || fail "$fmt: $bin ($size bytes) ends in a torn record"
    [ "$size" -ge 16384 ] || fail "$fmt: $bin keeps only $size bytes: the whole records that fitted are gone"
    # the output did not fit either: said with its errno, and no file is left
    if [ ! -s "full/t.$fmt" ]; then
        [ ! -e "full/t.$fmt" ] || fail "$fmt: an empty full/t.$fmt is left"
        grep -q "cannot write $here/full/t.$fmt: $nospc (records kept in $bin)" "e.$fmt" ||
            fail "$fmt: the failed output is not said with ENOSPC: $(cat "e.$fmt")"
    fi
    lost_line "$fmt" "$bin"
    [ "$fmt" != prv ] || [ ! -e full/t.pcf ] || [ -e full/t.prv ] || fail "prv: a .pcf without its .prv"
    # what reached the file converts elsewhere, with the same cause
    "$TOOL" convert "$bin" -o "c.$fmt" 2>"ce.$fmt"; st=$?
    [ $st -le 1 ] || fail "$fmt: nth-trace convert status $st: $(cat "ce.$fmt")"
    grep -q "writing this file failed during the run ($nospc)" "ce.$fmt" || fail "$fmt: convert: $(cat "ce.$fmt")"
    ! grep -q "bad name record\|inside a record" "ce.$fmt" || fail "$fmt: torn: $(cat "ce.$fmt")"
    [ "$fmt" != json ] || check_json c.json
    # The loss reaches whoever opens the converted trace, not only the
    # converter's stderr: the LOST record could not be written, the header
    # flag is all there is (otherData, an instant where the records stop,
    # and a line of nth-trace stats).
    if [ "$fmt" = json ]; then
        jq -e --arg e "$nospc" '.otherData.write_errors | length == 1 and .[0].error == $e' c.json >/dev/null ||
            fail "json: no write_errors in otherData: $(jq -c .otherData c.json)"
        jq -e '[.traceEvents[] | select(.ph == "i" and .name == "records missing: write error")] | length == 1' c.json >/dev/null ||
            fail "json: no 'records missing' event"
        "$TOOL" stats "$bin" >stats.txt 2>/dev/null
        grep -q "^records missing: writing this file failed during the run ($nospc) at [0-9.]* ms" stats.txt ||
            fail "stats does not say the records are missing: $(head -3 stats.txt)"
    fi
done
exit 0
