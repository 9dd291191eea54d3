#!/usr/bin/env bash
# tests/bounded.sh -- every test of `make check` runs under this (the
# suite's LOG_COMPILER): a test still running after NTH_TEST_TIMEOUT
# seconds (default 1200) FAILS, after the stacks of its processes are
# printed to its log, instead of holding the run until CI's own limit.
# Why: a lost wake-up hangs a process for good, and one hung ASan test once
# held a verification run for ten minutes before anyone looked; in CI it
# would have held the job for the 90 minutes it is allowed, and left no
# stacks to read.
#
# usage: bounded.sh TEST [ARGS...]    (NTH_TEST_TIMEOUT=0: no bound)
#
# The test is exec'd: it keeps this shell's pid, runs in the foreground
# with the signal dispositions it would have had (a background job of a
# non-interactive shell starts with SIGINT and SIGQUIT ignored, which the
# exit-path tests would notice), and has no extra child (the watchdog is
# orphaned at once, so a wait(2) in the test never reaps it).
limit=${NTH_TEST_TIMEOUT:-1200}
case $limit in
  ''|*[!0-9]*)
    echo "bounded.sh: NTH_TEST_TIMEOUT='$limit' is not accepted (accepted: a whole number of seconds; 0: no bound)" >&2
    exit 99 ;;
esac
[ $# -ge 1 ] || { echo "usage: bounded.sh TEST [ARGS...]" >&2; exit 99; }
[ "$limit" -eq 0 ] && exec "$@"

pid=$$
# Field 22 of /proc/PID/stat (start time, after the parenthesised comm,
# which may hold spaces): tells our test from a later process given the
# same pid once it has exited.
start_of() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  set -- $s
  echo "${20}"
}

# pid and every descendant of it, parents first.
tree_of() {
  local todo=("$1") p kids
  while [ ${#todo[@]} -gt 0 ]; do
    p=${todo[0]}; todo=("${todo[@]:1}")
    echo "$p"
    if [ -e /proc/"$p"/task/"$p"/children ]; then
      kids=$(cat /proc/"$p"/task/*/children 2>/dev/null)
    else
      kids=$(ps -o pid= --ppid "$p" 2>/dev/null)
    fi
    for k in $kids; do todo+=("$k"); done
  done
}

dump_and_kill() {
  local procs p
  procs=$(tree_of "$pid")
  echo "bounded.sh: TIMEOUT: '$*' still running after ${limit} s (NTH_TEST_TIMEOUT); its processes:"
  for p in $procs; do
    echo "--- pid $p: $(tr '\0' ' ' < /proc/"$p"/cmdline 2>/dev/null)"
    if command -v gdb >/dev/null 2>&1; then
      timeout 60 gdb -nx -batch -p "$p" -ex 'thread apply all bt' 2>&1 |
        grep -v '^\[New LWP\|^warning: \|^Using host libthread_db\|^$' | head -n 300
    else
      for t in /proc/"$p"/task/*; do
        echo "  thread ${t##*/} $(cat "$t/comm" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
      done
    fi
  done
  # Children first would let the test notice and report; all at once is
  # what a hang deserves. TERM lets a daemon remove its segment.
  for p in $procs; do kill -TERM "$p" 2>/dev/null; done
  sleep 5
  for p in $procs; do kill -KILL "$p" 2>/dev/null; done
}

mystart=$(start_of "$pid")
# The watchdog polls once a second (cheap beside any test) so it ends soon
# after the test does; it writes only on a timeout, to the test's log.
(
  trap '' HUP
  (
    SECONDS=0
    while [ "$(start_of "$pid")" = "$mystart" ]; do
      if [ "$SECONDS" -ge "$limit" ]; then
        dump_and_kill "$@"
        exit 0
      fi
      sleep 1
    done
  ) < /dev/null &
)
exec "$@"
