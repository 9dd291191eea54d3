#!/bin/bash
# What a new user reads (a fresh-user trial): every line the runtime prints
# about a bad trace variable starts with "nthlib:", in config.c's wording
# (variable, value, accepted values), once each; nth-trace names an input
# it cannot read (not the output) and prints its usage for --help.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo

NTH_VPS=1 NTH_TRACE=e.json NTH_TRACE_FLUSH_MS=0 NTH_TRACE_LIMIT=1 NTH_TRACE_BUFFER=10 \
    "$DEMO" return >e.out 2>e.err || fail "rt_demo exited $?: $(cat e.err)"
for v in "NTH_TRACE_FLUSH_MS='0'" "NTH_TRACE_LIMIT='1'" "NTH_TRACE_BUFFER='10'"; do
    n=$(grep -c "^nthlib: $v is not valid; accepted values: " e.err)
    [ "$n" = 1 ] || fail "$v reported $n times in config.c's wording: $(cat e.err)"
done
grep -v '^nthlib: ' e.err && fail "lines without the nthlib: prefix (above)"
[ -s e.json ] || fail "no trace written with the defaults kept"

NTH_VPS=1 NTH_TRACE=e.txt "$DEMO" return >e.out 2>e.err || fail "rt_demo (bad NTH_TRACE) exited $?: $(cat e.err)"
grep -q "^nthlib: NTH_TRACE='e.txt' is not valid; accepted values: .*\.json" e.err || fail "bad NTH_TRACE: $(cat e.err)"
grep -v '^nthlib: ' e.err && fail "lines without the nthlib: prefix (above)"
# The same from a program that registers names (the trace API) before the
# runtime starts: both try NTH_TRACE, one line.
NTH_VPS=1 NTH_TRACE=e.txt "$top_builddir/tests/trace/names_demo" >e.out 2>e.err
n=$(grep -c "^nthlib: NTH_TRACE='e.txt' is not valid" e.err)
[ "$n" = 1 ] || fail "bad NTH_TRACE with the trace API used first: said $n times: $(cat e.err)"

# A bad NTH_TRACE_MALLOC without libnth-malloc.so preloaded (rt_demo links
# libnth statically): said once by libnth, as the interposer says it.
for v in 2 yes -1; do
    NTH_VPS=1 NTH_TRACE=m.json NTH_TRACE_MALLOC=$v "$DEMO" return >e.out 2>e.err || fail "rt_demo (NTH_TRACE_MALLOC=$v) exited $?: $(cat e.err)"
    n=$(grep -c "^nthlib: NTH_TRACE_MALLOC='$v' is not valid; accepted values: 1 .* or 0 " e.err)
    [ "$n" = 1 ] || fail "NTH_TRACE_MALLOC='$v' reported $n times: $(cat e.err)"
done
# NTH_TRACE_MAIN_PID that is no pid (nth-trace-small-things #4): the one
# line, and the process writes NTH_TRACE itself, as with it unset; a pid of
# another process (1: init) keeps its meaning: this one writes NAME.PID.
for v in abc -1 0 12x 99999999; do
    rm -f p.json p.*.json
    NTH_VPS=1 NTH_TRACE=p.json NTH_TRACE_MAIN_PID=$v "$DEMO" return >e.out 2>e.err || fail "rt_demo (NTH_TRACE_MAIN_PID=$v) exited $?: $(cat e.err)"
    n=$(grep -c "^nthlib: NTH_TRACE_MAIN_PID='$v' is not valid; accepted values: a process id 1\.\.4194304" e.err)
    [ "$n" = 1 ] || fail "NTH_TRACE_MAIN_PID='$v' reported $n times: $(cat e.err)"
    [ -s p.json ] || fail "NTH_TRACE_MAIN_PID='$v': p.json not written (treated as unset): $(ls; cat e.err)"
done
rm -f p.json
NTH_VPS=1 NTH_TRACE=p.json NTH_TRACE_MAIN_PID=1 "$DEMO" return >e.out 2>e.err || fail "rt_demo (NTH_TRACE_MAIN_PID=1) exited $?: $(cat e.err)"
! grep -q "NTH_TRACE_MAIN_PID" e.err || fail "NTH_TRACE_MAIN_PID=1 (a pid) reported: $(cat e.err)"
grep -q "^nthlib: trace: wrote $(pwd -P)/p\.[0-9]*\.json (" e.err || fail "NTH_TRACE_MAIN_PID=1: not NAME.PID: $(cat e.err)"
[ ! -e p.json ] || fail "NTH_TRACE_MAIN_PID=1: p.json written by a process that is not 1"

# A bad NTH_CPUMGR read by the cpumgr API before the runtime starts, then by
# the runtime's start: one line in one process.
NTH_VPS=1 NTH_CPUMGR=foo "$DEMO" request-first >e.out 2>e.err || fail "rt_demo (NTH_CPUMGR=foo) exited $?: $(cat e.err)"
n=$(grep -c "^nthlib: NTH_CPUMGR='foo' is not valid; accepted values: " e.err)
[ "$n" = 1 ] || fail "NTH_CPUMGR='foo' reported $n times: $(cat e.err)"

# nth-trace: an unreadable input is named as the input
"$TOOL" convert "$work/nonexistent.bin" -o x.json >t.out 2>t.err; st=$?
[ "$st" = 3 ] || fail "convert of a missing input: status $st, want 3"
grep -q "nonexistent.bin" t.err || fail "missing input not named: $(cat t.err)"
grep -q "x.json" t.err && fail "missing input blamed on the output: $(cat t.err)"
[ ! -e x.json ] || fail "output written for a missing input"
"$TOOL" merge "$work/nonexistent.bin" "$work/other.bin" -o y.json >t.out 2>t.err
grep -q "nonexistent.bin" t.err || fail "merge: missing input not named: $(cat t.err)"
# --help: usage on stdout, status 0; no arguments is still a usage error
for h in --help -h "convert --help"; do
    # shellcheck disable=SC2086
    "$TOOL" $h >h.out 2>h.err; st=$?
    [ "$st" = 0 ] && grep -q '^usage: nth-trace' h.out && [ ! -s h.err ] || fail "nth-trace $h: status $st, stdout '$(head -c 80 h.out)'"
done
# --version, as nthrun's (fresh15: refused as an unknown command)
"$TOOL" --version >h.out 2>h.err; st=$?
[ "$st" = 0 ] && grep -qx 'nth-trace (nthlib) [0-9][0-9.]*' h.out && [ ! -s h.err ] ||
    fail "nth-trace --version: status $st, stdout '$(head -c 80 h.out)', stderr '$(head -c 80 h.err)'"
"$TOOL" >h.out 2>h.err; st=$?
[ "$st" = 2 ] && grep -q '^usage: nth-trace' h.err || fail "nth-trace without arguments: status $st"
# an unknown command is named, then the usage, status 2
"$TOOL" bogus x.bin >h.out 2>h.err; st=$?
[ "$st" = 2 ] && grep -q "unknown command 'bogus'" h.err && grep -q '^usage: nth-trace' h.err ||
    fail "nth-trace bogus: status $st, stderr '$(head -c 120 h.err)'"
exit 0
