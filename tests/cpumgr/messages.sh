#!/usr/bin/env bash
# messages.sh -- what a user is told about cpumgr set-ups that do not
# work as they may think (issue 5, f11t trial items 8 and 9):
#  - a daemon started on CPUs another live daemon (another --name)
#    already manages says so at start, naming that daemon's segment and
#    the CPUs both manage; one on other CPUs names no such daemon;
#  - an application whose NTH_CPUMGR names a segment it may not open
#    (EACCES: another user's, mode 0600) or a directory in /dev/shm (EINVAL
#    from glibc's shm_open) says
#    why it runs alone, in one line, once; a name that does not exist
#    (no daemon yet) stays silent, as before.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
cm=$top_builddir/cpumgr/cpumgr
probe=$top_builddir/tests/parallel/malleable_probe
[ -x "$cm" ] || { echo "FAIL: $cm is not built"; exit 1; }
[ -x "$probe" ] || { echo "FAIL: $probe is not built"; exit 1; }
segA=/nth-msgA-$$ segB=/nth-msgB-$$ segC=/nth-msgC-$$
dir=/nth-msgdir-$$ acc=/nth-msgacc-$$ none=/nth-msgnone-$$
tmp=$(mktemp -d /tmp/nth-msgtest.XXXXXX)
fail=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
cleanup() {
  for s in "$segA" "$segB" "$segC"; do timeout -s KILL 30 "$cm" stop --name "$s" >/dev/null 2>&1; rm -f "/dev/shm$s"; done
  rmdir "/dev/shm$dir" 2>/dev/null; rm -f "/dev/shm$acc"; rm -rf "$tmp"
}
trap cleanup EXIT

# The first two CPUs of our affinity mask (a list such as 0-1 or 2,5-7).
cpus=()
IFS=, read -ra parts <<<"$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)"
for p in "${parts[@]}"; do
  lo=${p%-*} hi=${p#*-}
  for ((c = lo; c <= hi && ${#cpus[@]} < 2; c++)); do cpus+=("$c"); done
done

# --- several daemons on the same CPUs ---------------------------------------
pidA=$(timeout -s KILL 60 "$cm" run --name "$segA" --cpus "${cpus[0]}" 2>"$tmp/a.err")
[ -n "$pidA" ] && ok "daemon A on CPU ${cpus[0]} started (pid $pidA)" || { bad "daemon A did not start: $(cat "$tmp/a.err")"; exit 1; }
timeout -s KILL 60 "$cm" run --name "$segB" >/dev/null 2>"$tmp/b.err" || bad "daemon B did not start: $(cat "$tmp/b.err")"
if grep -q "^cpumgr: note: another cpumgr (pid $pidA) on $segA also manages CPU ${cpus[0]}: " "$tmp/b.err"; then
  ok "daemon B names daemon A, its segment and the CPU both manage"
else
  bad "daemon B says nothing of daemon A on CPU ${cpus[0]}: $(cat "$tmp/b.err")"
fi
[ "$(grep -c "on $segA " "$tmp/b.err")" = 1 ] && ok "said once" || bad "daemon A named $(grep -c "on $segA " "$tmp/b.err") times"
grep -q "on $segB " "$tmp/a.err" && bad "daemon A, started first, names B: $(cat "$tmp/a.err")" || ok "daemon A, started first, names no later daemon"
if [ ${#cpus[@]} -ge 2 ]; then
  timeout -s KILL 60 "$cm" run --name "$segC" --cpus "${cpus[1]}" >/dev/null 2>"$tmp/c.err" || bad "daemon C did not start: $(cat "$tmp/c.err")"
  grep -q "on $segA " "$tmp/c.err" && bad "daemon C (CPU ${cpus[1]}) names A (CPU ${cpus[0]}): $(cat "$tmp/c.err")" \
    || ok "daemon C on another CPU does not name A"
  grep -q "on $segB also manages CPU ${cpus[1]}: " "$tmp/c.err" && ok "daemon C names B (all CPUs) for CPU ${cpus[1]}" \
    || bad "daemon C says nothing of B: $(cat "$tmp/c.err")"
else
  echo "# one CPU in our mask: the disjoint-CPUs case is not run"
fi
for s in "$segA" "$segB" "$segC"; do timeout -s KILL 30 "$cm" stop --name "$s" >/dev/null 2>&1; done

# --- NTH_CPUMGR naming what cannot be opened --------------------------------
said() {   # said DESCRIPTION NAME PATTERN: one line, the probe still ran alone
  local n
  n=$(grep -c "^nthlib: cpumgr segment $2 cannot be opened: $3; running alone$" "$tmp/p.err")
  if [ "$n" = 1 ] && grep -q '^attached 0 ' "$tmp/p.out"; then ok "$1: one line, running alone"
  else bad "$1: $n line(s) [$(cat "$tmp/p.err")] [$(cat "$tmp/p.out")]"; fi
}
mkdir "/dev/shm$dir"
NTH_CPUMGR=$dir timeout -s KILL 60 "$probe" 1 300 >"$tmp/p.out" 2>"$tmp/p.err"
said "NTH_CPUMGR names a directory" "$dir" "it is a directory"

: >"/dev/shm$acc"
chmod 600 "/dev/shm$acc"
if [ "$(id -u)" = 0 ]; then
  # root opens anything: run the probe as nobody, on root's 0600 segment.
  if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups test -x "$probe"; then
    NTH_CPUMGR=$acc timeout -s KILL 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
      "$probe" 1 300 >"$tmp/p.out" 2>"$tmp/p.err"
    said "NTH_CPUMGR names another user's segment" "$acc" "Permission denied"
  else
    echo "# as root without setpriv (or nobody may not run $probe): the EACCES case is not run"
  fi
else
  chmod 000 "/dev/shm$acc"
  NTH_CPUMGR=$acc timeout -s KILL 60 "$probe" 1 300 >"$tmp/p.out" 2>"$tmp/p.err"
  said "NTH_CPUMGR names a segment we may not open" "$acc" "Permission denied"
fi

NTH_CPUMGR=$none timeout -s KILL 60 "$probe" 1 50 >"$tmp/p.out" 2>"$tmp/p.err"
if [ ! -s "$tmp/p.err" ] && grep -q '^attached 0 ' "$tmp/p.out"; then ok "NTH_CPUMGR names no segment (no daemon yet): silent"
else bad "NTH_CPUMGR names no segment: [$(cat "$tmp/p.err")] [$(cat "$tmp/p.out")]"; fi
exit $fail
