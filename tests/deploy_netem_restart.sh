#!/bin/sh
# The server killed (SIGKILL) and started again while 200 clients are uploading, twice in one job:
# the server and a fleet of 200 clients on two network namespaces joined by a veth pair capped at
# 200 Mbit/s each way (tc tbf), so that a round's 200 reports (195 KB each, a logistic model) take
# over a second to come in, and each kill lands when part of them has (the server's received
# bytes say when). 3 rounds of all 200. The clients' connections come back as NNG redials, with
# exponential backoff and random jitter; their requests go to the new server, which goes on from
# its checkpoint and runs the open round again (rounds 2 and 3: each killed once). Every committed round has all 200 reports, none
# counted twice (metrics: reported 200, duplicates 0, left_out []), the fleet ends well and the
# model has fedc train's bits. Every process but the server runs under timeout. Usage: deploy_netem_restart.sh
# path/to/fedc. Exits 77 (skipped) without python3, root (or CAP_NET_ADMIN), ip netns or tc tbf.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
. "$(dirname "$0")/netem_lib.sh"
netem_begin # exits 77 where namespaces cannot be made
netem_pair srv fleet
for end in "$pair_a fa$$" "$pair_b fb$$"; do
  set -- $end
  inns "$1" tc qdisc add dev "$2" root tbf rate 200mbit burst 256kb latency 50ms 2>"$out/tc.err" \
    || netem_skip "tc qdisc tbf: $(cat "$out/tc.err")"
done

n=200
writers "$out/w.json" $n
ljob="--model logistic --batch-size 2 --seed 9"
"$fedc" plan build --data "$out/w.json" $ljob --out "$out/plan" >/dev/null && ok || bad "plan build failed"
timeout 120 "$fedc" train --data "$out/w.json" $ljob --rounds 3 --clients-per-round $n --checkpoint-every 3 \
  --eval-every 0 --threads 1 --quiet --out "$out/train" >/dev/null 2>&1 && ok || bad "fedc train failed"

addr=tcp://10.78.0.1:$(free_port)
# (not under timeout, which kill -9 would kill in its place: netem_end kills what is left on the namespace)
serve() {
  ip netns exec "$pair_a" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds 3 \
    --clients-per-round $n --out "$out/srv" --token t --report-deadline 60 --heartbeat 1 --heartbeat-timeout 20 \
    --linger 2 >>"$out/server.log" 2>&1 &
  server=$!
}
# rx: the bytes the server's namespace has received
rx() { inns "$pair_a" cat "/sys/class/net/fa$$/statistics/rx_bytes"; }
report=$((195 * 1024))
# kill_mid ROWS: once round ROWS+1 is open (ROWS rows in metrics.jsonl) and a third of its 200
# reports has come in (the server's bytes received since), the server killed; the share of
# the round's reports that had come in then, in $share (percent)
kill_mid() {
  for i in $(seq 1 600); do [ "$(cat "$out/srv/metrics.jsonl" 2>/dev/null | wc -l)" -ge "$1" ] && break; sleep 0.05; done
  base=$(rx)
  for i in $(seq 1 2000); do [ $(($(rx) - base)) -gt $((n * report / 3)) ] && break; sleep 0.01; done
  kill -9 $server
  share=$(( ($(rx) - base) * 100 / (n * report) ))
  wait $server 2>/dev/null
}

serve
timeout 150 ip netns exec "$pair_b" "$fedc" fleet --connect "$addr" --data "$out/w.json" --clients $n --token t \
  --timeout 30 >"$out/fleet.log" 2>&1 &
pids=$!
kill_mid 1   # in round 2
first=$share
serve
kill_mid 2   # in round 3
second=$share
serve
wait $pids && ok || bad "the fleet failed: $(tail -5 "$out/fleet.log")"
wait $server && ok || bad "the last server failed: $(cat "$out/server.log")"
server="" pids=""
echo "killed with $first% and $second% of a round's reports in"
# mid-upload: some of the round's reports in, not all
[ "$first" -lt 90 ] && [ "$second" -lt 90 ] && ok || bad "a kill landed after the uploads: $first%, $second%"
[ "$(grep -c 'fedc server: listening' "$out/server.log")" = 3 ] && ok || bad "not 3 servers: $(cat "$out/server.log")"
[ "$(grep -o 'resumed from .* at round [0-9]*' "$out/server.log" | sed 's/.* //' | tr '\n' ' ')" = "2 3 " ] && ok \
  || bad "not resumed at rounds 2 and 3: $(cat "$out/server.log")"
grep -q "fedc fleet: done: $n clients" "$out/fleet.log" && ok || bad "the fleet: $(tail -5 "$out/fleet.log")"
python3 - "$out/srv/metrics.jsonl" $n <<'PY' && ok || bad "metrics: $(cat "$out/srv/metrics.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
committed = [r for r in rows if not r["abandoned"]]
# every round committed once (a row may be lost only if the kill falls between a checkpoint and its row)
assert [r["round"] for r in committed] == [1, 2, 3], [r["round"] for r in committed]
for r in committed:
    assert r["selected"] == n and r["reported"] == n and r["dropped"] == 0 and r["left_out"] == [], r
    assert r["duplicates"] == 0 and r["refused"] == 0, r
PY
same_bits "$out/srv/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "the run with two restarts differs from fedc train's"

echo "deploy_netem_restart.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
