#!/usr/bin/env bash
# tests/bounded_selftest.sh -- the suite's hang guard (tests/bounded.sh):
# a test that hangs fails with its stacks and leaves no process behind;
# one that does not is run exactly as without the guard (exit status,
# signal dispositions, no extra child).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
b="$top_srcdir/tests/bounded.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/nth-bounded.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Exit statuses pass through.
"$b" true || fail "true: exit $?"
"$b" sh -c 'exit 3'; rc=$?
[ "$rc" -eq 3 ] || fail "exit 3 came back as $rc"
NTH_TEST_TIMEOUT=0 "$b" sh -c 'exit 4'; rc=$?
[ "$rc" -eq 4 ] || fail "NTH_TEST_TIMEOUT=0: exit 4 came back as $rc"

# The guard adds no ignored signal: SIGINT and SIGQUIT keep their default
# action (the trace exit-path tests send SIGINT; a background job of a
# non-interactive shell would start with both ignored). Started from a
# process that puts both to SIG_DFL, as this suite may itself run with
# them ignored (under nohup &, say), which a shell cannot undo.
ign=$(python3 -c 'import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_DFL); signal.signal(signal.SIGQUIT, signal.SIG_DFL)
os.execv(sys.argv[1], sys.argv[1:])' "$b" cat /proc/self/status | sed -n 's/^SigIgn:[[:space:]]*//p')
if [ -z "$ign" ]; then
  fail "no SigIgn line from the guarded test"
elif (( (16#$ign & 0x6) != 0 )); then
  fail "the guarded test starts with SIGINT or SIGQUIT ignored (SigIgn $ign)"
fi

# The test is the guard's own pid and has no child it did not make.
out=$("$b" bash -c 'read -r c < /proc/$$/task/$$/children; echo "children=[${c:-}]"')
[ "$out" = "children=[]" ] || fail "the test has a child it did not start: $out"

# A bad bound is refused with one line naming the variable.
err=$(NTH_TEST_TIMEOUT=soon "$b" true 2>&1); rc=$?
[ "$rc" -eq 99 ] || fail "NTH_TEST_TIMEOUT=soon: exit $rc, wanted 99"
case $err in *NTH_TEST_TIMEOUT*accepted*) ;; *) fail "NTH_TEST_TIMEOUT=soon: message '$err'";; esac

# A hang: fails, says TIMEOUT with the stacks, and its child is gone too.
SECONDS=0
# (The braces keep this shell's own "Terminated" report out of the log.)
{ NTH_TEST_TIMEOUT=2 "$b" bash -c "sleep 300 & echo \$! > '$work/child'; sleep 300" > "$work/log" 2>&1; rc=$?; } 2>/dev/null
took=$SECONDS
[ "$rc" -ne 0 ] || fail "a hung test passed"
grep -q 'bounded.sh: TIMEOUT' "$work/log" || fail "no TIMEOUT line: $(head -c 400 "$work/log")"
grep -q -- '--- pid' "$work/log" || fail "no process listed: $(head -c 400 "$work/log")"
[ "$took" -lt 120 ] || fail "the hung test took ${took} s to end under a 2 s bound"
child=$(cat "$work/child" 2>/dev/null)
[ -n "$child" ] || fail "the hung test's child pid was not written"
sleep 1
# Alive: not a zombie (an orphan's zombie waits for an init that may be
# slow to reap it; it runs nothing).
alive() { local st; st=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; st=${st##*) }; [ "${st%% *}" != Z ]; }
if [ -n "$child" ] && alive "$child"; then
  fail "the hung test's child $child is still alive: $(ps -o pid,ppid,stat,cmd -p "$child" | tail -n 1)"
  kill -KILL "$child" 2>/dev/null
fi

[ "$fails" -eq 0 ] && echo "PASS: bounded.sh (pass-through, no signal ignored, no extra child, bad value, hang)"
exit $((fails > 0))
