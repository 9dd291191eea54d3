#!/usr/bin/env bash
# nthlib-suite.sh -- the runtime's own test programs (every part's tests
# except the shim's) run with libnth-pthread.so preloaded: the runtime must
# not trip over the shim (its kernel threads, internal locks and calls to
# sched_yield/poll/write must still reach libc, not nano-thread versions).
# Each program runs natively first as the reference; a program that passes
# natively must pass under the shim.
# environment: top_builddir, NTH_SHIM_BUILT, NTH_SHIM_LIB (as run-compare.sh)
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
if [ "${NTH_SHIM_BUILT:-no}" != yes ]; then
  echo "SKIP: libnth-pthread.so is not part of the build yet"; exit 77
fi
lib=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
[ -f "$lib" ] || { echo "FAIL: the build makes the shim but $lib is missing"; exit 1; }
if ldd "$lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
  echo "SKIP: $lib is a sanitizer build (its runtime's pthread_* interceptors run ahead of the shim's); tested in the plain build"
  exit 77
fi
preload=$lib
out=$top_builddir/tests/shim/suite-out
mkdir -p "$out"

progs=()
for d in "$top_builddir"/tests/*/; do
  [ "$(basename "$d")" = shim ] && continue
  for f in "$d"test*; do
    [ -f "$f" ] && [ -x "$f" ] || continue
    case "$f" in *.log|*.trs|*.o) continue ;; esac
    if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || grep -q 'temporary wrapper script' "$f" 2>/dev/null; then
      progs+=("$f")
    fi
  done
done
[ ${#progs[@]} -gt 0 ] || { echo "FAIL: no runtime test programs found under $top_builddir/tests"; exit 1; }

# Known gaps, reported as XFAIL (XPASS when they pass).
# cpumgr/test_runtime starts rt_app, an nthlib application linked with
# libnth statically. Preloaded, its process holds two runtimes: its own,
# and the shim's libnth.so, which starts when rt_app's own pthread_create
# (its state reporter) reaches the shim. Each runtime attaches to the
# cpumgr as an application of its own (the daemon logs "rt_app (pid P)
# attached to slot 0" and "... slot 1": two slots, one pid), so under
# equipartition each gets one of the two CPUs and rt_app reports
# "N=1 CPUS=0 EN=1 PK=1" where its tests want "N=2 EN=2" (7 of 11 cases);
# the daemon's enforcement, per process, also moves the other runtime's
# threads. Not small to fix: a second runtime in one process would have to
# share its first one's slot (client and daemon). Statically linked nthlib
# programs are no unmodified pthread programs, which the shim is for.
# Cases that need a kernel thread that is no VP skip themselves under the
# shim (tests/core/child.h, child_pthread_makes_nano_threads).
xfail=" cpumgr/test_runtime "

fail=0
for p in "${progs[@]}"; do
  name=${p#"$top_builddir"/tests/}
  log=$out/${name//\//_}
  # libtool's wrapper scripts: run the program itself through libtool, so
  # that only it (not bash) gets the preloaded library
  pre=()
  grep -q 'temporary wrapper script' "$p" 2>/dev/null && pre=("$top_builddir/libtool" --mode=execute)
  timeout -s KILL 60 "${pre[@]}" "$p" >"$log.native" 2>&1
  rc=$?
  if [ "$rc" != 0 ]; then
    echo "SKIP-ONE $name: fails natively too (status $rc); its own test reports that"
    continue
  fi
  known=no
  case "$xfail" in *" $name "*) known=yes ;; esac
  limit=60; [ $known = yes ] && limit=15
  timeout -s KILL $limit "${pre[@]}" env LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 "$p" >"$log.shim" 2>&1
  rc=$?
  if [ "$rc" = 0 ] && [ $known = yes ]; then
    echo "XPASS $name: listed as a known gap but passed under the shim"
  elif [ "$rc" = 0 ]; then
    echo "PASS $name (natively and under the shim)"
  elif [ $known = yes ]; then
    echo "XFAIL $name under the shim (status $rc): a known gap (see the list above)"
  else
    echo "FAIL $name under the shim (status $rc):"
    grep -E '\[  (FAILED|ERROR)|FAIL|Assert|error' "$log.shim" | head -10 | sed 's/^/  | /'
    fail=1
  fi
done
exit $fail
