#!/bin/bash
# SYNCH naming its object, recorded by the runtime itself (sync_demo sync,
# one VP): each nano-thread blocked on a mutex, a named mutex, a condvar, a
# barrier, a rwlock or a semaphore shows a SYNCH slice on its own track whose
# args give the object's kind and the address the program printed (the named
# mutex: its registered name); main's join of a running nano-thread shows
# SYNCH naming the joined one. The semaphore's waiter, renamed with
# nth_setname after its creation, has its track under the new name. The trace is well formed (check_json), and the
# same run as Paraver carries the object's address and kind events, named in
# the .pcf.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/sync_demo
run() {   # run OUT: the demo traced to OUT; its key=value words in $out
    NTH_VPS=1 timeout -s KILL 60 env NTH_TRACE="$1" "$DEMO" sync > "$1.out" 2> "$1.err" \
        || fail "sync_demo ($1) exited $?: $(cat "$1.err")"
    out=$(cat "$1.out")
}
val() { echo "$out" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

run s.json
check_json s.json
# synch THREAD KIND ADDRESS OBJECT: THREAD's track has a SYNCH slice with
# these args.
synch() {
    local id tid
    id=$(val "$1"); [ -n "$id" ] || fail "sync_demo printed no id for $1: $out"
    tid=$(tid_of s.json "$1 #$id"); [ -n "$tid" ] || fail "no track for $1 #$id"
    jq -e --argjson t "$tid" --arg k "$2" --arg a "$3" --arg o "$4" \
        '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="SYNCH" and .args.kind==$k
          and .args.address==$a and .args.object==$o)]|length==1' s.json >/dev/null \
        || fail "$1 shows no SYNCH on $2 $3 ($4): $(jq -c --argjson t "$tid" \
                '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]' s.json)"
}
synch locker mutex "$(val mutex)" "mutex $(val mutex)"
synch named_locker mutex "$(val named)" "mutex queue lock"
synch cwaiter condvar "$(val cond)" "condvar $(val cond)"
synch bwaiter barrier "$(val barrier)" "barrier $(val barrier)"
synch rwaiter rwlock "$(val rwlock)" "rwlock $(val rwlock)"
synch swaiter semaphore "$(val sem)" "semaphore $(val sem)"
# The switch path (picking the next nano-thread, the switch) shows as
# OVERHEAD between locker's RUN and its SYNCH, ending when SYNCH begins.
lt=$(tid_of s.json "locker #$(val locker)")
jq -c --argjson t "$lt" '[.traceEvents[]|select(.tid==$t and .ph=="X")
    |{ts,s:(.args.state // .name),k:.args.kind,b:(.ts*1000|round),e:((.ts*1000|round)+(.dur*1000|round))}]' \
    s.json > locker.ev
jq -e '(map(.s=="SYNCH" and .k=="mutex")|index(true)) as $j
       | $j >= 2 and .[$j-1].s=="OVERHEAD" and .[$j-2].s=="RUN"
         and .[$j-1].e==.[$j].b and .[$j-1].b<=.[$j].b' locker.ev >/dev/null \
    || fail "locker's RUN is not followed by the switch's OVERHEAD, then SYNCH: $(cat locker.ev)"
# main joins locker while locker is still ready: SYNCH on that join
lid=$(val locker)
mt=$(tid_of s.json "main #1"); [ -n "$mt" ] || fail "no track for main #1"
jq -e --argjson t "$mt" --arg o "join locker #$lid" --argjson id "$lid" \
    '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.args.state // .name)=="SYNCH" and .args.kind=="join"
      and .args.object==$o and .args.nano_thread==$id)]|length==1' s.json >/dev/null \
    || fail "main shows no SYNCH on 'join locker #$lid'"

# Paraver: the object event (address in decimal) and its kind, named.
run s.prv
grep -q '^0 *60000003 *Synchronisation object' s.pcf || fail ".pcf does not name the object event"
awk '/^EVENT_TYPE/{getline; t=$2} t==60000004 && $1==1 && $2=="mutex" {f=1} END {exit !f}' s.pcf \
    || fail ".pcf does not name kind 1 (mutex) of event 60000004"
ma=$(printf '%d' "$(val mutex)")
awk -F: -v a="$ma" '$1==2 {for (i=7; i<NF; i+=2) if ($i==60000003 && $(i+1)==a) f=1} END {exit !f}' s.prv \
    || fail ".prv has no object event for the mutex ($ma)"
awk -F: '$1==2 {for (i=7; i<NF; i+=2) if ($i==60000004 && $(i+1)==1) f=1} END {exit !f}' s.prv \
    || fail ".prv has no object-kind event 'mutex'"
exit 0
