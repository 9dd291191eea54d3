#!/bin/bash
# The runtime's multi-record events are written whole, with one clock read:
# a nano-thread's creation (its NAME record and bytes, then THREAD_CREATE,
# whose arg carries the creator's OVERHEAD in ns: no push/pop records of
# their own since trace8) and a switch away from an ended one
# (THREAD_END then SWITCH) sit next to each other in the .bin, stamped
# alike (the push with the call's start, not later). Consecutive in the
# file means one reservation: a buffer's records are drained in order, so
# a cut file (SIGKILL) or a full buffer (lost, counted) never keeps a
# creation without its name. One timestamp means
# one clock read (bench/RESULTS.md, trace6: the create path read the clock
# four times, for four records). Since trace8 a name a kernel thread has
# written once (NTH_NAME_STRING) goes as a key in THREAD_CREATE's arg.
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo

NTH_VPS=1 NTH_TRACE=g.bin "$DEMO" recycle > g.out 2>g.err || fail "rt_demo recycle exited $?: $(cat g.err)"
grep -q '^recycled=' g.out || fail "rt_demo printed no recycled= line: $(cat g.out)"
# One line per 32-byte record, fields as 16-bit words: ts = w1..w4,
# type = w5, vp = w6, arg = w7 w8, id = w9..w12, value = w13..w16.
od -A n -v -t u2 -w32 -j 64 g.bin | awk '
function w(a, b, c, d) { return a + b * 65536 + c * 4294967296 + d * 281474976710656 }
{ ts[NR] = w($1, $2, $3, $4); ty[NR] = $5; arg[NR] = $7 + $8 * 65536; id[NR] = w($9, $10, $11, $12); val[NR] = w($13, $14, $15, $16)
  if ($5 == 13) { len[NR] = $7; kind[NR] = $8 } }
END {
  bad = 0; creates = 0; ends = 0; bykey = 0
  for (i = 1; i <= NR; i++) {
    if (ty[i] == 13) { if (kind[i] == 8) defined[id[i]] = 1; i += int((len[i] + 31) / 32); continue }
    if (ty[i] == 3 && val[i] != 0) {                          # a runtime create (main: creator 0)
      ovh = arg[i] % 16777216; key = int(arg[i] / 16777216)
      if (ovh == 0) { print "THREAD_CREATE of " id[i] " carries no OVERHEAD of its creator " val[i]; bad++ }
      if ((ty[i + 1] == 7 || ty[i + 1] == 8) && id[i + 1] == val[i]) {
        print "THREAD_CREATE of " id[i] " followed by an OVERHEAD push/pop of its creator (two records too many)"; bad++ }
      if (key) {
        if (!(key in defined)) { print "THREAD_CREATE of " id[i] " names it by key " key " not defined before it"; bad++ }
        bykey++
      }
      # a name written with the create: in the same reservation, same stamp
      for (j = i - 1; j >= 1 && j >= i - 2; j--)
        if (ty[j] == 13 && ((kind[j] == 1 && id[j] == id[i]) || (kind[j] == 8 && id[j] == key)) && ts[j] != ts[i]) {
          print "name and THREAD_CREATE of " id[i] " stamped apart: " sprintf("%.0f %.0f", ts[j], ts[i]); bad++ }
      creates++
    }
    if (ty[i] == 4) {
      if (ty[i + 1] != 5 || val[i + 1] != id[i]) { print "THREAD_END of " id[i] " not followed by the switch away from it"; bad++; continue }
      if (ts[i + 1] != ts[i]) { print "THREAD_END of " id[i] " and its switch stamped apart"; bad++ }
      ends++
    }
  }
  if (creates < 4 || ends < 4) { print "too few creations (" creates ") or ends (" ends ") seen"; bad++ }
  # four "cycler"s: one name definition, then keys only (trace8)
  if (bykey < 4) { print "only " bykey " of " creates " creations name their nano-thread by key"; bad++ }
  exit bad != 0
}' > check.out || fail "$(head -5 check.out)"
# The converter names every cycler's track by its key, and shows each
# creation as OVERHEAD on main (from the create record's arg).
"$TOOL" convert g.bin -o g.json 2>conv.err || fail "nth-trace convert: $(cat conv.err)"
check_json g.json
n=$(jq '[.traceEvents[] | select(.ph=="M" and .name=="thread_name" and (.args.name|test("^cycler #[0-9]+$")))] | length' g.json)
[ "$n" -eq 4 ] || fail "$n tracks named cycler #N in g.json, expected 4"
main=$(tid_of g.json "main #1")
o=$(jq --arg t "$main" '[.traceEvents[] | select(.ph=="B" and (.tid|tostring)==$t and .name=="OVERHEAD")] | length' g.json)
[ "$o" -ge 4 ] || fail "main shows $o OVERHEAD slices, expected one per create and join (>= 4)"
exit 0
