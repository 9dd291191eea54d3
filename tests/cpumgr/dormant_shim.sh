#!/usr/bin/env bash
# dormant_shim.sh -- programs run under the pthread shim that only wait
# become dormant (issue 5, "shim-idle-not-dormant"; DESIGN invariant 3):
# a daemon on 2 CPUs, five plain POSIX programs (tests/cpumgr/idle_shim_app,
# LD_PRELOAD=libnth-pthread.so) that wait in
#   read   read() on a pipe (a kernel call: nth_blocking_enter)
#   cond   pthread_cond_timedwait, 12 s (the shim waits in 10 ms slices)
#   wait   waitpid for a plain child process
#   signal pthread_cond_timedwait, 30 s, a SIGUSR1 handler
#   cancel a thread in pthread_cond_timedwait (30 s), main in read()
# and one busy nthlib application asking for both CPUs. Before the fix none
# of the five ever became dormant: each was billed CPUs while it waited.
# Checked by counting and by the daemon's accounting, not by timing bounds:
#  - all five show "(dormant)" in cpumgr status (looked for within 10 s);
#  - over a second in that state, each is billed < 0.05 CPU-s (it was
#    0.6-1 before) and none of them holds a CPU;
#  - then each wakes and ends right: the line is read, the child reaped,
#    the handler runs (within 10 s of kill; its wait is 30 s), the cancel
#    ends the 30 s wait, the 12 s wait times out after 12 s, not before.
# Needs 2 CPUs: skipped (77) on fewer.
set -uo pipefail
top_builddir=${top_builddir:-$(pwd)}
cm=${CM:-$top_builddir/cpumgr/cpumgr}
app=${ISA:-$top_builddir/tests/cpumgr/idle_shim_app}
busy=${DA:-$top_builddir/tests/cpumgr/dormant_app}
shim=${SHIM:-$top_builddir/.libs/libnth-pthread.so}
for f in "$cm" "$app" "$busy"; do [ -x "$f" ] || { echo "FAIL: $f is not built"; exit 1; }; done
[ -f "$shim" ] || { echo "FAIL: $shim is not built"; exit 1; }
[ "$(nproc)" -ge 2 ] || { echo "SKIP: fewer than 2 CPUs"; exit 77; }
# A sanitizer build of the shim cannot be preloaded into a plain program
# (its runtime must come first): tested in the plain build.
if ldd "$shim" 2>/dev/null | grep -Eq 'lib(asan|tsan)\.so'; then
  echo "SKIP: $shim is a sanitizer build"; exit 77
fi
seg=/nth-dormshim-$$
tmp=$(mktemp -d /tmp/nth-dormshim.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  touch "$tmp/go" "$tmp/child" 2>/dev/null
  "$cm" stop --name "$seg" >/dev/null 2>&1; rm -f "/dev/shm$seg"; rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/../wait_bounded.sh"   # wait_bounded: a hang fails with its stacks
fail=0
ok()  { echo "ok   $*"; }
bad() { echo "FAIL $*"; fail=1; }
# A line on stdout once file $1 exists (bounded: 60 s).
feeder() { for _ in $(seq 600); do [ -e "$1" ] && break; sleep 0.1; done; echo go; }

"$cm" --name "$seg" --cpus 0,1 --quantum 100 >/dev/null 2>"$tmp/daemon.err" ||
  { echo "FAIL: daemon did not start: $(cat "$tmp/daemon.err")"; exit 1; }
export NTH_CPUMGR=$seg
# exec: $! is then the program's pid (the signal goes to it).
run() { LD_PRELOAD=$shim exec "$app" "$@"; }
declare -A mode  # pid -> what it waits in
feeder "$tmp/go" | run read >"$tmp/read" 2>&1 & pids+=($!); mode[$!]=read
run cond 12 >"$tmp/cond" 2>&1 & pids+=($!); mode[$!]=cond
run wait "$tmp/child" >"$tmp/wait" 2>&1 & pids+=($!); mode[$!]=wait
run signal 30 >"$tmp/signal" 2>&1 & sigpid=$!; pids+=($!); mode[$!]=signal
feeder "$tmp/go" | run cancel 30 >"$tmp/cancel" 2>&1 & pids+=($!); mode[$!]=cancel
napps=5
status() { "$cm" status --name "$seg"; }
# Slots of the shim apps: every PID but the busy one's (NR > 2: the rows).
nslots() { status | awk 'NR > 2' | grep -vc '(attaching)'; }
for _ in $(seq 100); do [ "$(nslots)" -ge $napps ] && break; sleep 0.1; done
"$busy" busy 8 2 >"$tmp/busy" 2>&1 & bpid=$!; pids+=($bpid)
ndorm() { status | grep -c '(dormant)'; }
nfull() { status | awk -v b="$bpid" 'NR > 2 && $3 == b && $5 == 2 && $6 == 2' | wc -l; }
for _ in $(seq 100); do [ "$(ndorm)" -ge $napps ] && [ "$(nfull)" -ge 1 ] && break; sleep 0.1; done
s0=$(status); sleep 1; s1=$(status)
# Each one dormant at both looks.
nd=0
for p in "${!mode[@]}"; do
  if grep -q "^ *[0-9]* .* $p .*(dormant)" <<<"$s0" && grep -q "^ *[0-9]* .* $p .*(dormant)" <<<"$s1"
  then nd=$((nd + 1)); else bad "${mode[$p]} (pid $p) was not dormant while it waited"; fi
done
if [ "$nd" -ge $napps ]; then ok "all $napps waiting shim programs dormant"
else echo "$s1" | sed 's/^/#   /'; fi
# CPU-seconds billed to each shim program over that second (PID, $NF).
billed=$(awk -v b="$bpid" 'NR == FNR { if (FNR > 2 && $3 != b) c[$3] = $NF; next }
                           FNR > 2 && ($3 in c) { printf "%s %.3f %s\n", $3, $NF - c[$3], $6 }' \
         <(echo "$s0") <(echo "$s1"))
echo "# billed over 1 s (program pid CPU-s CPUs-assigned dormant):"
while read -r p b a; do
  echo "#   ${mode[$p]:-?} $p $b $a $(grep -c "^ *[0-9]* .* $p .*(dormant)" <<<"$s1")"
done <<<"$billed"
nb=0
for p in "${!mode[@]}"; do
  if awk -v p="$p" '$1 == p && $2 < 0.05 && $3 == 0 { f = 1 } END { exit !f }' <<<"$billed"; then
    nb=$((nb + 1))
  else bad "${mode[$p]} (pid $p): billed $(awk -v p="$p" '$1 == p { print $2 " CPU-s, " $3 " CPUs" }' <<<"$billed") in a second of waiting"; fi
done
[ "$nb" -ge $napps ] && ok "each billed < 0.05 CPU-s in that second, holding no CPU"
if grep -q "^ *[0-9]* .* $bpid .* 2 *2 " <<<"$s1"; then ok "the busy app held both CPUs"
else bad "the busy app did not hold both CPUs: $(grep " $bpid " <<<"$s1")"; fi
# Wake them.
touch "$tmp/go" "$tmp/child"
kill -USR1 "$sigpid"
for _ in $(seq 100); do grep -q SIGNALED "$tmp/signal" && break; sleep 0.1; done
if grep -q SIGNALED "$tmp/signal"; then ok "signal: the handler ran during a 30 s wait"
else bad "signal: no handler within 10 s: $(head -c 300 "$tmp/signal")"; fi
kill -TERM "$sigpid" 2>/dev/null
for p in "${pids[@]}"; do
  [ "$p" = "$sigpid" ] && continue
  wait_bounded "$p" "${mode[$p]:-busy} program" || bad "a program (pid $p) ended with status $? (124: hung)"
done
wait_bounded "$sigpid" "signal program, after SIGTERM" 2>/dev/null
pids=()
chk() { # name, regex of its whole output
  if [ "$(wc -l <"$tmp/$1")" = 1 ] && grep -Eq "$2" "$tmp/$1"; then ok "$1: $(cat "$tmp/$1")"
  else bad "$1: '$(head -c 300 "$tmp/$1")' (wanted $2)"; fi
}
chk read '^READ go$'
chk wait '^CHILD status=0$'
chk cancel '^CANCELED waited_ms=[0-9]+$'
# The cancel acts at the next slice once the CPUs are back, not at the
# wait's end (30 s from its start): a generous bound, 20 s.
w=$(sed -n 's/^CANCELED waited_ms=\([0-9]*\)$/\1/p' "$tmp/cancel")
if [ -n "$w" ] && [ "$w" -lt 20000 ]; then ok "cancel: acted on within $w ms"
else bad "cancel: '$(cat "$tmp/cancel")' (wanted well before the wait's 30 s end)"; fi
chk cond '^TIMEDOUT waited_ms=[0-9]+$'
w=$(sed -n 's/^TIMEDOUT waited_ms=\([0-9]*\)$/\1/p' "$tmp/cond")
if [ -n "$w" ] && [ "$w" -ge 12000 ]; then ok "cond: timed out after $w ms (12000 asked)"
else bad "cond: '$(cat "$tmp/cond")' (not before 12000 ms)"; fi
exit $fail
