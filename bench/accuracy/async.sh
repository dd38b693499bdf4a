#!/bin/sh
# The asynchronous-aggregation study (issue 37): FEMNIST-LEAF (its 56 writers, the CNN) on the
# virtual clock, every client's speed heavy-tailed (log-normal seconds a local step, drawn per
# client from the seed: docs/training.md, "Time"). Test accuracy against VIRTUAL seconds for
# synchronous FedAvg (waiting for every client; and with a round deadline and over-selection),
# FedBuff and FedAsync (docs/algorithms.md, "fedbuff, fedasync"), each given the same number of
# client reports; then FedBuff's claim (Nguyen et al., AISTATS 2022: buffered asynchronous
# aggregation reaches a target accuracy in less time than synchronous FedAvg), in shape: the
# virtual time each method takes to a target accuracy, and FedBuff's speedup over FedAvg. Accuracy
# and virtual time do not depend on the machine or its load: every run is bitwise reproducible.
#
#   bench/accuracy/async.sh [--quick] [ROUNDS]   (ROUNDS default 100; --quick: 12, a few minutes)
#
# ROUNDS is synchronous FedAvg's rounds of COHORT clients; every method gets ROUNDS x COHORT
# client reports: FedBuff ROUNDS x COHORT / BUFFER steps of BUFFER reports, FedAsync ROUNDS x
# COHORT steps of one. Every method trains at most COHORT clients at a time (the deadline run
# draws ceil(COHORT (1 + OVER))), so that no speedup is bought with more clients in parallel.
# Without ../shared/data/femnist-leaf a synthetic stand-in of FEMNIST's shape (56 writers, 28x28
# images of 10 noisy prototypes) is written to $OUT/synthetic and the output says so: its
# accuracies are not FEMNIST's.
#
# Writes $OUT/async.tsv (method, server step, reports, virtual seconds, test accuracy: one row an
# evaluation), prints a markdown table (each method's settings, steps, reports, virtual time,
# final accuracy, time to TARGET and the speedup over plain FedAvg) and draws $OUT/async.svg
# (accuracy against virtual seconds on a log scale, one line a method) with
# bench/accuracy/plot_async.py; record them in docs/accuracy.md.
#
# Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3), OUT (out/async; --quick out/async-quick),
# THREADS (2),
# DATA (../shared/data/femnist-leaf), CLOCK (the clock's spec, speed=lognormal:0:1: a median of
# 1 s a step, the slowest of 56 clients about 10x the median), COHORT (FedAvg's clients a round
# and FedBuff's and FedAsync's clients in flight C, 10), BUFFER (FedBuff's K, COHORT / 2),
# DEADLINE (the deadline run's --round-deadline in virtual seconds, 15), OVER (its --over-select,
# 0.3: 13 drawn for 10), TARGET (the target accuracy in (0, 1); default 0.9 x plain FedAvg's final
# accuracy), METHODS (a subset of "fedavg fedavg-deadline fedbuff fedasync"), REUSE=1 (keep runs
# whose log ends in a result).
set -eu
cd "$(dirname "$0")/../.."
rounds=100 out=out/async
if [ "${1:-}" = --quick ]; then rounds=12 out=out/async-quick; shift; fi
rounds=${1:-$rounds}
FEDC=${FEDC:-./build/fedc}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-$out}
THREADS=${THREADS:-2}
DATA=${DATA:-../shared/data/femnist-leaf}
CLOCK=${CLOCK:-speed=lognormal:0:1}
COHORT=${COHORT:-10}
BUFFER=${BUFFER:-$((COHORT / 2))}
DEADLINE=${DEADLINE:-15}
OVER=${OVER:-0.3}
TARGET=${TARGET:-}
METHODS=${METHODS:-fedavg fedavg-deadline fedbuff fedasync}
[ -x "$FEDC" ] || { echo "async.sh: $FEDC not found (make build)" >&2; exit 2; }
mkdir -p "$OUT"

data="FEMNIST-LEAF ($DATA)" label=FEMNIST-LEAF
if [ ! -d "$DATA/train" ]; then
  # The stand-in: FEMNIST's shape and writer count, not its pixels. Each of 10 classes is a random
  # binary 28x28 prototype, each example its class's with 20% of the pixels flipped; each writer
  # holds 4 of the classes (non-IID) and 20 + lognormal(3.8, 0.6) training examples.
  DATA=$OUT/synthetic
  label="synthetic FEMNIST stand-in"
  data="a SYNTHETIC stand-in for FEMNIST ($DATA: 56 writers, 10 noisy prototypes; ../shared/data absent)"
  if [ ! -f "$DATA/test/data.json" ]; then
    mkdir -p "$DATA/train" "$DATA/test"
    "$PYTHON" - "$DATA" <<'PY'
import json, random, sys
rng = random.Random(37)
protos = [[rng.random() < 0.5 for _ in range(784)] for _ in range(10)]
def example(c):
    return [int(p != (rng.random() < 0.2)) for p in protos[c]], c
train, test = {}, {}
for w in range(56):
    classes = rng.sample(range(10), 4)
    for split, n in ((train, 20 + int(rng.lognormvariate(3.8, 0.6))), (test, 15)):
        xs, ys = zip(*(example(rng.choice(classes)) for _ in range(n)))
        split["w%02d" % w] = {"x": list(xs), "y": list(ys)}
for name, split in (("train", train), ("test", test)):
    users = sorted(split)
    json.dump({"users": users, "num_samples": [len(split[u]["y"]) for u in users], "user_data": split},
              open("%s/%s/data.json" % (sys.argv[1], name), "w"), separators=(",", ":"))
PY
  fi
fi
echo "async.sh: $data; clock $CLOCK; $rounds rounds of $COHORT clients; $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')" >&2

# FedJAX's EMNIST CNN with bench/accuracy/run.sh's FedAvg settings (batch 20, one epoch, client
# SGD lr 0.1, server SGD lr 1); about 20 evaluations a run, each of the whole test split.
every=$(( rounds >= 20 ? rounds / 20 : 1 ))
common="--data $DATA/train --test-data $DATA/test --model cnn --batch-size 20 --epochs 1 --client-lr 0.1
  --seed 0 --threads $THREADS --quiet --clock $CLOCK"

# flags METHOD: the method's own fedc train flags
flags() {
  case $1 in
    fedavg) echo "--rounds $rounds --clients-per-round $COHORT --eval-every $every" ;;
    fedavg-deadline) echo "--rounds $rounds --clients-per-round $COHORT --eval-every $every
      --round-deadline $DEADLINE --over-select $OVER" ;;
    fedbuff) echo "--algorithm fedbuff --set buffer=$BUFFER --clients-per-round $COHORT
      --rounds $((rounds * COHORT / BUFFER)) --eval-every $((every * COHORT / BUFFER))" ;;
    fedasync) echo "--algorithm fedasync --clients-per-round $COHORT --rounds $((rounds * COHORT))
      --eval-every $((every * COHORT))" ;;
    *) echo "async.sh: unknown method $1" >&2; exit 2 ;;
  esac
}

# run METHOD: one fedc train; appends its evaluations to async.tsv
run() {
  m=$1 log="$OUT/$1.log" dir="$OUT/$1"
  f=$(flags "$m")
  # shellcheck disable=SC2086,SC2116
  f=$(echo $f) # one line: the line breaks and indents squeezed to single spaces
  if [ "${REUSE:-0}" != 1 ] || ! grep -q '^done:' "$log" 2>/dev/null; then
    echo "== $m ($(date -u +%H:%M:%S)): $f" >&2
    # shellcheck disable=SC2086
    "$FEDC" train $common $f --out "$dir" >"$log" 2>&1 || {
      echo "async.sh: $m failed:" >&2
      tail -3 "$log" >&2
      return 0
    }
  fi
  # the reports added by a step: the clients a step takes (FedAsync 1, a deadline round the
  # ceil(K (1 + F)) it draws) less the run's dropped so far
  "$PYTHON" - "$dir/metrics.jsonl" "$m" "$f" "$COHORT" "$OVER" >>"$OUT/async.tsv" <<'PY'
import json, math, sys
path, method, flags, k, over = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
per_step = (1 if method == "fedasync" else int(flags.split("buffer=")[1].split()[0]) if method == "fedbuff"
            else math.ceil(k * (1 + over)) if "--over-select" in flags else k)
for line in open(path):
    r = json.loads(line)
    if r.get("test_accuracy") is not None:
        print("%s\t%d\t%d\t%.6g\t%.6g\t%s" % (method, r["round"], r["round"] * per_step - r.get("dropped", 0),
                                             r["time"], r["test_accuracy"], flags))
PY
}

: >"$OUT/async.tsv"
for m in $METHODS; do run "$m"; done

"$PYTHON" - "$OUT/async.tsv" "$TARGET" "$data" "$OUT/target" >"$OUT/async.md" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
runs = collections.OrderedDict()
for m, step, reports, time, acc, flags in rows:
    runs.setdefault(m, {"flags": flags, "points": []})["points"].append((float(time), float(acc), int(step), int(reports)))
if not runs:
    sys.exit("async.sh: no run gave a result")
base = runs.get("fedavg")
target = float(sys.argv[2]) if sys.argv[2] else 0.9 * base["points"][-1][1] if base else 0.5
open(sys.argv[4], "w").write("%.6g\n" % target)
def reach(pts):  # the first evaluation at or above the target: virtual seconds and server step
    return next(((t, s) for t, a, s, _ in pts if a >= target), (None, None))
print("Data: %s. Target accuracy %.2f%%%s.\n" % (sys.argv[3], 100 * target,
      "" if sys.argv[2] else " (0.9 x plain FedAvg's final accuracy)"))
print("| method | flags | server steps | reports | virtual s | final accuracy | best | virtual s to %.1f%% (step) | vs fedavg |"
      % (100 * target))
print("|---|---|---|---|---|---|---|---|---|")
t_base = reach(base["points"])[0] if base else None
for m, r in runs.items():
    t, a, s, n = r["points"][-1]
    tt, ts = reach(r["points"])
    speed = "%.2fx" % (t_base / tt) if tt and t_base else "-"
    print("| %s | `%s` | %d | %d | %.0f | %.2f%% | %.2f%% | %s | %s |" % (
        m, r["flags"], s, n, t, 100 * a, 100 * max(p[1] for p in r["points"]),
        "not reached" if tt is None else "%.0f (%d)" % (tt, ts), speed))
fb = runs.get("fedbuff")
if base and fb:
    tb, tf = reach(base["points"])[0], reach(fb["points"])[0]
    if tb and tf:
        print("\nFedBuff reaches %.1f%% in %.0f virtual s, synchronous FedAvg in %.0f: a speedup of %.2fx; %s"
              % (100 * target, tf, tb, tb / tf, "the paper's shape holds (FedBuff faster)." if tf < tb else
                 "the paper's shape does NOT hold here (FedBuff no faster)."))
    else:
        print("\nThe shape cannot be judged at %.1f%%: %s did not reach it within the reports given (a lower TARGET or more ROUNDS)."
              % (100 * target, " and ".join(n for n, x in (("FedAvg", tb), ("FedBuff", tf)) if not x)))
    print("Time a report (virtual s / reports): " + ", ".join(
        "%s %.2f" % (m, r["points"][-1][0] / max(1, r["points"][-1][3])) for m, r in runs.items()))
PY
cat "$OUT/async.md"
"$PYTHON" bench/accuracy/plot_async.py "$OUT/async.tsv" "$OUT/async.svg" "$(cat "$OUT/target")" "$label" &&
  echo "plot: $OUT/async.svg"
