#!/bin/bash
# libnth-probes.so with a gfortran program built with -finstrument-functions
# -g: every call is a slice named by symbol and file:line, nested, inside the
# running nano-thread's RUN slice; a module procedure shows as module::name
# (gfortran's symbol is __module_MOD_name); NTH_PROBES_EXCLUDE (matched
# against the shown name, the procedure name alone and the symbol) and
# NTH_PROBES_MIN_NS leave calls out.
. "$top_srcdir/tests/trace/lib.sh"
command -v gfortran >/dev/null || { echo "gfortran missing: scripts/install-deps.sh installs it"; exit 77; }
libs=$top_builddir/.libs
[ -e "$libs/libnth-probes.so" ] || fail "libnth-probes.so not built"
san=$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")
gfortran -g -O0 -finstrument-functions $san "$top_srcdir/tests/trace/probes_demo.f90" -o demo \
    -L"$libs" -Wl,--no-as-needed -lnth-probes -lnth -Wl,-rpath,"$libs" || fail "gfortran build"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
NTH_TRACE=p.json ./demo || fail "demo exited $?"
check_json p.json
main=$(tid_of p.json "main #1"); fns=$(tid_of p.json "main #1 functions")
[ -n "$main" ] && [ -n "$fns" ] || fail "tracks of main missing"
count() { jq --argjson t "$fns" --arg re "$2" '[.traceEvents[]|select(.tid==$t and .ph=="X" and (.name|test($re)))]|length' "$1"; }
[ "$(count p.json '^work::small_step \(probes_demo\.f90:[0-9]+\)$')" = 8 ] || fail "small_step: $(count p.json small_step) slices, 8 calls"
[ "$(count p.json '^work::compute \(probes_demo\.f90:[0-9]+\)$')" = 2 ] || fail "compute: 2 calls expected"
# nesting: each small_step lies inside a compute slice, each slice inside a RUN slice of main
jq -e --argjson t "$fns" --argjson m "$main" '
  def spans(tid): [.traceEvents[]|select(.tid==tid and .ph=="X")
    | {name, b: (.ts * 1000 | round), e: ((.ts * 1000 | round) + (.dur * 1000 | round))}];
  (spans($t)) as $f | (spans($m) | map(select(.name=="RUN"))) as $run
  | ($f | map(select(.name|test("small_step"))) | length == 8 and
       all(. as $s | $f | any((.name|test("compute")) and .b <= $s.b and .e >= $s.e)))
    and ($f | all(. as $s | $run | any(.b <= $s.b and .e >= $s.e)))' p.json >/dev/null \
    || fail "function slices do not nest in compute / main's RUN slice"
# Paraver names the functions too
NTH_TRACE=p.prv ./demo || fail "demo (prv) exited $?"
grep -q '^60000020 *\|EVENT_TYPE' p.pcf && grep -q 'work::compute (probes_demo.f90:' p.pcf || fail ".pcf lacks function names"
# exclusion by pattern, and by duration
# (the procedure name as the README's example writes it, the shown name, the symbol)
for pat in 'small_*' 'work::small*' '__work_MOD_small*' 'nothing,*_step'; do
    NTH_TRACE=x.json NTH_PROBES_EXCLUDE="$pat" ./demo || fail "demo (exclude $pat) exited $?"
    check_json x.json
    [ "$(count x.json small_step)" = 0 ] && [ "$(count x.json '^work::compute ')" = 2 ] \
        || fail "NTH_PROBES_EXCLUDE='$pat' left $(count x.json small_step) small_step slices"
done
NTH_TRACE=x.json NTH_PROBES_EXCLUDE='compute' ./demo || fail "demo (exclude compute) exited $?"
[ "$(count x.json small_step)" = 8 ] && [ "$(count x.json compute)" = 0 ] || fail "NTH_PROBES_EXCLUDE=compute"
NTH_TRACE=m.json NTH_PROBES_MIN_NS=1000000000000 ./demo || fail "demo (min) exited $?"
check_json m.json
[ "$(count m.json .)" = 0 ] || fail "NTH_PROBES_MIN_NS kept short calls"
NTH_TRACE=z.json NTH_PROBES_MIN_NS=0 ./demo || fail "demo (min 0) exited $?"
[ "$(count z.json small_step)" = 8 ] || fail "NTH_PROBES_MIN_NS=0 lost calls"
exit 0
