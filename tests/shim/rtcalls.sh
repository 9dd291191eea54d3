#!/usr/bin/env bash
# rtcalls.sh -- the runtime's own calls never reach the pthread shim's
# waiting wrappers (issue 4: "nthlib's internals must use ... libc's
# functions resolved explicitly"). Runs tests/shim/rtcalls (linked with
# libnth.so: one VP stalled in a raw read, a stand-in, a team barrier)
# with libnth-pthread.so preloaded and an rtld-audit module that counts
# every call through the PLT into the shim by calling object, then fails
# on any call from libnth.so to a wrapper that sleeps, waits or does I/O.
# The stall monitor's nanosleep and its /proc read went there (1270
# nanosleep calls in one run of test_parallel's oversubscribed barrier).
# environment: top_builddir, NTH_SHIM_BUILT, NTH_SHIM_LIB (as run-compare.sh)
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
if [ "${NTH_SHIM_BUILT:-no}" != yes ]; then
  echo "SKIP: libnth-pthread.so is not part of the build yet"; exit 77
fi
lib=${NTH_SHIM_LIB:-$top_builddir/.libs/libnth-pthread.so}
[ -f "$lib" ] || { echo "FAIL: the build makes the shim but $lib is missing"; exit 1; }
if ldd "$lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
  echo "SKIP: $lib is a sanitizer build (the audit counts PLT calls of an uninstrumented run)"; exit 77
fi
[ "$(uname -m)" = x86_64 ] || { echo "SKIP: the audit module counts calls on x86-64 only"; exit 77; }
audit=$top_builddir/tests/shim/.libs/librtcalls-audit.so
prog=$top_builddir/tests/shim/rtcalls
[ -f "$audit" ] || { echo "FAIL: $audit is missing"; exit 1; }
out=$(mktemp -d "${TMPDIR:-/tmp}/rtcalls.XXXXXX") || exit 1
trap 'rm -rf "$out"' EXIT
# libtool's wrapper script runs the program itself: only it gets the
# preloaded shim and the audit module, not bash.
timeout -s KILL 120 "$top_builddir/libtool" --mode=execute env LD_PRELOAD="$lib" LD_AUDIT="$audit" \
  RTCALLS_OUT="$out/calls" NTH_CPUMGR=off "$prog" >"$out/stdout" 2>"$out/stderr"
rc=$?
if [ "$rc" != 0 ] || ! grep -q 'rtcalls: done' "$out/stdout"; then
  echo "FAIL: rtcalls did not finish under the shim (status $rc):"; sed 's/^/  | /' "$out/stderr" | head -20
  exit 1
fi
calls=$(cat "$out"/calls.* 2>/dev/null)
# The control: the program's own write() went through the shim.
if ! printf '%s\n' "$calls" | awk '$2 == "write" && $3 !~ /^libnth/ {f=1} END {exit !f}'; then
  echo "FAIL: the audit module recorded no call of the program into the shim (LD_AUDIT not honoured?)"
  exit 1
fi
# Wrappers that sleep, wait for a descriptor or a child, yield, or take a
# nano-thread lock: from libnth's code each is a detour at best, and a
# nano-thread wait taken inside the runtime at worst.
waits=' nanosleep clock_nanosleep usleep sleep read write pread pwrite pread64 pwrite64 readv writev
  recv recvfrom recvmsg send sendto sendmsg accept accept4 connect poll ppoll select pselect
  epoll_wait epoll_pwait wait waitpid sigsuspend pause fsync sched_yield pthread_yield
  pthread_mutex_lock pthread_mutex_trylock pthread_mutex_timedlock pthread_cond_wait
  pthread_cond_timedwait pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_join
  sem_wait sem_timedwait sigwait sigtimedwait sigwaitinfo '
bad=$(printf '%s\n' "$calls" | awk -v w="$waits" 'BEGIN {n = split(w, a); for (i = 1; i <= n; i++) s[a[i]] = 1}
  $3 ~ /^libnth\.so/ && ($2 in s) {c[$2] += $1} END {for (k in c) print "  libnth.so called the shim'"'"'s " k ", " c[k] " times"}')
if [ -n "$bad" ]; then
  echo "FAIL: the runtime's own calls reached the pthread shim's wrappers:"
  echo "$bad"
  exit 1
fi
echo "PASS: no call from libnth.so reached a waiting wrapper of the shim ($(printf '%s\n' "$calls" | awk '$3 ~ /^libnth\.so/ {n += $1} END {print n + 0}') calls to others, e.g. pthread_attr_*, forwarded to libc)"

# Traced (issue 5 cleanup): at exit the trace writer waits for its
# threads to leave and for the drain lock with kernel sleeps; a plain
# nanosleep() there reached the shim's (a nano-thread sleep when the
# caller looks like a nano-thread): 1-20 calls per traced run.
timeout -s KILL 120 "$top_builddir/libtool" --mode=execute env LD_PRELOAD="$lib" LD_AUDIT="$audit" \
  RTCALLS_OUT="$out/tcalls" NTH_CPUMGR=off RTCALLS_TRACE="$out/t.bin" "$prog" >"$out/stdout" 2>"$out/stderr"
rc=$?
if [ "$rc" != 0 ] || ! grep -q 'rtcalls: done' "$out/stdout" || [ ! -s "$out/t.bin" ]; then
  echo "FAIL: traced rtcalls did not finish under the shim or wrote no trace (status $rc):"
  sed 's/^/  | /' "$out/stderr" | head -20
  exit 1
fi
calls=$(cat "$out"/tcalls.* 2>/dev/null)
bad=$(printf '%s\n' "$calls" | awk -v w="$waits" 'BEGIN {n = split(w, a); for (i = 1; i <= n; i++) s[a[i]] = 1}
  $3 ~ /^libnth\.so/ && ($2 in s) {c[$2] += $1} END {for (k in c) print "  libnth.so called the shim'"'"'s " k ", " c[k] " times"}')
if [ -n "$bad" ]; then
  echo "FAIL: traced, the runtime's own calls reached the pthread shim's wrappers:"
  echo "$bad"
  exit 1
fi
echo "PASS: traced, no call from libnth.so reached a waiting wrapper of the shim"
