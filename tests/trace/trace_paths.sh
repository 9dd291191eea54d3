#!/bin/bash
# Where the trace goes, and what is blamed when it cannot (fresh11 F7 and
# minor 4). A relative NTH_TRACE is taken from the directory the program
# started in, also when it chdir()s before it ends: the output lands beside
# its .bin (by exit and by a fatal signal) and the lines name them by that
# absolute name; nothing is written in the new directory. Without a
# directory to resolve against (deleted), one line says so and the program
# runs untraced (one line). A traced child of a traced program writes NAME.PID (the
# first one claims the name), so does an unrelated process while another
# traces to the name; a .bin trace says where it went; nth-trace convert
# without -o writes PATH for PATH.PID.bin, never over another's trace. nth-trace blames an input it cannot read (a directory), not
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
# "records" means one thing (nth-trace-small-things #2): the exit line,
# nth-trace stats and convert count the .bin's 32-byte records after its
# 64-byte header (names with their text included); stats adds the timed ones
rbin=$(ls rel/r.json.[0-9]*.bin)
rrecs=$(( ($(stat -c %s "$rbin") - 64) / 32 ))
grep -q "^nthlib: trace: wrote $here/rel/r.json ([0-9]* bytes from $rrecs records, 0 events lost)" r.err ||
    fail "exit line does not count $rrecs records: $(cat r.err)"
"$TOOL" stats "$rbin" >st.out 2>&1 || fail "stats: $(cat st.out)"
head -1 st.out | grep -q ", $rrecs records ([0-9]* timed), " || fail "stats does not count $rrecs records: $(head -1 st.out)"
"$TOOL" convert "$rbin" -o rc.json 2>c.err || fail "convert: $(cat c.err)"
grep -qx "nth-trace: wrote rc.json ([0-9]* bytes from $rrecs records)" c.err || fail "convert does not count $rrecs records: $(cat c.err)"
# the fatal-signal path converts in a fresh process, in the new directory too
NTH_VPS=2 NTH_TRACE=rel/s.json RT_DEMO_CHDIR="$here/away" "$DEMO" sigterm >/dev/null 2>s.err; st=$?
[ $st = $((128 + 15)) ] || fail "sigterm: status $st: $(cat s.err)"
[ -s rel/s.json ] || fail "sigterm: no rel/s.json after chdir: $(cat s.err)"
check_json rel/s.json
grep -q "^nthlib: trace: wrote $here/rel/s.json (" s.err || fail "sigterm: $(cat s.err)"
# a .bin trace stays where it was asked for
NTH_VPS=2 NTH_TRACE=rel/b.bin RT_DEMO_CHDIR="$here/away" "$DEMO" exit >/dev/null 2>b.err || fail "bin: $(cat b.err)"
[ -s rel/b.bin ] || fail "bin: no rel/b.bin"
# ... and says where it went, as every other format does, counting its
# records as nth-trace does ((size - 64-byte header) / 32)
brecs=$(( ($(stat -c %s rel/b.bin) - 64) / 32 ))
grep -qx "nthlib: trace: wrote $here/rel/b.bin ($(stat -c %s rel/b.bin) bytes, $brecs records, 0 events lost)" b.err ||
    fail "bin: no wrote line for $here/rel/b.bin: '$(cat b.err)'"
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
# nth-trace convert without -o (nth-trace-small-things #1): PATH.PID.bin
# gives PATH in PATH's format. The child's file would give rel/p.json, the
# parent's trace: kept, and rel/p.CPID.json written instead, said; the
# parent's own file replaces rel/p.json (its own trace), silently.
ppid=$(jq -r '[.traceEvents[] | select(.ph == "M" and .name == "process_name") | .pid][0]' rel/p.json)
rm "rel/p.$cpid.json"
"$TOOL" convert "rel/p.json.$cpid.bin" 2>c.err || fail "convert child's bin: status $?: $(cat c.err)"
grep -qx "nth-trace: rel/p.json holds another process's trace (kept); writing rel/p.$cpid.json" c.err ||
    fail "convert child's bin: no line about rel/p.json: '$(cat c.err)'"
[ "$(pid_in "rel/p.$cpid.json")" = "$cpid" ] || fail "convert child's bin: rel/p.$cpid.json: $(ls rel)"
[ "$(pid_in rel/p.json)" = "$ppid" ] || fail "convert child's bin replaced rel/p.json"
"$TOOL" convert "rel/p.json.$ppid.bin" 2>c.err || fail "convert parent's bin: status $?: $(cat c.err)"
grep -qx "nth-trace: wrote rel/p.json ([0-9]* bytes from [0-9]* records)" c.err || fail "convert parent's bin: '$(cat c.err)'"
[ ! -e "rel/p.json.$ppid.json.gz" ] || fail "convert wrote the old default name"
# every format the name gives: .json.gz and .prv (a .prv, not JSON), and a
# name without a suffix
for name in z.json.gz v.prv n; do
    NTH_VPS=1 NTH_TRACE=$name "$DEMO" return >/dev/null 2>f.err || fail "$name: $(cat f.err)"
    bin=$(ls $name.[0-9]*.bin)
    out=$name; [ $name = n ] && out=n.json
    rm "$out"
    "$TOOL" convert -q "$bin" 2>c.err || fail "convert $bin: status $?: $(cat c.err)"
    [ -s "$out" ] || fail "convert $bin: no $out: $(ls)"
    "$TOOL" convert -q "$bin" 2>c.err || fail "convert $bin again: $(cat c.err)"
    [ ! -s c.err ] || fail "convert $bin again over its own output: '$(cat c.err)'"
done
head -c 9 v.prv | grep -q "^#Paraver " || fail "convert v.prv.PID.bin: v.prv is no Paraver trace"
gzip -t z.json.gz || fail "convert z.json.gz.PID.bin: not gzip"
# Two unrelated processes on one name (#6): the child of a traced program
# started without NTH_TRACE_MAIN_PID is no member of its tree; while the
# first lives the second writes NAME.PID and says so at its start, and
# neither replaced the other.
NTH_VPS=1 NTH_TRACE=u.json RT_DEMO_SPAWN="echo \$\$ >$here/u.pid; exec env -u NTH_TRACE_MAIN_PID $DEMO return >/dev/null" \
    "$DEMO" return >/dev/null 2>u.err || fail "unrelated: status $?: $(cat u.err)"
upid=$(cat u.pid)
grep -qx "nthlib: trace: another process is tracing to $here/u.json; this one writes $here/u.$upid.json" u.err ||
    fail "unrelated: the second did not say where it writes: '$(cat u.err)'"
[ "$(pid_in "u.$upid.json")" = "$upid" ] || fail "unrelated: u.$upid.json missing or not its own: $(ls u.*)"
[ "$(pid_in u.json)" != "$upid" ] || fail "unrelated: the second's trace is in u.json"
# the same for a .bin trace, whose records go straight to the name: the
# second must not truncate the first's live file
NTH_VPS=1 NTH_TRACE=w.bin RT_DEMO_SPAWN="echo \$\$ >$here/w.pid; exec env -u NTH_TRACE_MAIN_PID $DEMO return >/dev/null" \
    "$DEMO" return >/dev/null 2>w.err || fail "unrelated bin: status $?: $(cat w.err)"
wpid=$(cat w.pid)
[ -s "w.$wpid.bin" ] || fail "unrelated bin: no w.$wpid.bin: $(cat w.err)"
"$TOOL" convert -q w.bin -o w.json 2>c.err || fail "unrelated bin: w.bin damaged: $(cat c.err)"
[ "$(pid_in w.json)" != "$wpid" ] || fail "unrelated bin: w.bin holds the second process"
# one after the other: the name is free again (no lock file left)
NTH_VPS=1 NTH_TRACE=u.json "$DEMO" return >/dev/null 2>u2.err || fail "rerun: $(cat u2.err)"
grep -q "^nthlib: trace: wrote $here/u.json (" u2.err || fail "rerun did not write u.json: '$(cat u2.err)'"
# no current directory to resolve against: said, and the program runs untraced
mkdir gone
( cd gone && rmdir "$here/gone" && NTH_VPS=1 NTH_TRACE=g.json exec "$DEMO" return ) >/dev/null 2>g.err; st=$?
[ $st = 0 ] || fail "deleted cwd: status $st: $(cat g.err)"
grep -q "^nthlib: trace: not tracing to g.json: the current directory cannot be named (.*); give NTH_TRACE an absolute path$" g.err ||
    fail "deleted cwd: '$(cat g.err)'"
[ "$(wc -l < g.err)" = 1 ] || fail "deleted cwd: not the one line the README promises: '$(cat g.err)'"

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
