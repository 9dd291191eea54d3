#!/usr/bin/env bash
# The main job: build everything (reusing build/), then run the short
# multiprogrammed LU/SOR workload on this machine -- glibc pthreads, OpenMP,
# libnth with a fixed team, and libnth malleable under the CPU manager, which
# the driver starts -- print its table and write the plots and data files
# in bench/results/ (beside bench/RESULTS.md, not tracked: the plots
# committed in bench/ are the reference run RESULTS.md describes, and a
# run leaves git status clean). A progress line runs on stderr meanwhile.
#   ./run-demo.sh              the short demo (1 min quiet, 17 min at load 17-32, on 2 CPUs: README)
#   ./run-demo.sh --full       the thesis's four workloads (much longer)
#   ./run-demo.sh --json       JSON lines instead of the table
# Other options go to bench/workload unchanged (see bench/workload --help).
set -euo pipefail
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
preset=--short
args=()
for a in "$@"; do
  case "$a" in
    --short|--full|--tiny) preset=$a ;;
    *) args+=("$a") ;;
  esac
done
echo "[demo] installing dependencies and building (build/)..." >&2
scripts/install-deps.sh
scripts/build.sh build --enable-werror
make -s -C build -j2 bench-programs >/dev/null
for p in lu-seq lu-glibc lu-nth sor-nth cpumgr; do
  f=build/bench/$p; [ $p = cpumgr ] && f=build/cpumgr/cpumgr
  [ -x "$f" ] || { echo "run-demo.sh: $f was not built" >&2; exit 1; }
done
echo "[demo] running bench/workload $preset (load average: $(cut -d' ' -f1-3 /proc/loadavg))" >&2
exec bench/workload "$preset" --bindir build/bench --cpumgr build/cpumgr/cpumgr ${args[@]+"${args[@]}"}
