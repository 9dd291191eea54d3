#!/bin/sh
# The man pages (cpumgr(8), nth(3), nthrun(1), nth-trace(1); issue 5: "a man
# page for cpumgr(8) and the API section of nth(3)") render with no groff
# warning of any kind (-ww): an unknown macro, a bad escape or a broken
# font change would otherwise reach `man` users as garbage, unseen here.
set -u
src=${top_srcdir:-.}
command -v groff >/dev/null || { echo "groff missing"; exit 77; }
fail=0
n=0
for m in "$src"/doc/*.[0-9]; do
    [ -f "$m" ] || continue
    n=$((n + 1))
    w=$(groff -man -ww -z "$m" 2>&1)
    if [ -n "$w" ]; then
        echo "FAIL: $(basename "$m"): groff warns:"
        echo "$w" | head -n 5
        fail=1
    fi
    # The NAME section is what whatis(1) and apropos(1) read.
    grep -q '^\.SH NAME' "$m" || { echo "FAIL: $(basename "$m"): no NAME section"; fail=1; }
done
[ "$n" -ge 4 ] || { echo "FAIL: $n man pages found in $src/doc"; exit 1; }
[ $fail -eq 0 ] && echo "ok: $n man pages render without warnings"
exit $fail
