#!/bin/sh
# The robust aggregation study (issue 38): Fashion-MNIST (Dirichlet(0.5) over CLIENTS clients, the
# dense model) and FEMNIST-LEAF (its writers, the CNN), every aggregator against every attack at
# 0%, 10% and 20% attackers (--attackers: a seeded fraction of the population, fedc/attack.h):
# the final test accuracy, and each aggregator's seconds a round against the mean's. Accuracy
# does not depend on the machine's load: every run is bitwise reproducible (the seconds do).
#
#   bench/accuracy/robust.sh [ROUNDS]        (default 100)
#
# The full grid is 2 datasets x 8 aggregators x (1 + 6 attacks x 2 fractions) = 208 runs: it can
# run in pieces, across sessions. Each run checkpoints every CHECKPOINT rounds; with REUSE=1 a run
# whose log ends in a result is kept and one that was stopped resumes from its checkpoint
# (fedc train --resume: the same bits as a run never stopped); BUDGET=SECONDS stops this
# invocation's runs when that time is spent (the run in progress at its checkpoint), and the
# tables show what is done so far ("-" for the rest). So, until it says every run is done:
#
#   REUSE=1 BUDGET=3600 bench/accuracy/robust.sh
#
# Writes $OUT/robust.tsv (dataset, aggregator, attack, fraction, accuracy, seconds a round),
# prints it as markdown tables (one per dataset: aggregators down, attack x fraction across;
# then the cost a round against the mean's, at 0% attackers) and draws $OUT/robust-DATASET.svg
# heat maps; record them in docs/accuracy.md.
#
# Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3), OUT (out/robust), THREADS (2),
# CLIENTS (Fashion-MNIST's clients, 500), COHORT (clients a round, 20), F (the f of Krum,
# Multi-Krum and Bulyan: 4, which Bulyan's n >= 4f + 3 allows at a cohort of 20), DATASETS
# ("fashion femnist"), AGGREGATORS, ATTACKS, FRACTIONS (the grid), REUSE=1 (keep runs whose
# log ends in a result, resume the others from their checkpoints), CHECKPOINT (rounds between
# checkpoints, 10), BUDGET (seconds this invocation may run; 0: no limit).
set -eu
cd "$(dirname "$0")/../.."
rounds=${1:-100}
FEDC=${FEDC:-./build/fedc}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-out/robust}
THREADS=${THREADS:-2}
CLIENTS=${CLIENTS:-500}
COHORT=${COHORT:-20}
F=${F:-4}
DATASETS=${DATASETS:-fashion femnist}
AGGREGATORS=${AGGREGATORS:-mean median trimmed_mean:beta=0.2 krum:f=$F multikrum:f=$F bulyan:f=$F geomed cclip:tau=1}
ATTACKS=${ATTACKS:-sign_flip scale:s=-10 gaussian:sigma=10 label_flip alie:z=1 ipm:eps=0.5}
FRACTIONS=${FRACTIONS:-0 0.1 0.2}
CHECKPOINT=${CHECKPOINT:-10}
BUDGET=${BUDGET:-0}
start=$(date +%s)
FASHION=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
LEAF=../shared/data/femnist-leaf
[ -x "$FEDC" ] || { echo "robust.sh: $FEDC not found (make build)" >&2; exit 2; }
mkdir -p "$OUT"

common="--rounds $rounds --clients-per-round $COHORT --batch-size 20 --epochs 1 --eval-every $rounds --seed 0
  --threads $THREADS --checkpoint-every $CHECKPOINT --quiet"
fashion_args="--data $FASHION --partition dirichlet:0.5 --num-clients $CLIENTS --model dense --client-lr 0.05 $common"
femnist_args="--data $LEAF/train --test-data $LEAF/test --model cnn --client-lr 0.1 $common"

# left: the seconds of BUDGET left (a large number without one)
left() { [ "$BUDGET" -gt 0 ] && echo $((start + BUDGET - $(date +%s))) || echo 999999999; }

# A run whose model the attack drove to non-finite values ends there: fedc train drops every
# client of the round, and stops. That is the attack's result (the table says "div"), not a failure.
diverged='clients were dropped (their updates are not finite'

# run DATASET AGGREGATOR ATTACK FRACTION: one fedc train (resumed from its checkpoint if it was
# stopped and REUSE=1), within the budget left; appends its row to robust.tsv once it is done
total=0 finished=0
run() {
  total=$((total + 1))
  dataset=$1 agg=$2 attack=$3 frac=$4
  name=$(echo "$dataset-$agg-$attack-$frac" | tr ':,=' '___')
  log="$OUT/$name.log" dir="$OUT/$name"
  args=$fashion_args
  [ "$dataset" = femnist ] && args=$femnist_args
  flags="--aggregator $agg"
  [ "$frac" = 0 ] || flags="$flags --attack $attack --attackers $frac"
  if [ "${REUSE:-0}" != 1 ] || ! grep -q "^done:\|$diverged" "$log" 2>/dev/null; then
    [ "$(left)" -gt 0 ] || return 0 # the budget is spent: a later invocation runs it
    resume=
    [ "${REUSE:-0}" = 1 ] && [ -s "$dir/checkpoint.safetensors" ] && resume=--resume
    echo "== $name${resume:+ (resumed)} ($(date -u +%H:%M:%S))" >&2
    status=0
    # shellcheck disable=SC2086
    timeout "$(left)" "$FEDC" train $args $flags $resume --out "$dir" >"$log" 2>&1 || status=$?
    if [ "$status" = 124 ]; then
      echo "robust.sh: $name stopped (the budget is spent); REUSE=1 resumes it from its checkpoint" >&2
      return 0
    elif [ "$status" != 0 ] && ! grep -q "$diverged" "$log"; then
      echo "robust.sh: $name failed:" >&2
      tail -3 "$log" >&2
      return 0
    fi
  fi
  finished=$((finished + 1))
  acc=$(tail -1 "$dir/metrics.jsonl" | sed -n 's/.*"test_accuracy": \([0-9.e-]*\).*/\1/p')
  grep -q "$diverged" "$log" && acc=diverged
  # seconds a round: the median of the rounds' (a row's "seconds" is the run's total so far; the
  # evaluation's rounds left out)
  secs=$(sed -n 's/.*"evaluated": \([a-z]*\).*"seconds": \([0-9.e-]*\).*/\1 \2/p' "$dir/metrics.jsonl" |
    awk '{ if ($1 == "false") print $2 - prev; prev = $2 }' | sort -g |
    awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "" }')
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$agg" "$attack" "$frac" "$acc" "$secs" >>"$OUT/robust.tsv"
}

: >"$OUT/robust.tsv"
for d in $DATASETS; do
  for agg in $AGGREGATORS; do
    run "$d" "$agg" none 0 # the clean run: its row stands for every attack at 0%
    for attack in $ATTACKS; do
      for frac in $FRACTIONS; do [ "$frac" = 0 ] || run "$d" "$agg" "$attack" "$frac"; done
    done
  done
done

echo "robust.sh: $finished of $total runs done$([ "$finished" = "$total" ] || echo "; run again with REUSE=1 for the rest")" >&2

"$PYTHON" - "$OUT" "$FRACTIONS" $ATTACKS <<'PY'
import collections, sys
out, fractions, attacks = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
rows = [l.rstrip("\n").split("\t") for l in open(out + "/robust.tsv") if l.strip()]
acc, secs = {}, {}
for d, agg, attack, frac, a, s in rows:
    acc[d, agg, attack, frac] = a if a == "diverged" else float(a) if a else None
    if frac == "0": secs[d, agg] = float(s) if s else None
datasets = list(collections.OrderedDict.fromkeys(r[0] for r in rows))
aggs = list(collections.OrderedDict.fromkeys(r[1] for r in rows))
cols = [("none", "0")] + [(a, f) for a in attacks for f in fractions if f != "0"]
def label(v, form):  # a cell's text: not run yet, diverged, or the accuracy in percent
    return "-" if v is None else "div" if v == "diverged" else form % (100 * v)
def cell(d, agg, attack, frac):
    v = acc.get((d, agg, "none" if frac == "0" else attack, frac))
    return v
for d in datasets:
    print("\n%s: final test accuracy (%%)\n" % d)
    print("| aggregator | clean | " + " | ".join("%s %d%%" % (a, round(100 * float(f))) for a, f in cols[1:]) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for agg in aggs:
        vals = [cell(d, agg, a, f) for a, f in cols]
        print("| `%s` | " % agg + " | ".join(label(v, "%.1f") for v in vals) + " |")
    mean = secs.get((d, "mean"))
    print("\n%s: seconds a round (median), against the mean's\n" % d)
    print("| aggregator | s a round | × mean |\n|---|---|---|")
    for agg in aggs:
        s = secs.get((d, agg))
        print("| `%s` | %s | %s |" % (agg, "-" if s is None else "%.3f" % s,
                                      "-" if s is None or not mean else "%.2f" % (s / mean)))
    # the heat map: aggregators down, attack x fraction across, accuracy as colour
    w, h, cw, ch, left, top = 0, 0, 46, 22, 150, 90
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="10">' % (left + cw * len(cols) + 10, top + ch * len(aggs) + 10)]
    svg.append('<text x="4" y="14" font-size="12">%s: final test accuracy by aggregator and attack</text>' % d)
    for j, (a, f) in enumerate(cols):
        x = left + cw * j + cw / 2
        svg.append('<text x="%g" y="%d" transform="rotate(-45 %g %d)">%s</text>'
                   % (x, top - 6, x, top - 6, "clean" if f == "0" else "%s %d%%" % (a.split(":")[0], round(100 * float(f)))))
    for i, agg in enumerate(aggs):
        y = top + ch * i
        svg.append('<text x="4" y="%d">%s</text>' % (y + 15, agg))
        for j, (a, f) in enumerate(cols):
            v = cell(d, agg, a, f)
            g = 0 if v is None or v == "diverged" else max(0.0, min(1.0, v))
            fill = "#ddd" if v is None else "#555" if v == "diverged" else "rgb(%d,%d,%d)" % (255 - int(200 * g), 80 + int(160 * g), 90)
            svg.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>' % (left + cw * j, y, cw - 1, ch - 1, fill))
            ink = ' fill="#fff"' if v == "diverged" else ""  # readable on the dark cell
            svg.append('<text x="%d" y="%d"%s>%s</text>' % (left + cw * j + 8, y + 15, ink, label(v, "%.0f")))
    svg.append("</svg>")
    open("%s/robust-%s.svg" % (out, d), "w").write("\n".join(svg))
    print("\nheat map: %s/robust-%s.svg" % (out, d))
PY
