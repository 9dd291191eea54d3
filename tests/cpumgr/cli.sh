#!/usr/bin/env bash
# cli.sh -- the cpumgr command line as a new user meets it (a fresh-user
# trial of the release): --help on stdout with status 0; malformed --cpus
# lists refused with one line naming --cpus; --trace and --accounting files
# that cannot be opened refused at start with nothing left behind (no
# segment, no file); a second daemon refused on a running one's segment
# neither clobbers that one's trace nor leaves files it created; relative
# file names are taken from the starting directory although the daemon
# runs in /; `status --watch MS` as well as `--watch=MS`; a watch on a
# running daemon refreshes, writes no escape codes to a file, and ends
# when the daemon is stopped; a watch survives the segment shrinking under
# it and says so; `cpumgr stop` returns only once the daemon's pid is gone;
# SIGHUP, SIGQUIT and SIGUSR1 stop the daemon as cleanly as SIGTERM.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
cm=$top_builddir/cpumgr/cpumgr
[ -x "$cm" ] || { echo "FAIL: $cm is not built"; exit 1; }
seg=/nth-clitest-$$
tmp=$(mktemp -d /tmp/nth-clitest.XXXXXX)
fail=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
cleanup() { "$cm" stop --name "$seg" >/dev/null 2>&1; rm -f "/dev/shm$seg"; rm -rf "$tmp"; }
trap cleanup EXIT
run() {   # run WANT DESCRIPTION cmd...: status, stdout in $tmp/out, stderr in $tmp/err
  local want=$1 what=$2; shift 2
  timeout -s KILL 60 "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" = "$want" ]; then ok "$what: status $got"; else bad "$what: status $got, want $want"; sed 's/^/  | /' "$tmp/err"; fi
}
one_line() {   # one_line DESCRIPTION PATTERN: stderr is one line matching PATTERN
  if [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$2" "$tmp/err"; then ok "$1"; else bad "$1: $(cat "$tmp/err")"; fi
}
no_segment() {
  if [ ! -e "/dev/shm$seg" ]; then ok "$1: no segment left"; else bad "$1: segment $seg left behind"; rm -f "/dev/shm$seg"; fi
}

# A bad segment name is blamed on whoever gave it: NTH_CPUMGR (fresh15: the
# message named a --name nobody passed), or --name.
for c in status stop run; do
  run 2 "NTH_CPUMGR=foo cpumgr $c refused" env NTH_CPUMGR=foo "$cm" $c
  one_line "NTH_CPUMGR=foo cpumgr $c: one line naming NTH_CPUMGR" "^cpumgr: NTH_CPUMGR: bad value 'foo' (accepted: .*, or off)$"
done
run 2 "--name foo refused" env NTH_CPUMGR=/ok "$cm" status --name foo
one_line "--name foo: one line naming --name" "^cpumgr: --name: bad value 'foo' (accepted: '/' then"

# --help: the usage on stdout, status 0, for every form
for args in "--help" "status --help" "stop --help" "run --help"; do
  # shellcheck disable=SC2086
  run 0 "cpumgr $args" "$cm" $args
  grep -q '^usage: cpumgr' "$tmp/out" && ok "cpumgr $args: usage on stdout" || bad "cpumgr $args: no usage on stdout"
done

# --cpus: strict list syntax; refused before anything starts
for list in "0-1,,3" "0-1," ",0" "3-1" "1x" "0-" " 1" "0x1" "" "1-2-3" "0,a" "99999"; do
  run 2 "--cpus '$list' refused" "$cm" --foreground --name "$seg" --cpus "$list"
  one_line "--cpus '$list': one line naming --cpus and the syntax" "^cpumgr: --cpus: bad value '$list' (accepted: .*LO-HI"
  no_segment "--cpus '$list'"
done
# A well-formed list with none of the CPUs we may use: refused, and the
# message says which CPUs would do (--cpus 1024 gave only the syntax).
run 2 "--cpus 1024 refused" "$cm" --foreground --name "$seg" --cpus 1024
one_line "--cpus 1024: one line with the CPUs this process may use" \
  "^cpumgr: --cpus: bad value '1024' (accepted: .*among the CPUs this process may use: [0-9]"
no_segment "--cpus 1024"
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  run 2 "--cpus 1 under taskset -c 0 refused" taskset -c 0 "$cm" --foreground --name "$seg" --cpus 1
  one_line "--cpus 1 under taskset -c 0: says CPU 0 is the one" "may use: 0)$"
  no_segment "--cpus 1 under taskset -c 0"
fi
run 0 "--cpus 0 accepted" "$cm" --name "$seg" --cpus 0
# One CPU is "1 CPU", in the ready line and in status (issue 5: "1 CPUs").
grep -q ": 1 CPU (0), policy" "$tmp/err" && ok "ready line on one CPU says '1 CPU'" \
  || bad "ready line on one CPU: $(cat "$tmp/err")"
"$cm" status --name "$seg" >"$tmp/out" 2>&1
grep -q "running" "$tmp/out" && ok "daemon on --cpus 0 runs" || bad "daemon on --cpus 0: $(cat "$tmp/out")"
grep -q "running, 1 CPU (0), allocation" "$tmp/out" && ok "status on one CPU says '1 CPU'" \
  || bad "status on one CPU: $(head -1 "$tmp/out")"
# The daemon's options are refused by status and stop, --watch by run,
# with one line naming the option and the command (issue 5: `status
# --policy priority` was accepted and ignored); the daemon is untouched.
for args in "status --policy priority" "status --period 5" "status --enforce 0" "status --share" \
            "status --foreground" "status --cpus 0" "stop --quantum 50" "stop --exit-grace 0" \
            "stop --trace t.json" "stop --accounting a.csv" "stop --watch" "stop --group root"; do
  cmd=${args%% *}; opt=${args#* }; opt=${opt%% *}
  # shellcheck disable=SC2086
  run 2 "cpumgr $args refused" "$cm" $args --name "$seg"
  one_line "cpumgr $args: one line naming $opt and $cmd" "^cpumgr: $opt: not an option of \`cpumgr $cmd\` (accepted: --name"
done
run 2 "cpumgr run --watch refused" "$cm" run --watch --foreground --name "$seg-w"
one_line "cpumgr run --watch: one line naming --watch and run" "^cpumgr: --watch: not an option of \`cpumgr run\`"
"$cm" status --name "$seg" >"$tmp/out" 2>&1
grep -q "running" "$tmp/out" && ok "the daemon still runs after the refused commands" \
  || bad "after the refused commands: $(cat "$tmp/out")"
"$cm" stop --name "$seg" >/dev/null 2>&1

# --group (a new user's report: the message named the wrong problem): each
# problem gets one line naming --group and that problem, status 2, before
# anything starts; a numeric group ID is taken as chgrp(1) takes it.
run 2 "--group nosuchgroup refused" "$cm" --foreground --name "$seg" --group nth-nosuchgroup
one_line "--group nosuchgroup: says no such group" "^cpumgr: --group: no group named 'nth-nosuchgroup' (accepted: a group name or numeric group ID"
no_segment "--group nosuchgroup"
run 2 "--group '' refused" "$cm" --foreground --name "$seg" --group ""
one_line "--group '': says empty" "^cpumgr: --group: empty value (accepted: "
no_segment "--group ''"
freegid=54321
while getent group "$freegid" >/dev/null; do freegid=$((freegid + 1)); done
run 2 "--group $freegid (no such GID) refused" "$cm" --foreground --name "$seg" --group "$freegid"
one_line "--group $freegid: says no group has that ID" "^cpumgr: --group: no group has ID $freegid (accepted: "
no_segment "--group $freegid"
mygid=$(id -g)
run 0 "--group $mygid (our own GID, numeric) accepted" "$cm" --name "$seg" --cpus 0 --group "$mygid"
got=$(stat -c %a:%g "/dev/shm$seg" 2>/dev/null)
[ "$got" = "660:$mygid" ] && ok "--group $mygid: segment mode 660, group $mygid" || bad "--group $mygid: segment $got, want 660:$mygid"
"$cm" stop --name "$seg" >/dev/null 2>&1
# A group we are not in: the kernel refuses to give the segment to it
# (fchown EPERM), which came out as "cannot create NAME: Operation not
# permitted", status 1. Root may give it to any group: run as nobody then.
as=()
if [ "$(id -u)" = 0 ]; then
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$cm"; then
    as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  fi
fi
notmine=
if [ "$(id -u)" != 0 ] || [ ${#as[@]} -gt 0 ]; then
  mine=" $( [ ${#as[@]} -gt 0 ] && echo 65534 || id -G) "
  while IFS=: read -r gname _ gid _; do
    case "$mine" in *" $gid "*) ;; *) notmine=$gname; break ;; esac
  done < <(getent group)
fi
if [ -n "$notmine" ]; then
  run 2 "--group $notmine (not a member) refused" "${as[@]}" "$cm" --foreground --name "$seg" --group "$notmine"
  one_line "--group $notmine: says we are not a member, lists our groups" \
    "^cpumgr: --group: you are not a member of group '$notmine' (GID [0-9]*), so the segment cannot be given to it (accepted: one of your groups: "
  no_segment "--group $notmine"
else
  echo "# no unprivileged user to run as (or no group we are not in): the not-a-member case is not run"
fi

# The detached daemon's log does not reach the terminal it was started from
# (issue 5 trial M2: attach/detach lines appeared in the user's shell after
# `cpumgr` returned); what it says before returning still does.
pid=$(timeout -s KILL 60 "$cm" --name "$seg" 2>"$tmp/bg.err")
"$cm" stop --name "$seg" >/dev/null 2>&1
[ -n "$pid" ] && timeout -s KILL 20 tail --pid="$pid" -f /dev/null
if grep -q "ready on" "$tmp/bg.err" && ! grep -q "stopped" "$tmp/bg.err"; then
  ok "background daemon: ready line on the terminal, nothing after it returned"
else
  bad "background daemon's stderr: $(cat "$tmp/bg.err")"
fi

# `cpumgr stop` returns once the daemon's process is gone (fresh13 trial:
# 5 of 5 times its pid was still alive right after "stopped").
alive_after=0
for _ in 1 2 3 4 5; do
  pid=$(timeout -s KILL 60 "$cm" --name "$seg" 2>/dev/null)
  [ -n "$pid" ] || { bad "stop: the daemon did not start"; break; }
  timeout -s KILL 60 "$cm" stop --name "$seg" >"$tmp/out" 2>"$tmp/err" || bad "stop: status $?: $(cat "$tmp/err")"
  if kill -0 "$pid" 2>/dev/null; then
    alive_after=$((alive_after + 1))
    timeout -s KILL 20 tail --pid="$pid" -f /dev/null
  fi
done
[ "$alive_after" = 0 ] && ok "stop: the daemon's pid is gone when stop returns (5 tries)" \
  || bad "stop: the daemon's pid still alive right after stop in $alive_after of 5 tries"
grep -q "^cpumgr stop: daemon $pid stopped$" "$tmp/out" && ok "stop: says which daemon stopped" || bad "stop's output: $(cat "$tmp/out")"

# SIGHUP (a foreground daemon's terminal closing), SIGQUIT and SIGUSR1 stop
# the daemon as SIGTERM does: status 0, the attached application's
# accounting line written, the segment removed (fresh13 trial: killed by
# the default action, segment left, accounting line lost).
app=$top_builddir/tests/cpumgr/client_app
if [ -x "$app" ]; then
  for sig in HUP QUIT USR1; do
    rm -f "$tmp/acc.csv" "$tmp/app.in"; mkfifo "$tmp/app.in"
    exec 3<>"$tmp/app.in"   # read-write: never blocks, whether or not the application runs
    "$cm" run --foreground --name "$seg" --accounting "$tmp/acc.csv" 2>"$tmp/fg.err" &
    d=$!
    for _ in $(seq 600); do grep -q "ready on" "$tmp/fg.err" && break; sleep 0.1; done
    "$app" "$seg" 1 <"$tmp/app.in" >"$tmp/app.out" 2>&1 &
    a=$!
    for _ in $(seq 600); do grep -q "A=1" "$tmp/app.out" && break; sleep 0.1; done
    grep -q "A=1" "$tmp/app.out" || bad "SIG$sig: the application never attached: $(cat "$tmp/app.out" "$tmp/fg.err")"
    kill -"$sig" "$d"
    wait "$d"; st=$?
    [ "$st" = 0 ] && ok "SIG$sig stops the daemon cleanly: status 0" || bad "SIG$sig: daemon status $st, want 0"
    no_segment "SIG$sig"
    grep -q ",stop" "$tmp/acc.csv" 2>/dev/null && ok "SIG$sig: the application's accounting line written" \
      || bad "SIG$sig: no accounting line for the attached application: $(cat "$tmp/acc.csv" 2>&1)"
    echo exit >&3; exec 3>&-
    timeout -s KILL 20 tail --pid="$a" -f /dev/null
  done
fi

# A directory in /dev/shm under the name: status and stop say it is one
# (fresh13 trial: "Invalid argument", glibc's shm_open error for it).
if mkdir "/dev/shm$seg-dir" 2>/dev/null; then
  run 1 "status on a directory" "$cm" status --name "$seg-dir"
  one_line "status on a directory: says it is one" "^cpumgr: $seg-dir: /dev/shm$seg-dir is a directory, not a cpumgr segment$"
  run 1 "stop on a directory" "$cm" stop --name "$seg-dir"
  one_line "stop on a directory: says it is one" "is a directory, not a cpumgr segment$"
  rmdir "/dev/shm$seg-dir"
fi

# --trace that cannot be opened: status 1, one line, no segment
run 1 "--trace /nonexistent/dir/t.bin" "$cm" --name "$seg" --trace /nonexistent/dir/t.bin
one_line "--trace: one line naming the option and the file" "^cpumgr: --trace /nonexistent/dir/t.bin: "
no_segment "--trace /nonexistent/dir/t.bin"
run 1 "status after the refused start says there is no daemon" "$cm" status --name "$seg"

# --accounting that cannot be opened for append: the same
run 1 "--accounting /nonexistent/dir/x" "$cm" --name "$seg" --accounting /nonexistent/dir/x
one_line "--accounting: one line naming the option and the file" "^cpumgr: --accounting /nonexistent/dir/x: cannot open for append"
no_segment "--accounting /nonexistent/dir/x"
# The files are checked before the hwloc topology is loaded (issue 5 trial
# M1: seconds under load for a typo). A synthetic topology without CPU 1
# makes `--cpus 1` fail once the topology is loaded: the --accounting error
# must come first.
if [ "$(nproc)" -ge 2 ]; then
  run 1 "--accounting checked before the topology" env HWLOC_SYNTHETIC=pu:1 \
    "$cm" --foreground --name "$seg" --cpus 1 --accounting /nonexistent/dir/x
  one_line "--accounting before the topology: its error, not the topology's" "^cpumgr: --accounting /nonexistent/dir/x: cannot open"
  no_segment "--accounting checked before the topology"
fi
touch "$tmp/ro.csv"; chmod 0444 "$tmp/ro.csv"
if [ ! -w "$tmp/ro.csv" ]; then   # root writes a read-only file anyway
  run 1 "--accounting on a read-only file" "$cm" --name "$seg" --accounting "$tmp/ro.csv"
  no_segment "--accounting on a read-only file"
fi

# Relative names: from the directory cpumgr was started in (the daemon runs in /)
(cd "$tmp" && run 0 "relative --accounting and --trace" "$cm" --name "$seg" --accounting acct.csv --trace grants.bin)
[ -f "$tmp/acct.csv" ] && ok "relative --accounting created in the starting directory" || bad "relative --accounting: no $tmp/acct.csv"
[ -s "$tmp/grants.bin" ] && ok "relative --trace written in the starting directory" || bad "relative --trace: no $tmp/grants.bin"
size=$(stat -c %s "$tmp/grants.bin" 2>/dev/null || echo 0)

# A second daemon on the same segment is refused: it leaves no file it
# created and does not truncate the running daemon's trace.
run 1 "second daemon on a running segment" "$cm" --name "$seg" --accounting "$tmp/new.csv" --trace "$tmp/grants.bin"
grep -q "another cpumgr" "$tmp/err" && ok "second daemon: says another runs" || bad "second daemon: $(cat "$tmp/err")"
[ ! -e "$tmp/new.csv" ] && ok "second daemon left no accounting file" || bad "second daemon created $tmp/new.csv"
[ "$(stat -c %s "$tmp/grants.bin")" -ge "$size" ] && [ "$size" -gt 0 ] && ok "running daemon's trace not truncated" \
  || bad "running daemon's trace truncated ($size -> $(stat -c %s "$tmp/grants.bin"))"
run 1 "second daemon with a new trace file" "$cm" --name "$seg" --trace "$tmp/other.bin"
[ ! -e "$tmp/other.bin" ] && ok "second daemon left no trace file" || bad "second daemon created $tmp/other.bin"

# status --watch MS and --watch=MS: both parsed (the watch ends at once
# when there is no segment, so no timing is involved)
"$cm" stop --name "$seg" >/dev/null 2>&1
run 1 "status --watch 500 (no daemon)" "$cm" status --name "$seg" --watch 500
grep -q "no daemon" "$tmp/err" && ok "status --watch 500: parsed, reports no daemon" || bad "status --watch 500: $(cat "$tmp/err")"
run 1 "status --watch=500 (no daemon)" "$cm" status --name "$seg" --watch=500
run 1 "status --watch (no daemon)" "$cm" status --name "$seg" --watch
run 2 "status --watch 5 (below 10 ms)" "$cm" status --name "$seg" --watch 5
one_line "status --watch 5: one line" "^cpumgr: --watch: bad value '5'"
run 2 "status --watch x: not a number, an unexpected argument" "$cm" status --name "$seg" --watch x
# status --watch on a running daemon: the table again and again (at least
# three of them), no terminal escape codes when the output is a file, and
# the watch ends by itself, status 1, once `cpumgr stop` removed the
# segment (it used to need ^C whatever happened to the daemon).
run 0 "daemon for status --watch" "$cm" --name "$seg"
timeout -s KILL 120 "$cm" status --name "$seg" --watch 20 >"$tmp/watch" 2>"$tmp/watch.err" &
wpid=$!
for _ in $(seq 600); do
  [ "$(grep -c '^cpumgr .*: daemon pid' "$tmp/watch")" -ge 3 ] && break
  sleep 0.1
done
n=$(grep -c '^cpumgr .*: daemon pid .* running' "$tmp/watch")
[ "$n" -ge 3 ] && ok "status --watch 20: $n tables" || bad "status --watch 20: $n tables: $(head -c 300 "$tmp/watch")"
if grep -q "$(printf '\033')" "$tmp/watch"; then bad "status --watch to a file: escape codes in it"; else ok "status --watch to a file: no escape codes"; fi
"$cm" stop --name "$seg" >/dev/null 2>&1
wait "$wpid"; wrc=$?
[ "$wrc" = 1 ] && ok "status --watch ends with status 1 when the daemon stops" || bad "status --watch after stop: status $wrc"
grep -q "no daemon" "$tmp/watch.err" && ok "status --watch after stop: says no daemon" || bad "status --watch after stop: $(cat "$tmp/watch.err")"
# status --watch while the segment shrinks (issue 5): a read past the new
# end of the file was SIGBUS, which killed status. It must live on and say
# what it saw. CPUMGR_TEST_STATUS_PAUSE makes its first table wait, once
# the segment is mapped, until the test has truncated it (a handshake).
run 0 "daemon for status on a shrinking segment" "$cm" --name "$seg"
# The daemon is stopped (SIGSTOP) meanwhile: its own guard would grow the
# file back at its next access, before status reads it.
dpid=$("$cm" status --name "$seg" 2>/dev/null | sed -n 's/.*daemon pid \([0-9]*\).*/\1/p' | head -n1)
[ -n "$dpid" ] && kill -STOP "$dpid"
pause=$tmp/status-pause
CPUMGR_TEST_STATUS_PAUSE=$pause timeout -s KILL 120 "$cm" status --name "$seg" --watch 20 \
  >"$tmp/shrink" 2>"$tmp/shrink.err" &
spid=$!
for _ in $(seq 1200); do [ -e "$pause" ] && break; sleep 0.05; done
if [ -e "$pause" ]; then
  truncate -s 0 "/dev/shm$seg"
  rm -f "$pause"
  for _ in $(seq 1200); do
    grep -q "shrank" "$tmp/shrink.err" && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
  done
  # Continued, the daemon repairs its header within a period; then stop
  # it, which ends the watch.
  [ -n "$dpid" ] && kill -CONT "$dpid"
  for _ in $(seq 100); do "$cm" stop --name "$seg" >/dev/null 2>&1 && break; sleep 0.1; done
  wait "$spid"; src=$?
  [ "$src" -lt 128 ] && ok "status --watch on a shrunk segment: not killed (status $src)" \
    || bad "status --watch on a shrunk segment: died of signal $((src - 128)): $(cat "$tmp/shrink.err")"
  grep -q "the segment shrank while this table was read" "$tmp/shrink.err" \
    && ok "status --watch on a shrunk segment: says so" || bad "status on a shrunk segment: $(cat "$tmp/shrink.err")"
else
  bad "status --watch never reached its test pause"
  kill "$spid" 2>/dev/null
  [ -n "$dpid" ] && kill -CONT "$dpid"
fi
exit $fail
