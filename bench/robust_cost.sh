#!/bin/sh
# The cost of each robust aggregator a round, against the mean's (issue 38's study,
# docs/accuracy.md): FEMNIST-LEAF's writers, the EMNIST CNN (1.2M parameters),
# COHORT clients a round, one thread. A round's cost is measured in CPU seconds
# (user + system, GNU time), which another process's load moves far less than
# wall time: the CPU of a ROUNDS-round run less that of a 1-round run, over
# ROUNDS - 1, so that reading the data and building the program cancel. In each of
# SETS sets every aggregator runs once, in turn; the figure is each aggregator's
# median over the sets, and its ratio to the mean's.
#
#   bench/robust_cost.sh
#
# Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3), DATA (../shared/data/femnist-leaf), COHORT (20), F (4),
# AGGREGATORS (robust.sh's), ROUNDS (4), SETS (3), OUT (a temporary directory).
# Needs GNU time (/usr/bin/time: Debian's time, scripts/install-bench-deps).
set -eu
cd "$(dirname "$0")/.."
FEDC=${FEDC:-./build/fedc}
DATA=${DATA:-../shared/data/femnist-leaf}
COHORT=${COHORT:-20}
F=${F:-4}
AGGREGATORS=${AGGREGATORS:-mean median trimmed_mean:beta=0.2 krum:f=$F multikrum:f=$F bulyan:f=$F geomed cclip:tau=1}
ROUNDS=${ROUNDS:-4}
SETS=${SETS:-3}
[ -x /usr/bin/time ] || { echo "robust_cost.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
[ -x "$FEDC" ] || { echo "robust_cost.sh: $FEDC not found (make build)" >&2; exit 2; }
[ -d "$DATA/train" ] || { echo "robust_cost.sh: no FEMNIST-LEAF in $DATA (DATA=...)" >&2; exit 2; }
[ "$ROUNDS" -gt 1 ] || { echo "robust_cost.sh: ROUNDS must be 2 or more, not $ROUNDS" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
PYTHON=${PYTHON:-/usr/bin/python3}

# cpu AGGREGATOR ROUNDS: the run's user + system CPU seconds
cpu() {
  rm -rf "$out/run"
  /usr/bin/time -f '%U %S' -o "$out/cpu" "$FEDC" train --data "$DATA/train" --model cnn --rounds "$2" \
    --clients-per-round "$COHORT" --batch-size 20 --epochs 1 --client-lr 0.1 --eval-every 0 --seed 0 \
    --threads 1 --quiet --aggregator "$1" --out "$out/run" >/dev/null
  awk '{ print $1 + $2 }' "$out/cpu"
}

: >"$out/rounds.tsv"
for set in $(seq "$SETS"); do
  echo "set $set of $SETS ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))" >&2
  for agg in $AGGREGATORS; do
    one=$(cpu "$agg" 1)
    many=$(cpu "$agg" "$ROUNDS")
    echo "$agg $one $many" | awk -v r="$ROUNDS" '{ printf "%s\t%.4f\n", $1, ($3 - $2) / (r - 1) }' >>"$out/rounds.tsv"
  done
done

"$PYTHON" - "$out/rounds.tsv" "$SETS" $AGGREGATORS <<'PY'
import statistics, sys
path, sets, aggs = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = {}
for line in open(path):
    agg, secs = line.split("\t")
    runs.setdefault(agg, []).append(float(secs))
median = {a: statistics.median(v) for a, v in runs.items()}
mean = median.get("mean")
print("| aggregator | CPU s a round (median of %s) | × mean |\n| --- | --- | --- |" % sets)
for a in aggs:
    ratio = "%.2f" % (median[a] / mean) if mean else "-"
    print("| `%s` | %.3f | %s |" % (a, median[a], ratio))
PY
