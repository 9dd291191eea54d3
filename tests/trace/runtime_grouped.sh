#!/bin/bash
# The runtime's multi-record events are written whole, with one clock read:
# a nano-thread's creation (its NAME record and bytes, THREAD_CREATE, the
# creator's OVERHEAD push and pop) and a switch away from an ended one
# (THREAD_END then SWITCH) sit next to each other in the .bin, stamped
# alike (the push with the call's start, not later). Consecutive in the
# file means one reservation: a buffer's records are drained in order, so
# a cut file (SIGKILL) or a full buffer (lost, counted) never keeps a
# creation without its name or a push without its pop. One timestamp means
# one clock read (bench/RESULTS.md, trace6: the create path read the clock
# four times, for four records).
. "$top_srcdir/tests/trace/lib.sh"
DEMO=$top_builddir/tests/trace/rt_demo

NTH_VPS=1 NTH_TRACE=g.bin "$DEMO" recycle > g.out 2>g.err || fail "rt_demo recycle exited $?: $(cat g.err)"
grep -q '^recycled=' g.out || fail "rt_demo printed no recycled= line: $(cat g.out)"
# One line per 32-byte record, fields as 16-bit words: ts = w1..w4,
# type = w5, vp = w6, arg = w7 w8, id = w9..w12, value = w13..w16.
od -A n -v -t u2 -w32 -j 64 g.bin | awk '
function w(a, b, c, d) { return a + b * 65536 + c * 4294967296 + d * 281474976710656 }
{ ts[NR] = w($1, $2, $3, $4); ty[NR] = $5; id[NR] = w($9, $10, $11, $12); val[NR] = w($13, $14, $15, $16)
  if ($5 == 13) { len[NR] = $7; kind[NR] = $8 } }
END {
  bad = 0; creates = 0; ends = 0
  for (i = 1; i <= NR; i++) {
    if (ty[i] == 13 && kind[i] == 1 && id[i] > 1) {          # a nano-thread name (main: not runtime-created)
      c = i + 1 + int((len[i] + 31) / 32)                     # its bytes, then THREAD_CREATE
      if (ty[c] != 3 || id[c] != id[i]) { print "name of " id[i] " not followed by its THREAD_CREATE"; bad++; continue }
      if (ts[c] != ts[i]) { print "name and THREAD_CREATE of " id[i] " stamped apart: " sprintf("%.0f %.0f", ts[i], ts[c]); bad++ }
      if (ty[c + 1] != 7 || ty[c + 2] != 8 || id[c + 1] != val[c] || id[c + 2] != val[c]) {
        print "THREAD_CREATE of " id[i] " not followed by its creator " val[c] "'"'"'s OVERHEAD push and pop"; bad++; continue }
      if (ts[c + 2] != ts[c] || ts[c + 1] > ts[c]) { print "OVERHEAD of the creation of " id[i] " stamped apart"; bad++ }
      creates++
    }
    if (ty[i] == 4) {
      if (ty[i + 1] != 5 || val[i + 1] != id[i]) { print "THREAD_END of " id[i] " not followed by the switch away from it"; bad++; continue }
      if (ts[i + 1] != ts[i]) { print "THREAD_END of " id[i] " and its switch stamped apart"; bad++ }
      ends++
    }
  }
  if (creates < 4 || ends < 4) { print "too few creations (" creates ") or ends (" ends ") seen"; bad++ }
  exit bad != 0
}' > check.out || fail "$(head -5 check.out)"
exit 0
