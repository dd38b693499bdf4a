#!/bin/sh
# Secure aggregation deployed (fedc server --secure-agg, docs/deployment.md), as processes on this
# host (tcp://127.0.0.1 only), on a logistic model built with --secure-sum: (a) SecAgg and SecAgg+
# runs end with fedc train --secure-sum's bits; (b) clients killed before each of the protocol's
# four steps are recovered from (the round commits with the survivors, with the bits of fedc train
# over the clients that reported); (c) a malformed SecAgg message is refused with a logged reason
# and its client left out, the server going on; (d) a server that asks for both shares of one
# client is refused by every honest client, and its round is abandoned; (e) over-selection: the
# first K reports in slot order are summed, the other masked inputs left out and unmasked as
# dropped, with fedc train --secure-sum's bits over the added clients, SecAgg and SecAgg+ with a
# slow client; options that cannot work are refused. Every process runs under timeout or --max-seconds. Usage: deploy_secagg.sh
# path/to/fedc. Exits 77 (skipped) without python3, which writes the data and compares the bits.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w10.json" 10
writers "$out/w6.json" 6
ljob="--model logistic --batch-size 2 --seed 9 --secure-sum 16 --secure-bound 1"
for n in 6 10; do
  "$fedc" plan build --data "$out/w$n.json" $ljob --out "$out/p$n" >/dev/null && ok || bad "plan build ($n) failed"
done
"$fedc" plan build --data "$out/w6.json" --model logistic --batch-size 2 --seed 9 --out "$out/plain" >/dev/null \
  && ok || bad "plan build (plain) failed"

# train DATA OUT ROUNDS K [FAULT]: fedc train's run of the same job (FEDC_FAULT=FAULT: clients dropped)
train() {
  FEDC_FAULT=${5:-} timeout 120 "$fedc" train --data "$1" $ljob --rounds "$3" --clients-per-round "$4" \
    --checkpoint-every "$3" --eval-every 0 --threads 1 --quiet --out "$2" >/dev/null 2>&1 && ok || bad "fedc train ($2) failed"
}
# serve NAME PLAN ROUNDS K OPTIONS...: a secure server in the background ($server), logging to NAME.log;
# a secure step waits at most the heartbeat timeout (5 s) for a client, long enough on a loaded machine
serve() {
  name=$1 plan=$2 rounds=$3 k=$4
  shift 4
  addr=tcp://127.0.0.1:$(free_port)
  timeout 120 "$fedc" server --plan "$plan" --listen "$addr" --rounds "$rounds" --clients-per-round "$k" \
    --out "$out/$name" --token t --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 5 --linger 1 "$@" \
    >"$out/$name.log" 2>&1 &
  server=$!
}

# (a) 3 rounds of all 6, SecAgg (every client masks with every other) and SecAgg+ (2 neighbours)
train "$out/w6.json" "$out/train6" 3 6
for mode in all ring; do
  opts="--secure-agg auto"
  [ $mode = ring ] && opts="--secure-agg 2 --secure-neighbours 2"
  serve $mode "$out/p6" 3 6 $opts
  expect 0 "fedc fleet: done: 6 clients, 18 reports" -- timeout 120 "$fedc" fleet --connect "$addr" \
    --data "$out/w6.json" --clients 6 --token t --timeout 30
  wait $server && ok || bad "the $mode server failed: $(cat "$out/$mode.log")"
  same_bits "$out/$mode/checkpoint.safetensors" "$out/train6/checkpoint.safetensors" && ok \
    || bad "the secure run ($mode) differs from fedc train --secure-sum's"
  [ "$(grep -c '"masked": 6, "masked_left_out": 0, "revealed": 6, "unmasked": true, "survivors": \[0, 1, 2, 3, 4, 5\]' "$out/$mode/metrics.jsonl")" = 3 ] \
    && ok || bad "metrics ($mode): $(cat "$out/$mode/metrics.jsonl")"
done

# (b) 10 clients, threshold 5, 2 rounds: clients 0-5 a fleet; 6, 7, 8 and 9 end their processes
# before their advertise, shares, masked report and reveal. Round 1 adds 0-5 and 9 (whose masked
# input is in, its self-mask rebuilt from the others' shares; 8's mask key is rebuilt to take its
# pairwise masks off); round 2 starts without the four.
serve kill "$out/p10" 2 10 --secure-agg 5
timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w10.json" --clients 6 --token t --timeout 30 \
  >"$out/kfleet.log" 2>&1 &
fleet=$!
pids=""
for r in 0 1 2 3; do
  FEDC_FAULT=secagg-exit:$r timeout 120 "$fedc" client --connect "$addr" --data "$out/w10.json" --client $((6 + r)) \
    --token t --timeout 30 >"$out/k$r.log" 2>&1 &
  pids="$pids $!"
done
for p in $pids; do
  wait $p
  [ $? = 3 ] && ok || bad "a client with FEDC_FAULT=secagg-exit did not end at its fault"
done
pids=""
wait $fleet && ok || bad "the fleet failed: $(cat "$out/kfleet.log")"
wait $server && ok || bad "the server failed: $(cat "$out/kill.log")"
python3 - "$out/kill/metrics.jsonl" <<'PY' && ok || bad "kill metrics: $(cat "$out/kill/metrics.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
a, b = rows[0]["secure_agg"], rows[1]["secure_agg"]
ok = len(rows) == 2 and not any(r["abandoned"] for r in rows)
ok &= (a["advertised"], a["shared"], a["masked"], a["revealed"]) == (9, 8, 7, 6) and a["survivors"] == [0, 1, 2, 3, 4, 5, 9]
ok &= rows[0]["left_out"] == [6, 7, 8] and rows[0]["reported"] == 7
ok &= (b["advertised"], b["masked"], b["revealed"]) == (6, 6, 6) and rows[1]["left_out"] == [6, 7, 8, 9]
sys.exit(not ok)
PY
train "$out/w10.json" "$out/ktrain" 2 10 "$(replay "$out/kill/metrics.jsonl")"
same_bits "$out/kill/checkpoint.safetensors" "$out/ktrain/checkpoint.safetensors" && ok \
  || bad "the run with clients killed differs from fedc train's over the clients that reported"

# (c) a malformed SecAgg message: client 5's shares message arrives a byte short; the server refuses
# it, saying why, and the round goes on without client 5 (threshold 3 of 5 neighbours)
serve garble "$out/p6" 1 6 --secure-agg 3
timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w6.json" --clients 5 --token t --timeout 30 \
  >"$out/gfleet.log" 2>&1 &
fleet=$!
expect 0 "secure step 1: the server said: secagg:" -- env FEDC_FAULT=secagg-garble:1 timeout 120 "$fedc" client \
  --connect "$addr" --data "$out/w6.json" --client 5 --token t --timeout 30
wait $fleet && ok || bad "the fleet failed: $(cat "$out/gfleet.log")"
wait $server && ok || bad "the server failed: $(cat "$out/garble.log")"
grep -q "round 1: refused client 5: secagg: " "$out/garble.log" && ok || bad "no refusal logged: $(cat "$out/garble.log")"
grep -q '"reported": 5, .*"left_out": \[5\]' "$out/garble/metrics.jsonl" && ok \
  || bad "garble metrics: $(cat "$out/garble/metrics.jsonl")"
train "$out/w6.json" "$out/gtrain" 1 6 "$(replay "$out/garble/metrics.jsonl")"
same_bits "$out/garble/checkpoint.safetensors" "$out/gtrain/checkpoint.safetensors" && ok \
  || bad "the run without the garbling client differs from fedc train's without it"

# (d) a server that names a survivor dropped too, asking for both its shares: every client refuses,
# no share is revealed, and each attempt at the round is abandoned
FEDC_FAULT=secagg-forge-unmask serve forge "$out/p6" 1 6 --secure-agg 3
timeout 60 "$fedc" fleet --connect "$addr" --data "$out/w6.json" --clients 6 --token t --timeout 5 \
  --max-seconds 40 >"$out/ffleet.log" 2>&1
wait $server && bad "the forging server committed a round" || ok
grep -q "the server asks for both the self-mask share and the mask-key share of client" "$out/ffleet.log" && ok \
  || bad "no client refused the forged unmask request: $(cat "$out/ffleet.log")"
grep -q "round 1: the secure aggregation failed: the round is abandoned" "$out/forge.log" && ok \
  || bad "no abandonment logged: $(cat "$out/forge.log")"
[ -e "$out/forge/checkpoint.safetensors" ] && bad "the forging server saved a checkpoint" || ok

# over_metrics METRICS K S: every row committed, K summed and revealing, the rest of the S selected
# left out; the survivors (U3, in slot order) and the left out are the S clients; at most S - K
# masked inputs left out (how many came before the round closed is the machine's timing)
over_metrics() {
  python3 - "$@" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
k, s = int(sys.argv[2]), int(sys.argv[3])
ok = len(rows) == 2
for r in rows:
    a = r["secure_agg"]
    ok &= not r["abandoned"] and r["selected"] == s and r["reported"] == k and len(r["left_out"]) == s - k
    ok &= (a["masked"], a["revealed"], a["unmasked"]) == (k, k, True) and len(a["survivors"]) == k
    ok &= sorted(a["survivors"] + r["left_out"]) == list(range(s)) and 0 <= a["masked_left_out"] <= s - k
sys.exit(not ok)
PY
}

# (e) over-selection, SecAgg: K = 4, --over-select 1.5 selects all 6 and sums the first 4 reports in
# slot order (threshold 3: a summed client keeps 3 summed neighbours whichever 2 are left out); the
# bits of fedc train --secure-sum with the left-out clients dropped
serve over "$out/p6" 2 4 --over-select 1.5 --secure-agg auto
expect 0 "fedc fleet: done: 6 clients" -- timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w6.json" \
  --clients 6 --token t --timeout 30
wait $server && ok || bad "the over-selecting server failed: $(cat "$out/over.log")"
over_metrics "$out/over/metrics.jsonl" 4 6 && ok || bad "over-selection metrics: $(cat "$out/over/metrics.jsonl")"
train "$out/w6.json" "$out/otrain" 2 6 "$(replay "$out/over/metrics.jsonl")"
same_bits "$out/over/checkpoint.safetensors" "$out/otrain/checkpoint.safetensors" && ok \
  || bad "the over-selected secure run differs from fedc train --secure-sum's over the added clients"

# SecAgg+ (4 neighbours, threshold 3), K = 9, --over-select 1.1 selects all 10; client 9 sleeps 2 s
# before its work (its heartbeats go on): in the first 9 slots it is waited for, and the client of
# slot 9 is left out; in slot 9 it is left out itself. Either way slots 0-8 are summed. The server
# stays 10 s after the last round, so that the slow client, left out of it, is told the job is done.
serve sover "$out/p10" 2 9 --over-select 1.1 --secure-agg auto --secure-neighbours 4 --linger 10
timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w10.json" --clients 9 --token t --timeout 30 \
  >"$out/sfleet.log" 2>&1 &
fleet=$!
FEDC_FAULT=slow:2 timeout 120 "$fedc" client --connect "$addr" --data "$out/w10.json" --client 9 --token t \
  --timeout 30 >"$out/sslow.log" 2>&1 && ok || bad "the slow client failed: $(cat "$out/sslow.log")"
wait $fleet && ok || bad "the fleet failed: $(cat "$out/sfleet.log")"
wait $server && ok || bad "the SecAgg+ over-selecting server failed: $(cat "$out/sover.log")"
over_metrics "$out/sover/metrics.jsonl" 9 10 && ok || bad "SecAgg+ over-selection metrics: $(cat "$out/sover/metrics.jsonl")"
train "$out/w10.json" "$out/strain" 2 10 "$(replay "$out/sover/metrics.jsonl")"
same_bits "$out/sover/checkpoint.safetensors" "$out/strain/checkpoint.safetensors" && ok \
  || bad "the SecAgg+ over-selected run with a slow client differs from fedc train's over the added clients"

# options that cannot work are refused, naming what
expect 1 "--secure-agg needs a plan built with --secure-sum BITS" -- "$fedc" server --plan "$out/plain" \
  --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 3 --out "$out/o1" --secure-agg auto
# over-selection that leaves a summed client too few summed neighbours to rebuild its self-mask
expect 1 "--secure-agg with over-selection: a round selects 6 clients and sums 3, so a summed client may have only 2 summed neighbours (of 5) whose shares rebuild its self-mask, not above half of its neighbours as the threshold must be: select at most 4 clients a round" \
  -- "$fedc" server --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 3 \
  --over-select 2 --out "$out/o2" --secure-agg auto
expect 1 "--secure-agg 4 with over-selection: a round selects 6 clients and sums 4, so a summed client may have only 3 summed neighbours (of 5) whose shares rebuild its self-mask; the threshold must be at most that and above half of 5 (3 to 3)" \
  -- "$fedc" server --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 4 \
  --over-select 1.5 --out "$out/o6" --secure-agg 4
expect 1 "--secure-agg 2: with 6 clients a round each has 5 neighbours" -- "$fedc" server --plan "$out/p6" \
  --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 6 --out "$out/o3" --secure-agg 2
expect 1 "--secure-neighbours 3 must be even" -- "$fedc" server --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" \
  --rounds 1 --clients-per-round 6 --out "$out/o4" --secure-agg auto --secure-neighbours 3
# a plan whose words could wrap: 24 bits sum at most 256 clients, and a round of 257 is refused
writers "$out/w300.json" 300
"$fedc" plan build --data "$out/w300.json" --model logistic --batch-size 2 --seed 9 --secure-sum 24 --secure-bound 1 \
  --out "$out/p300" >/dev/null && ok || bad "plan build (300 writers) failed"
expect 1 "the plan's --secure-sum 24 sums at most 256 clients without wrapping modulo 2^32, but a round adds 257" -- \
  "$fedc" server --plan "$out/p300" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 257 \
  --out "$out/o5"
# with over-selection the clients a round adds count (257), not those it selects (283)
expect 1 "but a round adds 257" -- "$fedc" server --plan "$out/p300" --listen "tcp://127.0.0.1:$(free_port)" \
  --rounds 1 --clients-per-round 257 --over-select 1.1 --out "$out/o7"

echo "deploy_secagg.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
