#!/usr/bin/env bash
# stackjump.sh -- a thread created with a 1 MiB pthread_attr_setstacksize
# that runs a 3 MiB local array (posix-bigframe jump) jumps over its guard
# page. Natively it dies of SIGSEGV; under the shim it must die of SIGSEGV
# too, after the runtime's line naming the thread:
#   nthlib: stack overflow in nano-thread N (jumper)
# (nthlib/overflow.c: the interrupted stack pointer below the running
# nano-thread's stack), not a bare SIGSEGV. With the default VPs and one.
# environment: top_builddir, NTH_SHIM_BUILT, NTH_SHIM_LIB (as run-compare.sh)
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
if [ "${NTH_SHIM_BUILT:-no}" != yes ]; then
  echo "SKIP: libnth-pthread.so is not part of the build yet"; exit 77
fi
lib=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
prog=$top_builddir/tests/shim/posix-bigframe
[ -f "$lib" ] || { echo "FAIL: the build makes the shim but $lib is missing"; exit 1; }
[ -x "$prog" ] || { echo "FAIL: $prog is not built"; exit 1; }
if ldd "$lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
  echo "SKIP: $lib is a sanitizer build (its runtime's pthread_* interceptors run ahead of the shim's); tested in the plain build"
  exit 77
fi
err=$(mktemp "${TMPDIR:-/tmp}/stackjump.XXXXXX")
trap 'rm -f "$err"' EXIT
fail=0
line='^nthlib: stack overflow in nano-thread [0-9]+ \(jumper\)$'

# The reference: natively the frame kills the process (else the program
# does not jump and the shim runs below prove nothing).
(ulimit -c 0; timeout -s KILL 60 "$prog" jump >/dev/null 2>"$err") 2>/dev/null; rc=$?
if [ "$rc" = 139 ]; then
  echo "ok   native: death by SIGSEGV"
else
  echo "FAIL native: status $rc, want 139 (death by SIGSEGV)"; fail=1
fi

for vps in "" 1; do
  what="shim${vps:+, NTH_VPS=$vps}"
  (ulimit -c 0; timeout -s KILL 60 env LD_PRELOAD="$lib" ${vps:+NTH_VPS=$vps} "$prog" jump >/dev/null 2>"$err") 2>/dev/null; rc=$?
  if [ "$rc" = 139 ] && [ "$(grep -cE "$line" "$err")" = 1 ]; then
    echo "ok   $what: death by SIGSEGV after one line naming the thread"
  else
    echo "FAIL $what: status $rc (want 139) and stderr should have one line matching $line:"
    head -5 "$err" | sed 's/^/  | /'
    fail=1
  fi
done
exit $fail
