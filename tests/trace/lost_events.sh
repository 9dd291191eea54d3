#!/bin/bash
# A buffer that fills faster than the writer drains it never blocks the
# application: every event either reaches the file or is counted lost (in
# the trace and in the exit line).
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" lost l.json 2>l.err || fail "trace_sim exited $?"
check_json l.json
got=$(jq '[.traceEvents[]|select(.ph=="i" and .cat=="event")]|length' l.json)
lost=$(jq '[.traceEvents[]|select(.name=="lost events")|.args.count]|add // 0' l.json)
[ $((got + lost)) = 100000 ] || fail "$got recorded + $lost lost != 100000 events"
[ "$lost" = "$(jq .otherData.lost_events l.json)" ] || fail "lost count in otherData"
# the exit line counts them all, not only those still unreported at the end
grep -q ", $lost events lost" l.err || fail "exit line does not say $lost events lost: $(cat l.err)"
# past the size limit recording stops, and what is dropped is counted
NTH_TRACE_LIMIT=64K "$SIM" lost-env l2.json 2>/dev/null; st=$?
[ $st = 0 ] || fail "lost-env: status $st"
[ "$(stat -c %s l2.json.*.bin)" -le $((64 * 1024 + 64 + 4 * 32)) ] || fail "size limit not respected"
check_json l2.json
got=$(jq '[.traceEvents[]|select(.ph=="i" and .cat=="event")]|length' l2.json)
lost=$(jq '[.traceEvents[]|select(.name=="lost events")|.args.count]|add // 0' l2.json)
[ "$lost" -gt 0 ] || fail "no loss reported past the size limit"
exit 0
