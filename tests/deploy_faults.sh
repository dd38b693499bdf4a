#!/bin/sh
# The deployment's round protocol under faults, as processes on this host (tcp://127.0.0.1 only),
# on a logistic model: 4 of 20 clients killed mid-round (20%) are given up for their missed
# heartbeats long before the deadline, a slow client that keeps its heartbeats is waited for, and
# every round commits with the bits of fedc train over the clients that reported; over-selection
# adds the first K reports in slot order (fedc train's bits with the others dropped); a round with
# fewer than --min-reports reports is abandoned, logged, and run again to fedc train's bits; with
# no check-in held (--max-held 0) every client is told to come back after a retry window, honours
# it, and the run has fedc train's bits. Every process runs under timeout. Usage: deploy_faults.sh
# path/to/fedc. Exits 77 (skipped) without python3, which writes the data and compares the bits.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w20.json" 20
writers "$out/w6.json" 6
ljob="--model logistic --batch-size 2 --seed 9"
"$fedc" plan build --data "$out/w20.json" $ljob --out "$out/p20" >/dev/null && ok || bad "plan build (20) failed"
"$fedc" plan build --data "$out/w6.json" $ljob --out "$out/p6" >/dev/null && ok || bad "plan build (6) failed"

# train DATA OUT ROUNDS K [FAULT]: fedc train's run of the same job (FEDC_FAULT=FAULT: clients dropped)
train() {
  FEDC_FAULT=${5:-} timeout 120 "$fedc" train --data "$1" $ljob --rounds "$3" --clients-per-round "$4" \
    --checkpoint-every "$3" --eval-every 0 --threads 1 --quiet --out "$2" >/dev/null 2>&1 && ok || bad "fedc train ($2) failed"
}
# field METRICS KEY: KEY of each row, one a line
field() { python3 -c 'import json, sys
for l in open(sys.argv[1]): print(json.dumps(json.loads(l)[sys.argv[2]]))' "$1" "$2"; }

# 20 clients, 2 rounds of all 20: clients 0-14 a fleet, 15 slow (3 s, more than the 2 s heartbeat
# timeout, but alive), 16-19 processes killed (SIGKILL) while they hold their round-1 task
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/p20" --listen "$addr" --rounds 2 --clients-per-round 20 --out "$out/kill" \
  --token t --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 2 --linger 1 >"$out/kill.log" 2>&1 &
server=$!
timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w20.json" --clients 15 --token t --timeout 30 \
  >"$out/kfleet.log" 2>&1 &
fleet=$!
FEDC_FAULT=slow:3 timeout 120 "$fedc" client --connect "$addr" --data "$out/w20.json" --client 15 --token t \
  --timeout 30 >"$out/kslow.log" 2>&1 &
slow=$!
pids=""
for c in 16 17 18 19; do
  # not under timeout, which kill -9 would kill in its place: --max-seconds bounds them
  FEDC_FAULT=slow:60 "$fedc" client --connect "$addr" --data "$out/w20.json" --client $c --token t \
    --timeout 30 --max-seconds 100 >"$out/killed$c.log" 2>&1 &
  pids="$pids $!"
done
held "$out/killed16.log" "$out/killed17.log" "$out/killed18.log" "$out/killed19.log"
kill -9 $pids
wait $fleet && ok || bad "the fleet failed: $(cat "$out/kfleet.log")"
wait $slow && ok || bad "the slow client failed: $(cat "$out/kslow.log")"
wait $server && ok || bad "the server failed: $(cat "$out/kill.log")"
pids=""
[ "$(grep -c '"selected": 20, "reported": 16, "dropped": 4' "$out/kill/metrics.jsonl")" = 2 ] && ok \
  || bad "metrics.jsonl: $(cat "$out/kill/metrics.jsonl")"
[ "$(field "$out/kill/metrics.jsonl" missed_heartbeats | tr '\n' ' ')" = "4 4 " ] && ok \
  || bad "not 4 clients given up for their heartbeats in each round: $(cat "$out/kill/metrics.jsonl")"
[ "$(field "$out/kill/metrics.jsonl" left_out | tr -d ' ' | sort -u)" = "[16,17,18,19]" ] && ok \
  || bad "left out: $(field "$out/kill/metrics.jsonl" left_out)"
# given up well before the 60 s deadline: each round's collection within 20 s
python3 -c 'import json, sys
sys.exit(any(json.loads(l)["seconds"]["collect"] > 20 for l in open(sys.argv[1])))' "$out/kill/metrics.jsonl" && ok \
  || bad "a round waited for its dead clients: $(cat "$out/kill/metrics.jsonl")"
grep -q "client 16 (slot .*) not heard from for 2 s: given up" "$out/kill.log" && ok || bad "no give-up logged: $(cat "$out/kill.log")"
grep -q "client 15 (slot" "$out/kill.log" && bad "the slow client was given up: $(cat "$out/kill.log")" || ok
train "$out/w20.json" "$out/ktrain" 2 20 "$(replay "$out/kill/metrics.jsonl")"
[ "$(replay "$out/kill/metrics.jsonl")" = "load:1:16,17,18,19/2:16,17,18,19" ] && ok || bad "replay: $(replay "$out/kill/metrics.jsonl")"
same_bits "$out/kill/checkpoint.safetensors" "$out/ktrain/checkpoint.safetensors" && ok \
  || bad "the run without the killed clients differs from fedc train's without them"

# over-selection: K = 3 of 6, --over-select 1.5 selects 5 and adds the first 3 reports in slot
# order; fedc train with 5 a round and the 2 last slots' clients dropped has the same bits
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/p6" --listen "$addr" --rounds 3 --clients-per-round 3 --over-select 1.5 \
  --out "$out/over" --token t --report-deadline 60 --linger 1 >"$out/over.log" 2>&1 &
server=$!
expect 0 "fedc fleet: done: 6 clients" -- timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w6.json" \
  --clients 6 --token t --timeout 30
wait $server && ok || bad "the over-selecting server failed: $(cat "$out/over.log")"
[ "$(grep -c '"selected": 5, "reported": 3, "dropped": 0' "$out/over/metrics.jsonl")" = 3 ] && ok \
  || bad "over-selection metrics: $(cat "$out/over/metrics.jsonl")"
train "$out/w6.json" "$out/otrain" 3 5 "$(replay "$out/over/metrics.jsonl")"
python3 - "$out/over/metrics.jsonl" "$out/w6.json" <<'PY' && ok || bad "the left-out clients are not the last 2 slots"
import json, sys
# fedc_sample_clients is not reachable from here; the left-out are 2 a round and differ from round to round
rows = [json.loads(l) for l in open(sys.argv[1])]
sys.exit(not all(len(r["left_out"]) == 2 and r["not_needed"] + r["stragglers"] == 2 for r in rows))
PY
same_bits "$out/over/checkpoint.safetensors" "$out/otrain/checkpoint.safetensors" && ok \
  || bad "the over-selected run differs from fedc train's with the last slots dropped"

# over-selection with clients that keep state (SCAFFOLD's c_i): a client whose report was not added
# is told so with its next task (or done) and keeps its old state, as fedc train's client store
# keeps a dropped client's. K = 3, --over-select 2: all 6 clients a round, in slots 0 to 5; round 1
# adds 0, 1, 2 (client 0 slower, 1 s, so the others wait for it); client 0 is then killed in its
# round-2 task and given up, so round 2 adds 1, 2, 3: client 3, left out of round 1, comes back
# with its old state. Replayed through fedc train with the left-out dropped.
"$fedc" plan build --data "$out/w6.json" $ljob --algorithm scaffold --out "$out/scaf" >/dev/null && ok \
  || bad "plan build (scaffold) failed"
addr=tcp://127.0.0.1:$(free_port)
timeout 300 "$fedc" server --plan "$out/scaf" --listen "$addr" --rounds 3 --clients-per-round 3 --over-select 2 \
  --out "$out/sover" --token t --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 2 --linger 1 \
  >"$out/sover.log" 2>&1 &
server=$!
FEDC_FAULT=slow:1 "$fedc" client --connect "$addr" --data "$out/w6.json" --client 0 --token t --timeout 30 \
  --max-seconds 100 >/dev/null 2>&1 &
pids=$!
start_clients "$addr" "$out/w6.json" "$out/sover" 1 2 3 4 5
for i in $(seq 1800); do [ -s "$out/sover/metrics.jsonl" ] && break; sleep 0.1; done # round 1 committed
kill -9 $pids
for p in $clients; do wait $p || bad "a SCAFFOLD client failed: $(cat "$out"/sover?.log)"; done
wait $server && ok || bad "the over-selecting SCAFFOLD server failed: $(cat "$out/sover.log")"
pids=""
[ "$(field "$out/sover/metrics.jsonl" left_out | tr -d ' ' | tr '\n' ' ')" = "[3,4,5] [0,4,5] [0,4,5] " ] && ok \
  || bad "SCAFFOLD over-selection left out: $(field "$out/sover/metrics.jsonl" left_out)"
grep -q "fedc client 3: round 1: the report was not added: the client's state stays as it was" "$out/sover3.log" && ok \
  || bad "client 3 did not say its round-1 report was not added: $(cat "$out/sover3.log")"
FEDC_FAULT=$(replay "$out/sover/metrics.jsonl") timeout 300 "$fedc" train --data "$out/w6.json" $ljob --algorithm scaffold \
  --rounds 3 --clients-per-round 6 --checkpoint-every 3 --eval-every 0 --threads 1 --quiet --out "$out/strain" \
  >/dev/null 2>&1 && ok || bad "fedc train (scaffold) failed"
same_bits "$out/sover/checkpoint.safetensors" "$out/strain/checkpoint.safetensors" && ok \
  || bad "the over-selected SCAFFOLD run differs from fedc train's with the left-out dropped"

# --min-reports 6 of 6 with a 3 s deadline, client 5 starting late: the first attempt has 5 reports
# and is abandoned (a metrics row says so), the next has all 6 and commits with fedc train's bits
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/p6" --listen "$addr" --rounds 1 --clients-per-round 6 --min-reports 6 \
  --out "$out/min" --token t --report-deadline 3 --linger 1 >"$out/min.log" 2>&1 &
server=$!
timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w6.json" --clients 5 --token t --timeout 30 \
  >"$out/mfleet.log" 2>&1 &
fleet=$!
sleep 3.5
expect 0 "fedc client 5: done: 1 reports" -- timeout 60 "$fedc" client --connect "$addr" --data "$out/w6.json" \
  --client 5 --token t --timeout 30
wait $fleet && ok || bad "the fleet failed: $(cat "$out/mfleet.log")"
wait $server && ok || bad "the server failed: $(cat "$out/min.log")"
grep -q "round 1: 5 of 6 clients reported by the deadline, fewer than 6: the round is abandoned" "$out/min.log" && ok \
  || bad "no abandonment logged: $(cat "$out/min.log")"
grep -q '"round": 1, "selected": 6, "reported": 5, "dropped": 1, .*"attempt": 1, "abandoned": true' "$out/min/metrics.jsonl" \
  && ok || bad "no abandoned row: $(cat "$out/min/metrics.jsonl")"
grep -q '"round": 1, "selected": 6, "reported": 6, "dropped": 0, .*"attempt": [23], "abandoned": false' \
  "$out/min/metrics.jsonl" && ok || bad "no committed row: $(cat "$out/min/metrics.jsonl")"
train "$out/w6.json" "$out/mtrain" 1 6
same_bits "$out/min/checkpoint.safetensors" "$out/mtrain/checkpoint.safetensors" && ok \
  || bad "the retried round differs from fedc train's"

# no check-in held: every client without a task is told to come back after the retry window
# (the heartbeat interval, 0.2 s), and does; 4 rounds of 3 of 6 end with fedc train's bits
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/p6" --listen "$addr" --rounds 4 --clients-per-round 3 --max-held 0 \
  --heartbeat 0.2 --out "$out/nohold" --token t --report-deadline 60 --linger 1 >"$out/nohold.log" 2>&1 &
server=$!
expect 0 "fedc fleet: done: 6 clients, 12 reports" -- timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w6.json" \
  --clients 6 --token t --timeout 30
wait $server && ok || bad "the server failed: $(cat "$out/nohold.log")"
train "$out/w6.json" "$out/htrain" 4 3
same_bits "$out/nohold/checkpoint.safetensors" "$out/htrain/checkpoint.safetensors" && ok \
  || bad "the run with retry windows differs from fedc train's"

expect 1 "the heartbeat timeout (1 s) must be longer than the heartbeat interval (2 s)" -- "$fedc" server \
  --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 2 --heartbeat 2 \
  --heartbeat-timeout 1 --out "$out/hb"
expect 2 "--over-select" -- "$fedc" server --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 \
  --clients-per-round 2 --over-select 0.5 --out "$out/os"

echo "deploy_faults.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
