#!/bin/sh
# Every kernel build validates at small sizes and several team sizes, and the
# parallel SOR builds reproduce the sequential build's Gtotal exactly (the
# value is taken from a separate run of sor-seq, passed with --ref).
set -u
b=${top_builddir:-.}/bench
fail=0
# Correctness only: libgomp's spinning on an oversubscribed, shared machine
# would only make the test slow.
OMP_WAIT_POLICY=passive; export OMP_WAIT_POLICY
builds="seq glibc"
[ -x "$b/lu-openmp" ] && builds="$builds openmp"
[ -x "$b/lu-nth" ] && builds="$builds nth"

check() { # description, then the command; the command must validate
    desc=$1; shift
    out=$("$@" --json 2>&1); rc=$?
    if [ $rc -ne 0 ]; then echo "FAIL ($rc): $desc: $out"; fail=1; return; fi
    if ! printf '%s\n' "$out" | jq -e -s 'length > 0 and all(.check.ok == true)' >/dev/null; then
        echo "FAIL: $desc: $out"; fail=1; return
    fi
    echo "ok: $desc"
}

for size in 5 61; do
    ref=$("$b/sor-seq" --size $size --json | jq -r '.check.gtotal')
    case "$ref" in ''|null) echo "FAIL: no sequential Gtotal for size $size"; fail=1; continue ;; esac
    for impl in $builds; do
        [ "$impl" = seq ] && teams=1 || teams=3
        [ "$impl" != seq ] && [ $size = 61 ] && teams="1 2 3"
        for t in $teams; do
            check "lu-$impl size $size threads $t" "$b/lu-$impl" --size $size --threads $t --runs 2
            [ $size = 61 ] && check "sor-$impl size $size threads $t (own reference)" "$b/sor-$impl" --size $size --threads $t
            check "sor-$impl size $size threads $t == sor-seq $ref" "$b/sor-$impl" --size $size --threads $t --ref "$ref"
        done
    done
done
# The libnth build also runs malleable: team size from the CPUs assigned.
if [ -x "$b/lu-nth" ]; then
    ref=$("$b/sor-seq" --size 61 --json | jq -r '.check.gtotal')
    check "lu-nth size 61 malleable" "$b/lu-nth" --size 61 --threads 2 --malleable
    check "sor-nth size 61 malleable == sor-seq" "$b/sor-nth" --size 61 --threads 2 --malleable --ref "$ref"
    # The human header says what a malleable team is (it follows the CPUs
    # granted, up to those requested), not its size at start (was
    # "threads=1 (malleable)").
    hdr=$("$b/lu-nth" --size 61 --threads 2 --malleable 2>&1 | head -n1)
    case "$hdr" in
        *" threads=malleable (max 2) "*) echo "ok: lu-nth --malleable header: $hdr" ;;
        *) echo "FAIL: lu-nth --malleable header: $hdr"; fail=1 ;;
    esac
    hdr=$("$b/lu-nth" --size 61 --threads 3 2>&1 | head -n1)
    case "$hdr" in
        *" threads=3 "*) echo "ok: lu-nth fixed header: $hdr" ;;
        *) echo "FAIL: lu-nth fixed header: $hdr"; fail=1 ;;
    esac
fi
# The JSON line carries what the workload driver reads.
line=$("$b/lu-glibc" --size 50 --threads 2 --json)
printf '%s\n' "$line" | jq -e '.bench == "lu" and .impl == "glibc" and .unit == "s" and .value > 0
    and .params.size == 50 and .params.threads == 2 and (.migrations | type) == "number"' >/dev/null \
    || { echo "FAIL: JSON fields: $line"; fail=1; }
# The region-overhead benchmark (bench/regions.sh) runs every team backend end
# to end and prints both rows with a figure for each; the figures themselves
# are bench's business.
out=$(REGIONS_REPS=50 sh "${top_srcdir:-..}/bench/regions.sh" "$b" 2 1 2>&1)
rc=$?
for row in region_parallel region_barrier; do
    [ $rc -eq 0 ] && printf '%s\n' "$out" | grep -Eq "^$row +[0-9.]+ .* [0-9.]+ +[0-9.]+ *" \
        || { echo "FAIL: regions.sh ($rc), row $row: $out"; fail=1; }
done
exit $fail
