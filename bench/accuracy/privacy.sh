#!/bin/sh
# The privacy accuracy study (issue 18): DP-FedAvg with Poisson client sampling on Fashion-MNIST
# (Dirichlet(0.5) over CLIENTS clients, the MLP) and on FEMNIST-LEAF (its 56 writers, the CNN):
# test accuracy against the epsilon that fedc's RDP accountant reports (metrics.jsonl, delta =
# 1 / clients), for a few noise multipliers at a fixed clip; the adaptive clip (Andrew et al.
# 2021, TFF's defaults) against the best fixed clip of a small sweep; and, where fedc has
# --compress, the bits a client sends against accuracy. Accuracy does not depend on the
# machine's load: every run is bitwise reproducible (the seconds do depend on it).
#
#   bench/accuracy/privacy.sh [ROUNDS]        (default 100)
#
# Writes $OUT/privacy.tsv (dataset, run, flags, epsilon, accuracy, seconds, compression's bits a
# client), prints it as a
# markdown table, and draws $OUT/privacy.svg (accuracy against epsilon, one line per dataset)
# with bench/accuracy/plot_privacy.py; record both in docs/accuracy.md.
#
# Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3), OUT (out/privacy), THREADS (2),
# CLIENTS (Fashion-MNIST's clients, 2000), RATE (Fashion-MNIST's sampling rate, 0.05: 100
# clients a round on average), FEMNIST_RATE (0.2), DATASETS ("fashion femnist"), REUSE=1 (keep
# runs whose log ends in a result), NOISES, CLIPS, BITS (the sweeps; BITS="" skips compression),
# SWEEP_Z (the noise multiplier of the clip sweep and the adaptive run, 1.0).
set -eu
cd "$(dirname "$0")/../.."
rounds=${1:-100}
FEDC=${FEDC:-./build/fedc}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-out/privacy}
THREADS=${THREADS:-2}
CLIENTS=${CLIENTS:-2000}
RATE=${RATE:-0.05}
FEMNIST_RATE=${FEMNIST_RATE:-0.2}
DATASETS=${DATASETS:-fashion femnist}
NOISES=${NOISES-0.3 0.5 1.0 2.0}
CLIPS=${CLIPS-0.3 1.0 3.0 10.0}
SWEEP_Z=${SWEEP_Z:-1.0}
BITS=${BITS-1 2 4 8}
FASHION=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
LEAF=../shared/data/femnist-leaf
[ -x "$FEDC" ] || { echo "privacy.sh: $FEDC not found (make build)" >&2; exit 2; }
mkdir -p "$OUT"

common="--rounds $rounds --batch-size 20 --epochs 1 --eval-every 10 --seed 0 --threads $THREADS"
fashion_args="--data $FASHION --partition dirichlet:0.5 --num-clients $CLIENTS --model dense --client-lr 0.05
  --sampling poisson:$RATE $common"
femnist_args="--data $LEAF/train --test-data $LEAF/test --model cnn --client-lr 0.1
  --sampling poisson:$FEMNIST_RATE $common"

# run DATASET NAME FLAGS...: one fedc train; appends "DATASET NAME FLAGS EPSILON ACCURACY SECONDS"
run() {
  dataset=$1 name=$2
  shift 2
  log="$OUT/$dataset-$name.log" dir="$OUT/$dataset-$name"
  args=$fashion_args
  [ "$dataset" = femnist ] && args=$femnist_args
  if [ "${REUSE:-0}" != 1 ] || ! grep -q '^done:' "$log" 2>/dev/null; then
    echo "== $dataset $name ($(date -u +%H:%M:%S)): $*" >&2
    # shellcheck disable=SC2086
    "$FEDC" train $args "$@" --out "$dir" >"$log" 2>&1 || {
      echo "privacy.sh: $dataset $name failed:" >&2
      tail -3 "$log" >&2
      return 0
    }
  fi
  last=$(tail -1 "$dir/metrics.jsonl")
  acc=$(echo "$last" | sed -n 's/.*"test_accuracy": \([0-9.e-]*\).*/\1/p')
  eps=$(echo "$last" | sed -n 's/.*"epsilon": \([0-9.e+-]*\).*/\1/p')
  bits=$(echo "$last" | sed -n 's/.*"compress_bits": \([0-9.e+-]*\).*/\1/p')
  secs=$(sed -n 's/^done: [0-9]* rounds in \([0-9.]*\) s.*/\1/p' "$log" | tail -1)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$name" "$*" "${eps:-inf}" "$acc" "$secs" "${bits:--}" \
    >>"$OUT/privacy.tsv"
}

: >"$OUT/privacy.tsv"  # reused runs append their rows again
for d in $DATASETS; do
  clip=1.0
  [ "$d" = femnist ] && clip=3.0
  run "$d" no-dp
  # accuracy against epsilon: the noise multiplier at a fixed clip
  for z in $NOISES; do run "$d" "z$z" --dp-clip $clip --dp-noise $z; done
  # the adaptive clip against a sweep of fixed clips, at z = SWEEP_Z
  # (the sweep's run at the study's own clip is the noise run zSWEEP_Z itself: its row is copied)
  z=$SWEEP_Z zname=$(echo "$SWEEP_Z" | sed 's/\.0$//')
  for c in $CLIPS; do
    if [ "$c" = "$clip" ] && grep -q "^$d	z$z	" "$OUT/privacy.tsv"; then
      grep "^$d	z$z	" "$OUT/privacy.tsv" | sed "s/	z$z	/	clip$c-z$zname	/" >>"$OUT/privacy.tsv"
    else
      run "$d" "clip$c-z$zname" --dp-clip $c --dp-noise $z
    fi
  done
  run "$d" "adaptive-z$zname" --dp-clip 0.1 --dp-noise $z --dp-adaptive
  # compression's bits against accuracy, where this fedc has it
  if [ -n "$BITS" ] && "$FEDC" train --help 2>&1 | grep -q -- '--compress'; then
    for b in $BITS; do run "$d" "uniform$b" --compress "uniform:$b"; done
    run "$d" uniform1-rotate --compress uniform:1,rotate
  fi
done

printf '| dataset | run | flags | ε | test accuracy | bits a client a round | seconds |\n'
printf '| --- | --- | --- | --- | --- | --- | --- |\n'
awk -F'\t' '{ printf "| %s | %s | `%s` | %s | %.2f%% | %s | %s |\n", $1, $2, $3, $4, 100 * $5, $7, $6 }' \
  "$OUT/privacy.tsv"
"$PYTHON" bench/accuracy/plot_privacy.py "$OUT/privacy.tsv" "$OUT/privacy.svg" && echo "plot: $OUT/privacy.svg"
