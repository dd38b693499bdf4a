#!/bin/sh
# The algorithms' accuracy benchmark (issue 15): every algorithm of `fedc train --algorithms`
# trains FEMNIST-LEAF for ROUNDS rounds with its default hyperparameters, beside FedAvg in the
# same run; SCAFFOLD and FedAvg also in PyTorch (bench/accuracy/fedavg_torch.py); and the
# drift-correcting algorithms on Fashion-MNIST split Dirichlet(0.1), where client drift is
# strong, against FedAvg. Prints a table of the final test accuracies; record it in
# docs/accuracy.md.
#
#   bench/accuracy/algorithms.sh [ROUNDS]      (default 100)
#
# Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3 with python3-torch), DATA
# (../shared/data/femnist-leaf), THREADS (2), OUT (out/algorithms), ALGORITHMS (default: all
# that fedc lists), DRIFT (the algorithms also run on Fashion-MNIST: scaffold fednova feddyn),
# FASHION_MODEL (dense: the MLP, for time; cnn for the CNN),
# TORCH (1: run the PyTorch peers; 0: not), REUSE=1 (keep runs whose log ends in a result).
set -eu
cd "$(dirname "$0")/../.."
rounds=${1:-100}
FEDC=${FEDC:-./build/fedc}
PYTHON=${PYTHON:-/usr/bin/python3}
DATA=${DATA:-../shared/data/femnist-leaf}
THREADS=${THREADS:-2}
OUT=${OUT:-out/algorithms}
FASHION=${FASHION:-/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz}
ALGORITHMS=${ALGORITHMS-$("$FEDC" train --algorithms | cut -d' ' -f1)}
DRIFT=${DRIFT-scaffold fednova feddyn}
[ -x "$FEDC" ] || { echo "algorithms.sh: $FEDC not found (make build)" >&2; exit 2; }
mkdir -p "$OUT"

# The FedAvg baseline of bench/accuracy/run.sh (FedJAX's EMNIST CNN, batch 20, one epoch, 10
# clients a round, client SGD lr 0.1, server SGD lr 1); each algorithm adds its defaults.
FEMNIST="--data $DATA/train --test-data $DATA/test --model cnn --rounds $rounds --clients-per-round 10
  --batch-size 20 --epochs 1 --client-lr 0.1 --eval-every 10 --seed 0"
FASHION_ARGS="--data $FASHION --partition dirichlet:0.1 --num-clients 100 --model ${FASHION_MODEL:-dense} --rounds $rounds
  --clients-per-round 10 --batch-size 20 --epochs 1 --client-lr 0.05 --eval-every 10 --seed 0"

# What an algorithm needs beyond the baseline, as its docs/algorithms.md section says: DiLoCo's
# inner optimizer is AdamW (SGD is refused), AgnosticFedAvg scales each client's loss down by its
# examples (so a larger client step), Mime's and MimeLite's base optimizer is the client's.
extra() {
  case $1 in
    diloco) echo "--client-opt adam --client-lr 0.001" ;;
    agnostic_fedavg) echo "--client-lr 1" ;;
    *) echo "" ;;
  esac
}

# run NAME COMMAND...: the run's log in $OUT/NAME.log; prints "NAME accuracy% seconds"
run() {
  name=$1
  shift
  log="$OUT/$name.log"
  if [ "${REUSE:-0}" != 1 ] || ! grep -q '^done:\|^final accuracy' "$log" 2>/dev/null; then
    echo "== $name ($(date -u +%H:%M:%S)): $*" >&2
    "$@" >"$log" 2>&1 || { echo "algorithms.sh: $name failed:" >&2; tail -5 "$log" >&2; return 1; }
  fi
  acc=$(sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p; s/^final accuracy \([0-9.]*\)$/\1/p' "$log" | tail -1)
  secs=$(sed -n 's/^done: [0-9]* rounds in \([0-9.]*\) s.*/\1/p' "$log" | tail -1)
  printf '| %s | %s | %s |\n' "$name" "$acc" "$secs"
}

echo "algorithms benchmark ($(date -u +%Y-%m-%d), $rounds rounds, $(nproc) cores, $THREADS threads)"
echo "| run | test accuracy % | seconds |"
echo "| --- | --- | --- |"
for alg in $ALGORITHMS; do
  # shellcheck disable=SC2086
  run "femnist-$alg" "$FEDC" train $FEMNIST --algorithm "$alg" $(extra "$alg") --threads "$THREADS" \
    --out "$OUT/femnist-$alg" || true
done
if [ "${TORCH:-1}" = 1 ] && "$PYTHON" -c 'import torch' 2>/dev/null; then
  for alg in fedavg scaffold; do
    run "femnist-$alg-torch" "$PYTHON" bench/accuracy/fedavg_torch.py --data "$DATA/train" --test-data "$DATA/test" \
      --algorithm $alg --rounds "$rounds" --clients-per-round 10 --batch-size 20 --epochs 1 --client-lr 0.1 \
      --eval-every 10 --seed 0 --threads "$THREADS" --out "$OUT/femnist-$alg-torch" || true
  done
fi
for alg in ${DRIFT:+fedavg} $DRIFT; do
  "$FEDC" train --algorithms | grep -q "^$alg " || continue
  # shellcheck disable=SC2086
  run "fashion-dir0.1-$alg" "$FEDC" train $FASHION_ARGS --algorithm "$alg" $(extra "$alg") --threads "$THREADS" \
    --out "$OUT/fashion-$alg" || true
done
