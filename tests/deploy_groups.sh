#!/bin/sh
# Aggregators (docs/deployment-aggregators.md), as processes on this host (tcp://127.0.0.1
# only): a server with --groups 2 and two fedc aggregator processes, each serving its group's
# clients, 70 clients a round, end with the bits of fedc train --algorithm hierfavg --groups 2
# with one group round (FedAvg's bits); an aggregator killed mid-round is given up as a silent
# client is (its group's clients left out, the group in the metrics' groups_dropped), the round
# commits with fedc train's bits without them (and without the clients the other group could not
# reach), and the aggregator started again rejoins the next round. With --secure-agg, a client that
# ends after sharing its keys is recovered within its group, with fedc train --secure-sum's bits.
# Usage: deploy_groups.sh path/to/fedc. Exits 77 (skipped) without python3.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w8.json" 8
job="--model logistic --batch-size 2 --seed 5"
"$fedc" plan build --data "$out/w8.json" $job --out "$out/plan" >/dev/null && ok || bad "plan build failed"

# train OUT FAULT [options]: fedc train's run of the job, 2 rounds of 6 (FEDC_FAULT=FAULT: clients dropped)
train() {
  t_out=$1 t_fault=$2
  shift 2
  FEDC_FAULT=$t_fault timeout 120 "$fedc" train --data "$out/w8.json" $job --rounds 2 --clients-per-round 6 \
    --checkpoint-every 2 --eval-every 0 --threads 1 --quiet --out "$t_out" "$@" >/dev/null 2>&1 && ok \
    || bad "fedc train ($t_out) failed"
}
# aggregator G NAME [options]: aggregator G of the server at $srv, listening on $aG; its pid in $agg
aggregator() {
  g=$1 g_addr=$(eval echo "\$a$1") g_name=$2
  shift 2
  timeout 120 "$fedc" aggregator --connect "$srv" --listen "$g_addr" --group "$g" --token t --out "$out/$g_name" \
    --heartbeat 0.2 --heartbeat-timeout 10 --linger 0.5 "$@" >"$out/$g_name.agg.log" 2>&1 &
  agg=$!
}
# fleet G NAME [FAULT [N [DATA]]]: clients 0 to N - 1 (default 8: all) of DATA (default w8) as a fleet of
# aggregator G's; its pid in $fleet
fleet() {
  f_addr=$(eval echo "\$a$1")
  FEDC_FAULT=${3:-} timeout 120 "$fedc" fleet --connect "$f_addr" --data "$out/${5:-w8}.json" --clients "${4:-8}" --token t \
    --timeout 30 >"$out/$2.fleet.log" 2>&1 &
  fleet=$!
}
# serve NAME [K [PLAN]]: the server of PLAN (default the 8 clients'), 2 rounds of K (default 6) in 2 groups
serve() {
  timeout 120 "$fedc" server --plan "${3:-$out/plan}" --listen "$srv" --rounds 2 --clients-per-round "${2:-6}" --groups 2 --token t \
    --out "$out/$1" --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 1.5 --linger 0.5 >"$out/$1.log" 2>&1 &
  server=$!
}
field() { python3 -c 'import json, sys
for l in open(sys.argv[1]): print(json.dumps(json.loads(l)[sys.argv[2]]))' "$1" "$2"; }

# server ⊃ 2 aggregators ⊃ clients, 70 clients a round (the tree's leaves hold 1 or 2 clients; each
# group begins one): the bits of fedc train --algorithm hierfavg --groups 2 --set group_rounds=1
# (FedAvg's round, grouped; tests/test_deploy_groups.c checks fedc_train's FedAvg bits)
writers "$out/w70.json" 70
"$fedc" plan build --data "$out/w70.json" $job --out "$out/plan70" >/dev/null && ok || bad "plan build (70) failed"
srv=tcp://127.0.0.1:$(free_port) a0=tcp://127.0.0.1:$(free_port) a1=tcp://127.0.0.1:$(free_port)
serve run 70 "$out/plan70"
aggregator 0 g0
agg0=$agg
fleet 0 g0 "" 70 w70
fleet0=$fleet
aggregator 1 g1
fleet 1 g1 "" 70 w70
wait $server && ok || bad "the server failed: $(cat "$out/run.log")"
for p in $agg0 $fleet0 $agg $fleet; do wait $p && ok || bad "an aggregator or fleet failed: $(cat "$out"/g*.log)"; done
grep -q "fedc aggregator 1: done: 2 group reports forwarded" "$out/g1.agg.log" && ok || bad "$(cat "$out/g1.agg.log")"
# every line an aggregator logs names it, also those of the code it shares with the server
! grep -hv "^fedc aggregator [01]: " "$out"/g*.agg.log | grep -q . && ok || bad "not the aggregators': $(cat "$out"/g*.agg.log)"
[ "$(grep -c '"selected": 70, "reported": 70, "dropped": 0.*"groups": 2, "groups_dropped": \[\]' "$out/run/metrics.jsonl")" = 2 ] \
  && ok || bad "metrics: $(cat "$out/run/metrics.jsonl")"
FEDC_FAULT= timeout 120 "$fedc" train --data "$out/w70.json" $job --rounds 2 --clients-per-round 70 --checkpoint-every 2 \
  --eval-every 0 --threads 1 --quiet --out "$out/hier" --algorithm hierfavg --groups 2 --set group_rounds=1 >/dev/null 2>&1 \
  && ok || bad "fedc train (hierfavg) failed"
same_bits "$out/run/checkpoint.safetensors" "$out/hier/checkpoint.safetensors" && ok \
  || bad "the deployment with aggregators differs from fedc train --algorithm hierfavg --groups 2"

# aggregator 1 killed (SIGKILL) while its clients work on round 1 (each task held 1 s): the server
# gives its group up after 1.5 s without a beat; the aggregator started again takes round 2's group
# task. Group 0 reaches clients 0 to 2 only: its slots of clients 3 to 7 are dropped at its 1 s
# deadline (round 1's client 3), and its report says so
srv=tcp://127.0.0.1:$(free_port) a0=tcp://127.0.0.1:$(free_port) a1=tcp://127.0.0.1:$(free_port)
serve kill
aggregator 0 k0 --report-deadline 1
agg0=$agg
fleet 0 k0 "" 3
fleet0=$fleet
fleet 1 k1 slow:1
# not under timeout, which kill -9 would kill in its place: --max-seconds bounds it
"$fedc" aggregator --connect "$srv" --listen "$a1" --group 1 --token t --out "$out/k1" --heartbeat 0.2 \
  --heartbeat-timeout 10 --max-seconds 100 >"$out/k1.agg.log" 2>&1 &
pids=$!
held "$out/k1.fleet.log"
kill -9 $pids
for i in $(seq 1 100); do grep -q "given up" "$out/kill.log" && break; sleep 0.1; done
aggregator 1 k1b
wait $server && ok || bad "the server failed: $(cat "$out/kill.log")"
for p in $agg0 $fleet0 $agg $fleet; do wait $p && ok || bad "an aggregator or fleet failed: $(cat "$out"/k*.log)"; done
pids=""
grep -q "fedc aggregator 1: done: 1 group reports forwarded" "$out/k1b.agg.log" && ok \
  || bad "the restarted aggregator: $(cat "$out/k1b.agg.log")"
grep -q "the aggregator of group 1 not heard from for 1.5 s: the group (3 clients) is given up" "$out/kill.log" && ok \
  || bad "no group given up: $(cat "$out/kill.log")"
[ "$(field "$out/kill/metrics.jsonl" groups_dropped | tr '\n' ' ')" = "[1] [] " ] && ok \
  || bad "groups_dropped: $(cat "$out/kill/metrics.jsonl")"
[ "$(field "$out/kill/metrics.jsonl" reported | tr '\n' ' ')" = "2 6 " ] && ok \
  || bad "reports: $(cat "$out/kill/metrics.jsonl")"
[ "$(replay "$out/kill/metrics.jsonl")" = "load:1:3,4,5,7" ] && ok || bad "left out: $(replay "$out/kill/metrics.jsonl")"
train "$out/ktrain" "$(replay "$out/kill/metrics.jsonl")"
same_bits "$out/kill/checkpoint.safetensors" "$out/ktrain/checkpoint.safetensors" && ok \
  || bad "the run without the killed group differs from fedc train's without its clients"

# secure aggregation within each group (--secure-agg auto): 10 clients in 2 groups of 5, threshold 3
# (a survivor's self-mask seed is rebuilt from its 4 neighbours' shares, of which 3 are left when one
# drops). Client 9 ends its process before its masked report, after sharing its keys (it runs at
# both aggregators: the other gives it no task, and tells it the job is done). Its group's secure
# round rebuilds its mask key from the other four clients' shares and unmasks their sum; the round
# commits with fedc train --secure-sum's bits without client 9
writers "$out/w10.json" 10
sjob="--model logistic --batch-size 2 --seed 5 --secure-sum 16 --secure-bound 1"
"$fedc" plan build --data "$out/w10.json" $sjob --out "$out/splan" >/dev/null && ok || bad "plan build (secure) failed"
srv=tcp://127.0.0.1:$(free_port) a0=tcp://127.0.0.1:$(free_port) a1=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/splan" --listen "$srv" --rounds 1 --clients-per-round 10 --groups 2 \
  --secure-agg auto --token t --out "$out/sec" --report-deadline 60 --heartbeat 0.25 --heartbeat-timeout 5 --linger 0.5 \
  >"$out/sec.log" 2>&1 &
server=$!
aggregator 0 s0 --heartbeat-timeout 2
agg0=$agg
fleet 0 s0 "" 9 w10
fleet0=$fleet
aggregator 1 s1 --heartbeat-timeout 2
fleet 1 s1 "" 9 w10
pids=""
for g in 0 1; do
  FEDC_FAULT=secagg-exit:2 timeout 120 "$fedc" client --connect "$(eval echo "\$a$g")" --data "$out/w10.json" --client 9 \
    --token t --timeout 30 >"$out/s9.$g.log" 2>&1 &
  pids="$pids $!"
done
codes=""
for p in $pids; do
  wait $p
  codes="$codes $?"
done
pids=""
[ "$(echo $codes | tr ' ' '\n' | sort | tr '\n' ' ')" = "0 3 " ] && ok \
  || bad "client 9 should end at its fault at one aggregator and be told done at the other: exits$codes"
wait $server && ok || bad "the secure server failed: $(cat "$out/sec.log")"
for p in $agg0 $fleet0 $agg $fleet; do wait $p && ok || bad "an aggregator or fleet failed: $(cat "$out"/s*.log)"; done
lines() { grep -h "secure aggregation {\"threshold\": 3, \"neighbours\": 0, $1" "$out"/s0.agg.log "$out"/s1.agg.log | wc -l; }
[ "$(lines '"advertised": 5, "shared": 5, "masked": 4, "masked_left_out": 0, "revealed": 4, "unmasked": true')" = 1 ] \
  && [ "$(lines '"advertised": 5, "shared": 5, "masked": 5, "masked_left_out": 0, "revealed": 5, "unmasked": true')" = 1 ] \
  && ok || bad "each group's secure round: $(cat "$out"/s*.agg.log)"
grep -q '"selected": 10, "reported": 9, .*"left_out": \[9\].*"groups_dropped": \[\]' "$out/sec/metrics.jsonl" && ok \
  || bad "secure metrics: $(cat "$out/sec/metrics.jsonl")"
FEDC_FAULT=load:1:9 timeout 120 "$fedc" train --data "$out/w10.json" $sjob --rounds 1 --clients-per-round 10 \
  --checkpoint-every 1 --eval-every 0 --threads 1 --quiet --out "$out/strain" >/dev/null 2>&1 && ok \
  || bad "fedc train (secure) failed"
same_bits "$out/sec/checkpoint.safetensors" "$out/strain/checkpoint.safetensors" && ok \
  || bad "the secure run with client 9 dropped in its group differs from fedc train --secure-sum's without it"

# clients pinned to groups by the plan: fedc train's job, hierfavg with one group round (FedAvg's
# round) and --groups dirichlet:2:3 (group 0 is clients 4 to 6, group 1 clients 0 to 3 and 7, as
# plan check says). Each round's 6 clients are ordered by group, as fedc train orders a grouped
# cohort, and each group's go to its aggregator, whose clients are its group's only; a client at
# the other group's aggregator is refused. The run ends with fedc train's bits on the same job
hier="--algorithm hierfavg --groups dirichlet:2:3 --set group_rounds=1"
"$fedc" plan build --data "$out/w8.json" $job $hier --out "$out/pplan" >/dev/null && ok || bad "plan build (pinned) failed"
"$fedc" plan check "$out/pplan" >"$out/pplan.txt" 2>&1
grep -q "group 0: 4 5 6 (3 clients)" "$out/pplan.txt" && grep -q "group 1: 0 1 2 3 7 (5 clients)" "$out/pplan.txt" && ok \
  || bad "plan check's groups: $(cat "$out/pplan.txt")"
srv=tcp://127.0.0.1:$(free_port) a0=tcp://127.0.0.1:$(free_port) a1=tcp://127.0.0.1:$(free_port)
serve pin 6 "$out/pplan"
aggregator 0 p0
agg0=$agg
FEDC_FAULT= timeout 120 "$fedc" fleet --connect "$a0" --data "$out/w8.json" --client 4 --clients 3 --token t --timeout 30 \
  >"$out/p0.fleet.log" 2>&1 &
fleet0=$!
aggregator 1 p1
fleet 1 p1 "" 4
timeout 120 "$fedc" client --connect "$a1" --data "$out/w8.json" --client 7 --token t --timeout 30 >"$out/p7.log" 2>&1 &
client7=$!
timeout 30 "$fedc" client --connect "$a0" --data "$out/w8.json" --client 0 --token t --timeout 30 >"$out/pwrong.log" 2>&1
[ $? = 1 ] && grep -q "client 0 is in group 1 of the plan's groups (plan build --groups), and this is the aggregator of group 0" \
  "$out/pwrong.log" && ok || bad "the client at the other group's aggregator: $(cat "$out/pwrong.log")"
wait $server && ok || bad "the server (pinned) failed: $(cat "$out/pin.log")"
for p in $agg0 $fleet0 $agg $fleet $client7; do wait $p && ok || bad "an aggregator or client failed: $(cat "$out"/p*.log)"; done
train "$out/ptrain" "" $hier
# each round's groups' clients, as fedc train's metrics count them (both groups have clients in each round)
[ "$(field "$out/pin/metrics.jsonl" group_clients)" = "$(field "$out/ptrain/metrics.jsonl" group_clients)" ] \
  && [ "$(grep -c '"selected": 6, "reported": 6, "dropped": 0' "$out/pin/metrics.jsonl")" = 2 ] && ok \
  || bad "metrics (pinned): $(cat "$out/pin/metrics.jsonl") vs fedc train's $(cat "$out/ptrain/metrics.jsonl")"
same_bits "$out/pin/checkpoint.safetensors" "$out/ptrain/checkpoint.safetensors" && ok \
  || bad "the deployment with pinned groups differs from fedc train --algorithm hierfavg --groups dirichlet:2:3"

# bad settings
expect 2 "needs --connect, --listen, --group" -- "$fedc" aggregator --connect "$srv" --listen "$a0" --token t
expect 1 "--groups with --over-select is not supported" -- timeout 30 "$fedc" server --plan "$out/plan" \
  --listen "$srv" --rounds 1 --clients-per-round 3 --over-select 2 --groups 2 --token t --out "$out/bad"
expect 1 "the plan pins its clients to 2 groups (plan build --groups); --groups 3 is not that" -- timeout 30 \
  "$fedc" server --plan "$out/pplan" --listen "$srv" --rounds 1 --clients-per-round 3 --groups 3 --token t --out "$out/bad"
"$fedc" plan build --data "$out/w70.json" $job --groups 2 --out "$out/pplan70" >/dev/null && ok || bad "plan build (pinned 70)"
expect 1 "each slot must begin a leaf of the aggregation's tree (64 leaves): --clients-per-round 65 is above 64" -- \
  timeout 30 "$fedc" server --plan "$out/pplan70" --listen "$srv" --rounds 1 --clients-per-round 65 --groups 2 --token t \
  --out "$out/bad"
expect 1 "hierfavg with group_rounds=2 has a group level of its own (@groups), whose phases are not deployed yet" -- \
  "$fedc" plan build --data "$out/w8.json" $job --algorithm hierfavg --groups 2 --set group_rounds=2 --out "$out/bad"

echo "deploy_groups: $passed passed, $failed failed"
[ "$failed" = 0 ]
