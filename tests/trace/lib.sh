# Shared helpers of the tracing shell tests (sourced). Each test gets a fresh
# scratch directory; a failure prints what and exits 1.
set -u
: "${top_builddir:?run through make check}" "${top_srcdir:?run through make check}"
SIM=$top_builddir/tests/trace/trace_sim
TOOL=$top_builddir/tools/nth-trace
CHECK=$top_srcdir/tests/trace/check_json.jq
command -v jq >/dev/null || { echo "jq missing: scripts/install-deps.sh installs it"; exit 99; }
work=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# wait_bounded PID WHAT: wait for a child, a hang failing with its stacks.
. "$top_srcdir/tests/wait_bounded.sh"

# check_json FILE: parses, and check_json.jq finds nothing wrong.
check_json() {
    jq -e . "$1" >/dev/null || fail "$1 does not parse as JSON"
    local problems
    problems=$(jq -r -f "$CHECK" "$1") || fail "jq failed on $1"
    [ -z "$problems" ] || fail "$1: $problems"
}

# tid_of FILE NAME: the tid of the track whose thread_name is NAME.
tid_of() {
    jq -r --arg n "$2" '.traceEvents[] | select(.ph=="M" and .name=="thread_name" and .args.name==$n) | .tid' "$1"
}

# check_prv FILE.prv: a Paraver trace as Paraver reads it. The header's
# object counts bound every record (CPU, application, its task 1 and its
# thread count from "NAPPL:1(NTHREADS:1):..."), the records are sorted by
# time (a state record by its begin), a state ends no earlier than it
# begins, and no record reaches past the header's duration (which may end
# later: a merged cpumgr daemon's trace runs on after its last grant).
check_prv() {
    local out
    out=$(awk -F: '
        NR == 1 {
            if (!match($0, /\):[0-9]+_ns:1\([0-9]+\):[0-9]+(:1\([0-9]+:1\))+$/)) { print "bad header: " $0; bad = 1; exit }
            split(substr($0, RSTART + 2), h, ":")
            dur = h[1]; sub(/_ns$/, "", dur); dur += 0
            ncpu = h[2]; gsub(/[^0-9]/, "", ncpu); ncpu += 0
            nappl = h[3] + 0
            for (a = 1; a <= nappl; a++) { t = h[3 + 2 * a - 1]; gsub(/[^0-9]/, "", t); nthr[a] = t + 0 }
            next
        }
        $1 != 1 && $1 != 2 { print "unknown record: " $0; bad = 1; next }
        $2 < 0 || $2 > ncpu { print "cpu out of range: " $0; bad = 1 }
        $3 < 1 || $3 > nappl || $4 != 1 { print "application or task not in the header: " $0; bad = 1 }
        $5 < 1 || $5 > nthr[$3] { print "thread not in its application: " $0; bad = 1 }
        $6 + 0 < last { print "not sorted by time: " prev " then " $0; bad = 1 }
        { last = $6 + 0; prev = $0; end = $1 == 1 ? $7 + 0 : $6 + 0; if (end > max) max = end }
        $1 == 1 && $7 + 0 < $6 + 0 { print "state ends before it begins: " $0; bad = 1 }
        END { if (!bad && max > dur) print "a record reaches " max ", after the duration " dur; else if (bad) exit 1 }' "$1" | head -n 5)
    [ -z "$out" ] || fail "$1: $out"
}
