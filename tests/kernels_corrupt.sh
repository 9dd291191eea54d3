#!/bin/sh
# Validation can fail: with the --corrupt hook perturbing the result, every
# build must report the run as wrong and exit 1; bad usage exits 2.
set -u
b=${top_builddir:-.}/bench
fail=0
progs="lu-seq sor-seq lu-glibc sor-glibc"
[ -x "$b/lu-openmp" ] && progs="$progs lu-openmp sor-openmp"
[ -x "$b/lu-nth" ] && progs="$progs lu-nth sor-nth"
for p in $progs; do
    out=$("$b/$p" --size 40 --threads 1 --json --corrupt 2>/dev/null); rc=$?
    if [ $rc -ne 1 ]; then echo "FAIL: $p --corrupt exited $rc, expected 1"; fail=1; continue; fi
    printf '%s\n' "$out" | jq -e '.check.ok == false' >/dev/null \
        || { echo "FAIL: $p --corrupt did not report ok=false: $out"; fail=1; continue; }
    echo "ok: $p --corrupt fails validation"
done
# A wrong reference Gtotal must fail too (the comparison is exact).
ref=$("$b/sor-seq" --size 40 --json | jq -r '.check.gtotal')
wrong=$(awk -v r="$ref" 'BEGIN { printf "%.17g", r * (1 + 1e-12) }')
"$b/sor-glibc" --size 40 --threads 2 --ref "$wrong" --json >/dev/null 2>&1
[ $? -eq 1 ] && echo "ok: wrong --ref fails" || { echo "FAIL: sor-glibc accepted a wrong --ref"; fail=1; }
for bad in "--threads -1" "--size 2" "--runs 0" "--bogus" "--threads"; do
    # shellcheck disable=SC2086
    "$b/lu-glibc" $bad >/dev/null 2>&1
    [ $? -eq 2 ] && echo "ok: '$bad' is a usage error" || { echo "FAIL: '$bad' not rejected with 2"; fail=1; }
done
"$b/lu-seq" --threads 2 >/dev/null 2>&1
[ $? -eq 2 ] && echo "ok: seq refuses 2 threads" || { echo "FAIL: seq accepted 2 threads"; fail=1; }
"$b/sor-glibc" --malleable >/dev/null 2>&1
[ $? -eq 2 ] && echo "ok: glibc refuses --malleable" || { echo "FAIL: glibc accepted --malleable"; fail=1; }
exit $fail
