#!/bin/bash
# nthrun --trace FILE when the program it starts cannot write FILE itself.
# A program that leaves through _exit() (dash running `sh -c 'p1; p2'`
# does) or is killed by SIGKILL never runs its exit path: only
# FILE.PID.bin was left, without its end record, and no FILE (issue 7, T1).
# nthrun runs the program as its child, waits, converts that file into
# FILE, says so in one line (the missing end record is expected there, no
# converter warning) and keeps the .bin for merge. The program's exit status, or
# its death by a signal, is still nthrun's; a SIGTERM sent to nthrun
# reaches the program, which then writes FILE itself.
. "$top_srcdir/tests/trace/lib.sh"
nthrun=$top_builddir/pthread-shim/nthrun
[ "${NTH_SHIM_BUILT:-no}" = yes ] && [ -x "$nthrun" ] || { echo "the pthread shim is not built"; exit 77; }
san=$(sed -n 's/^SAN_CFLAGS = //p' "$top_builddir/Makefile")
# Preloading a sanitizer build of the shim is not supported (run-compare.sh).
[ -z "$san" ] || { echo "sanitizer build: the shim is not preloaded"; exit 77; }
export NTH_CPUMGR=off NTH_TRACE_TOOL=$TOOL
cat > demo.c <<'C'
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static void *work(void *a) { volatile double x = 0; for (int i = 0; i < 100000; i++) x += i; return a; }
/* demo exit: threads, then _exit(3). demo wait FILE: threads, FILE gets
 * the pid, then sleeps until a signal ends it. */
int main(int argc, char **argv)
{
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    if (argc > 1 && !strcmp(argv[1], "exit")) {
        usleep(300000);   /* past a flush (NTH_TRACE_FLUSH_MS=20) */
        _exit(3);
    }
    if (argc > 2 && !strcmp(argv[1], "wait")) {
        FILE *f = fopen(argv[2], "w");
        fprintf(f, "%ld\n", (long)getpid());
        fclose(f);
        for (;;) pause();
    }
    puts("done");
    return 0;
}
C
cc -O1 -pthread demo.c -o demo || fail "cc build"
export NTH_TRACE_FLUSH_MS=20

# wait_for FILE: up to 60 s for a program to write its pid.
wait_for() {
    for _ in $(seq 600); do [ -s "$1" ] && return 0; sleep 0.1; done
    fail "$1 never written"
}
# one_line STDERR FILE HOW: exactly one nthrun line, no converter warning.
one_line() {
    [ "$(grep -c '^nthrun: trace: ' "$1")" = 1 ] || fail "not one nthrun line: $(cat "$1")"
    grep -q "^nthrun: trace: $3 without writing $work/$2 (no end record; records up to its last flush): wrote $work/$2 from $work/$2\.[0-9]*\.bin ([0-9]* bytes; that file kept for merge)$" "$1" ||
        fail "nthrun's line: $(cat "$1")"
    grep -qi 'warning' "$1" && fail "a warning for the expected missing end record: $(cat "$1")"
    local bin
    bin=$(sed -n 's/^nthrun: trace: .* from \(.*\.bin\) (.*/\1/p' "$1")
    [ -e "$bin" ] || fail "the converted $bin was not kept for merge"
    return 0
}

# 1. The program leaves through _exit(): its status, and FILE from its .bin.
timeout -s KILL 120 "$nthrun" --trace "$work/a.json" -- ./demo exit >out.txt 2>err.txt; st=$?
[ "$st" = 3 ] || fail "_exit(3) program: status $st: $(cat err.txt)"
[ -f a.json ] || fail "a.json not written after _exit(): $(ls) $(cat err.txt)"
check_json a.json
one_line err.txt a.json "demo (pid [0-9]*) left through _exit()"
jq -e '[.traceEvents[] | select(.ph=="X" and .cat == "vp")] | length > 0' a.json >/dev/null ||
    fail "a.json has no VP slice"

# 1b. The same with a name without a suffix: FILE.json (a small run), named
# in nthrun's line.
timeout -s KILL 120 "$nthrun" --trace "$work/auto" -- ./demo exit >out.txt 2>err.txt; st=$?
[ "$st" = 3 ] || fail "_exit(3) program (auto): status $st: $(cat err.txt)"
[ -f auto.json ] && [ ! -e auto ] || fail "auto.json not written after _exit(): $(ls) $(cat err.txt)"
check_json auto.json
grep -q "^nthrun: trace: .* without writing $work/auto (.*): wrote $work/auto.json from $work/auto\.[0-9]*\.bin ([1-9][0-9]* bytes" err.txt ||
    fail "nthrun's line for auto: $(cat err.txt)"

# 2. The README's example: the shell leaves through _exit(); it gets FILE,
# each program it starts FILE with its pid before the suffix, named on
# stderr, and the .bin files of those two stay for merge.
timeout -s KILL 120 "$nthrun" --trace "$work/run.json.gz" -- sh -c './demo; ./demo' >out.txt 2>err.txt; st=$?
[ "$st" = 0 ] || fail "sh -c: status $st: $(cat err.txt)"
[ -f run.json.gz ] || fail "run.json.gz not written for the shell: $(ls) $(cat err.txt)"
gzip -dc run.json.gz > run.json && check_json run.json
one_line err.txt run.json.gz "sh (pid [0-9]*) left through _exit()"
n=0
for f in run.[0-9]*.json.gz; do
    [ -f "$f" ] || continue
    pid=${f#run.}; pid=${pid%.json.gz}
    grep -q "^nthlib: trace: wrote $work/$f " err.txt || fail "$f not named on stderr: $(cat err.txt)"
    [ -f "run.json.gz.$pid.bin" ] || fail "run.json.gz.$pid.bin not kept beside $f: $(ls)"
    n=$((n + 1))
done
[ "$n" = 2 ] || fail "$n run.PID.json.gz files, want 2: $(ls)"
# The shell's .bin is kept too (no end record: --no-end-ok, as README says).
[ "$(ls run.json.gz.*.bin | wc -l)" = 3 ] || fail "not 3 .bin files (shell and two programs): $(ls)"
"$TOOL" merge -q --no-end-ok run.json.gz.*.bin -o all.json || fail "merge of the run's .bin files"
check_json all.json

# 3. SIGKILL: FILE from the .bin; nthrun dies by SIGKILL too.
rm -f pid
(timeout -s KILL 120 "$nthrun" --trace "$work/k.json" -- ./demo wait "$work/pid" >out.txt 2>err.txt) 2>/dev/null & np=$!
wait_for pid
sleep 0.2   # a flush
kill -KILL "$(cat pid)"
wait "$np"; st=$?
[ "$st" = 137 ] || fail "SIGKILLed program: nthrun status $st, want 137: $(cat err.txt)"
[ -f k.json ] || fail "k.json not written after SIGKILL: $(ls) $(cat err.txt)"
check_json k.json
one_line err.txt k.json "demo (pid $(cat pid)) was killed by SIGKILL"

# 4. SIGTERM sent to nthrun goes on to the program, whose exit path writes
# FILE (nthrun has nothing to convert); nthrun dies by SIGTERM.
rm -f pid
timeout -s KILL 120 "$nthrun" --trace "$work/t.json" -- ./demo wait "$work/pid" >out.txt 2>err.txt & np=$!
wait_for pid
nthrun_pid=$(ps -o ppid= -p "$(cat pid)" | tr -d ' ')
[ -n "$nthrun_pid" ] && [ "$nthrun_pid" != "$np" ] || fail "no nthrun above the program (timeout $np, parent '$nthrun_pid')"
kill -TERM "$nthrun_pid"
wait "$np"; st=$?
[ "$st" = 143 ] || fail "SIGTERM to nthrun: status $st, want 143: $(cat err.txt)"
[ -f t.json ] || fail "t.json not written after SIGTERM to nthrun: $(ls) $(cat err.txt)"
check_json t.json
grep -q "^nthlib: trace: wrote $work/t.json " err.txt || fail "the program did not write t.json: $(cat err.txt)"
grep -q '^nthrun:' err.txt && fail "nthrun converted what the program wrote: $(cat err.txt)"

# 5. A program that exits normally: FILE is its own, nthrun says nothing.
timeout -s KILL 120 "$nthrun" --trace "$work/n.json" -- ./demo >out.txt 2>err.txt || fail "status $?: $(cat err.txt)"
[ "$(cat out.txt)" = done ] || fail "output: $(cat out.txt)"
grep -q '^nthrun:' err.txt && fail "nthrun spoke after a normal exit: $(cat err.txt)"
check_json n.json

# 6. A program that never starts the runtime (no pthread call): no trace,
# and one line saying why (issue 5: nthrun said nothing and wrote
# nothing); its status stays nthrun's, for a .bin name too. A program that
# cannot be run gets only the "cannot run" line.
for prog in true false; do
    for name in u.json u.bin; do
        timeout -s KILL 120 "$nthrun" --trace "$work/$name" -- "$prog" >out.txt 2>err.txt; st=$?
        want=0; [ "$prog" = false ] && want=1
        [ "$st" = "$want" ] || fail "$prog --trace $name: status $st, want $want: $(cat err.txt)"
        [ "$(wc -l <err.txt)" = 1 ] && grep -q "^nthrun: trace: $prog (pid [0-9]*) never started the nano-thread runtime (it made no pthread call): no trace written to $work/$name$" err.txt ||
            fail "$prog --trace $name: not the one line: $(cat err.txt)"
        [ ! -e "$name" ] || fail "$prog --trace $name: $name written: $(ls)"
    done
done
# A stale u.bin of another process is not this program's trace.
cp "$(ls n.json.*.bin | head -1)" u.bin || fail "no n.json .bin to copy"
timeout -s KILL 120 "$nthrun" --trace "$work/u.bin" -- true >out.txt 2>err.txt
grep -q "never started the nano-thread runtime" err.txt || fail "stale u.bin taken for the program's: $(cat err.txt)"
timeout -s KILL 120 "$nthrun" --trace "$work/u.json" -- ./no-such-program >out.txt 2>err.txt; st=$?
[ "$st" = 127 ] || fail "missing program: status $st, want 127"
[ "$(cat err.txt)" = "nthrun: cannot run './no-such-program': No such file or directory" ] ||
    fail "missing program: $(cat err.txt)"
exit 0
