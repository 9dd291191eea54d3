#!/bin/bash
# NTH_TRACE_MALLOC=1 with libnth-malloc.so preloaded: counter tracks of malloc
# bytes in use (up by the 10 MiB the demo holds, then down) and malloc calls
# (never decreasing).
. "$top_srcdir/tests/trace/lib.sh"
lib=$top_builddir/.libs/libnth-malloc.so
# Without the preload the variable cannot work (glibc has no malloc hooks):
# the runtime says so in one line, naming the library to preload, rather
# than write a trace without the counters silently.
NTH_VPS=1 NTH_TRACE=n.json NTH_TRACE_MALLOC=1 "$top_builddir/tests/trace/rt_demo" return >/dev/null 2>err.txt \
    || fail "rt_demo without the preload exited $?: $(cat err.txt)"
[ -s n.json ] || fail "no trace without the preload"
grep -qE "^nthlib: NTH_TRACE_MALLOC=1 needs libnth-malloc.so preloaded \(LD_PRELOAD=([^ ]*/)?libnth-malloc.so\): this trace has no memory counters$" err.txt \
    || fail "NTH_TRACE_MALLOC=1 without the preload: '$(cat err.txt)'"
[ "$(grep -c NTH_TRACE_MALLOC err.txt)" = 1 ] || fail "more than one line: $(cat err.txt)"
NTH_VPS=1 NTH_TRACE=n.json NTH_TRACE_MALLOC=0 "$top_builddir/tests/trace/rt_demo" return >/dev/null 2>err.txt || fail "rt_demo (0) exited $?"
grep NTH_TRACE_MALLOC err.txt && fail "NTH_TRACE_MALLOC=0 printed the above"
case "$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")" in
    *sanitize*) echo "a malloc interposer cannot be preloaded under a sanitizer's own malloc"; exit 77 ;;
esac
[ -e "$lib" ] || fail "libnth-malloc.so not built"
NTH_TRACE=m.json NTH_TRACE_MALLOC=1 LD_PRELOAD="$lib" "$top_builddir/tests/trace/malloc_demo" 2>err.txt || fail "demo exited $?"
check_json m.json
grep NTH_TRACE_MALLOC err.txt && fail "the preloaded run printed the above"
NTH_VPS=1 NTH_TRACE=r.json NTH_TRACE_MALLOC=1 LD_PRELOAD="$lib" "$top_builddir/tests/trace/rt_demo" return >/dev/null 2>err.txt \
    || fail "rt_demo with the preload exited $?"
grep NTH_TRACE_MALLOC err.txt && fail "the preloaded runtime printed the above"
jq -e '[.traceEvents[]|select(.ph=="C" and .name=="malloc bytes in use")|.args.bytes] as $b
       | ($b|length) >= 12 and ($b|max) - ($b[0]) >= 10*1048576 and ($b|max) - ($b[-1]) >= 9*1048576' m.json >/dev/null \
    || fail "bytes in use: $(jq -c '[.traceEvents[]|select(.name=="malloc bytes in use")|.args.bytes]' m.json)"
jq -e '[.traceEvents[]|select(.ph=="C" and .name=="malloc calls")|.args.calls] as $c
       | ($c|length) >= 12 and ([range(1; $c|length) as $i | $c[$i] >= $c[$i-1]]|all) and ($c[-1] >= 10)' m.json >/dev/null \
    || fail "malloc calls counter"
# off unless asked, and a bad value is named
NTH_TRACE=o.json LD_PRELOAD="$lib" "$top_builddir/tests/trace/malloc_demo" || fail "demo (off) exited $?"
[ ! -e o.json ] || fail "traced without NTH_TRACE_MALLOC"
NTH_TRACE_MALLOC=yes LD_PRELOAD="$lib" "$top_builddir/tests/trace/malloc_demo" 2>err.txt || fail "demo (bad) exited $?"
grep -q "^nthlib: NTH_TRACE_MALLOC='yes' is not valid; accepted values: 1 .* or 0 " err.txt || fail "bad value message: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 1 ] || fail "bad value message not one line: $(cat err.txt)"
# Once per process tree: a child (here the demo run by sh, both under the
# preload) is not told again.
NTH_TRACE_MALLOC=2 LD_PRELOAD="$lib" sh -c '"$1"; "$1"' sh "$top_builddir/tests/trace/malloc_demo" 2>err.txt || fail "demo (bad, children) exited $?"
[ "$(grep -c "NTH_TRACE_MALLOC='2'" err.txt)" = 1 ] || fail "NTH_TRACE_MALLOC=2 reported $(grep -c "NTH_TRACE_MALLOC='2'" err.txt) times in one process tree: $(cat err.txt)"
exit 0
