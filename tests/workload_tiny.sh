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
jq -e -s '
  length > 0 and
  (map(select(.bench == "workload_makespan")) | length) >= 2 and
  all(.[]; (.impl | IN("seq", "glibc", "openmp", "nth-fixed", "nth-malleable")) and (.value | type) == "number")
  and all(.[] | select(.bench == "workload_makespan"); .unit == "s" and .value > 0)
  and all(.[] | select(.bench == "workload_efficiency"); .value > 0 and .cpu_idle >= 0 and .cpu_idle <= 1)
  and ([.[] | select(.bench == "workload_makespan" and .impl == "seq")] | length) == 2
  and all(.[] | select(.bench == "degradation" and .impl == "seq"); .params.threads == 1)
  and all(.[] | select(.bench == "migrations_per_s");
          (.source | type) == "string" and
          (if (.source | contains("none")) then .value == null else .value >= 0 end))
  and all(.[] | select(.bench == "workload_efficiency"); .driver_cpu_s >= 0 and .kernels_cpu_s > 0)
  and all(.[] | select(.bench == "degradation"); .value > 0 and (.params.instance | type) == "string")
  and ([.[] | select(.bench == "degradation" and .impl == "glibc" and .params.mix == "lu+sor+lu")] | length) == 3
  and (map(.bench) | unique) == (["degradation", "migrations_per_s", "workload_efficiency", "workload_makespan"])
' "$out/stdout" >/dev/null || { echo "FAIL: JSON does not hold the expected records"; exit 1; }
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
