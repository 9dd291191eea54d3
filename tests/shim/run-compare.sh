#!/usr/bin/env bash
# run-compare.sh -- run each plain POSIX test program of tests/shim natively
# and under LD_PRELOAD=libnth-pthread.so (with the default VPs, and with one
# VP so that a blocking call that stalls its VP shows up as a hang), and
# compare stdout and exit status. The native run must pass on its own first:
# it is the reference.
#
# usage: run-compare.sh [NAME...]        (default: every program)
# environment:
#   top_builddir    build tree (set by `make check`)
#   NTH_SHIM_BUILT  "yes" when the build makes libnth-pthread.so: then a
#                   missing library is a failure, never a silent skip
#   NTH_SHIM_LIB    the library to preload (default: the build tree's)
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
progdir=$top_builddir/tests/shim
out=$progdir/compare-out
mkdir -p "$out"
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(threads mutex cond rwlock barrier spin keys sem signals sigmask cancel blocking fork forkrt forkc11 forkwait forkrelock sigwrite sigsafe sigaction sigjmp static_init first_call errno_migrate sigwake restart sleepint sleephook tls manyread rdtimers c11 cancelblk standinsig busy once negtime dlctor guard bigtls bigframe setid cpumask schedprio cleanupexc futexbar omp4 omp8 rbar)
# The C++ programs, built when configure found a C++ compiler (NTH_SHIM_CXX
# from make check; run by hand, when they are there).
if [ $# -eq 0 ] && { [ "${NTH_SHIM_CXX:-}" = yes ] || { [ -z "${NTH_SHIM_CXX:-}" ] && [ -x "$top_builddir/tests/shim/posix-cxxexit" ]; }; }; then
  names+=(cxxexit cxxcancel)
fi

lib=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
preload=
if [ "${NTH_SHIM_BUILT:-no}" = yes ]; then
  if [ ! -f "$lib" ]; then
    echo "FAIL: the build makes the shim but $lib is missing"
    exit 1
  fi
  if ldd "$lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
    # A sanitizer's runtime must come first in LD_PRELOAD, and its own
    # pthread_* interceptors then run ahead of the shim's and assume kernel
    # threads: preloading a sanitizer build of the shim is not a use we
    # support. The shim is tested in the plain build.
    echo "note: $lib is a sanitizer build: runs under the shim skipped (tested in the plain build)"
  else
    preload=$lib
  fi
else
  echo "note: libnth-pthread.so is not part of the build yet: native runs only"
fi

# Tests that run one program with an environment of their own (both
# natively and under the shim): the program, and the variables.
declare -A prog_of=([omp4]=omp [omp8]=omp)
declare -A envs=([omp4]="OMP_NUM_THREADS=4" [omp8]="OMP_NUM_THREADS=8")

# Programs built only where a tool exists: a missing one is a SKIP with
# its reason, not a failure.
declare -A optional=([omp]="needs a compiler with OpenMP (-fopenmp; left out of ThreadSanitizer builds, libgomp not being instrumented)"
                     [rbar]="needs rustc at configure time")

# run MODE NAME: run one program, leaving MODE.out, MODE.err and MODE.rc
run() {
  local mode=$1 name=$2 prog=$progdir/posix-${prog_of[$2]:-$2}
  local -a env=(${envs[$name]:-})
  case $mode in
    shim) env+=(LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 ${vps[$name]:+NTH_VPS=${vps[$name]}} ${shim_env[$name]:-}) ;;
    shim-vps1) env+=(LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 NTH_VPS=1 ${shim_env[$name]:-}) ;;
  esac
  # a known gap may hang: it gets less time
  local limit=${NTH_SHIM_TIMEOUT:-60}
  [ "$mode" != native ] && [ -n "${xfail[$name]:-}" ] && limit=20
  (cd "$out" && timeout -s KILL "$limit" env "${env[@]}" "$prog" >"$name.$mode.out" 2>"$name.$mode.err")
  echo $? >"$out/$name.$mode.rc"
}

# VPs for the default shim run where the program needs a number (else the
# runtime's default): errno_migrate forces migrations between two VPs,
# tls needs two to move threads between kernel threads; cancelblk runs
# with 2 as the shim-vps1 mode runs it with 1.
# futexbar, omp4/8 and rbar wait with raw futexes: with 2 VPs (and 1 in
# shim-vps1) their 4 or 8 threads outnumber the VPs by 2 or more, which
# hung before a stand-in stuck in the kernel got a stand-in of its own.
declare -A vps=([errno_migrate]=2 [tls]=2 [manyread]=2 [rdtimers]=2 [cancelblk]=2 [busy]=2
                [futexbar]=2 [omp4]=2 [omp8]=2 [rbar]=2)

# More environment for the shim runs of a program: sigjmp needs the stall
# watchdog off, so that a read that keeps its VP in the kernel (instead of
# lending it) hangs rather than being rescued after NTH_STALL_US.
declare -A shim_env=([sigjmp]="NTH_STALL_US=0")

# Programs not run with one VP, each with its reason: busy computes without
# calls in one thread while another waits, which needs a second VP
# (cooperative scheduling; the README's runtime limits).
declare -A novps1=([busy]="a thread that computes without calls keeps the only VP")

# Known gaps of the shim, each with its reason (the README's limits): these
# still run under the shim and their differences are shown, as XFAIL; one
# that passes is reported as XPASS so that the list gets shortened.
# (sem, signals and blocking, once here, read errno through an address taken
# before a migration; with a TLS block per thread, NTH_SHIM_TLS=thread, that
# address stays the thread's.)
declare -A xfail=()

# Programs whose shim runs are repeated (each run compared; the first
# difference fails): a race that a single run shows only sometimes.
# dlctor: before nthlib kept a nano-thread whose kernel thread holds
# ld.so's lock on that kernel thread (nthlib/ldso_lock.c), 6 of 20 of its
# runs with the default VPs (2 here) hung: 30 runs pass by chance once in
# 10^4 or so.
# sigwrite: against the shim before handlers ran in a trampoline
# (sighand.c), every run failed (part 1: the handler's write allocated)
# and 5 of 32 hung (part 2); the 30 runs are for the hangs.
# sigsafe: against the shim before sem_post in a handler went lock-free
# (sigdefer.c) and pthread_self there stopped allocating: see its comment
# for how often each part failed.
declare -A repeat=([dlctor]=30 [sigwrite]=30 [sigsafe]=5)

# Programs whose shim runs must say, once, on stderr, which process-shared
# or robust request was refused (fio, for one, dies on that ENOTSUP
# without a word of its own): the first refused call each makes.
declare -A note_once=([mutex]="pthread_mutexattr_setrobust(PTHREAD_MUTEX_ROBUST)"
                      [cond]="pthread_condattr_setpshared(PTHREAD_PROCESS_SHARED)"
                      [rwlock]="pthread_rwlockattr_setpshared(PTHREAD_PROCESS_SHARED)"
                      [barrier]="pthread_barrierattr_setpshared(PTHREAD_PROCESS_SHARED)")

# Programs whose shim runs must print no "nthlib:" line on stderr, each with
# the reason: a warning there means the shim could not do what the program
# relies on, even where stdout happens to match.
declare -A quiet=([bigtls]="the signal helper thread must start despite 80 000 bytes of static TLS")

# note_ok NAME MODE: the shim run's stderr has that note exactly once.
note_ok() {
  local want="nthlib: pthread shim: ${note_once[$1]} refused (ENOTSUP)"
  local n; n=$(grep -c 'refused (ENOTSUP)' "$out/$1.$2.err")
  [ "$n" = 1 ] && grep -qF "$want" "$out/$1.$2.err"
}

fail=0
for name in "${names[@]}"; do
  prog=${prog_of[$name]:-$name}
  if [ ! -x "$progdir/posix-$prog" ]; then
    if [ -n "${optional[$prog]:-}" ]; then
      echo "SKIP $name: posix-$prog is not built: ${optional[$prog]}"; continue
    fi
    echo "FAIL $name: $progdir/posix-$prog is not built"; fail=1; continue
  fi
  run native "$name"
  rc=$(cat "$out/$name.native.rc")
  if [ "$rc" != 0 ] || [ "$(tail -n1 "$out/$name.native.out")" != "== $prog: ok" ]; then
    echo "FAIL $name (native, status $rc): the reference run itself fails"
    sed 's/^/  | /' "$out/$name.native.out" "$out/$name.native.err" | grep -v '^  | [a-z]' | head -40
    grep -h '^FAIL' "$out/$name.native.out" | sed 's/^/  | /'
    fail=1; continue
  fi
  modes="native"
  if [ -n "$preload" ]; then
    for mode in shim shim-vps1; do
      if [ "$mode" = shim-vps1 ] && [ -n "${novps1[$name]:-}" ]; then
        modes="$modes (not shim-vps1: ${novps1[$name]})"
        continue
      fi
      reps=${repeat[$name]:-1} same=1
      for ((i = 0; i < reps; i++)); do
        run $mode "$name"
        src=$(cat "$out/$name.$mode.rc")
        if [ -n "${note_once[$name]:-}" ] && ! note_ok "$name" "$mode"; then
          echo "FAIL $name ($mode): stderr should say once \"nthlib: pthread shim: ${note_once[$name]} refused (ENOTSUP)...\""
          head -20 "$out/$name.$mode.err" | sed 's/^/  | /'
          fail=1; continue 2
        fi
        if [ -n "${quiet[$name]:-}" ] && grep -q '^nthlib:' "$out/$name.$mode.err"; then
          echo "FAIL $name ($mode): stderr should have no nthlib: line (${quiet[$name]})"
          grep '^nthlib:' "$out/$name.$mode.err" | head -5 | sed 's/^/  | /'
          fail=1; continue 2
        fi
        if [ "$src" != "$rc" ] || ! cmp -s "$out/$name.native.out" "$out/$name.$mode.out"; then
          same=0
          [ "$reps" -gt 1 ] && echo "  ($name, $mode: run $((i + 1)) of $reps differs)"
          break
        fi
      done
      if [ "$same" = 0 ]; then
        if [ -n "${xfail[$name]:-}" ]; then
          echo "XFAIL $name ($mode): ${xfail[$name]}; status $src, differences:"
        else
          echo "FAIL $name ($mode): status $src (native $rc); stdout differences:"
          fail=1
        fi
        diff "$out/$name.native.out" "$out/$name.$mode.out" | head -40 | sed 's/^/  | /'
        echo "  stderr:"; head -20 "$out/$name.$mode.err" | sed 's/^/  | /'
        continue 2
      fi
      modes="$modes, $mode"
      [ "$reps" -gt 1 ] && modes="$modes x$reps"
    done
  fi
  if [ -n "$preload" ] && [ -n "${xfail[$name]:-}" ]; then
    echo "XPASS $name ($modes): listed as a known gap but passed; take it off the list if it keeps passing"
  else
    echo "PASS $name ($modes)"
  fi
done
exit $fail
