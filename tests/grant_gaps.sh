#!/bin/sh
# bench/grant_gaps.py on a daemon trace made up here (the JSON of
# `nth-trace convert`): two applications on 2 CPUs. a holds 2 CPUs from 0
# to 10 ms, then 1 while b holds 1 (10-30 ms); b exits at 30 ms and a grows
# back at 35 ms; a exits at 40 ms. Ungranted: 5 ms x 1 CPU (30-35), of
# 2 CPUs x 40 ms = 6.25 %; only that interval is listed. Bad input: one line.
set -u
src=${top_srcdir:-..}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
c() { printf '{"ph":"C","ts":%s,"pid":1,"tid":0,"name":"CPUs granted to %s","args":{"cpus":%s}},' "$1" "$2" "$3"; }
{
    printf '{"traceEvents":[{"ph":"M","name":"process_name","pid":1,"args":{"name":"cpumgr"}},'
    c 10000 "b (pid 3)" 1; c 0 "a (pid 2)" 2; c 10000 "a (pid 2)" 1; c 30000 "b (pid 3)" 0
    c 35000 "a (pid 2)" 2; c 40000 "a (pid 2)" 0
    printf '{"ph":"M","name":"thread_name","pid":1,"tid":0,"args":{"name":"x"}}]}\n'
} >"$out/t.json"
python3 "$src/bench/grant_gaps.py" "$out/t.json" >"$out/o" 2>"$out/e" || { echo "FAIL: exit $?: $(cat "$out/e")"; exit 1; }
cat "$out/o"
[ "$(wc -l <"$out/o")" = 2 ] || { echo "FAIL: want one interval and the total"; exit 1; }
grep -Eq '^ +30\.0 \.\. +35\.0 ms \( +5\.0 ms\): 1 of 2 CPUs granted$' "$out/o" || { echo "FAIL: interval"; exit 1; }
grep -q '^ungranted: 5.0 CPU-ms of 2 x 40.0 ms (6.25 %)$' "$out/o" || { echo "FAIL: total"; exit 1; }
# --cpus 3: every instant lacks at least one CPU.
python3 "$src/bench/grant_gaps.py" "$out/t.json" --cpus 3 | grep -q '^ungranted: 45.0 CPU-ms of 3 x 40.0 ms (37.50 %)$' || {
    echo "FAIL: --cpus 3"; exit 1; }
for bad in '{"traceEvents":[]}' 'not json' '{"traceEvents":[{"ph":"C","ts":"x","name":"CPUs granted to a","args":{}}]}'; do
    printf '%s\n' "$bad" >"$out/bad.json"
    python3 "$src/bench/grant_gaps.py" "$out/bad.json" >/dev/null 2>"$out/e"; rc=$?
    [ "$rc" = 1 ] && [ "$(wc -l <"$out/e")" = 1 ] || { echo "FAIL: bad input '$bad': rc $rc: $(cat "$out/e")"; exit 1; }
done
python3 "$src/bench/grant_gaps.py" "$out/t.json" --cpus 0 >/dev/null 2>"$out/e"; rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$out/e")" = 1 ] || { echo "FAIL: --cpus 0: rc $rc"; exit 1; }
echo "ok: grant_gaps.py"
