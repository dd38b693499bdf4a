#!/bin/sh
# bench/deploy_load.sh [FEDC [N...]] — one fedc server on loopback with N concurrent clients (a
# fleet, every client in every round), FedAvg on a model (MODEL, default logistic; cnn for
# FedJAX's EMNIST CNN) over generated EMNIST-shaped clients of EXAMPLES examples (default 4) in
# batches of BATCH (default 2). It prints rounds per second; the server's and the fleet's peak RSS
# (/usr/bin/time; the fleet trains on TRAINERS clients at once, default the cores); the reports
# that came ahead of slot order (held in memory at most, spilled to disk); the deployed rounds'
# time over fedc train's on the same job (same bits; the simulation on THREADS threads, the fleet
# on one thread per client and TRAINERS seats), and the same over the rounds after the first
# ("later": neither side's start-up). Both leave out each round's wait for its first client
# (metrics' seconds.wait, printed as "wait s": in round 1 the fleet's start, its plan fetched and
# its data read, as fedc train's seconds leave out its reading; about 0 later, when the clients
# are there); "deploy s" includes it. Then the requests the server answered a client task (the
# metrics rows' "requests" over the rounds' tasks: the liveness traffic is most of them), and
# the server's CPU seconds.
# DATA=DIR (a LEAF dataset's train folder, e.g. ../shared/data/femnist-leaf/train) takes the
# first N writers of its files, in name order, instead: real clients of real sizes (FEMNIST: 142
# examples a writer on average), so that a task's training is a deployment's; EXAMPLES is unused.
# docs/benchmarks-deployment.md records the figures.
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
# seconds RUN_DIR: a fedc train run's seconds (its last metrics row: the rounds, not the set-up or
# the final evaluation)
seconds() { python3 -c 'import json, sys
print(json.loads(open(sys.argv[1]).readlines()[-1])["seconds"])' "$1/metrics.jsonl"; }
printf '%-8s %-6s %6s %9s %11s %11s %8s %8s %9s %9s %7s %9s %9s %9s %10s\n' model clients rounds "rounds/s" "server RSS" "fleet RSS" \
  held spilled "train s" "deploy s" "wait s" overhead "later" "req/task" "server CPU"
for n in $sizes; do
  if [ -n "${DATA:-}" ]; then
    python3 - "$out/data.json" "$n" "$DATA" <<'PY'
import glob, gzip, json, os, sys
n, src = int(sys.argv[2]), sys.argv[3]
users, data = [], {}
for f in sorted(glob.glob(os.path.join(src, "*.json*"))):
    if len(users) == n:
        break
    d = json.load((gzip.open if f.endswith(".gz") else open)(f, "rt"))
    for u in d["users"][:n - len(users)]:
        users.append(u)
        data[u] = d["user_data"][u]
if len(users) < n: sys.exit("deploy_load.sh: %s has %d writers, fewer than %d" % (src, len(users), n))
json.dump({"users": users, "num_samples": [len(data[u]["y"]) for u in users], "user_data": data}, open(sys.argv[1], "w"))
PY
  else
    python3 - "$out/data.json" "$n" "$examples" <<'PY'
import json, sys
n, m = int(sys.argv[2]), int(sys.argv[3])
users = ["c%d" % c for c in range(n)]
data = {u: {"x": [[((k * 7 + i * 13 + c * 31) % 101) / 100 for k in range(784)] for i in range(m)],
            "y": [(i * 11 + c * 3) % 62 for i in range(m)]} for c, u in enumerate(users)}
json.dump({"users": users, "num_samples": [m] * n, "user_data": data}, open(sys.argv[1], "w"))
PY
  fi
  job="--model $model --batch-size $batch --seed 1"
  "$fedc" plan build --data "$out/data.json" $job --out "$out/plan" >/dev/null
  "$fedc" train --data "$out/data.json" $job --rounds "$rounds" --clients-per-round "$n" --eval-every 0 \
    --threads "$threads" --quiet --out "$out/train" >/dev/null
  train=$(seconds "$out/train")
  if [ "$rounds" -gt 1 ]; then # the first round alone: the rounds after it compare without either side's start
    "$fedc" train --data "$out/data.json" $job --rounds 1 --clients-per-round "$n" --eval-every 0 \
      --threads "$threads" --quiet --out "$out/train1" >/dev/null
    train_later=$(echo "$train - $(seconds "$out/train1")" | bc -l)
  fi
  addr=tcp://127.0.0.1:$(port)
  /usr/bin/time -f "%M %U %S" -o "$out/rss" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds "$rounds" \
    --clients-per-round "$n" --out "$out/srv" --token t --linger 1 --report-deadline 600 >"$out/server.log" 2>&1 &
  server=$!
  /usr/bin/time -f "%M" -o "$out/frss" "$fedc" fleet --connect "$addr" --data "$out/data.json" --clients "$n" \
    --token t --timeout 120 $trainers >/dev/null 2>&1
  wait $server
  # the rounds' own time (each row's seconds.round: the server's start and its linger left out),
  # their waits for a first client, the same less the waits over the rounds after the first, the
  # most reports held in memory and spilled in a round, and the requests a task
  read -r deployed wait deployed_later held spilled per_task <<EOF
$(python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
s = [r["seconds"] for r in rows]
print(sum(t["round"] for t in s), sum(t["wait"] for t in s), sum(t["round"] - t["wait"] for t in s[1:]),
      max(r["held_peak"] for r in rows), max(r["spilled"] for r in rows),
      sum(r["requests"] for r in rows) / sum(r["selected"] for r in rows))' "$out/srv/metrics.jsonl")
EOF
  read -r server_kb server_user server_sys <<EOF
$(tail -1 "$out/rss")
EOF
  later=$([ "$rounds" -gt 1 ] && printf '%.2fx' "$(echo "$deployed_later / $train_later" | bc -l)" || echo -)
  printf '%-8s %-6s %6s %9.2f %8s MB %8s MB %8s %8s %9.2f %9.2f %7.2f %8.2fx %9s %9.1f %8.2f s\n' "$model" "$n" "$rounds" \
    "$(echo "$rounds / $deployed" | bc -l)" "$(( server_kb / 1024 ))" "$(( $(tail -1 "$out/frss") / 1024 ))" \
    "$held" "$spilled" "$train" "$deployed" "$wait" \
    "$(echo "($deployed - $wait) / $train" | bc -l)" "$later" "$per_task" "$(echo "$server_user + $server_sys" | bc -l)"
  rm -rf "$out/srv" "$out/train" "$out/train1" "$out/plan"
done
