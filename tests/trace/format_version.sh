#!/bin/bash
# nth-trace reads binary trace format versions 1 (before trace8) and 2 (name
# keys in THREAD_CREATE) and refuses any other version with one line naming
# the file's version and the ones it reads, exit status nonzero, no output
# file -- not a misread trace (a version-1 reader would have skipped the rest
# of a version-2 file at its first NTH_NAME_STRING).
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo

NTH_VPS=1 NTH_TRACE=v.bin "$DEMO" recycle > v.out 2>v.err || fail "rt_demo recycle exited $?: $(cat v.err)"
ver() { od -A n -t u4 -j 8 -N 4 "$1" | tr -d ' '; }
[ "$(ver v.bin)" = 2 ] || fail "a new trace has format version $(ver v.bin), expected 2"
# set_ver FILE N: a copy of v.bin whose header says version N
set_ver() {
    cp v.bin "$1"
    printf "$(printf '\\%03o\\%03o\\%03o\\%03o' $(($2 & 255)) $(($2 >> 8 & 255)) $(($2 >> 16 & 255)) $(($2 >> 24)))" |
        dd of="$1" bs=1 seek=8 conv=notrunc status=none
}
for v in 0 3 65536; do
    set_ver v$v.bin $v
    [ "$(ver v$v.bin)" = $v ] || fail "could not patch the version to $v"
    if "$TOOL" convert v$v.bin -o v$v.json 2>v$v.err; then fail "version $v converted: $(cat v$v.err)"; fi
    grep -q "v$v.bin: binary trace format version $v; this nth-trace reads versions 1 to 2" v$v.err \
        || fail "version $v: no clear refusal: $(cat v$v.err)"
    [ ! -s v$v.json ] || fail "version $v left an output file"
done
set_ver v1.bin 1
"$TOOL" convert v1.bin -o v1.json 2>v1.err || fail "version 1 refused: $(cat v1.err)"
check_json v1.json
exit 0
