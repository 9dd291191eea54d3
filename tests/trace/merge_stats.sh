#!/bin/bash
# nth-trace merge puts several processes on one timeline; nth-trace stats
# reports time per state per nano-thread and per VP.
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" return a.bin || fail "first run"
"$SIM" return b.bin || fail "second run"
"$TOOL" merge a.bin b.bin -o all.json.gz 2>merge.err || fail "merge status $?"
# the size of what was written, and of what it came from, is reported
recs=$(( ($(stat -c %s a.bin) - 64) / 32 + ($(stat -c %s b.bin) - 64) / 32 ))
grep -qx "nth-trace: wrote all.json.gz ($(stat -c %s all.json.gz) bytes from $recs records)" merge.err \
    || fail "merge does not report the sizes: $(cat merge.err)"
gzip -dc all.json.gz > all.json
check_json all.json
[ "$(jq '[.traceEvents[]|select(.ph=="M" and .name=="process_name")]|length' all.json)" = 2 ] || fail "two processes expected"
[ "$(jq '[.traceEvents[]|.pid]|unique|length' all.json)" = 2 ] || fail "two pids expected"
# one timeline: b ran after a, so b's first slice starts after a's last one
first_b=$(jq '[.traceEvents[]|select(.ph!="M")]|group_by(.pid)|map(min_by(.ts).ts)|max' all.json)
last_a=$(jq '[.traceEvents[]|select(.ph!="M")]|group_by(.pid)|map(max_by(.ts).ts)|min' all.json)
awk -v a="$last_a" -v b="$first_b" 'BEGIN { exit !(b > a) }' || fail "processes not on one timeline ($last_a, $first_b)"
# Interleaved processes: the merged events are sorted by ts across the
# processes (check_json), not one process after the other. The same file
# twice overlaps completely (the second gets a pid of its own); two
# simulations at once overlap as the scheduler lets them.
"$TOOL" merge -q a.bin a.bin -o twice.json || fail "merge a.bin a.bin status $?"
check_json twice.json
[ "$(jq '[.traceEvents[]|.pid]|unique|length' twice.json)" = 2 ] || fail "a.bin twice: two pids expected"
[ "$(jq '[.traceEvents[]|select(.ph!="M")]|group_by(.pid)|map(length)|unique|length' twice.json)" = 1 ] ||
    fail "a.bin twice: not the same events for both"
"$SIM" return c.bin & "$SIM" return d.bin & wait
"$TOOL" merge -q c.bin d.bin a.bin -o cda.json.gz || fail "merge c d a status $?"
gzip -dc cda.json.gz > cda.json
check_json cda.json
"$TOOL" merge a.bin b.bin -o all.prv 2>/dev/null || fail "merge to Paraver"
head -n1 all.prv | grep -qE ':1\(2\):2:1\(3:1\):1\(3:1\)$' || fail "merged Paraver header: $(head -n1 all.prv)"
check_prv all.prv
# Paraver reads records in time order: the merged records are sorted across
# the processes, also where they overlap in time (the same file twice, two
# concurrent runs), and every record stays in its own application.
"$TOOL" merge -q c.bin d.bin a.bin -o cda.prv || fail "merge c d a to Paraver status $?"
check_prv cda.prv
"$TOOL" merge -q a.bin a.bin -o twice.prv || fail "merge a.bin a.bin to Paraver status $?"
check_prv twice.prv
[ "$(awk -F: 'NR > 1 && $3 == 1' twice.prv | wc -l)" = "$(awk -F: 'NR > 1 && $3 == 2' twice.prv | wc -l)" ] ||
    fail "a.bin twice in Paraver: not the same records for both applications"
"$TOOL" stats a.bin > stats.txt || fail "stats status $?"
grep -qE '^worker-b #3 +compute +[0-9]+\.[0-9]{3}$' stats.txt || fail "no compute time for worker-b: $(cat stats.txt)"
grep -qE '^main #1 +SYNCH +[0-9]+\.[0-9]{3}$' stats.txt || fail "no SYNCH time for main"
grep -qE '^1 +[0-9.]+ +[0-9.]+$' stats.txt || fail "no VP 1 line"
grep -q 'longest state slices' stats.txt || fail "no longest slices"
"$TOOL" bogus a.bin 2>/dev/null; [ $? = 2 ] || fail "usage error status"
"$TOOL" convert a.bin -o a.txt 2>/dev/null; [ $? = 2 ] || fail "unknown output suffix status"
exit 0
