#!/bin/sh
# mpi_scaling — client training over MPI ranks (docs/mpi.md; figures in
# docs/benchmarks.md).
#
#     sh bench/mpi_scaling.sh [rounds]          (default 4; FEDC=path/to/fedc)
#
# Workload 1: FedAvg client training of the EMNIST CNN on FEMNIST-LEAF
# (../shared/data/femnist-leaf/train), batch 20, 1 local epoch, client SGD lr 0.05,
# seed 0. What is measured: client examples per second, as `fedc train` reports it
# in metrics.jsonl after the last round (examples trained / seconds of the rounds:
# loading the clients' batches, training, aggregating, the server step; not the
# data set's opening, nor the evaluation after the last round).
#
# Strong scaling: 10 clients per round on 1 rank and on 2 ranks, one thread each
# (2 ranks fill 2 cores); 1 rank with 2 threads is printed beside them, as the
# same cores used by threads instead of ranks. Target: 2 ranks >= 1.8x 1 rank.
# Weak scaling: 5 clients per rank per round on 1, 2 and 4 ranks, one thread each.
# On a 2-core machine, 4 ranks oversubscribe the cores: their time shows the cost
# of sharing a core, not of MPI.
#
# Every configuration trains the same model on the same rounds' clients (the
# sample depends on the seed and the cohort's size only), and runs whose cohorts
# are the same end with the same checkpoint, which the script checks.
set -eu
cd "$(dirname "$0")/.."
fedc=${FEDC:-build/fedc}
rounds=${1:-4}
data=../shared/data/femnist-leaf/train
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
if [ ! -d "$data" ]; then echo "mpi_scaling: no $data: skipped"; exit 0; fi
if ! command -v mpirun >/dev/null; then echo "mpi_scaling: no mpirun (scripts/install-deps): skipped"; exit 0; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# measure NAME RANKS CLIENTS THREADS: prints client examples/s. Open MPI binds each of
# a few ranks to one core, which would leave a rank's second thread no core of its own.
measure() {
  bind=; [ "$4" -gt 1 ] && bind="--bind-to none"
  # shellcheck disable=SC2086
  mpirun --oversubscribe $bind -np "$2" "$fedc" train --data "$data" --model cnn --algorithm fedavg --rounds "$rounds" \
    --clients-per-round "$3" --batch-size 20 --epochs 1 --client-lr 0.05 --eval-every 0 --eval-clients 1 \
    --threads "$4" --checkpoint-every "$rounds" --quiet --out "$tmp/$1" >/dev/null
  tail -n 1 "$tmp/$1/metrics.jsonl" | sed 's/.*"examples_per_s": \([0-9.e+]*\).*/\1/'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# Whether two runs' checkpoints hold the same tensors: what follows the header (the
# metadata record each run's seconds and --threads).
tensors() { n=$(od -An -t u8 -N 8 "$tmp/$1/checkpoint.safetensors" | tr -d ' '); tail -c +$((9 + n)) "$tmp/$1/checkpoint.safetensors"; }
same_model() { tensors "$1" >"$tmp/a.bin" && tensors "$2" >"$tmp/b.bin" && [ -s "$tmp/a.bin" ] && cmp -s "$tmp/a.bin" "$tmp/b.bin"; }

echo "mpi_scaling: $rounds rounds of FedAvg, EMNIST CNN, FEMNIST-LEAF, batch 20, 1 epoch ($(nproc) cores)"
one=$(measure r1 1 10 1)
two=$(measure r2 2 10 1)
threads=$(measure t2 1 10 2)
same_model r1 r2 || { echo "mpi_scaling: 2 ranks' model differs"; exit 1; }
same_model r1 t2 || { echo "mpi_scaling: 2 threads' model differs"; exit 1; }
echo
echo "strong scaling, 10 clients per round        client examples/s   vs 1 rank"
printf "  1 rank  x 1 thread                         %10.0f        1.00\n" "$one"
printf "  2 ranks x 1 thread                         %10.0f        %s   (target >= 1.8)\n" "$two" "$(ratio "$two" "$one")"
printf "  1 rank  x 2 threads (threads, not ranks)   %10.0f        %s\n" "$threads" "$(ratio "$threads" "$one")"
echo
echo "weak scaling, 5 clients per rank per round  client examples/s   vs 1 rank   efficiency"
base=""
for ranks in 1 2 4; do
  eps=$(measure w$ranks "$ranks" $((5 * ranks)) 1)
  [ -n "$base" ] || base=$eps
  note=""
  [ "$ranks" -le "$(nproc)" ] || note="   (oversubscribed: $ranks ranks on $(nproc) cores)"
  printf "  %d rank(s), %2d clients                      %10.0f        %s        %s%s\n" "$ranks" $((5 * ranks)) "$eps" \
    "$(ratio "$eps" "$base")" "$(awk -v a="$eps" -v b="$base" -v r="$ranks" 'BEGIN { printf "%.2f", a / b / r }')" "$note"
done
same_model r1 w2 || { echo "mpi_scaling: weak 2 ranks' model differs"; exit 1; }
echo "  (models checked: 1 rank, 2 ranks and 2 threads with 10 clients end with the same checkpoint)"
