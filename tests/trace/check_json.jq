# Structural checks of a Chrome trace-event JSON written by nthlib. Prints one
# line per problem; no output means the trace is well formed:
#  - every B has its E on the same (pid, tid) track, properly nested;
#  - every X (complete event) has a numeric "dur" >= 0 and nests on its
#    track: a slice that begins inside another ends no later than it (in
#    whole nanoseconds, as written: ts and dur have 3 decimals of a us);
#  - timestamps never go backwards on a track (file order);
#  - nor in the file: timed events are sorted by ts across all tracks and
#    processes (nth-trace merge wrote one process after the other);
#  - counter series never go backwards;
#  - every timed event has a numeric ts >= 0.
def key: "\(.pid)/\(.tid)";
def ns: . * 1000 | round;
(.traceEvents | map(select(.ph != "M"))) as $ev
| ($ev[] | select((.ts | type) != "number" or .ts < 0) | "bad ts: \(tojson)"),
  ([$ev[] | .ts | select(type == "number")] as $t
   | [range(1; $t | length) | select($t[.] < $t[. - 1])]
   | if length > 0 then "ts not sorted in the file: \(length) times, first at timed event \(.[0]) (\($t[.[0]]) after \($t[.[0] - 1]))" else empty end),
  ($ev | map(select(.ph == "B" or .ph == "E" or .ph == "i" or .ph == "X")) | group_by(key)[]
   | reduce .[] as $e ({d: 0, last: -1, err: [], k: "", open: []};
       .k = ($e | key)
       | (if $e.ts < .last then .err += ["ts backwards on track \(.k) at \($e.ts)"] else . end)
       | .last = $e.ts
       | if $e.ph == "B" then .d += 1
         elif $e.ph == "E" then (if .d == 0 then .err += ["E without B on track \(.k) at \($e.ts)"] else .d -= 1 end)
         elif $e.ph == "X" then
           (if ($e.dur | type) != "number" or $e.dur < 0 then .err += ["X without a duration on track \(.k) at \($e.ts)"]
            else ($e.ts | ns) as $b | ($b + ($e.dur | ns)) as $stop
              # the slices still open at $b: those ending after it
              | .open |= until(length == 0 or .[-1] > $b; .[:-1])
              | (if (.open | length) > 0 and $stop > .open[-1]
                 then .err += ["X not nested on track \(.k): \($e.name) at \($e.ts) ends at \($stop) ns, after its parent (\(.open[-1]) ns)"]
                 else . end)
              | .open += [$stop]
            end)
         else . end)
   | .err[], (if .d != 0 then "\(.d) B without E on track \(.k)" else empty end)),
  ($ev | map(select(.ph == "C")) | group_by("\(.pid)/\(.name)")[]
   | reduce .[] as $e ({last: -1, err: []};
       (if $e.ts < .last then .err += ["counter \($e.name) goes backwards at \($e.ts)"] else . end) | .last = $e.ts)
   | .err[])
