#!/bin/sh
# The Shakespeare accuracy run (issue 6): FedJAX's Shakespeare LSTM (shakespeare_lstm) trained
# by FedAvg on the LEAF Shakespeare split (../shared/data/shakespeare-leaf: 10 speaking roles,
# 41,990 train and 4,671 test windows of 80 characters, each one next-character sequence),
# batch 4 as Reddi et al. (2021), client SGD lr 1, server SGD lr 1; next-character accuracy on
# the whole held-out test split. Record the figure, the command and the time in
# docs/benchmarks.md.
#
#   bench/accuracy/shakespeare.sh [ROUNDS [STEPS [CLIENTS]]]
#
# ROUNDS (default 12) rounds of CLIENTS clients (default 10: all roles) that each take STEPS
# local steps (default 100, i.e. 400 windows) a round; evaluation every EVAL_EVERY rounds
# (default 4) and after the last; a checkpoint every 4 rounds, so that RESUME=1 with more ROUNDS
# continues the run. Environment: FEDC (./build/fedc), DATA (../shared/data/shakespeare-leaf),
# OUT (out/accuracy/shakespeare), THREADS (2), CLIENT_LR (1), SERVER_LR (1), SEED (0), RESUME.
set -eu
cd "$(dirname "$0")/../.."
case ${1:-} in -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
rounds=${1:-12} steps=${2:-100} clients=${3:-10}
FEDC=${FEDC:-./build/fedc}
DATA=${DATA:-../shared/data/shakespeare-leaf}
OUT=${OUT:-out/accuracy/shakespeare}
mkdir -p "$OUT"
resume=
[ "${RESUME:-0}" = 1 ] && resume=--resume
set -x
"$FEDC" train --data "$DATA/train" --test-data "$DATA/test" --task shakespeare --model shakespeare_lstm \
  --algorithm fedavg --batch-size 4 --clients-per-round "$clients" --steps "$steps" --rounds "$rounds" \
  --client-lr "${CLIENT_LR:-1}" --server-lr "${SERVER_LR:-1}" --eval-every "${EVAL_EVERY:-4}" \
  --checkpoint-every 4 --threads "${THREADS:-2}" --seed "${SEED:-0}" --out "$OUT" $resume
