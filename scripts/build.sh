#!/usr/bin/env bash
# Configure and build nthlib in a build directory, reusing an existing build.
# usage: scripts/build.sh BUILDDIR [configure options...]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bdir=$1; shift
cd "$top"
# Regenerate when configure is missing or older than any build input (a part
# added sources that need new auxiliary files, e.g. depcomp).
stale=yes
if [ -x configure ] && [ -f build-aux/depcomp ]; then
  [ -n "$(find . -path ./build\* -prune -o \( -name configure.ac -o -name Makefile.am -o -name '*.mk' \) -newer configure -print | head -n1)" ] || stale=no
fi
[ "$stale" = no ] || autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
mkdir -p "$bdir"
cd "$bdir"
want="$*"
if [ ! -f Makefile ] || [ "$(cat .nth-configure-args 2>/dev/null)" != "$want" ]; then
  "$top/configure" -q "$@"
  echo "$want" > .nth-configure-args
fi
make -s -j"$(nproc)" >/dev/null
