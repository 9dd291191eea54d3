#!/bin/bash
# trace_big.sh -- a trace of 10 million events: is it written, how big is it,
# what does converting it cost, and does the result parse. The events are
# bench/trace-record-cost's function enter/exit pairs on one kernel thread
# (5 batches of PAIRS pairs: 10 M records at the default 1,000,000), recorded
# with a buffer large enough that none is lost, then converted by nth-trace
# to .json.gz and to .prv. Prints one JSON object per line (DESIGN
# "Benchmark output"):
#   trace_big_record   records in the binary file, its bytes, bytes/record
#   trace_big_convert  per format: output bytes, bytes per record, seconds
#                      and peak RSS (KiB) of the conversion, events found
#                      in the output (JSON: X/B/E/i/C objects, one a line;
#                      .prv: lines), and "parsed_events": the JSON read back
#                      whole by bench/trace_big_read.py (a streaming parser,
#                      python3-ijson, that checks the structure in bounded
#                      memory), which also prints its own trace_big_read
#                      line; null if /usr/bin/python3 has no ijson, false if
#                      the trace does not parse or is not well formed.
#                      TRACE_BIG_READ=0 skips it. (python3's json.load of
#                      the 10 M-record trace took > 5 GB and > 20 min.)
# usage: bench/trace_big.sh [BUILDDIR [PAIRS]]   (default build 1000000)
set -euo pipefail
bdir=${1:-build}; pairs=${2:-1000000}
rc=$bdir/bench/trace-record-cost tool=$bdir/tools/nth-trace
for p in "$rc" "$tool"; do [ -x "$p" ] || { echo "trace_big.sh: $p not built" >&2; exit 2; }; done
command -v /usr/bin/time >/dev/null || { echo "trace_big.sh: needs /usr/bin/time" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nth-trace-big.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
NTH_TRACE=$tmp/big.bin NTH_TRACE_BUFFER=1G NTH_TRACE_LIMIT=2G timeout -s KILL 600 "$rc" "$pairs" > "$tmp/rc.out" 2> "$tmp/rc.err"
bin=$tmp/big.bin
bytes=$(stat -c %s "$bin"); recs=$(( (bytes - 64) / 32 ))
printf '{"bench":"trace_big_record","value":%d,"unit":"records","bytes":%d,"bytes_per_record":32,"params":{"pairs":%d,"load":"%s"}}\n' \
    "$recs" "$bytes" "$pairs" "$(load)"
for out in big.json.gz big.prv; do
    /usr/bin/time -f '%e %M' -o "$tmp/time" timeout -s KILL 1200 "$tool" convert "$bin" -o "$tmp/$out" 2> "$tmp/conv.err" \
        || { echo "trace_big.sh: convert to $out failed: $(cat "$tmp/conv.err")" >&2; exit 1; }
    read -r secs rss < <(tail -n1 "$tmp/time")
    ob=$(stat -c %s "$tmp/$out")
    parses=null
    if [ "$out" = big.json.gz ]; then
        events=$(gzip -dc "$tmp/$out" | grep -c '^,\?{"ph":"[XBEiC]"' || true)
        if [ "${TRACE_BIG_READ:-1}" = 1 ] && /usr/bin/python3 -c 'import ijson' 2>/dev/null; then
            /usr/bin/time -f '%e %M' -o "$tmp/rtime" timeout -s KILL 1800 /usr/bin/python3 \
                "$(dirname "$0")/trace_big_read.py" "$tmp/$out" > "$tmp/read.out" || true
            cat "$tmp/read.out"
            parses=$(sed -n 's/.*"events": \([0-9]*\),.*"problems": 0,.*/\1/p' "$tmp/read.out")
            [ -n "$parses" ] || parses=false
        fi
        jb=$(gzip -dc "$tmp/$out" | wc -c)
    else
        events=$(($(wc -l < "$tmp/$out") - 1)); jb=$ob
    fi
    printf '{"bench":"trace_big_convert","impl":"%s","value":%s,"unit":"s","bytes":%d,"uncompressed_bytes":%d,"bytes_per_record":%.1f,"uncompressed_bytes_per_record":%.1f,"peak_rss_kib":%d,"events_out":%d,"parsed_events":%s,"params":{"records":%d,"load":"%s"},"tool":"%s"}\n' \
        "${out#big.}" "$secs" "$ob" "$jb" "$(echo "$ob / $recs" | bc -l)" "$(echo "$jb / $recs" | bc -l)" "$rss" "$events" "$parses" "$recs" "$(load)" \
        "$(sed -n 's/^nth-trace: //p' "$tmp/conv.err" | tr -d '"' | head -n1)"
done
