#!/bin/sh
# A robust aggregator deployed (fedc plan build --aggregator; docs/privacy.md): the server
# keeps the cohort's reports in the aggregator's store, as the simulator's robust_aggregate
# does, and runs it over them in slot order, so a deployed run ends with fedc train
# --aggregator's bits: the coordinate median, Multi-Krum (whose kept clients both name in
# metrics.jsonl) and centered clipping (whose centre is server state, checkpointed) on EMNIST-shaped writers and the logistic model, the clients
# as a fleet on this host (tcp://127.0.0.1 only); and the median's model is not the mean's.
# Every process runs under timeout. Usage: deploy_robust.sh path/to/fedc. Exits 77 (skipped)
# without python3, which writes the data and compares the checkpoints.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w6.json" 6
job="--model logistic --batch-size 2 --seed 4"
rounds="--rounds 2 --clients-per-round 5"

# deployed NAME AGGREGATOR: plan, fedc train, and a server with a fleet of the 6 writers; their
# checkpoints in $out/NAME.train and $out/NAME.srv
deployed() {
  name=$1 agg=$2
  expect 0 "plan $out/$name.plan: fedavg on logistic" -- "$fedc" plan build --data "$out/w6.json" $job \
    --aggregator "$agg" --out "$out/$name.plan"
  timeout 300 "$fedc" train --data "$out/w6.json" $job $rounds --aggregator "$agg" --checkpoint-every 2 \
    --eval-every 0 --threads 1 --quiet --out "$out/$name.train" >/dev/null 2>&1 && ok \
    || bad "fedc train --aggregator $agg failed"
  addr=tcp://127.0.0.1:$(free_port)
  timeout 300 "$fedc" server --plan "$out/$name.plan" --listen "$addr" $rounds --out "$out/$name.srv" \
    --token t --report-deadline 60 --linger 1 >"$out/$name.log" 2>&1 &
  server=$!
  for i in $(seq 50); do grep -q listening "$out/$name.log" && break; sleep 0.1; done
  expect 0 "fedc fleet: done: 6 clients, 10 reports" -- timeout 300 "$fedc" fleet --connect "$addr" \
    --data "$out/w6.json" --clients 6 --token t --timeout 30
  wait $server && ok || bad "the $agg server failed: $(cat "$out/$name.log")"
  same_bits "$out/$name.srv/checkpoint.safetensors" "$out/$name.train/checkpoint.safetensors" && ok \
    || bad "--aggregator $agg: the deployed run's bits differ from fedc train's"
}

deployed median median
deployed multikrum multikrum:f=1,m=3
deployed cclip cclip:tau=0.05
# metrics.jsonl names the clients Multi-Krum kept each round, as fedc train's does (the median: none)
kept_rows() { python3 -c 'import json, sys; print([json.loads(l).get("kept") for l in open(sys.argv[1])])' "$1"; }
[ "$(kept_rows "$out/multikrum.srv/metrics.jsonl")" = "$(kept_rows "$out/multikrum.train/metrics.jsonl")" ] \
  && kept_rows "$out/multikrum.srv/metrics.jsonl" | grep -q '^\[\[[0-9]*, [0-9]*, [0-9]*\], \[[0-9]*, [0-9]*, [0-9]*\]\]$' \
  && ok || bad "multikrum: the server's kept clients $(kept_rows "$out/multikrum.srv/metrics.jsonl") are not fedc \
train's $(kept_rows "$out/multikrum.train/metrics.jsonl") (3 a round)"
[ "$(kept_rows "$out/median.srv/metrics.jsonl")" = "[None, None]" ] && ok || bad "median: the server names kept clients"
grep -q "aggregator/center" "$out/cclip.srv/checkpoint.safetensors" && ok \
  || bad "cclip: the server's checkpoint has no centre"
timeout 300 "$fedc" train --data "$out/w6.json" $job $rounds --checkpoint-every 2 --eval-every 0 --threads 1 \
  --quiet --out "$out/mean.train" >/dev/null 2>&1 && ok || bad "fedc train (the mean) failed"
! same_bits "$out/median.srv/checkpoint.safetensors" "$out/mean.train/checkpoint.safetensors" 2>/dev/null && ok \
  || bad "the deployed median's model is the mean's"
# a robust aggregator needs every update: a plan with one and the secure sum is refused
expect 2 "does not combine with a secure sum" -- "$fedc" plan build --data "$out/w6.json" $job --aggregator median \
  --secure-sum 16 --secure-bound 40 --out "$out/bad.plan"

# attacks are the simulation's: a plan takes none
expect 1 "a plan takes none" -- "$fedc" plan build --data "$out/w6.json" $job --aggregator median \
  --attack label_flip --attackers 0.2 --out "$out/bad.plan"

echo "deploy_robust: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
