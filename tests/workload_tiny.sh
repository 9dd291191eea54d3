#!/bin/sh
# The workload driver's tiny preset runs end to end: every line of --json
# parses, every mix of every build reports makespan, efficiency (with the
# fraction of CPU time left idle, the driver's and the kernels' CPU
# seconds), migrations (null when not counted) and one degradation per
# instance, with sane values; the sequential build's reference mixes run
# with one thread per instance.
set -u
src=${top_srcdir:-..}
b=${top_builddir:-.}/bench
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# A copy of the driver in $out, run without --out: its default output
# directory is results/ beside it (bench/results), never the directory of
# the committed reference plots and .dat files (a run dirtied git status).
cp "$src/bench/workload" "$out/workload"
python3 "$out/workload" --tiny --json --no-plot --quiet --bindir "$b" >"$out/stdout" || {
    echo "FAIL: workload --tiny exited non-zero"; cat "$out/stdout"; exit 1; }
cat "$out/stdout"
# Each check is named so that a failure says which record broke it.
check() {  # NAME JQ-EXPRESSION over the array of records
    jq -e -s "$2" "$out/stdout" >/dev/null || { echo "FAIL: $1"; exit 1; }
}
check "two makespan records or more" \
  '(map(select(.bench == "workload_makespan")) | length) >= 2'
check "known impls, numeric values" \
  'all(.[]; (.impl | IN("seq", "glibc", "openmp", "nth-fixed", "nth-malleable")) and ((.value | type) == "number" or .bench == "migrations_per_s"))'
check "makespans in seconds, positive" \
  'all(.[] | select(.bench == "workload_makespan"); .unit == "s" and .value > 0)'
# cpu_idle is null when a mix ended within one /proc/stat tick (10 ms):
# tiny mixes take 7-20 ms, and no jiffy moving is not an idle fraction.
check "efficiency positive, CPU idle a fraction or null" \
  'all(.[] | select(.bench == "workload_efficiency"); .value > 0 and (.cpu_idle == null or (.cpu_idle >= 0 and .cpu_idle <= 1)))'
check "CPU idle measured for some mix" \
  'any(.[] | select(.bench == "workload_efficiency"); .cpu_idle != null)'
check "the sequential build runs both mixes" \
  '([.[] | select(.bench == "workload_makespan" and .impl == "seq")] | length) == 2'
check "the sequential build runs one thread per instance" \
  'all(.[] | select(.bench == "degradation" and .impl == "seq"); .params.threads == 1)'
check "migrations: a source, null only when not counted" \
  'all(.[] | select(.bench == "migrations_per_s"); (.source | type) == "string" and (if (.source | contains("none")) then .value == null else (.value | type) == "number" and .value >= 0 end))'
check "driver and kernels CPU seconds" \
  'all(.[] | select(.bench == "workload_efficiency"); .driver_cpu_s >= 0 and .kernels_cpu_s > 0)'
check "degradation per named instance, positive" \
  'all(.[] | select(.bench == "degradation"); .value > 0 and (.params.instance | type) == "string")'
check "three glibc instances in lu+sor+lu" \
  '([.[] | select(.bench == "degradation" and .impl == "glibc" and .params.mix == "lu+sor+lu")] | length) == 3'
check "exactly the four record kinds" \
  '(map(.bench) | unique) == (["degradation", "migrations_per_s", "workload_efficiency", "workload_makespan"])'
# The libnth builds run when built: the fixed team, and the malleable one
# under the CPU manager daemon the driver starts.
if [ -x "$b/lu-nth" ] && [ -x "$b/sor-nth" ]; then
    for impl in nth-fixed nth-malleable; do
        jq -e -s --arg i "$impl" '[.[] | select(.bench == "workload_makespan" and .impl == $i)] | length == 2' \
            "$out/stdout" >/dev/null || { echo "FAIL: no $impl mixes"; exit 1; }
    done
fi
[ -s "$out/results/workload.jsonl" ] && [ -s "$out/results/mixes.dat" ] || { echo "FAIL: data files missing from results/"; exit 1; }
for f in workload.jsonl speedup.dat mixes.dat degradation.dat; do
    [ ! -e "$out/$f" ] || { echo "FAIL: $f written beside the driver, not in results/"; exit 1; }
done
echo "ok: workload --tiny"
