#!/bin/sh
# bench/deploy_population.sh [FEDC] — a large population against one fedc server on loopback:
# POPULATION clients (default 10000) run by FLEETS fleet processes (default 10; each fedc fleet
# --client F --clients POPULATION/FLEETS, so together they are clients 0 to POPULATION - 1), the
# server selecting COHORT of them a round, for each cohort size of COHORTS (default "1000"; give
# several, e.g. "250 500 1000", to see the server's peak RSS against the cohort) and each job of
# JOBS (MODEL:ROUNDS, default "logistic:20 cnn:3"), FedAvg over generated EMNIST-shaped clients of
# EXAMPLES examples (default 2) in batches of 2. The clients not selected in a round check in and
# are held or told to come back, as a real population's are.
# Prints per job: rounds per minute (over the rounds' own seconds, the metrics' seconds.round:
# the server's start and its linger left out), the server's peak RSS and CPU seconds, the fleets'
# peak RSS (summed), the reports expected (rounds x cohort), those the server added (the metrics'
# "reported", over committed rounds), those the fleets were told were counted (their "done: ...
# R reports" lines), and lost = expected - added (0: nothing lost; a round abandoned or run again
# shows there too), and the rounds run again.
# docs/benchmarks-deployment.md records the figures.
set -eu
fedc=${1:-${FEDC:-./build/fedc}}
population=${POPULATION:-10000}
fleets=${FLEETS:-10}
cohorts=${COHORTS:-1000}
jobs=${JOBS:-logistic:20 cnn:3}
examples=${EXAMPLES:-2}
out=$(mktemp -d "${TMPDIR:-/tmp}/deploy_population.XXXXXX")
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$out"' EXIT
[ $((population % fleets)) = 0 ] || { echo "deploy_population.sh: POPULATION must be a multiple of FLEETS" >&2; exit 2; }
per=$((population / fleets))
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
python3 - "$out/data.json" "$population" "$examples" <<'PY'
import json, sys
n, m = int(sys.argv[2]), int(sys.argv[3])
with open(sys.argv[1], "w") as f:  # written a client at a time: 10,000 clients' pixels are not built in memory
    f.write('{"users": %s, "num_samples": %s, "user_data": {' % (json.dumps(["c%d" % c for c in range(n)]), json.dumps([m] * n)))
    for c in range(n):
        x = ",".join("[" + ",".join("1" if (k * 7 + i * 13 + c * 31) % 101 > 60 else "0" for k in range(784)) + "]" for i in range(m))
        f.write('%s"c%d": {"x": [%s], "y": [%s]}' % ("," if c else "", c, x, ",".join(str((i * 11 + c * 3) % 62) for i in range(m))))
    f.write("}}\n")
PY
printf '%-8s %10s %6s %6s %11s %11s %11s %11s %9s %8s %8s %5s %7s\n' model population cohort rounds "rounds/min" "server RSS" \
  "server CPU" "fleets RSS" expected added counted lost "rerun"
for job in $jobs; do
  model=${job%%:*}
  rounds=${job##*:}
  for k in $cohorts; do
    rm -rf "$out/plan" "$out/srv"
    "$fedc" plan build --data "$out/data.json" --model "$model" --batch-size 2 --seed 1 --out "$out/plan" >/dev/null
    addr=tcp://127.0.0.1:$(port)
    /usr/bin/time -f "%M %U %S" -o "$out/rss" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds "$rounds" \
      --clients-per-round "$k" --out "$out/srv" --token t --linger 5 --report-deadline 600 >"$out/server.log" 2>&1 &
    server=$!
    pids="$server"
    for f in $(seq 0 $((fleets - 1))); do
      /usr/bin/time -f "%M" -o "$out/frss$f" "$fedc" fleet --connect "$addr" --data "$out/data.json" --client $((f * per)) \
        --clients "$per" --token t --timeout 60 --max-seconds 7200 >"$out/fleet$f.log" 2>&1 &
      pids="$pids $!"
    done
    failed=0
    for p in $pids; do wait "$p" || failed=$((failed + 1)); done
    pids=""
    [ "$failed" = 0 ] || { echo "deploy_population.sh: $failed processes failed; the server's log:" >&2; tail -n 5 "$out/server.log" >&2
                           tail -n 3 "$out"/fleet*.log >&2; exit 1; }
    read -r seconds added rerun <<EOF
$(python3 -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
done = [r for r in rows if not r["abandoned"]]
print(sum(r["seconds"]["round"] for r in rows), sum(r["reported"] for r in done), len(rows) - len(done))' "$out/srv/metrics.jsonl")
EOF
    counted=$(cat "$out"/fleet*.log | sed -n 's/.*fedc fleet: done: [0-9]* clients, \([0-9]*\) reports.*/\1/p' | paste -sd+ | bc)
    fleet_kb=$(for f in $(seq 0 $((fleets - 1))); do tail -1 "$out/frss$f"; done | paste -sd+ | bc)
    read -r server_kb server_user server_sys <<EOF
$(tail -1 "$out/rss")
EOF
    expected=$((rounds * k))
    printf '%-8s %10s %6s %6s %11.2f %8s MB %9.1f s %8s MB %9s %8s %8s %5s %7s\n' "$model" "$population" "$k" "$rounds" \
      "$(echo "60 * $rounds / $seconds" | bc -l)" "$((server_kb / 1024))" "$(echo "$server_user + $server_sys" | bc -l)" \
      "$((fleet_kb / 1024))" "$expected" "$added" "$counted" "$((expected - added))" "$rerun"
  done
done
