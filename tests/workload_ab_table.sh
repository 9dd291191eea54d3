#!/bin/sh
# bench/workload_ab_table.py, the summary of bench/workload_ab.sh, on
# records made up here so that every figure is known: two variants of one
# round whose driver runs measured different sequential references. "eff*"
# must divide both by the round's pooled reference (per kernel, the median
# of the variants' references), so that equal makespans and runs give equal
# eff* whatever each run's own reference; "seq*" is the seq mix's eff*, and
# a missing file or record is a one-line error, not a traceback.
set -u
src=${top_srcdir:-..}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# rec VARIANT IMPL MAKESPAN DRIVER_EFF LU_REF SOR_REF LU_RUNS SOR_RUNS
rec() {
    cat <<J
{"variant":"$1","round":1,"bench":"degradation","impl":"$2","value":0.5,"unit":"ratio","params":{"mix":"lu+sor","instance":"lu#0","kernel":"lu","size":1000,"threads":2,"cpus":2},"mean_s":0.2,"runs":$7}
{"variant":"$1","round":1,"bench":"degradation","impl":"$2","value":0.5,"unit":"ratio","params":{"mix":"lu+sor","instance":"sor#1","kernel":"sor","size":1500,"threads":2,"cpus":2},"mean_s":0.2,"runs":$8}
{"variant":"$1","round":1,"bench":"workload_makespan","impl":"$2","value":$3,"unit":"s","params":{"mix":"lu+sor","cpus":2}}
{"variant":"$1","round":1,"bench":"workload_efficiency","impl":"$2","value":$4,"unit":"ratio","params":{"mix":"lu+sor","cpus":2},"makespan_s":$3,"seq_best_s":{"lu":$5,"sor":$6}}
{"variant":"$1","round":1,"bench":"migrations_per_s","impl":"$2","value":1.0,"unit":"migrations/s","params":{"mix":"lu+sor","cpus":2}}
J
}
# Variant a measured lu 0.2 / sor 0.2, variant b 0.3 / 0.4: pooled 0.25 / 0.3.
# nth-malleable, both variants: makespan 1.0, lu 5 runs, sor 4 runs:
# eff* = (0.25 * 5 + 0.3 * 4) / (2 * 1.0) = 1.225.
# seq mix, both variants: makespan 2.0, 4 and 4 runs: (0.25 * 4 + 0.3 * 4) / 4 = 0.55.
{
    rec a nth-malleable 1.0 0.9 0.2 0.2 5 4; rec a glibc 2.0 0.4 0.2 0.2 5 4; rec a seq 2.0 0.4 0.2 0.2 4 4
    rec b nth-malleable 1.0 1.55 0.3 0.4 5 4; rec b glibc 2.0 0.6 0.3 0.4 5 4; rec b seq 2.0 0.7 0.3 0.4 4 4
} >"$out/ab.json"
python3 "$src/bench/workload_ab_table.py" "$out/ab.json" >"$out/table" 2>"$out/err" || {
    echo "FAIL: exited non-zero: $(cat "$out/err")"; exit 1; }
cat "$out/table"
for v in a b; do
    # columns: variant mix makespan effic. eff* migr/s mig/s-glibc mk/glibc seq* eff*/seq*
    line=$(grep "^$v " "$out/table") || { echo "FAIL: no row for variant $v"; exit 1; }
    set -- $line
    [ "$5" = 1.225 ] || { echo "FAIL: variant $v: eff* $5, want 1.225 (the pooled reference)"; exit 1; }
    [ "$8" = 0.50 ] || { echo "FAIL: variant $v: mk/glibc $8, want 0.50"; exit 1; }
    [ "$9" = 0.550 ] || { echo "FAIL: variant $v: seq* $9, want 0.550"; exit 1; }
    [ "${10}" = 2.227 ] || { echo "FAIL: variant $v: eff*/seq* ${10}, want 2.227"; exit 1; }
done
# The driver's own efficiencies differ (0.9 and 1.55): the "effic." column keeps them.
grep -q '^a  *lu+sor  *1.000  *0.900 ' "$out/table" && grep -q '^b  *lu+sor  *1.000  *1.550 ' "$out/table" || {
    echo "FAIL: the driver's own efficiency column changed"; exit 1; }
# Bad input: one line on stderr, exit 1 (no traceback); no argument: usage, exit 2.
python3 "$src/bench/workload_ab_table.py" "$out/missing.json" >/dev/null 2>"$out/err"; rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$out/err")" = 1 ] || { echo "FAIL: missing file: rc $rc, stderr: $(cat "$out/err")"; exit 1; }
echo '{"variant":"a","round":1,"bench":"workload_efficiency"}' >"$out/bad.json"
python3 "$src/bench/workload_ab_table.py" "$out/bad.json" >/dev/null 2>"$out/err"; rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$out/err")" = 1 ] || { echo "FAIL: broken record: rc $rc, stderr: $(cat "$out/err")"; exit 1; }
python3 "$src/bench/workload_ab_table.py" >/dev/null 2>&1; rc=$?
[ "$rc" = 2 ] || { echo "FAIL: no argument: rc $rc, want 2"; exit 1; }
echo "ok: workload_ab_table.py"
