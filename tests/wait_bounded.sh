# wait_bounded.sh -- sourced by shell tests that wait on a child process.
# A child that hangs must fail the test with what it was doing, never hold
# CI until the harness kills the whole run (runtime_cpumgr_early.sh hung
# 9 min 45 s in an ASan suite, its log saying only "exited 143").
#
# wait_bounded PID WHAT [SECONDS]
#   Waits for child PID of this shell and returns its exit status. If it
#   still runs after SECONDS (default NTH_TEST_HANG_S, else 180: a bound on
#   a hang, far above an ASan run at load 20, not a timing check), prints
#   one line "HANG: WHAT (pid PID) still running after N s", its threads'
#   names, states and kernel wait channels, then their stacks (gdb, if
#   present and the process is not traced already), kills it with
#   SIGKILL and returns 124 (as timeout(1)). Callers treat 124 as a
#   failure like any other status.

# True while PID runs (not yet a zombie): kill -0 succeeds on a zombie too.
_wb_alive() {
    local st
    st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "${st%% *}" != Z ]
}

# hang_dump PID: what each thread of PID is doing, on stdout.
hang_dump() {
    local pid=$1 t
    # Names, states and kernel wait channels first: gdb cannot attach to a
    # process already traced (strace) and may be missing.
    echo "threads of $pid: tid name state wchan"
    for t in /proc/"$pid"/task/*; do
        echo "$(basename "$t") $(cat "$t/comm" 2>/dev/null) $(sed 's/.*) //; s/ .*//' "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null)"
    done
    if command -v gdb >/dev/null 2>&1; then
        # Bounded too: gdb may itself be slow to attach under load.
        timeout -s KILL 120 gdb -batch -nx -p "$pid" -ex 'info threads' \
            -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP\|^warning: \|^$'
    fi
}

wait_bounded() {
    local pid=$1 what=$2 secs=${3:-${NTH_TEST_HANG_S:-180}} i=0
    # POSIX sh: some callers are dash scripts (tests/cpumgr).
    while [ "$i" -lt $((secs * 10)) ]; do
        _wb_alive "$pid" || break
        sleep 0.1
        i=$((i + 1))
    done
    if _wb_alive "$pid"; then
        echo "HANG: $what (pid $pid) still running after $secs s; its threads:"
        hang_dump "$pid" | sed 's/^/    /'
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        return 124
    fi
    wait "$pid"
}
