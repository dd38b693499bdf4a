#!/bin/sh
# bench/deploy_load.sh [FEDC [N...]] — one fedc server on loopback with N concurrent clients (a
# fleet, every client in every round), FedAvg on a model (MODEL, default logistic; cnn for
# FedJAX's EMNIST CNN) over generated EMNIST-shaped clients of EXAMPLES examples (default 4) in
# batches of BATCH (default 2): rounds per second, the
# server's and the fleet's peak RSS (/usr/bin/time; the fleet trains on TRAINERS clients at once,
# default the cores), the reports that came ahead of slot order (held in memory at
# most, spilled to disk), and the deployed rounds' time over fedc train's on the same job (same
# bits; the simulation runs on THREADS threads, the fleet on one thread per client and TRAINERS
# seats), the requests the server answered a client task (the metrics rows' "requests" over the
# rounds' tasks: the liveness traffic is most of them) and the server's CPU seconds (user + system).
# docs/benchmarks.md records the figures.
# FEDC defaults to $FEDC or ./build/fedc, so bench/harness.py (make bench) runs it without arguments.
set -eu
fedc=${1:-${FEDC:-./build/fedc}}
[ $# -gt 0 ] && shift
sizes=${*:-100 500 1000}
model=${MODEL:-logistic}
rounds=${ROUNDS:-3}
threads=${THREADS:-2}
examples=${EXAMPLES:-4}
batch=${BATCH:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
trainers=${TRAINERS:+--trainers $TRAINERS}
printf '%-8s %-6s %6s %9s %11s %11s %8s %8s %9s %9s %9s %9s %10s\n' model clients rounds "rounds/s" "server RSS" "fleet RSS" \
  held spilled "train s" "deploy s" overhead "req/task" "server CPU"
for n in $sizes; do
  python3 - "$out/data.json" "$n" "$examples" <<'PY'
import json, sys
n, m = int(sys.argv[2]), int(sys.argv[3])
users = ["c%d" % c for c in range(n)]
data = {u: {"x": [[((k * 7 + i * 13 + c * 31) % 101) / 100 for k in range(784)] for i in range(m)],
            "y": [(i * 11 + c * 3) % 62 for i in range(m)]} for c, u in enumerate(users)}
json.dump({"users": users, "num_samples": [m] * n, "user_data": data}, open(sys.argv[1], "w"))
PY
  job="--model $model --batch-size $batch --seed 1"
  "$fedc" plan build --data "$out/data.json" $job --out "$out/plan" >/dev/null
  "$fedc" train --data "$out/data.json" $job --rounds "$rounds" --clients-per-round "$n" --eval-every 0 \
    --threads "$threads" --quiet --out "$out/train" >/dev/null
  # its training time (the metrics' seconds: the rounds and the final evaluation, not the set-up)
  train=$(python3 -c 'import json, sys
print(json.loads(open(sys.argv[1]).readlines()[-1])["seconds"])' "$out/train/metrics.jsonl")
  addr=tcp://127.0.0.1:$(port)
  /usr/bin/time -f "%M %U %S" -o "$out/rss" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds "$rounds" \
    --clients-per-round "$n" --out "$out/srv" --token t --linger 1 --report-deadline 600 >"$out/server.log" 2>&1 &
  server=$!
  /usr/bin/time -f "%M" -o "$out/frss" "$fedc" fleet --connect "$addr" --data "$out/data.json" --clients "$n" \
    --token t --timeout 120 $trainers >/dev/null 2>&1
  wait $server
  # the rounds' own time (each row's seconds.round: the server's start and its linger left out),
  # the most reports held in memory and spilled in a round, and the requests a task
  set -- $(python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(r["seconds"]["round"] for r in rows), max(r["held_peak"] for r in rows), max(r["spilled"] for r in rows),
      sum(r["requests"] for r in rows) / sum(r["selected"] for r in rows))' \
    "$out/srv/metrics.jsonl")
  deployed=$1
  set -- "$@" $(tail -1 "$out/rss")
  printf '%-8s %-6s %6s %9.2f %8s MB %8s MB %8s %8s %9.2f %9.2f %8.2fx %9.1f %8.2f s\n' "$model" "$n" "$rounds" \
    "$(echo "$rounds / $deployed" | bc -l)" "$(( $5 / 1024 ))" "$(( $(tail -1 "$out/frss") / 1024 ))" \
    "$2" "$3" "$train" "$deployed" \
    "$(echo "$deployed / $train" | bc -l)" "$4" "$(echo "$6 + $7" | bc -l)"
  rm -rf "$out/srv" "$out/train" "$out/plan"
done
