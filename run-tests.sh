#!/usr/bin/env bash
# The test command: install what is missing, build (reusing a build), run
# `make check`, and print one closing line "N passed, N failed".
#   ./run-tests.sh            the default build in build/
#   ./run-tests.sh --asan     AddressSanitizer+UBSan build in build-asan/
#   ./run-tests.sh --tsan     ThreadSanitizer build in build-tsan/
set -uo pipefail
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
bdir=build; opts=(--enable-werror)
case "${1:-}" in
  --asan) bdir=build-asan; opts+=(--enable-sanitizers=address) ;;
  --tsan) bdir=build-tsan; opts+=(--enable-sanitizers=thread) ;;
  "") ;;
  *) echo "run-tests.sh: unknown option '$1' (accepted: --asan, --tsan)" >&2; exit 2 ;;
esac
scripts/install-deps.sh || exit 1
scripts/build.sh "$bdir" "${opts[@]}" || { echo "0 passed, 1 failed"; exit 1; }
cd "$bdir"
# Count this run's results only: a reused build keeps the .trs of a test
# that is no longer built (e.g. the OpenMP ones in a TSan build).
find . -name '*.trs' -delete
# Build the check programs first, quietly (silent rules, -s): their ~300
# compiler and libtool lines only matter when the build fails, and then
# the log's last lines say why. `TESTS=` runs no test here.
blog=$(mktemp "${TMPDIR:-/tmp}/nth-check-build.XXXXXX")
if ! make -s -j"$(nproc)" V=0 check TESTS= >"$blog" 2>&1; then
  echo "run-tests.sh: building the tests failed; the build's last lines:" >&2
  grep -v '^make\[[0-9]*\]: \(Entering\|Leaving\)' "$blog" | tail -n 40 >&2
  rm -f "$blog"
  echo "0 passed, 1 failed"; exit 1
fi
rm -f "$blog"
make -s -j"$(nproc)" V=0 check; rc=$?
pass=0; fail=0; skip=0
while IFS= read -r trs; do
  r=$(sed -n 's/^:test-result: //p' "$trs" | head -n1)
  case "$r" in PASS|XFAIL) pass=$((pass+1));; SKIP) skip=$((skip+1));; *) fail=$((fail+1)); echo "FAILED: ${trs%.trs}"
       # The failing lines, so a CI log alone says what broke.
       grep -E 'FAIL|ERROR|CHECK failed|not ok|Assertion|signal' "${trs%.trs}.log" 2>/dev/null | head -n 20 | sed 's/^/    /';; esac
done < <(find . -name '*.trs')
echo "$pass passed, $fail failed, $skip skipped"
[ "$rc" -eq 0 ] && [ "$fail" -eq 0 ]
