#!/bin/sh
# The kernels are the Java Grande ones: a parallel SOR of size 1000 must give
# JGF's published Gtotal (JGFSORBench.JGFvalidate, tolerance 1e-12 there;
# exact here, as --ref compares with ==), and LU of size 500 must meet JGF's
# residual limit for that size (6.0).
set -u
b=${top_builddir:-.}/bench
fail=0
out=$("$b/sor-glibc" --size 1000 --threads 2 --ref 0.498574406322512 --json) \
    && echo "ok: sor 1000 Gtotal = JGF reference" \
    || { echo "FAIL: sor 1000 differs from JGF's Gtotal: $out"; fail=1; }
out=$("$b/lu-glibc" --size 500 --threads 2 --json) \
    && printf '%s\n' "$out" | jq -e '.check.limit == 6 and .check.residn <= 6' >/dev/null \
    && echo "ok: lu 500 residn within JGF's limit" \
    || { echo "FAIL: lu 500: $out"; fail=1; }
exit $fail
