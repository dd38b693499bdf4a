#!/bin/sh
# An algorithm's warm start deployed (HypCluster's k-means++ before round 1), as processes on this
# host (tcp://127.0.0.1 only), on a logistic model over 6 generated clients: fedc plan build plans
# it (its program and four exchanges, hashed); a server and six fedc client processes run it as
# round 0 and then 3 rounds of 3, ending with the bits of fedc train on the same clients, seeds and
# rounds (which the warm start changes: kmeans_init=0 gives other bits); a server killed with
# SIGKILL during the warm start, and again after it (its state checkpointed, before round 1
# commits), and started again each time with the same command ends, with its fleet, with the same
# bits; a client of the warm start's cohort killed holding its task is left out of all four of its
# exchanges, with the bits of fedc train replaying that; a server whose --clients-per-round is not
# the warm start's cohort, --secure-agg with a
# warm start, a damaged warm phase and a plan of format 1 are refused with their messages. Every
# process runs under timeout. Usage: deploy_warm.sh path/to/fedc. Exits 77 (skipped) without
# python3, which writes the data and compares the bits.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/tiny.json" 6
wjob="--model logistic --batch-size 2 --seed 4 --algorithm hypcluster --clients-per-round 3"
expect 0 "plan $out/plan: hypcluster on logistic" -- "$fedc" plan build --data "$out/tiny.json" $wjob --out "$out/plan"
grep -q "^warm_start warm_start.fedc clients 3 exchanges 4$" "$out/plan/plan.txt" && ok \
  || bad "the plan has no warm start: $(cat "$out/plan/plan.txt")"
expect 0 "warm start: 4 exchanges on 3 clients" -- "$fedc" plan check "$out/plan"
# train OUT [SET]: fedc train's run of the job, 3 rounds of 3
train() {
  timeout 120 "$fedc" train --data "$out/tiny.json" $wjob ${2:-} --rounds 3 --checkpoint-every 3 --eval-every 0 \
    --threads 1 --quiet --out "$1" >/dev/null 2>&1 && ok || bad "fedc train ($1) failed"
}
train "$out/train"
train "$out/cold" "--set kmeans_init=0"
same_bits "$out/train/checkpoint.safetensors" "$out/cold/checkpoint.safetensors" \
  && bad "the warm start changes nothing: the test could not tell it was run" || ok

# every client a process of its own
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/plan" --listen "$addr" --rounds 3 --clients-per-round 3 --out "$out/srv" \
  --token t --report-deadline 60 --linger 1 >"$out/server.log" 2>&1 &
server=$!
start_clients "$addr" "$out/tiny.json" "$out/client" 0 1 2 3 4 5
for p in $clients; do wait "$p" && ok || bad "a client process failed: $(cat "$out"/client*.log)"; done
wait $server && ok || bad "the server failed: $(cat "$out/server.log")"
same_bits "$out/srv/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "the deployed warm-started run's bits differ from fedc train's"
grep -q "the warm start (round 0) on 3 clients, 4 exchanges" "$out/server.log" && ok || bad "no warm start in the log"
[ "$(grep -c '"selected": 3, "reported": 3, "dropped": 0' "$out/srv/metrics.jsonl")" = 4 ] \
  && head -1 "$out/srv/metrics.jsonl" | grep -q '^{"round": 0,' && ok \
  || bad "metrics.jsonl (round 0, then 1 to 3): $(cat "$out/srv/metrics.jsonl")"

# the server killed during the warm start (the clients are slowed, 0.5 s a task, so that its four
# exchanges take 2 s or more), started again: it runs the warm start again; killed again once the
# warm start is checkpointed (its row written) and before round 1 commits, started again: it
# resumes at round 1, and the run ends with the bits of the uninterrupted fedc train
addr=tcp://127.0.0.1:$(free_port)
sargs="--plan $out/plan --listen $addr --rounds 3 --clients-per-round 3 --out $out/restart --token t --report-deadline 60"
"$fedc" server $sargs --linger 1 >>"$out/restart.log" 2>&1 & # not under timeout: the kill must reach it
server=$!
FEDC_FAULT=slow:0.5 timeout 120 "$fedc" fleet --connect "$addr" --data "$out/tiny.json" --clients 6 --token t \
  --timeout 30 >"$out/rfleet.log" 2>&1 &
pids=$!
for i in $(seq 1 1200); do grep -q "the warm start" "$out/restart.log" 2>/dev/null && break; sleep 0.05; done
sleep 1
kill -9 $server
wait $server 2>/dev/null
[ ! -e "$out/restart/checkpoint.safetensors" ] && ! grep -q '"round": 0' "$out/restart/metrics.jsonl" && ok \
  || bad "the server was not killed during the warm start: $(cat "$out/restart/metrics.jsonl")"
"$fedc" server $sargs --linger 1 >>"$out/restart.log" 2>&1 &
server=$!
for i in $(seq 1 6000); do grep -q '"round": 0' "$out/restart/metrics.jsonl" 2>/dev/null && break; sleep 0.01; done
kill -9 $server
wait $server 2>/dev/null
[ -e "$out/restart/checkpoint.safetensors" ] && ! grep -q '"round": 1' "$out/restart/metrics.jsonl" && ok \
  || bad "the server was not killed between the warm start and round 1: $(cat "$out/restart/metrics.jsonl")"
timeout 120 "$fedc" server $sargs --linger 1 >>"$out/restart.log" 2>&1 && ok || bad "the restarted server failed: $(cat "$out/restart.log")"
wait $pids && ok || bad "the fleet failed: $(cat "$out/rfleet.log")"
grep -q "resumed from $out/restart/checkpoint.safetensors at round 1$" "$out/restart.log" && ok \
  || bad "the server did not resume after the warm start: $(cat "$out/restart.log")"
[ "$(grep -c "the warm start (round 0)" "$out/restart.log")" = 2 ] && ok \
  || bad "the warm start was not run exactly twice (killed once during it): $(cat "$out/restart.log")"
[ "$(python3 -c 'import json, sys; print([json.loads(l)["round"] for l in open(sys.argv[1])])' \
  "$out/restart/metrics.jsonl")" = "[0, 1, 2, 3]" ] && ok || bad "metrics rows: $(cat "$out/restart/metrics.jsonl")"
same_bits "$out/restart/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "the restarted warm-started run differs from fedc train's"

# a warm-start client killed: client 4 (in the warm start's cohort) holds its task (FEDC_FAULT=slow)
# and is killed once it says so; the server gives it up when its heartbeats stop, runs the warm start's four exchanges on the other two and rounds 1 to 3 without it,
# and ends with the bits of fedc train with client 4's data failing to load in those rounds (its
# left_out replayed: the warm start is round 0 there too)
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/plan" --listen "$addr" --rounds 3 --clients-per-round 3 --out "$out/drop" \
  --token t --report-deadline 20 --heartbeat-timeout 2 --linger 1 >"$out/drop.log" 2>&1 &
server=$!
start_clients "$addr" "$out/tiny.json" "$out/dclient" 0 1 2 3 5
# not under timeout, which kill -9 would kill in its place: --max-seconds bounds it
FEDC_FAULT=slow:60 "$fedc" client --connect "$addr" --data "$out/tiny.json" --client 4 --token t --timeout 30 \
  --max-seconds 100 >"$out/dslow.log" 2>&1 &
pids=$!
held "$out/dslow.log"
kill -9 $pids
wait $pids 2>/dev/null
pids=""
for p in $clients; do wait "$p" && ok || bad "a client process failed: $(cat "$out"/dclient*.log)"; done
wait $server && ok || bad "the server failed: $(cat "$out/drop.log")"
head -1 "$out/drop/metrics.jsonl" | grep -q '^{"round": 0, "selected": 3, "reported": 2, "dropped": 1' && ok \
  || bad "the warm start's row: $(head -1 "$out/drop/metrics.jsonl")"
case "$(replay "$out/drop/metrics.jsonl")" in
  load:0:4*) ok ;;
  *) bad "client 4 was not left out of the warm start: $(replay "$out/drop/metrics.jsonl")" ;;
esac
FEDC_FAULT=$(replay "$out/drop/metrics.jsonl") timeout 120 "$fedc" train --data "$out/tiny.json" $wjob --rounds 3 \
  --checkpoint-every 3 --eval-every 0 --threads 1 --quiet --out "$out/dtrain" >"$out/dtrain.log" 2>&1 && ok \
  || bad "fedc train without client 4 failed: $(cat "$out/dtrain.log")"
same_bits "$out/drop/checkpoint.safetensors" "$out/dtrain/checkpoint.safetensors" && ok \
  || bad "the run whose warm start lost client 4 differs from fedc train's without it"
same_bits "$out/drop/checkpoint.safetensors" "$out/train/checkpoint.safetensors" \
  && bad "losing client 4 changed nothing: the test could not tell it was dropped" || ok

# refused: a cohort other than the warm start's, secure aggregation with it, a damaged warm phase,
# a cohort above the population, a plan of format 1
expect 1 "the plan's warm start runs on 3 clients (it was built with --clients-per-round 3" -- timeout 60 \
  "$fedc" server --plan "$out/plan" --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 4 \
  --out "$out/s4"
expect 1 "--secure-agg with a warm start" -- timeout 60 "$fedc" server --plan "$out/plan" \
  --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 3 --out "$out/s5" --secure-agg auto
expect 1 "warm start runs on --clients-per-round 9 clients, as fedc train's does, but the data has 6 clients" -- \
  "$fedc" plan build --data "$out/tiny.json" --model logistic --algorithm hypcluster --clients-per-round 9 --out "$out/p9"
cp -r "$out/plan" "$out/old"
sed -i 's/^fedc plan 2$/fedc plan 1/' "$out/old/plan.txt"
expect 1 "plan format 1; this fedc reads format 2 (build the plan again" -- "$fedc" plan check "$out/old"
printf 'x' >>"$out/plan/warm_1_client_work.fedc"
expect 1 "but plan.txt says" -- "$fedc" plan check "$out/plan"

echo "deploy_warm.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
