#!/usr/bin/env bash
# Configure and build nthlib in a build directory, reusing an existing build.
# usage: scripts/build.sh BUILDDIR [configure options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bdir=$1; shift
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
mkdir -p "$bdir"
cd "$bdir"
want="$*"
if [ ! -f Makefile ] || [ "$(cat .nth-configure-args 2>/dev/null)" != "$want" ]; then
  "$top/configure" -q "$@"
  echo "$want" > .nth-configure-args
fi
make -s -j"$(nproc)" >/dev/null
