#!/usr/bin/env bash
# users.sh -- cpumgr between users, as the man page promises (an audit of
# issue 5's tests found these unchecked):
#  - the default segment name is per user (/nth-cpumgr-UID): two users'
#    daemons started without --name run side by side, each segment mode
#    0600 and owned by its user, and an application started without
#    NTH_CPUMGR attaches to its own user's daemon only;
#  - an application of another user cannot attach to a 0600 segment: it
#    says so in one line and runs alone;
#  - --enforce works without root: a daemon run as an unprivileged user
#    moves the threads of that user's application that ignores the
#    contract (NTH_TEST_NO_RECLAIM=1) off the CPU it took, and once the
#    CPU is given back the runtime binds its VP there again.
# Needs root to become the two users (nthcmtest, created with useradd if
# missing, and nobody); exit 77 (skip) if that is impossible.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
cm=$top_builddir/cpumgr/cpumgr
probe=$top_builddir/tests/parallel/malleable_probe
rtapp=$top_builddir/tests/cpumgr/rt_app
capp=$top_builddir/tests/cpumgr/client_app
for f in "$cm" "$probe" "$rtapp" "$capp"; do [ -x "$f" ] || { echo "FAIL: $f is not built"; exit 1; }; done
skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root: cannot run as two other users"
command -v setpriv >/dev/null || skip "no setpriv"
if ! getent passwd nthcmtest >/dev/null; then
  useradd -r -M -U -s /usr/sbin/nologin nthcmtest >/dev/null 2>&1 || skip "cannot create user nthcmtest"
fi
u1=$(id -u nthcmtest) g1=$(id -g nthcmtest) u2=65534 g2=65534
# Arrays, not functions: "${as1[@]}" cmd & makes $! the command's own pid.
as1=(setpriv --reuid="$u1" --regid="$g1" --clear-groups)
as2=(setpriv --reuid="$u2" --regid="$g2" --clear-groups)
for f in "$cm" "$probe" "$rtapp" "$capp"; do
  "${as1[@]}" test -x "$f" && "${as2[@]}" test -x "$f" || skip "$f is not executable by nthcmtest and nobody (a path component closed to others)"
done
seg1=/nth-cpumgr-$u1 seg2=/nth-cpumgr-$u2
for s in "$seg1" "$seg2"; do
  # Another run of this test (another tree) may hold them: wait a while.
  for _ in $(seq 600); do [ -e "/dev/shm$s" ] || break; sleep 0.1; done
  [ -e "/dev/shm$s" ] && skip "/dev/shm$s exists (a daemon of that user runs): the default names are taken"
done
unset NTH_CPUMGR
tmp=$(mktemp -d /tmp/nth-users.XXXXXX)
chmod 755 "$tmp"
fail=0
pids=()
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
cleanup() {
  exec 7>&- 8>&- 2>/dev/null
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  timeout -s KILL 30 "$cm" stop --name "$seg1" >/dev/null 2>&1
  timeout -s KILL 30 "$cm" stop --name "$seg2" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT
# waitfor SECONDS CMD...: until CMD succeeds (bounded, generous).
waitfor() { local n=$(($1 * 20)); shift; for _ in $(seq "$n"); do "$@" && return 0; sleep 0.05; done; "$@"; }
allowed() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$1/task/$2/status" 2>/dev/null; }

# --- two users, two daemons on the default names -----------------------------
"${as1[@]}" "$cm" --foreground --period 10 --quantum 50 >"$tmp/d1.log" 2>&1 &
d1=$!; pids+=("$d1")
"${as2[@]}" "$cm" --foreground --period 10 --quantum 50 >"$tmp/d2.log" 2>&1 &
d2=$!; pids+=("$d2")
waitfor 60 grep -q "ready on $seg1" "$tmp/d1.log" && ok "nthcmtest's daemon without --name: ready on $seg1" \
  || { bad "nthcmtest's daemon not ready on $seg1: $(cat "$tmp/d1.log")"; exit 1; }
waitfor 60 grep -q "ready on $seg2" "$tmp/d2.log" && ok "nobody's daemon without --name: ready on $seg2, beside it" \
  || { bad "nobody's daemon not ready on $seg2: $(cat "$tmp/d2.log")"; exit 1; }
for s in "$seg1:$u1" "$seg2:$u2"; do
  got=$(stat -c %a:%u "/dev/shm${s%%:*}")
  [ "$got" = "600:${s#*:}" ] && ok "/dev/shm${s%%:*}: mode 600, owned by uid ${s#*:}" || bad "/dev/shm${s%%:*}: $got, want 600:${s#*:}"
done
dproc() { sed -n 's/^Uid:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$1/status"; }

# nobody's application, no NTH_CPUMGR: its own user's daemon, not the other.
: >"$tmp/go"; rm -f "$tmp/go"
"${as2[@]}" "$probe" 1 100 "until:$tmp/go" >"$tmp/p.out" 2>"$tmp/p.err" &
pp=$!; pids+=("$pp")
in_table() { "$cm" status --name "$1" 2>&1 | grep -q " $2 "; }
if waitfor 60 in_table "$seg2" "$pp"; then
  ok "nobody's application without NTH_CPUMGR attached to nobody's daemon ($seg2)"
else
  bad "nobody's application not in $seg2's table: $("$cm" status --name "$seg2" 2>&1) [$(cat "$tmp/p.err")]"
fi
"$cm" status --name "$seg1" >"$tmp/s1" 2>&1
grep -q " $pp " "$tmp/s1" && bad "nobody's application attached to nthcmtest's daemon: $(cat "$tmp/s1")" \
  || ok "nthcmtest's daemon has no application of nobody's"
touch "$tmp/go"; wait "$pp"
grep -q '^attached 1 ' "$tmp/p.out" && ok "it says attached 1" || bad "probe: $(cat "$tmp/p.out")"

# nobody's application pointed at nthcmtest's 0600 segment: refused, alone.
NTH_CPUMGR=$seg1 timeout -s KILL 120 "${as2[@]}" "$probe" 1 300 >"$tmp/p.out" 2>"$tmp/p.err"
n=$(grep -c "^nthlib: cpumgr segment $seg1 cannot be opened: Permission denied; running alone$" "$tmp/p.err")
if [ "$n" = 1 ] && grep -q '^attached 0 ' "$tmp/p.out"; then ok "another user's application cannot attach to $seg1: one line, running alone"
else bad "another user's application on $seg1: $n line(s) [$(cat "$tmp/p.err")] [$(cat "$tmp/p.out")]"; fi

# --- --enforce without root ------------------------------------------------------
[ "$(dproc "$d1")" = "$u1" ] && ok "nthcmtest's daemon (pid $d1) runs as uid $u1" || { bad "daemon $d1 runs as uid $(dproc "$d1"), not $u1"; exit 1; }
if [ "$(nproc)" -lt 2 ]; then echo "# 1 CPU: the enforcement case shares 2 CPUs; not run"; exit $fail; fi
mkfifo "$tmp/a.in" "$tmp/b.in"
exec 7<>"$tmp/a.in" 8<>"$tmp/b.in"
NTH_TEST_NO_RECLAIM=1 "${as1[@]}" "$rtapp" "$seg1" 2 <"$tmp/a.in" >"$tmp/a.out" 2>"$tmp/a.err" &
ap=$!; pids+=("$ap")
waitfor 60 grep -q "^A=1 N=2 " "$tmp/a.out" || { bad "rt_app (nthcmtest) never held 2 CPUs: $(tail -3 "$tmp/a.out") $(cat "$tmp/a.err")"; exit 1; }
echo spin >&7
waitfor 60 grep -q "^SPIN " "$tmp/a.out" || { bad "no SPIN line"; exit 1; }
read -r tid cpu < <(sed -n 's/^SPIN tid=\([0-9]*\) cpu=\([0-9]*\).*/\1 \2/p' "$tmp/a.out")
[ "$(allowed "$ap" "$tid")" = "$cpu" ] && ok "spinning VP thread $tid bound to CPU $cpu" || bad "spinner $tid: allowed $(allowed "$ap" "$tid"), want $cpu"
"${as1[@]}" taskset -c "$cpu" "$capp" "$seg1" 1 <"$tmp/b.in" >"$tmp/b.out" 2>"$tmp/b.err" &
bp=$!; pids+=("$bp")
moved() { local a; a=$(allowed "$ap" "$tid"); [ -n "$a" ] && [ "$a" != "$cpu" ]; }
if waitfor 60 moved; then ok "daemon of uid $u1 (no root) moved the spinner off CPU $cpu: allowed $(allowed "$ap" "$tid")"
else bad "spinner still on CPU $cpu 60 s after another application took it: $(cat "$tmp/d1.log")"; fi
waitfor 30 grep -q "its threads were moved" "$tmp/d1.log" && ok "the daemon says so" || bad "daemon log: $(cat "$tmp/d1.log")"
echo exit >&8
wait "$bp"
back() { [ "$(allowed "$ap" "$tid")" = "$cpu" ]; }
if waitfor 60 back; then ok "CPU $cpu given back: the spinner (still spinning) is bound to it again"
else bad "CPU $cpu given back, the spinner still allowed $(allowed "$ap" "$tid")"; fi
echo unspin >&7; echo exit >&7
wait "$ap"
exit $fail
