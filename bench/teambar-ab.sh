#!/usr/bin/env bash
# teambar-ab.sh ROUNDS OUT -- wall times of tests/parallel/test_parallel,
# natively and with libnth-pthread.so preloaded, for an unfixed binary
# (TEAMBAR_BEFORE=path) and the build's own, the four in turn each round
# (interleaved, so that the machine's load falls on all alike). Lines of
# OUT: "before|after native|shim SECONDS LOAD1". bench/RESULTS.md, "teambar".
set -uo pipefail
[ $# -eq 2 ] || { echo "usage: TEAMBAR_BEFORE=old/test_parallel $0 ROUNDS OUT (in a build dir)" >&2; exit 2; }
before=${TEAMBAR_BEFORE:?TEAMBAR_BEFORE: path of the unfixed test_parallel}
after=$PWD/tests/parallel/test_parallel
shim=$PWD/.libs/libnth-pthread.so
t=$(mktemp); trap 'rm -f "$t"' EXIT
: >"$2"
for _ in $(seq "$1"); do
  for v in before after; do
    p=$before; [ $v = after ] && p=$after
    /usr/bin/time -o "$t" -f %e timeout -s KILL 120 "$p" >/dev/null 2>&1
    echo "$v native $(tail -1 "$t") $(cut -d' ' -f1 /proc/loadavg)" >>"$2"
    /usr/bin/time -o "$t" -f %e timeout -s KILL 120 env LD_PRELOAD="$shim" "$p" >/dev/null 2>&1
    echo "$v shim $(tail -1 "$t") $(cut -d' ' -f1 /proc/loadavg)" >>"$2"
  done
done
