#!/bin/bash
# NTH_TRACE=*.json.gz: the output is gzip (zlib) and decompresses to a
# well-formed trace equal in content to the plain JSON path's.
. "$top_srcdir/tests/trace/lib.sh"
"$SIM" return t.json.gz || fail "trace_sim exited $?"
gzip -t t.json.gz || fail "not a valid gzip file"
gzip -dc t.json.gz > t.json
check_json t.json
[ "$(jq '[.traceEvents[]|select(.ph=="X")]|length' t.json)" -gt 10 ] || fail "too few slices"
exit 0
