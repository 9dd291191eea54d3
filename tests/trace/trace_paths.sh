#!/bin/bash
# Where the trace goes, and what is blamed when it cannot (fresh11 F7 and
# minor 4). A relative NTH_TRACE is taken from the directory the program
# started in, also when it chdir()s before it ends: the output lands beside
# its .bin (by exit and by a fatal signal) and the lines name them by that
# absolute name; nothing is written in the new directory. Without a
# directory to resolve against (deleted), one line says so and the program
# runs untraced. A traced child of a traced program writes NAME.PID (the
# first one claims the name). nth-trace blames an input it cannot read (a directory), not
# the output, and warns about one file given twice to merge.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo
here=$(pwd -P)   # what getcwd(3) gives the traced program
mkdir rel away
# return from main, after chdir
NTH_VPS=2 NTH_TRACE=rel/r.json RT_DEMO_CHDIR="$here/away" "$DEMO" return >/dev/null 2>r.err; st=$?
[ $st = 0 ] || fail "return: status $st: $(cat r.err)"
[ -s rel/r.json ] || fail "return: no rel/r.json after chdir: $(cat r.err); rel: $(ls rel); away: $(ls away)"
check_json rel/r.json
grep -q "^nthlib: trace: wrote $here/rel/r.json ([0-9]* bytes" r.err || fail "return: the line does not name $here/rel/r.json: $(cat r.err)"
! grep -q "cannot" r.err || fail "return: $(cat r.err)"
# the fatal-signal path converts in a fresh process, in the new directory too
NTH_VPS=2 NTH_TRACE=rel/s.json RT_DEMO_CHDIR="$here/away" "$DEMO" sigterm >/dev/null 2>s.err; st=$?
[ $st = $((128 + 15)) ] || fail "sigterm: status $st: $(cat s.err)"
[ -s rel/s.json ] || fail "sigterm: no rel/s.json after chdir: $(cat s.err)"
check_json rel/s.json
grep -q "^nthlib: trace: wrote $here/rel/s.json (" s.err || fail "sigterm: $(cat s.err)"
# a .bin trace stays where it was asked for
NTH_VPS=2 NTH_TRACE=rel/b.bin RT_DEMO_CHDIR="$here/away" "$DEMO" exit >/dev/null 2>b.err || fail "bin: $(cat b.err)"
[ -s rel/b.bin ] || fail "bin: no rel/b.bin"
[ -z "$(ls -A away)" ] || fail "files written in the directory the program moved to: $(ls away)"
# A traced nthlib program that starts another (the same NTH_TRACE, no
# preload): the first writes NTH_TRACE, the child NAME.PID.json, named in
# its line, each holding its own process; neither overwrote the other.
NTH_VPS=2 NTH_TRACE=rel/p.json RT_DEMO_SPAWN="echo \$\$ >$here/child.pid; exec $DEMO return >/dev/null" \
    "$DEMO" return >/dev/null 2>p.err || fail "spawn: status $?: $(cat p.err)"
cpid=$(cat child.pid)
pid_in() { jq -r '[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .pid] | unique | join(" ")' "$1"; }
[ -s "rel/p.$cpid.json" ] || fail "the child's trace rel/p.$cpid.json is missing: $(ls rel); $(cat p.err)"
[ "$(pid_in "rel/p.$cpid.json")" = "$cpid" ] || fail "rel/p.$cpid.json holds process $(pid_in "rel/p.$cpid.json")"
[ "$(pid_in rel/p.json)" != "$cpid" ] || fail "the child overwrote rel/p.json"
grep -q "^nthlib: trace: wrote $here/rel/p.$cpid.json (" p.err || fail "the child's line: $(cat p.err)"
# no current directory to resolve against: said, and the program runs untraced
mkdir gone
( cd gone && rmdir "$here/gone" && NTH_VPS=1 NTH_TRACE=g.json exec "$DEMO" return ) >/dev/null 2>g.err; st=$?
[ $st = 0 ] || fail "deleted cwd: status $st: $(cat g.err)"
grep -q "^nthlib: trace: not tracing to g.json: the current directory cannot be named (.*); give NTH_TRACE an absolute path$" g.err ||
    fail "deleted cwd: '$(cat g.err)'"

# nth-trace: the input is the problem, and is named
"$TOOL" convert rel -o y.json 2>c.err; st=$?
[ $st = 3 ] || fail "convert DIR: status $st: $(cat c.err)"
grep -qx "nth-trace: rel: cannot read: $(python3 -c 'import os,errno; print(os.strerror(errno.EISDIR))')" c.err ||
    fail "convert DIR: '$(cat c.err)'"
[ ! -e y.json ] || fail "convert DIR: y.json written"
cp rel/b.bin a.bin
# one file twice is merged as two processes (merge_stats.sh does so on
# purpose), but said, by the names given
"$TOOL" merge -q a.bin ./a.bin -o m.json 2>m.err || fail "merge a.bin ./a.bin: status $?: $(cat m.err)"
grep -qx "nth-trace: warning: a.bin and ./a.bin are the same file: merged twice, as two processes" m.err ||
    fail "merge twice: '$(cat m.err)'"
cp a.bin a2.bin
"$TOOL" merge -q a.bin a2.bin -o m2.json 2>m.err || fail "merge of two copies: $(cat m.err)"
[ ! -s m.err ] || fail "two copies are two files: $(cat m.err)"
exit 0
