#!/bin/sh
# --exit-migrations (bench/kernels/harness.c): the workload driver's
# migrations per second count each kernel process to the end of its exit
# handlers, so that a VP moved while the runtime ends is not left out
# (the last run's line is read before exit). Every build prints, after its
# run lines, one "migrations_exit" line whose count is at least the last
# run's (the counter only grows) and whose source is the runs' source;
# without --json the option is refused with a message and exit 2.
set -u
b=${top_builddir:-.}/bench
command -v jq >/dev/null || { echo "jq missing: scripts/install-deps.sh installs it"; exit 99; }
OMP_WAIT_POLICY=passive; NTH_CPUMGR=off; export OMP_WAIT_POLICY NTH_CPUMGR
fail=0
for prog in lu-seq lu-glibc lu-openmp lu-nth sor-nth; do
    if [ ! -x "$b/$prog" ]; then
        case $prog in *openmp*|*nth*) echo "skip: $prog not built"; continue ;; esac
        echo "FAIL: $b/$prog missing"; fail=1; continue
    fi
    t=2; [ "$prog" = lu-seq ] && t=1
    out=$(timeout -s KILL 60 "$b/$prog" --size 40 --threads $t --runs 2 --json --exit-migrations 2>/dev/null); rc=$?
    if [ $rc -ne 0 ] || ! printf '%s\n' "$out" | jq -e -s '
        length == 3 and .[2].bench == "migrations_exit" and (.[0:2] | all(.bench != "migrations_exit"))
        and .[2].migrations_source == .[1].migrations_source
        and (if .[1].migrations < 0 then .[2].migrations < 0 else .[2].migrations >= .[1].migrations end)' >/dev/null 2>&1; then
        echo "FAIL ($rc): $prog --exit-migrations: $out"; fail=1; continue
    fi
    echo "ok: $prog: $(printf '%s\n' "$out" | jq -c -s '[.[1].migrations, .[2].migrations, .[2].migrations_source]')"
done
err=$(timeout -s KILL 60 "$b/lu-seq" --size 40 --exit-migrations 2>&1 >/dev/null); rc=$?
if [ $rc -ne 2 ] || ! printf '%s' "$err" | grep -q -- '--exit-migrations needs --json'; then
    echo "FAIL: --exit-migrations without --json: exit $rc, '$err'"; fail=1
else
    echo "ok: --exit-migrations without --json refused"
fi
exit $fail
