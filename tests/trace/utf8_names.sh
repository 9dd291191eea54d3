#!/bin/bash
# Names that are not UTF-8 (Latin-1 bytes, cut, overlong and surrogate
# sequences) or hold control characters: the JSON trace is still valid JSON
# (RFC 8259: UTF-8) for a strict parser, each ill-formed byte is \u00XX (its
# Latin-1 reading, trace_text.h says why), and the Paraver .pcf/.row stay
# valid UTF-8 with one name per line. Also a fuzzed .bin whose name records
# hold raw bytes (one of the user's 100 fuzzed files, tests/trace/data).
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/names_demo

# strict_utf8 FILE: every byte sequence well-formed (glibc's iconv refuses
# ill-formed ones, surrogates included), and python3's json, when there, loads it.
strict_utf8() {
    iconv -f UTF-8 -t UTF-8 "$1" >/dev/null 2>&1 || fail "$1 is not valid UTF-8: $(iconv -f UTF-8 -t UTF-8 "$1" 2>&1 >/dev/null)"
}
strict_json() {
    strict_utf8 "$1"
    check_json "$1"
    if command -v python3 >/dev/null; then
        python3 -c 'import json,sys; json.load(open(sys.argv[1], encoding="utf-8"))' "$1" ||
            fail "python3 json refuses $1"
    fi
}

NTH_TRACE=n.json "$DEMO" || fail "names_demo exited $?"
strict_json n.json
names=$(jq -r '[.traceEvents[]|select(.ph=="M" and .name=="thread_name")|.args.name]|join("|")' n.json)
# Latin-1 bytes read as Latin-1; valid UTF-8 kept. (nth_setname itself
# already turns the newline into a space.)
for want in $'bad\u00ff\u00feutf8 #' 'quote"back\slash newline #' $'\u00e2\u0082 #' \
            $'surrogate \u00ed\u00a0\u0080 overlong \u00c0\u00af #'; do
    case "$names" in *"$want"*) ;; *) fail "no thread named '$want' in: $names" ;; esac
done
jq -e '[.traceEvents[]|select(.ph=="X")|.name]|index("state \u00e9t\u00e9 \"x\"")' n.json >/dev/null ||
    fail "registered state not named 'state été \"x\"'"
# (registration turns control characters into spaces and adds the kind)
jq -e '[.traceEvents[]|select(.ph=="X")|.args.object//empty]|index("mutex lock \"q\" \\    \u00e9 \u00ff\u00fe end")' n.json >/dev/null ||
    fail "registered object name: $(jq -c '[.traceEvents[]|.args.object//empty]|unique' n.json)"

NTH_TRACE=n.prv "$DEMO" || fail "names_demo exited $? (prv)"
check_prv n.prv
for f in n.pcf n.row; do strict_utf8 "$f"; done
grep -qx '100  state ?t? "x"' n.pcf || fail "state line in n.pcf: $(grep '^100 ' n.pcf)"
grep -q '^quote"back\\slash newline #[0-9]* pid ' n.row || fail "a newline in a name split its .row line: $(cat n.row)"
grep -q '^bad??utf8 #' n.row || fail "Latin-1 thread name in n.row: $(cat n.row)"

# A fuzzed .bin: conversion may report the damage (exit 1), but what it
# writes is valid JSON.
"$TOOL" convert "$top_srcdir/tests/trace/data/fuzz-badutf8.bin" -o fz.json 2>err; rc=$?
[ "$rc" -le 1 ] || fail "nth-trace convert of the fuzzed file exited $rc: $(cat err)"
strict_json fz.json
exit 0
