#!/bin/sh
# The asynchronous server (fedc server --async K --concurrency C;
# docs/deployment-async.md) on EMNIST-shaped writers and the logistic model, the clients as a
# fleet on this host (tcp://127.0.0.1 only): FedBuff's reports taken as they come, and
# fedc train --replay of the server's DIR/arrivals.jsonl with the job's flags ends with the
# deployed model bit for bit and writes the same log again; stale reports are in the log
# (version below arrival_version) and carry their staleness weight, which changes the model
# (the hinge divides the deltas by its weight, normalize=1, so a replay that did not weigh
# them as the server did would differ); a client killed mid-task is given up and its place
# given to another, the run still the replay's bits; the server killed mid-run and started
# again goes on from its checkpoint, the replay still its bits. FedAsync (--async 1: each report
# mixed into the model of its arrival) the same: the replay has its bits, its stale reports weighed
# by the hinge, after a client killed and a server restart. Refused with the reason: another
# --async's checkpoint, FedAsync with --async 2 or with an aggregator (its client would need the
# model at the arrival), an async run of a FedAvg plan. Every process runs under timeout.
# Usage: deploy_async.sh path/to/fedc. Exits 77 (skipped) without python3, which writes the
# data and compares the checkpoints.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w8.json" 8
# The job, the server's steps and the replay's flags: FedBuff's 4 steps of 2 reports, 3 clients at once
alg=fedbuff
job="--model logistic --batch-size 2 --seed 4 --algorithm $alg"
steps="--rounds 4 --async 2 --concurrency 3"
train="--rounds 4 --set buffer=2 --clients-per-round 3 --checkpoint-every 4 --eval-every 0 --threads 1 --quiet"

# served NAME CLIENTS [HYPERPARAMETERS]: a plan of $alg and a server of $steps, with a fleet of
# clients 0 to CLIENTS - 1 (started after $pids' clients)
served() {
  name=$1 fleet=$2
  shift 2
  expect 0 "plan $out/$name.plan: $alg on logistic" -- "$fedc" plan build --data "$out/w8.json" $job "$@" \
    --out "$out/$name.plan"
  timeout 120 "$fedc" server --plan "$out/$name.plan" --listen "$addr" $steps --out "$out/$name.srv" --token t \
    --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 1 --linger 1 >"$out/$name.log" 2>&1 &
  server=$!
}
fleet_of() {
  timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w8.json" --clients "$1" --token t --trainers 2 \
    --timeout 30 >"$out/$2.fleet" 2>&1 && ok || bad "the fleet failed: $(cat "$out/$2.fleet")"
  wait $server && ok || bad "the server failed: $(cat "$out/$2.log")"
}
# replayed NAME [HYPERPARAMETERS]: fedc train --replay of NAME's log has the server's bits and log
replayed() {
  name=$1
  shift
  expect 0 "checkpoint" -- timeout 120 "$fedc" train --data "$out/w8.json" $job "$@" $train \
    --replay "$out/$name.srv/arrivals.jsonl" --out "$out/$name.replay"
  same_bits "$out/$name.srv/checkpoint.safetensors" "$out/$name.replay/checkpoint.safetensors" && ok \
    || bad "$name: the replay's bits differ from the deployed run's"
  cmp -s "$out/$name.srv/arrivals.jsonl" "$out/$name.replay/arrivals.jsonl" && ok || bad "$name: the replay's log differs"
  [ "$(wc -l <"$out/$name.srv/arrivals.jsonl")" = 8 ] && ok || bad "$name: not 8 reports: $(cat "$out/$name.srv/arrivals.jsonl")"
}
# stale NAME: how many of NAME's reports trained on a version older than the one they came to
stale() { python3 -c 'import json, sys
print(sum(r["version"] < r["arrival_version"] for r in map(json.loads, open(sys.argv[1]))))' "$out/$1.srv/arrivals.jsonl"; }

addr=tcp://127.0.0.1:$(free_port)
served plain 8
fleet_of 8 plain
replayed plain
[ "$(stale plain)" -gt 0 ] && ok || bad "no stale report: $(cat "$out/plain.srv/arrivals.jsonl")"
[ "$(grep -c '"reported": 2' "$out/plain.srv/metrics.jsonl")" = 4 ] && ok || bad "metrics: $(cat "$out/plain.srv/metrics.jsonl")"

# The hinge from staleness 0 (s(1) = 1/11), dividing the deltas (normalize=1): weighed as the
# simulation weighs them, and not as a FedBuff without the weight would.
hinge="--set staleness=2 --set hinge_b=0 --set normalize=1"
addr=tcp://127.0.0.1:$(free_port)
served hinge 8 $hinge
fleet_of 8 hinge
replayed hinge $hinge
[ "$(stale hinge)" -gt 0 ] && ok || bad "no stale report in the hinge's run"
expect 0 "checkpoint" -- timeout 120 "$fedc" train --data "$out/w8.json" $job --set normalize=1 $train \
  --replay "$out/hinge.srv/arrivals.jsonl" --out "$out/unweighed"
same_bits "$out/hinge.srv/checkpoint.safetensors" "$out/unweighed/checkpoint.safetensors" 2>/dev/null \
  && bad "the staleness weight changed nothing" || ok

# killed NAME [HYPERPARAMETERS]: client 7 takes the first task and is killed with it: given up
# after the heartbeat timeout, its place given to the fleet's clients; the log has none of its
# reports, and the replay the run's bits.
killed() {
  name=$1
  shift
  addr=tcp://127.0.0.1:$(free_port)
  served "$name" 7 "$@"
  # (not under timeout, which kill -9 would kill in its place: --max-seconds bounds it)
  FEDC_FAULT=slow:60 "$fedc" client --connect "$addr" --data "$out/w8.json" --client 7 --token t \
    --timeout 30 --max-seconds 100 >"$out/$name.client7" 2>&1 &
  pids=$!
  held "$out/$name.client7"
  kill -9 $pids
  fleet_of 7 "$name"
  replayed "$name" "$@"
  grep -q 'client 7 (place 0) not heard from' "$out/$name.log" && ok || bad "$name: client 7 not given up: $(cat "$out/$name.log")"
  grep -q '"client": 7,' "$out/$name.srv/arrivals.jsonl" && bad "$name: a report of the killed client" || ok
}

# restarted NAME: the server killed (SIGKILL) once step 1 is checkpointed, its clients slow enough
# (0.3 s a task) to be mid-task then, and started again with the same command: it goes on from the
# checkpoint, the log cut back to it, and the run is its replay's bits.
restarted() {
  name=$1
  addr=tcp://127.0.0.1:$(free_port)
  expect 0 "plan $out/$name.plan" -- "$fedc" plan build --data "$out/w8.json" $job --out "$out/$name.plan"
  restart() { # not under timeout, which kill -9 would kill in its place
    "$fedc" server --plan "$out/$name.plan" --listen "$addr" $steps --out "$out/$name.srv" --token t \
      --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 5 --linger 1 >>"$out/$name.log" 2>&1 &
    server=$!
  }
  restart
  FEDC_FAULT=slow:0.3 timeout 120 "$fedc" fleet --connect "$addr" --data "$out/w8.json" --clients 8 --token t \
    --trainers 8 --timeout 30 >"$out/$name.fleet" 2>&1 &
  pids=$!
  for i in $(seq 1 600); do [ -s "$out/$name.srv/metrics.jsonl" ] && break; sleep 0.01; done
  kill -9 $server
  wait $server 2>/dev/null
  restart
  wait $pids && ok || bad "$name: the fleet failed across the restart: $(cat "$out/$name.fleet")"
  wait $server && ok || bad "$name: the restarted server failed: $(cat "$out/$name.log")"
  grep -q "resumed from .* at round [2-8]" "$out/$name.log" && ok || bad "$name: not resumed: $(cat "$out/$name.log")"
  replayed "$name"
}

killed killed
restarted restart

# FedAsync: a step a report (--async 1), mixed into the model as it is when the report comes. The
# hinge from staleness 0 makes each stale report's s(1) = 1/11; with 3 clients at once most reports
# are stale; the replay with s = 1 (--set staleness=0) is another model.
alg=fedasync
job="--model logistic --batch-size 2 --seed 4 --algorithm $alg"
steps="--rounds 8 --async 1 --concurrency 3"
train="--rounds 8 --clients-per-round 3 --checkpoint-every 8 --eval-every 0 --threads 1 --quiet"
hinge="--set staleness=2 --set hinge_b=0"
killed fedasync $hinge
[ "$(stale fedasync)" -gt 0 ] && ok || bad "no stale report in FedAsync's run: $(cat "$out/fedasync.srv/arrivals.jsonl")"
expect 0 "checkpoint" -- timeout 120 "$fedc" train --data "$out/w8.json" $job --set staleness=0 $train \
  --replay "$out/fedasync.srv/arrivals.jsonl" --out "$out/fedasync.unweighed"
same_bits "$out/fedasync.srv/checkpoint.safetensors" "$out/fedasync.unweighed/checkpoint.safetensors" 2>/dev/null \
  && bad "FedAsync's staleness weight changed nothing" || ok
restarted fedasync-restart

# Refused: a restart on another --async's checkpoint, FedAsync with --async 2 or with an aggregator
# (its client would compute w - w_client, reading the model at the arrival), a plan of FedAvg.
expect 1 "not this asynchronous run's" -- "$fedc" server --plan "$out/plain.plan" --listen "$addr" --rounds 4 \
  --async 3 --concurrency 3 --out "$out/plain.srv" --token t
expect 1 "fedasync mixes each report in as it comes: a step of one (--async 1)" -- "$fedc" server \
  --plan "$out/fedasync.plan" --listen "$addr" --rounds 4 --async 2 --concurrency 3 --out "$out/fedasync-2.srv" --token t
expect 0 "fedasync on logistic" -- "$fedc" plan build --data "$out/w8.json" $job --dp-clip 0.5 --out "$out/clipped.plan"
expect 1 "client_work reads the server's model when the report comes" -- "$fedc" server --plan "$out/clipped.plan" \
  --listen "$addr" $steps --out "$out/clipped.srv" --token t
expect 0 "fedavg on logistic" -- "$fedc" plan build --data "$out/w8.json" --model logistic --batch-size 2 \
  --out "$out/fedavg.plan"
expect 1 "not of fedbuff or fedasync" -- "$fedc" server --plan "$out/fedavg.plan" --listen "$addr" $steps \
  --out "$out/fedavg.srv" --token t

echo "deploy_async.sh: $passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
