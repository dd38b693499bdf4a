#!/bin/sh
# `mpirun -np N fedc train --groups ... --algorithm hierfavg` (docs/mpi.md): the ranks
# run whole groups, and every run ends with one process's bits: the checkpoint's
# tensors and the metrics (each group's loss included; not the times), for
# group_rounds 2 on 1, 2 and 3 ranks (5 groups: not a multiple of 2 or 3),
# group_rounds 1, and groups and clients drawn per level (--groups-per-round,
# --clients-per-group), and hierfedopt's per-group optimizers. On synthetic data that every clone has. Registered by
# CMakeLists.txt only when fedc is built with MPI.
#
#     sh tests/mpi_groups.sh path/to/fedc [mpirun]
set -u
fedc=$1
mpirun=${2:-mpirun}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"
# As root (CI) mpirun refuses to start without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

common="--data synthetic:cifar10:12:6 --test-data synthetic:cifar10:1:20 --model logistic --rounds 3
        --clients-per-round 8 --batch-size 2 --steps 2 --eval-every 3 --checkpoint-every 3 --threads 1 --quiet
        --algorithm hierfavg"
# metrics DIR: its rows without the seconds and the rate
metrics() { sed 's/"examples_per_s": [^,]*, "seconds": [^,]*, //' "$1/metrics.jsonl"; }

# check NAME RANKS OPTIONS...: NAME's run on each of RANKS ranks against one process
check() {
  name=$1 ranks=$2
  shift 2
  # shellcheck disable=SC2086
  expect 0 "done: 3 rounds" -- "$fedc" train $common "$@" --out "$out/$name"
  for np in $ranks; do
    # shellcheck disable=SC2086
    expect 0 "done: 3 rounds" -- timeout 120 "$mpirun" --oversubscribe -np "$np" "$fedc" train $common "$@" \
      --out "$out/$name-$np"
    same "$out/$name" "$out/$name-$np" && ok || bad "$name: $np ranks' checkpoint differs from one process's"
    metrics "$out/$name" >"$out/a.jsonl"
    metrics "$out/$name-$np" >"$out/b.jsonl"
    grep -q '"group_loss": \[[^],]*, [^],]*, [^],]*' "$out/a.jsonl" && cmp -s "$out/a.jsonl" "$out/b.jsonl" && ok ||
      bad "$name: $np ranks' metrics differ from one process's (or have no groups' losses)"
  done
}

check e2 "1 2 3" --groups 5 --set group_rounds=2
check e1 "3" --groups 5 --set group_rounds=1
check per-level "2 3" --groups 5 --groups-per-round 3 --clients-per-group 2 --set group_rounds=2
# hierfedopt: each group's Adam state, kept by fedc train on every rank
check hierfedopt "2" --groups 5 --groups-per-round 3 --set group_rounds=2 --algorithm hierfedopt \
  --server-opt adam --server-lr 0.01
grep -q '"group_clients": \[2, 2, 2\]' "$out/per-level/metrics.jsonl" && ok || bad "per level: not 3 groups of 2"
same "$out/e2" "$out/e1" && bad "group_rounds 1 and 2 give the same model" || ok

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
