#!/bin/bash
# libnth-probes.so names functions that no dynamic symbol table lists: a C
# program (PIE, -g) with a static function and a static inline-never one
# calls them; their slices must carry the ELF symbol name and file:line
# (the symbol table and DWARF lookup of trace_probes.c, not dladdr, which
# sees exported symbols only).
. "$top_srcdir/tests/trace/lib.sh"
libs=$top_builddir/.libs
[ -e "$libs/libnth-probes.so" ] || fail "libnth-probes.so not built"
san=$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")
cat > demo.c <<'C'
#include <stdio.h>
static double hidden_step(double x) { return x * 1.0001 + 1.0; }
static __attribute__((noinline)) double hidden_loop(int n, double x)
{
    for (int i = 0; i < n; i++)
        x = hidden_step(x);
    return x;
}
int main(void)
{
    double x = hidden_loop(4, 0.0) + hidden_loop(2, 0.0);
    printf("%f\n", x);
    return x > 5.0 ? 0 : 1;
}
C
cc -g -O0 -fPIE -pie -finstrument-functions $san demo.c -o demo \
    -L"$libs" -Wl,--no-as-needed -lnth-probes -lnth -Wl,-rpath,"$libs" || fail "cc build"
nm -D demo | grep -q hidden_ && fail "hidden_* are in the dynamic symbol table: the test would not test the ELF lookup"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
NTH_TRACE=c.json ./demo >/dev/null || fail "demo exited $?"
check_json c.json
fns=$(tid_of c.json "main #1 functions")
[ -n "$fns" ] || fail "no function track for main"
count() { jq --argjson t "$fns" --arg re "$1" '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.name|test($re)))]|length' c.json; }
[ "$(count '^hidden_step \(demo\.c:2\)$')" = 6 ] || fail "hidden_step: $(count hidden_step) slices named $(jq -r --argjson t "$fns" '[.traceEvents[]|select(.tid==$t and .ph=="X")|.name]|unique|join(", ")' c.json), 6 calls expected as 'hidden_step (demo.c:2)'"
[ "$(count '^hidden_loop \(demo\.c:[34]\)$')" = 2 ] || fail "hidden_loop: 2 calls expected as 'hidden_loop (demo.c:3 or 4: the line of its first instruction)'"
exit 0
