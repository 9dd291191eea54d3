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
