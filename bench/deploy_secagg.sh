#!/bin/sh
# bench/deploy_secagg.sh [FEDC [N...]] — a deployed round's cost with and without secure
# aggregation against the cohort size N (default 10 50 100): one fedc server on loopback and a
# fleet of N clients, every client in every round, FedAvg on the logistic model (48,670 words a
# client) built with --secure-sum 16, in three modes: plain (the secure sum's words in the clear),
# secagg (--secure-agg auto: every client masks with every other) and secagg+ (--secure-agg auto
# --secure-neighbours 2 ceil(log2 N)). Per mode and N: the rounds' time (metrics' seconds.round,
# mean), the server's CPU time (user+sys, /usr/bin/time) and peak RSS, the fleet's CPU time per
# client, and the bytes in and out per client per round (the server's metrics). The fleet runs
# every client on this machine, so the clients' CPU time adds up here where phones would run side
# by side. ROUNDS (default 2) rounds; the heartbeat timeout is 600 s so that no client is left out
# while the fleet's clients wait for the CPU. docs/benchmarks-deployment.md records the figures.
set -eu
fedc=${1:-${FEDC:-./build/fedc}}
[ $# -gt 0 ] && shift
sizes=${*:-10 50 100}
rounds=${ROUNDS:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
printf '%-8s %7s %8s %12s %11s %13s %13s %13s\n' mode clients "round s" "server cpu s" "server RSS" \
  "client cpu s" "client in B" "client out B"
for n in $sizes; do
  python3 - "$out/data.json" "$n" <<'PY'
import json, sys
n = int(sys.argv[2])
users = ["c%d" % c for c in range(n)]
data = {u: {"x": [[((k * 7 + i * 13 + c * 31) % 101) / 100 for k in range(784)] for i in range(4)],
            "y": [(i * 11 + c * 3) % 62 for i in range(4)]} for c, u in enumerate(users)}
json.dump({"users": users, "num_samples": [4] * n, "user_data": data}, open(sys.argv[1], "w"))
PY
  "$fedc" plan build --data "$out/data.json" --model logistic --batch-size 2 --seed 1 --secure-sum 16 \
    --secure-bound 1 --out "$out/plan" >/dev/null
  k=$(python3 -c 'import math, sys; n = int(sys.argv[1]); print(2 * math.ceil(math.log2(n)))' "$n")
  for mode in plain secagg secagg+; do
    opts=""
    [ $mode = secagg ] && opts="--secure-agg auto"
    [ $mode = secagg+ ] && opts="--secure-agg auto --secure-neighbours $k"
    addr=tcp://127.0.0.1:$(port)
    /usr/bin/time -f "%U %S %M" -o "$out/stime" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds "$rounds" \
      --clients-per-round "$n" --out "$out/srv" --token t --linger 1 --report-deadline 1200 --heartbeat-timeout 600 \
      $opts >"$out/server.log" 2>&1 &
    server=$!
    /usr/bin/time -f "%U %S" -o "$out/ftime" "$fedc" fleet --connect "$addr" --data "$out/data.json" --clients "$n" \
      --token t --timeout 600 >"$out/fleet.log" 2>&1
    wait $server
    python3 - "$out/srv/metrics.jsonl" "$out/stime" "$out/ftime" "$mode" "$n" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert all(not r["abandoned"] and r["reported"] == int(sys.argv[5]) for r in rows), "a round left clients out"
su, ss, rss = open(sys.argv[2]).read().split()[-3:]
fu, fs = open(sys.argv[3]).read().split()[-2:]
n, r = int(sys.argv[5]), len(rows)
print("%-8s %7d %8.3f %12.2f %8d MB %13.4f %13.0f %13.0f" % (sys.argv[4], n, sum(x["seconds"]["round"] for x in rows) / r,
      float(su) + float(ss), int(rss) // 1024, (float(fu) + float(fs)) / n,
      sum(x["bytes_out"] for x in rows) / r / n, sum(x["bytes_in"] for x in rows) / r / n))
PY
    rm -rf "$out/srv"
  done
  rm -rf "$out/plan"
done
