#!/bin/sh
# `mpirun -np N fedc train`: every algorithm gives the same final checkpoint, byte for
# byte, as a run without MPI, for 1, 2 and 3 ranks (more ranks than cores: the
# ranks are oversubscribed); a run resumed under MPI ends where an uninterrupted one
# does; a rank whose client has bad data makes every rank stop with the same error,
# and none hangs. Registered by CMakeLists.txt only when fedc is built with MPI.
#
#     sh tests/mpi.sh path/to/fedc [mpirun]
set -eu
fedc=$1
mpirun=${2:-mpirun}
heart=${FEDC_DATA:-../shared/data}/heart-disease-uci
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# As root (CI) mpirun refuses to start without these.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "mpi.sh: FAIL: $*" >&2; exit 1; }
run() { timeout 120 "$mpirun" --oversubscribe -np "$@"; }

if [ ! -d "$heart" ]; then
  echo "SKIP: mpi.sh: no $heart"
  exit 77 # ctest: skipped, not passed
fi
common="--data $heart --model heart --rounds 4 --clients-per-round 4 --batch-size 16 --eval-every 2
        --checkpoint-every 2 --threads 1 --quiet"

# The tensors of a checkpoint: what follows its header (the metadata differ: seconds, threads).
tensors() {
  n=$(od -An -t u8 -N 8 "$1/checkpoint.safetensors" | tr -d ' ')
  tail -c +$((9 + n)) "$1/checkpoint.safetensors"
}
same() { tensors "$1" >"$tmp/ta" && tensors "$2" >"$tmp/tb" && [ -s "$tmp/ta" ] && cmp -s "$tmp/ta" "$tmp/tb"; }

for alg in "fedavg" "fedsgd" "fedprox --prox-mu 0.1" "fedavg --server-opt adam --server-lr 0.01" "scaffold" \
  "fedavg --compress uniform:6,rotate --dp-clip 1 --dp-noise 0.5" "fedavg --aggregator multikrum:f=0,m=3,memory=1" \
  "fedavg --aggregator median"; do
  name=$(echo "$alg" | tr -c 'a-z0-9\n' '_')
  # shellcheck disable=SC2086
  "$fedc" train $common --algorithm $alg --out "$tmp/$name-alone" >/dev/null
  for ranks in 1 2 3; do
    if [ "$ranks" != 2 ] && [ "$alg" != fedavg ] && [ "$alg" != "fedavg --aggregator median" ]; then continue; fi
    # shellcheck disable=SC2086
    run "$ranks" "$fedc" train $common --algorithm $alg --out "$tmp/$name-$ranks" >"$tmp/out" 2>&1 ||
      { cat "$tmp/out"; fail "$alg on $ranks ranks"; }
    same "$tmp/$name-alone" "$tmp/$name-$ranks" || fail "$alg: $ranks ranks' checkpoint differs from one process"
    grep -q "^done: 4 rounds" "$tmp/out" || fail "$alg on $ranks ranks: no summary"
    [ "$(grep -c '^done:' "$tmp/out")" = 1 ] || fail "$alg on $ranks ranks: more than rank 0 printed"
    # the metrics agree too, but for the time columns
    cut -d, -f1-7 "$tmp/$name-alone/metrics.csv" >"$tmp/a.csv"
    cut -d, -f1-7 "$tmp/$name-$ranks/metrics.csv" >"$tmp/b.csv"
    cmp -s "$tmp/a.csv" "$tmp/b.csv" || fail "$alg: $ranks ranks' metrics differ"
  done
done
echo "mpi.sh: fedavg and the median (1, 2, 3 ranks), fedsgd, fedprox, fedadam, scaffold, compressed DP-FedAvg, Multi-Krum (2 ranks): checkpoints identical to one process"

# Resume: 2 rounds on 2 ranks, then on to 4 on 3 ranks.
# shellcheck disable=SC2086
run 2 "$fedc" train $common --rounds 2 --out "$tmp/resumed" >/dev/null || fail "first half"
# shellcheck disable=SC2086
run 3 "$fedc" train $common --resume --out "$tmp/resumed" >"$tmp/out" || fail "resume"
grep -q "^done: 2 rounds" "$tmp/out" || fail "resume ran $(grep '^done' "$tmp/out")"
same "$tmp/fedavg-alone" "$tmp/resumed" || fail "a run resumed under MPI differs from an uninterrupted one"
echo "mpi.sh: resumed under MPI: identical"

# Bad data on one rank: LEAF images of 784 pixels, but client u3 has 10 per example.
leaf() { # DIM: four LEAF clients of 3 examples, u3's of DIM pixels (the others' 784)
awk -v dim3="$1" 'BEGIN {
  printf "{\"users\": [\"u0\", \"u1\", \"u2\", \"u3\"], \"num_samples\": [3, 3, 3, 3], \"user_data\": {";
  for (u = 0; u < 4; u++) {
    dim = u == 3 ? dim3 : 784;
    printf "%s\"u%d\": {\"x\": [", u ? ", " : "", u;
    for (e = 0; e < 3; e++) {
      printf "%s[", e ? ", " : "";
      for (i = 0; i < dim; i++) printf "%s%.2f", i ? ", " : "", ((u * 7 + e * 3 + i) % 10) / 10;
      printf "]";
    }
    printf "], \"y\": [%d, %d, %d]}", u, u + 1, u + 2;
  }
  printf "}}\n";
}'
}
leaf 10 >"$tmp/bad.json"
# A robust aggregator's store over ranks: the CNN's 4.8 MB updates with a budget of 1 MiB are in each
# rank's file, sent to rank 0 and filed there again: the bits of one process holding them in memory.
leaf 784 >"$tmp/good.json"
cnn="--data $tmp/good.json --model cnn --rounds 1 --clients-per-round 4 --batch-size 2 --checkpoint-every 1 --eval-every 0
     --threads 1 --quiet"
# shellcheck disable=SC2086
"$fedc" train $cnn --aggregator median --out "$tmp/cnn1" >/dev/null || fail "the CNN's median"
# shellcheck disable=SC2086
run 3 "$fedc" train $cnn --aggregator median:memory=1 --out "$tmp/cnn3" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the CNN's median on 3 ranks"; }
same "$tmp/cnn1" "$tmp/cnn3" || fail "the CNN's median spilled on 3 ranks differs from one process's in memory"
echo "mpi.sh: the median's updates spilled on 3 ranks: identical to one process"
bad="--data $tmp/bad.json --model logistic --rounds 2 --clients-per-round 4 --threads 1 --quiet --checkpoint-every 1"
# By default the client is dropped from its rounds, by every rank alike: the same model as one process.
# shellcheck disable=SC2086
"$fedc" train $bad --out "$tmp/drop1" 2>/dev/null || fail "a client with bad data was not dropped"
# shellcheck disable=SC2086
run 3 "$fedc" train $bad --out "$tmp/drop3" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "dropping on 3 ranks"; }
same "$tmp/drop1" "$tmp/drop3" || fail "a client dropped on 3 ranks: the model differs from one process's"
grep -q '"round": 2, .*"dropped": 2, ' "$tmp/drop3/metrics.jsonl" || fail "3 ranks did not count the 2 drops"
grep -q 'warning: round 1: client 3 ("u3") dropped' "$tmp/out" || fail "no warning names the dropped client"
# and with a robust aggregator, whose store on rank 0 takes the other ranks' clients and their holes
# shellcheck disable=SC2086
"$fedc" train $bad --aggregator median --out "$tmp/dropm1" >/dev/null 2>&1 || fail "the median with a dropped client failed"
# shellcheck disable=SC2086
run 3 "$fedc" train $bad --aggregator median --out "$tmp/dropm3" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "the median dropping on 3 ranks"; }
same "$tmp/dropm1" "$tmp/dropm3" || fail "the median with a client dropped on 3 ranks differs from one process's"
echo "mpi.sh: bad data on rank 2: the client dropped on every rank, as in one process (the mean, the median)"
bad="$bad --strict"
# shellcheck disable=SC2086
if "$fedc" train $bad --out "$tmp/bad1" 2>"$tmp/alone.err"; then fail "bad data accepted"; fi
want=$(sed 's/^fedc train: //' "$tmp/alone.err")
[ -n "$want" ] || fail "no message for bad data"
set +e
# shellcheck disable=SC2086
run 3 "$fedc" train $bad --out "$tmp/bad3" >"$tmp/out" 2>&1
status=$?
set -e
[ "$status" != 0 ] || fail "bad data accepted on 3 ranks"
[ "$status" != 124 ] || fail "a rank hung on bad data"
lines=$(grep -c "^fedc train: rank 2 of 3: " "$tmp/out" || true)
[ "$lines" = 3 ] || { cat "$tmp/out"; fail "expected the same error from all 3 ranks, got $lines"; }
grep -qF "rank 2 of 3: $want" "$tmp/out" || { cat "$tmp/out"; fail "the message differs from one process's: $want"; }
echo "mpi.sh: bad data on rank 2: all 3 ranks stop with: rank 2 of 3: $want"
