#!/bin/bash
# Big runs (issue 7): a trace name without a suffix lets the size choose,
# NAME.json up to NTH_TRACE_JSON_MAX bytes of JSON, NAME.json.gz past it;
# an explicit .json past the limit is written and said in one line. The
# limit is set small here (trace_sim's JSON is a few KB) to keep it fast.
. "$top_srcdir/tests/trace/lib.sh"
# small: run.json, plain, and the exit line names it
"$SIM" return small 2> small.err || fail "trace_sim (small) exited $?: $(cat small.err)"
[ -f small.json ] && [ ! -e small.json.gz ] && [ ! -e small ] || fail "small run: not small.json alone: $(ls)"
check_json small.json
grep -q "^nthlib: trace: wrote $PWD/small.json (" small.err || fail "exit line does not name small.json: $(cat small.err)"
size=$(stat -c %s small.json)
# big: past the limit, run.json.gz only, the same trace, and the exit line names it
NTH_TRACE_JSON_MAX=$((size / 2)) "$SIM" return big 2> big.err || fail "trace_sim (big) exited $?: $(cat big.err)"
[ -f big.json.gz ] && [ ! -e big.json ] || fail "big run: not big.json.gz alone: $(ls)"
gzip -dc big.json.gz > big.unz || fail "big.json.gz is no gzip"
check_json big.unz
[ "$(jq '[.traceEvents[]|select(.ph=="X")]|length' big.unz)" = "$(jq '[.traceEvents[]|select(.ph=="X")]|length' small.json)" ] ||
    fail "big.json.gz does not hold the whole trace"
grep -q "^nthlib: trace: wrote $PWD/big.json.gz (" big.err || fail "exit line does not name big.json.gz: $(cat big.err)"
# a previous run's other file does not stay beside this run's
NTH_TRACE_JSON_MAX=1M "$SIM" return big 2> big2.err || fail "trace_sim (big, 1M) exited $?"
[ -f big.json ] && [ ! -e big.json.gz ] || fail "small rerun left the previous big.json.gz: $(ls)"
# explicit .json past the limit: written, and one line with its size and the choices
NTH_TRACE_JSON_MAX=1K "$SIM" return plain.json 2> plain.err || fail "trace_sim (plain.json) exited $?"
check_json plain.json
n=$(grep -c "plain.json is $(stat -c %s plain.json) bytes of plain JSON, past NTH_TRACE_JSON_MAX (1024 bytes).*plain.json.gz.*\.prv" plain.err)
[ "$n" = 1 ] || fail "no one line saying plain.json is big: $(cat plain.err)"
NTH_TRACE_JSON_MAX=1M "$SIM" return plain.json 2> quiet.err || fail "trace_sim (plain.json, 1M) exited $?"
grep -q "bytes of plain JSON" quiet.err && fail "a small .json said to be big: $(cat quiet.err)"
# a bad limit: one line, the default used
NTH_TRACE_JSON_MAX=lots "$SIM" return bad 2> bad.err || fail "trace_sim (bad limit) exited $?"
[ "$(grep -c "NTH_TRACE_JSON_MAX='lots' is not valid" bad.err)" = 1 ] && [ -f bad.json ] ||
    fail "bad NTH_TRACE_JSON_MAX: $(cat bad.err)"
# the fatal-signal path (a fresh nth-trace convert) follows the same rule
( ulimit -c 0; NTH_TRACE_JSON_MAX=1K exec "$SIM" sigterm term ) 2> term.err
[ -f term.json.gz ] && [ ! -e term.json ] || fail "SIGTERM: not term.json.gz: $(ls) $(cat term.err)"
grep -q "^nthlib: trace: wrote $PWD/term.json.gz (" term.err || fail "SIGTERM exit line: $(cat term.err)"
# nth-trace convert -o NAME, the same rule
"$SIM" return keep.bin 2> keep.err || fail "trace_sim (keep.bin) exited $?: $(cat keep.err)"
NTH_TRACE_JSON_MAX=1K "$TOOL" convert keep.bin -o conv 2> conv.err || fail "nth-trace convert -o conv: $(cat conv.err)"
[ -f conv.json.gz ] && [ ! -e conv.json ] && grep -q "^nth-trace: wrote conv.json.gz (" conv.err ||
    fail "convert -o conv: $(ls) $(cat conv.err)"
"$TOOL" convert keep.bin -o conv 2> conv2.err || fail "nth-trace convert -o conv (small): $(cat conv2.err)"
[ -f conv.json ] && [ ! -e conv.json.gz ] && grep -q "^nth-trace: wrote conv.json (" conv2.err ||
    fail "convert -o conv (small): $(ls) $(cat conv2.err)"
# a suffix that names no format is still an error
"$SIM" return run.txt 2> txt.err
grep -q "NTH_TRACE='.*run.txt' is not valid" txt.err || fail "run.txt accepted: $(cat txt.err)"
exit 0
