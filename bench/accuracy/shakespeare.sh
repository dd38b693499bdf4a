#!/bin/sh
# The Shakespeare accuracy run (issue 6): FedJAX's Shakespeare LSTM (shakespeare_lstm, 820,522
# parameters) trained by FedAvg, batch 4 as Reddi et al. (2021), client SGD lr 1, server SGD lr 1,
# next-character accuracy on the whole held-out split. Two splits of ../shared/data/shakespeare-leaf:
#
#   SPLIT=roles (default): TFF's construction, one client per speaking role from the 572 per-role
#     text files (raw_data/by_play_and_character, 2.2 MB of text), each role's last 10% of lines
#     held out (--holdout 0.1, LEAF's sequential split); clients train 1 epoch a round.
#   SPLIT=leaf: the LEAF subset (10 roles, 41,990 train and 4,671 test windows of 80 characters,
#     each one next-character sequence); clients take STEPS local steps a round.
#
#   bench/accuracy/shakespeare.sh [ROUNDS [CLIENTS [STEPS]]]
#
# ROUNDS (default 300 roles / 12 leaf) rounds of CLIENTS clients (default 10) each; STEPS (leaf
# only, default 100) local steps. Evaluation every EVAL_EVERY rounds (default 25 roles / 4 leaf)
# and after the last; a checkpoint every EVAL_EVERY rounds, so RESUME=1 with more ROUNDS
# continues a run. Environment: FEDC (./build/fedc), DATA (../shared/data/shakespeare-leaf), OUT
# (out/accuracy/shakespeare-SPLIT), THREADS (2), CLIENT_LR (1), SERVER_LR (1), SEED (0), RESUME.
# Record the figure, the command and the time in docs/accuracy.md.
set -eu
cd "$(dirname "$0")/../.."
case ${1:-} in -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
split=${SPLIT:-roles}
FEDC=${FEDC:-./build/fedc}
DATA=${DATA:-../shared/data/shakespeare-leaf}
OUT=${OUT:-out/accuracy/shakespeare-$split}
clients=${2:-10}
case $split in
  roles) rounds=${1:-300} every=${EVAL_EVERY:-25}
         data="--data $DATA/raw_data/by_play_and_character --holdout 0.1 --epochs 1 --eval-batch-size 16" ;;
  leaf)  rounds=${1:-12} every=${EVAL_EVERY:-4}
         data="--data $DATA/train --test-data $DATA/test --steps ${3:-100}" ;;
  *) echo "shakespeare.sh: SPLIT is roles or leaf, not $split" >&2; exit 2 ;;
esac
mkdir -p "$OUT"
resume=
[ "${RESUME:-0}" = 1 ] && resume=--resume
set -x
# shellcheck disable=SC2086 # $data is a list of options
"$FEDC" train $data --task shakespeare --model shakespeare_lstm --algorithm fedavg --batch-size 4 \
  --clients-per-round "$clients" --rounds "$rounds" --client-lr "${CLIENT_LR:-1}" \
  --server-lr "${SERVER_LR:-1}" --eval-every "$every" --checkpoint-every "$every" \
  --threads "${THREADS:-2}" --seed "${SEED:-0}" --out "$OUT" $resume
