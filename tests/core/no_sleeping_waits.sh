#!/bin/sh
# The runtime never sleeps inside a library's adaptive wait. liburcu's
# blocking wfcq dequeue (and its other *_blocking calls) spin 10 times and
# then sleep in poll(NULL, 0, 10): inside our ready queue that held the queue
# lock for 10 ms whenever an enqueuer had swung the tail but not yet linked
# its node, and every VP wanting that queue stalled behind it
# (nthlib/ready_queue.c). libnth has no use of its own for poll or select, so
# importing either means such a wait came back. Deterministic: the race is
# too rare to provoke in a test; its symptom (10 ms round trips) is timing.
set -u
lib=${NTH_LIBNTH_SO:-.libs/libnth.so}
dyn=-D
if [ ! -f "$lib" ] && [ -z "${NTH_LIBNTH_SO:-}" ]; then
    lib=.libs/libnth.a; dyn=         # a --disable-shared build
fi
[ -f "$lib" ] || { echo "FAIL: $lib not built"; exit 1; }
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
bad=$(nm $dyn --undefined-only "$lib" 2>/dev/null | awk 'NF {print $NF}' | sed 's/@.*//' | sort -u |
      grep -E '^(poll|ppoll|select|pselect)$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: $lib imports $(echo $bad): a sleeping wait inside the runtime (see this script's comment)"
    exit 1
fi
echo "PASS: $lib imports no poll/select"
