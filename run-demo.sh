#!/usr/bin/env bash
# The main job: build (reusing build/) and run the benchmarks, printing their table.
set -euo pipefail
top=$(cd "$(dirname "$0")" && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh build --enable-werror
cd build
make -s bench-programs >/dev/null 2>&1 || true
if [ -x bench/micro ]; then
  ./bench/micro "$@"
else
  echo "run-demo.sh: bench/micro is not built yet" >&2; exit 1
fi
