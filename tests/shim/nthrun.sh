#!/usr/bin/env bash
# nthrun.sh -- the nthrun launcher: bad command lines exit 2 with one line
# saying what is wrong and "Try 'nthrun --help'" (not the whole help);
# the NTH_* variables and LD_PRELOAD reach the program (a probe library's
# constructor proves the preload took effect); the program's exit status
# and death by signal come back unchanged; a missing library is an error
# (127), never a silent run without the shim.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
nthrun=$top_builddir/pthread-shim/nthrun
probe=$top_builddir/tests/shim/.libs/libnthrun-probe.so
fail=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
expect_status() {   # expect_status WANT DESCRIPTION cmd...
  local want=$1 what=$2; shift 2
  "$@" >/tmp/nthrun-test.$$.out 2>/tmp/nthrun-test.$$.err; local got=$?
  if [ "$got" = "$want" ]; then ok "$what: status $got"; else bad "$what: status $got, want $want"; sed 's/^/  | /' /tmp/nthrun-test.$$.err; fi
}
[ -x "$nthrun" ] || { echo "FAIL: $nthrun is not built"; exit 1; }
[ -f "$probe" ] || { echo "FAIL: $probe is not built"; exit 1; }

export NTH_PTHREAD_LIB=$probe
# brief WHAT PATTERN: stderr is the error line (matching PATTERN) and the
# coreutils-style pointer to --help, nothing else; nothing on stdout.
brief() {
  if [ ! -s /tmp/nthrun-test.$$.out ] && [ "$(wc -l </tmp/nthrun-test.$$.err)" = 2 ] &&
     head -n1 /tmp/nthrun-test.$$.err | grep -q -- "$2" &&
     [ "$(tail -n1 /tmp/nthrun-test.$$.err)" = "Try 'nthrun --help' for more information." ]; then
    ok "$1: one line and the pointer to --help"
  else
    bad "$1: not one line and the pointer to --help"; sed 's/^/  | /' /tmp/nthrun-test.$$.err | head -5
  fi
}
expect_status 2 "no arguments" "$nthrun"
brief "no arguments" "^nthrun: no program given"
expect_status 2 "no program" "$nthrun" --vps 2
brief "no program" "^nthrun: no program given"
# --vps 0 is NTH_VPS=0: the default, one VP per allowed CPU
NTHRUN_PROBE=1 LD_PRELOAD= expect_status 0 "--vps 0 (the default, as NTH_VPS=0)" "$nthrun" --vps 0 -- env
grep -qx NTH_VPS=0 /tmp/nthrun-test.$$.out && ok "--vps 0 sets NTH_VPS=0" || bad "--vps 0 did not set NTH_VPS=0"
expect_status 2 "--vps -1" "$nthrun" --vps -1 -- true
expect_status 2 "--vps abc" "$nthrun" --vps abc -- true
brief "--vps abc" "^nthrun: --vps 'abc': accepted values"
expect_status 2 "--vps 5000" "$nthrun" --vps 5000 -- true
grep -q "accepted values are integers 1..4096, or 0 for one VP per allowed CPU" /tmp/nthrun-test.$$.err && ok "--vps message names the accepted values" || bad "--vps message"
expect_status 2 "unknown option" "$nthrun" --bogus -- true
brief "unknown option" "bogus"
expect_status 2 "--cpumgr without value" "$nthrun" --cpumgr
brief "--cpumgr without value" "cpumgr"
# --trace and --cpumgr are checked by nthrun itself, before the program
# starts: the runtime only warned in the program's output and ran it
# untraced or alone. One line naming the option and the accepted values.
for bad_opt in "--trace x.txt" "--trace .json" "--cpumgr foo" "--cpumgr /a/b"; do
  # shellcheck disable=SC2086
  expect_status 2 "$bad_opt refused" "$nthrun" $bad_opt -- sh -c 'echo ran'
  brief "$bad_opt (the program not started)" "^nthrun: ${bad_opt%% *} '${bad_opt#* }': accepted values: "
done
expect_status 0 "--help" "$nthrun" --help
grep -q '^usage: nthrun' /tmp/nthrun-test.$$.out && ok "--help prints the usage on stdout" || bad "--help output"
expect_status 0 "--version" "$nthrun" --version
grep -qx 'nthrun (nthlib) [0-9][0-9.]*' /tmp/nthrun-test.$$.out && ok "--version prints 'nthrun (nthlib) VERSION'" || bad "--version output: $(head -c 200 /tmp/nthrun-test.$$.out)"

expect_status 7 "program's exit status" "$nthrun" --vps 3 -- sh -c 'exit 7'
expect_status 143 "death by SIGTERM seen by the shell" sh -c "\"$nthrun\" -- sh -c 'kill -TERM \$\$'; exit \$?"
expect_status 127 "program not found" "$nthrun" -- /nonexistent/program
expect_status 0 "program's own options are its own" "$nthrun" -- sh -c 'test "$1" = --vps' sh --vps

NTHRUN_PROBE=1 LD_PRELOAD= "$nthrun" --vps 3 --trace /tmp/t.json --cpumgr off -- env >/tmp/nthrun-test.$$.out 2>/tmp/nthrun-test.$$.err
for want in NTH_VPS=3 NTH_TRACE=/tmp/t.json NTH_CPUMGR=off "LD_PRELOAD=$probe"; do
  grep -qx -- "$want" /tmp/nthrun-test.$$.out && ok "environment has $want" || bad "environment lacks $want"
done
grep -qx 'nthrun-probe: loaded' /tmp/nthrun-test.$$.err && ok "the preloaded library ran in the program" || bad "the library was not preloaded"
# Any library the loader accepts will do as the existing preload: libc's
# own path, as the loader resolved it for env (it differs per
# architecture and distribution: /lib/x86_64-linux-gnu, /lib64, /usr/lib).
libc=$(ldd "$(command -v env)" 2>/dev/null | awk '$1 ~ /^libc\.so/ && $3 ~ /^\// {print $3; exit}')
if [ -z "$libc" ] || [ ! -f "$libc" ]; then
  bad "cannot find libc's path (ldd $(command -v env) names none)"
else
  LD_PRELOAD=$libc "$nthrun" -- env >/tmp/nthrun-test.$$.out 2>/dev/null
  grep -qx "LD_PRELOAD=$probe:$libc" /tmp/nthrun-test.$$.out && ok "an existing LD_PRELOAD ($libc) is kept, after the shim" || bad "existing LD_PRELOAD mishandled"
fi

NTH_PTHREAD_LIB=/nonexistent/libnth-pthread.so expect_status 127 "missing library" "$nthrun" -- true
grep -q "not found" /tmp/nthrun-test.$$.err && ok "missing library named on stderr" || bad "missing library message"

# Without NTH_PTHREAD_LIB, the build tree's library is the one used.
unset NTH_PTHREAD_LIB
shim_lib=$top_builddir/.libs/libnth-pthread.so
if [ "${NTH_SHIM_BUILT:-no}" = yes ] && ldd "$shim_lib" 2>/dev/null | grep -E 'lib(asan|tsan)\.so' >/dev/null; then
  # Preloading a sanitizer build of the shim is not supported (see
  # run-compare.sh): ASan's start-up calls pthread_key_create, which starts
  # the runtime before libc's own pthread_create can be looked up, and env hung.
  echo "note: $shim_lib is a sanitizer build: build-tree lookup checked in the plain build"
elif [ "${NTH_SHIM_BUILT:-no}" = yes ]; then
  ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=0 "$nthrun" -- env >/tmp/nthrun-test.$$.out 2>/tmp/nthrun-test.$$.err
  grep -q "^LD_PRELOAD=.*/\.libs/libnth-pthread\.so$" /tmp/nthrun-test.$$.out && ok "build-tree library found" || { bad "build-tree library not used"; cat /tmp/nthrun-test.$$.err; }
  # A traced program that starts threads: the runtime's trace writer once
  # set its mask through the shim's sigprocmask, which restarted the
  # runtime's own start-up, and the program spun there for ever.
  seq 300000 | shuf >/tmp/nthrun-test.$$.in
  timeout -s KILL 60 "$nthrun" --trace /tmp/nthrun-test.$$.json -- sort --parallel=2 -S 100M /tmp/nthrun-test.$$.in \
      >/tmp/nthrun-test.$$.out 2>/tmp/nthrun-test.$$.err; st=$?
  if [ "$st" = 0 ] && sort /tmp/nthrun-test.$$.in | cmp -s - /tmp/nthrun-test.$$.out &&
     jq -e '.traceEvents | length > 0' /tmp/nthrun-test.$$.json >/dev/null 2>&1; then
    ok "traced threaded program (sort --parallel=2) runs, sorts and writes its trace"
  else
    bad "traced threaded program: status $st"; sed 's/^/  | /' /tmp/nthrun-test.$$.err | head -5
  fi
  # Two traced processes under one nthrun: each keeps its own trace. All
  # converted into FILE at exit, and the last one's overwrote the other's;
  # now the program nthrun starts writes FILE, any other FILE.PID.EXT. The
  # trailing 'exit' keeps the shell from exec'ing the second sort.
  d=$(mktemp -d /tmp/nthrun-test.$$.XXXXXX)
  timeout -s KILL 120 "$nthrun" --trace "$d/run.json" -- sh -c \
      'sort --parallel=2 "$1" >/dev/null && sort --parallel=2 "$1" >/dev/null; exit $?' sh /tmp/nthrun-test.$$.in \
      >/dev/null 2>/tmp/nthrun-test.$$.err; st=$?
  n=0
  for f in "$d"/run.[0-9]*.json; do
    [ -f "$f" ] && jq -e '[.traceEvents[] | select(.ph == "X" or .ph=="X")] | length > 0' "$f" >/dev/null 2>&1 && n=$((n + 1))
  done
  w=$(grep -c "^nthlib: trace: wrote $d/run\.[0-9]*\.json " /tmp/nthrun-test.$$.err)
  if [ "$st" = 0 ] && [ "$n" = 2 ] && [ "$w" = 2 ]; then
    ok "two traced processes under one nthrun: two trace files, run.PID.json, each named on stderr"
  else
    bad "two traced processes: status $st, $n run.PID.json traces, $w wrote-lines ($(cd "$d" && echo *))"
    sed 's/^/  | /' /tmp/nthrun-test.$$.err | head -5
  fi
  rm -rf "$d"
  # More VPs than allowed CPUs: nthrun says it once for the run, not each
  # threaded process under it (a pyenv shim gave 14 lines).
  if command -v taskset >/dev/null; then
    NTH_VPS_TOLD= timeout -s KILL 120 taskset -c 0 "$nthrun" --vps 2 -- sh -c \
        'sort --parallel=2 "$1" >/dev/null && sort --parallel=2 "$1" >/dev/null' sh /tmp/nthrun-test.$$.in \
        >/dev/null 2>/tmp/nthrun-test.$$.err; st=$?
    n=$(grep -c "NTH_VPS=2 is more than the 1 CPU this" /tmp/nthrun-test.$$.err)
    [ "$n" = 1 ] && ! grep -q '^nthlib: NTH_VPS=2' /tmp/nthrun-test.$$.err || n="$n (runtime's own: $(grep -c '^nthlib: NTH_VPS=2' /tmp/nthrun-test.$$.err))"
    [ "$st" = 0 ] && [ "$n" = 1 ] && ok "more VPs than CPUs said once for two threaded processes" \
      || { bad "more VPs than CPUs: status $st, said $n times"; sed 's/^/  | /' /tmp/nthrun-test.$$.err | head -5; }
    # The runtime of a process with other figures (here 3 VPs) says its own.
    NTH_VPS_TOLD=2/1 NTH_VPS=3 LD_PRELOAD=$shim_lib timeout -s KILL 120 taskset -c 0 sort --parallel=2 /tmp/nthrun-test.$$.in \
        >/dev/null 2>/tmp/nthrun-test.$$.err
    grep -q "^nthlib: NTH_VPS=3 is more than the 1 CPU this" /tmp/nthrun-test.$$.err && ok "other figures are told again" || bad "NTH_VPS=3 not told"
  fi
  rm -f /tmp/nthrun-test.$$.in /tmp/nthrun-test.$$.json /tmp/nthrun-test.$$.json.*.bin
else
  echo "note: libnth-pthread.so is not part of the build yet: build-tree lookup not checked"
fi
rm -f /tmp/nthrun-test.$$.out /tmp/nthrun-test.$$.err
exit $fail
