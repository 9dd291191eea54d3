#!/usr/bin/env bash
# sigidle.sh -- a process-directed signal (kill, alarm, sigqueue) reaches a
# program whose every thread is in an untimed wait: sem_wait, pthread_join,
# pthread_cond_wait, pthread_mutex_lock (tests/shim/sigidle.c says what
# each case does). Each case runs natively (the reference, which must
# pass) and under LD_PRELOAD=libnth-pthread.so, with the default VPs and
# with one. Before the fix every case hung under the shim once it had
# slept: a VP's idle context blocked every signal, so no kernel thread
# took it. A hang is a failure after 30 s (SIGKILL).
# usage: sigidle.sh [CASE...]
# environment: top_builddir, NTH_SHIM_BUILT, NTH_SHIM_LIB (as run-compare.sh)
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
prog=$top_builddir/tests/shim/posix-sigidle
[ -x "$prog" ] || { echo "FAIL: $prog is missing"; exit 1; }
lib=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
preload=
if [ "${NTH_SHIM_BUILT:-no}" = yes ]; then
  [ -f "$lib" ] || { echo "FAIL: the build makes the shim but $lib is missing"; exit 1; }
  if ldd "$lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
    echo "note: $lib is a sanitizer build: runs under the shim skipped (tested in the plain build)"
  else
    preload=$lib
  fi
fi
out=$(mktemp -d "${TMPDIR:-/tmp}/sigidle.XXXXXX") || exit 1
killer=
trap '[ -n "$killer" ] && kill "$killer" 2>/dev/null; rm -rf "$out"' EXIT

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(term usr1 alarm mutex deadlock blocked rt)
# case -> "signal to send (- for none) | exit status | a line stdout must have"
declare -A spec=([term]="TERM|143|ready" [usr1]="USR1|0|usr1 handled" [alarm]="-|0|alarm handled"
                 [mutex]="HUP|129|ready" [deadlock]="HUP|129|ready"
                 [blocked]="USR1|0|handled on the worker" [rt]="-|0|rt done")

fail=0
# run MODE CASE ENV...: one run; says PASS or FAIL with what differed.
run() {
  local mode=$1 c=$2; shift 2
  IFS='|' read -r sig want line <<<"${spec[$c]}"
  local o=$out/$c.$mode
  # Started with env (which execs): $! is the program itself. Its
  # stdout is written with write(2): "ready" shows at once.
  env "$@" "$prog" "$c" >"$o.out" 2>"$o.err" &
  local pid=$!
  # The guard against a hang; killed, it takes its sleep with it.
  ( sleep 30 & s=$!; trap 'kill $s 2>/dev/null; exit 0' TERM; wait $s; kill -KILL "$pid" 2>/dev/null ) &
  killer=$!
  if [ "$sig" != - ]; then
    # Until "ready" is there, then long enough for the wait to begin (an
    # early signal is taken as natively: the case passes either way).
    for _ in $(seq 200); do grep -q ready "$o.out" 2>/dev/null && break; sleep 0.05; done
    sleep 0.3
    kill -s "$sig" "$pid" 2>/dev/null
  fi
  wait "$pid"; local rc=$?
  kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; killer=
  if [ "$rc" = "$want" ] && grep -qF "$line" "$o.out" && ! grep -q wrong "$o.out"; then
    echo "PASS: $c ($mode): status $rc"
  else
    local why="status $rc, wanted $want"
    [ "$rc" = 137 ] && why="hung (killed after 30 s)"
    echo "FAIL: $c ($mode): $why; stdout: $(tr '\n' ' ' <"$o.out")"
    sed 's/^/  | /' "$o.err" | head -5
    fail=1
  fi
}

for c in "${cases[@]}"; do
  [ -n "${spec[$c]:-}" ] || { echo "sigidle.sh: unknown case '$c' (${!spec[*]})" >&2; exit 2; }
  run native "$c" X=1
  [ -n "$preload" ] || continue
  run shim "$c" LD_PRELOAD="$preload" NTH_CPUMGR=off
  run shim-vps1 "$c" LD_PRELOAD="$preload" NTH_CPUMGR=off NTH_VPS=1
done
exit $fail
