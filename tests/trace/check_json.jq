# Structural checks of a Chrome trace-event JSON written by nthlib. Prints one
# line per problem; no output means the trace is well formed:
#  - every B has its E on the same (pid, tid) track, properly nested;
#  - timestamps never go backwards on a track (file order);
#  - nor in the file: timed events are sorted by ts across all tracks and
#    processes (nth-trace merge wrote one process after the other);
#  - counter series never go backwards;
#  - every timed event has a numeric ts >= 0.
def key: "\(.pid)/\(.tid)";
(.traceEvents | map(select(.ph != "M"))) as $ev
| ($ev[] | select((.ts | type) != "number" or .ts < 0) | "bad ts: \(tojson)"),
  ([$ev[] | .ts | select(type == "number")] as $t
   | [range(1; $t | length) | select($t[.] < $t[. - 1])]
   | if length > 0 then "ts not sorted in the file: \(length) times, first at timed event \(.[0]) (\($t[.[0]]) after \($t[.[0] - 1]))" else empty end),
  ($ev | map(select(.ph == "B" or .ph == "E" or .ph == "i")) | group_by(key)[]
   | reduce .[] as $e ({d: 0, last: -1, err: [], k: ""};
       .k = ($e | key)
       | (if $e.ts < .last then .err += ["ts backwards on track \(.k) at \($e.ts)"] else . end)
       | .last = $e.ts
       | if $e.ph == "B" then .d += 1
         elif $e.ph == "E" then (if .d == 0 then .err += ["E without B on track \(.k) at \($e.ts)"] else .d -= 1 end)
         else . end)
   | .err[], (if .d != 0 then "\(.d) B without E on track \(.k)" else empty end)),
  ($ev | map(select(.ph == "C")) | group_by("\(.pid)/\(.name)")[]
   | reduce .[] as $e ({last: -1, err: []};
       (if $e.ts < .last then .err += ["counter \($e.name) goes backwards at \($e.ts)"] else . end) | .last = $e.ts)
   | .err[])
