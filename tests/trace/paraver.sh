#!/bin/bash
# NTH_TRACE=*.prv: header counts and duration agree with the records, every
# record's thread and CPU is in the .row, every state and event type in .pcf;
# Paraver's thread-count limit is kept.
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" return t.prv || fail "trace_sim exited $?"
for f in t.prv t.pcf t.row; do [ -s $f ] || fail "$f missing"; done
hdr=$(head -n1 t.prv)
# #Paraver (dd/mm/yy at hh:mm):DURATION_ns:1(NCPU):1:1(NTHREADS:1)
re='^#Paraver \([0-9]{2}/[0-9]{2}/[0-9]{2} at [0-9]{2}:[0-9]{2}\):([0-9]+)_ns:1\(([0-9]+)\):1:1\(([0-9]+):1\)$'
[[ $hdr =~ $re ]] || fail "bad header: $hdr"
dur=${BASH_REMATCH[1]} ncpu=${BASH_REMATCH[2]} nthr=${BASH_REMATCH[3]}
[ "$ncpu" = 2 ] || fail "header says $ncpu CPUs, the schedule used 2 VPs"
[ "$nthr" = 3 ] || fail "header says $nthr threads, the schedule had 3 nano-threads"
# .row: the same object counts, a name per object
[ "$(sed -n 's/^LEVEL CPU SIZE //p' t.row)" = "$ncpu" ] || fail ".row CPU count"
[ "$(sed -n 's/^LEVEL THREAD SIZE //p' t.row)" = "$nthr" ] || fail ".row thread count"
[ "$(sed -n '/^LEVEL THREAD/,$p' t.row | grep -c ' #[0-9]* pid ')" = "$nthr" ] || fail ".row thread names"
grep -q '^main #1 ' t.row || fail "main not named in .row"
# records: fields in range, times within the duration, sorted by time
awk -F: -v dur="$dur" -v ncpu="$ncpu" -v nthr="$nthr" '
    NR == 1 { next }
    $1 != 1 && $1 != 2 { print "unknown record " $0; bad = 1; next }
    $2 < 0 || $2 > ncpu { print "cpu out of range: " $0; bad = 1 }
    $3 != 1 || $4 != 1 { print "appl/task: " $0; bad = 1 }
    $5 < 1 || $5 > nthr { print "thread not in .row: " $0; bad = 1 }
    $6 + 0 < last { print "not sorted: " $0; bad = 1 }
    { last = $6 + 0 }
    $1 == 1 && ($7 + 0 > dur || $7 + 0 < $6 + 0) { print "state end: " $0; bad = 1 }
    $1 == 2 && $6 + 0 > dur { print "event after the end: " $0; bad = 1 }
    { if ($1 == 1) s[$8] = 1; else e[$7] = 1 }
    END { for (k in s) print "S " k > "states.used"; for (k in e) print "E " k > "types.used"; exit bad }' t.prv \
    || fail "bad records"
[ "$(awk -F: 'NR > 1 { t = $1 == 1 ? $7 : $6; if (t > m) m = t } END { print m }' t.prv)" = "$dur" ] \
    || fail "duration $dur is not the last record's time"
# .pcf: every used state and event type is named
awk '/^STATES$/ { s = 1; next } /^$/ { s = 0 } s { print $1 }' t.pcf > states.pcf
awk '/^EVENT_TYPE$/ { getline; print $2 }' t.pcf > types.pcf
while read -r _ st; do grep -qx "$st" states.pcf || fail "state $st not in .pcf"; done < states.used
while read -r _ ty; do grep -qx "$ty" types.pcf || fail "event type $ty not in .pcf"; done < types.used
grep -q '^3 *SYNCH$' t.pcf || fail "SYNCH not named in .pcf"
grep -q '^20 *compute$' t.pcf || fail "user state not named in .pcf"
grep -q 'iteration' t.pcf || fail "user event type not named in .pcf"
grep -q ' m1$' t.pcf || fail "mutex m1 not named among the object values"

# Paraver's object-count limit: past NTH_PRV_MAX_THREADS (32768) nano-threads
# the others' records are dropped with a warning; header, .row and records
# agree on 32768.
"$SIM" many m.prv 2>m.err || fail "trace_sim many exited $?: $(cat m.err)"
grep -q "Paraver keeps 32768 nano-threads per process" m.err || fail "no warning about the dropped threads: $(cat m.err)"
[[ $(head -n1 m.prv) =~ :1\(32768:1\)$ ]] || fail "header: $(head -n1 m.prv)"
[ "$(sed -n 's/^LEVEL THREAD SIZE //p' m.row)" = 32768 ] || fail ".row thread count: $(grep 'LEVEL THREAD' m.row)"
[ "$(sed -n '/^LEVEL THREAD/,$p' m.row | grep -c ' #[0-9]* pid ')" = 32768 ] || fail ".row thread names"
awk -F: 'NR > 1 && ($5 < 1 || $5 > 32768) { print; bad = 1 } END { exit bad }' m.prv > m.bad \
    || fail "records of threads not in .row: $(head -3 m.bad)"
exit 0
