#!/bin/sh
# fedc train --algorithm fedbuff|fedasync (docs/algorithms.md, "Asynchronous") on
# synthetic data that every clone has: FedBuff with K = C and no latency is FedAvg
# bit for bit; under a heavy-tailed clock the same bits on 1 and 2 threads, the
# virtual time in the metrics, and staleness that changes the model; a run resumed
# with clients in flight (on 1 or 2 threads) is the uninterrupted run, bit for bit;
# the synchronous options are refused, naming why.
# Usage: cli_async.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 3 --clients-per-round 4 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 3 --quiet"
losses() { tail -n +2 "$1/metrics.csv" | cut -d, -f1-2; }
# meta DIR KEY: a metadata value of DIR's checkpoint
meta() { LC_ALL=C head -c 200000 "$1/checkpoint.safetensors" | tr ',' '\n' | sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" | head -1; }

expect 0 "fedbuff" -- "$fedc" train --algorithms
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --out "$out/fedavg"
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --algorithm fedbuff --out "$out/fedbuff"
same "$out/fedavg" "$out/fedbuff" && ok || bad "FedBuff with K = C and no latency is not FedAvg's bits"
[ "$(losses "$out/fedavg")" = "$(losses "$out/fedbuff")" ] && ok || bad "FedBuff's train losses are not FedAvg's"
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --algorithm fedbuff --set buffer=4 \
  --clock speed=0 --out "$out/fedbuff-k4"
same "$out/fedavg" "$out/fedbuff-k4" && ok || bad "--set buffer=4 (= C) with a clock of no time is not FedAvg"

clock="--clock speed=lognormal:0:1,bandwidth=lognormal:11:1"
for alg in "fedbuff --set buffer=2" "fedbuff --set buffer=3 --set staleness=2" "fedasync --set alpha=0.5"; do
  dir=$(echo "$alg" | tr ' =' '__')
  expect 0 "done: 3 rounds" -- "$fedc" train $data $run $clock --algorithm $alg --threads 1 --out "$out/$dir-1"
  expect 0 "done: 3 rounds" -- "$fedc" train $data $run $clock --algorithm $alg --threads 2 --out "$out/$dir-2"
  same "$out/$dir-1" "$out/$dir-2" && ok || bad "$alg: 1 and 2 threads differ"
  same "$out/$dir-1" "$out/fedavg" && bad "$alg: the same model as FedAvg's" || ok
  times=$(tail -n +2 "$out/$dir-1/metrics.csv" | cut -d, -f9 | tr '\n' ' ')
  echo "$times" | awk '{ exit !($1 > 0 && $2 >= $1 && $3 >= $2) }' && ok || bad "$alg: virtual times '$times'"
done
# Staleness in the buffer: normalized by the weights' sum or by K, other models.
expect 0 "done: 3 rounds" -- "$fedc" train $data $run $clock --algorithm fedbuff --set buffer=2 --set normalize=1 \
  --threads 1 --out "$out/by-k"
same "$out/by-k" "$out/fedbuff_--set_buffer_2-1" && bad "normalize=1 changed nothing under staleness" || ok

# Resumed: 6 steps, or 3 and a resume to 6, with clients in flight on older
# versions at the checkpoint; the same model, in-flight state and times.
steps_of() { tail -n +2 "$1/metrics.csv" | cut -d, -f1-2,8-9; }
every="--clients-per-round 4 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 2 --quiet"
for alg in "fedbuff --set buffer=2" "fedasync --set alpha=0.5"; do
  dir=$(echo "$alg" | tr ' =' '__')
  expect 0 "done: 6 rounds" -- "$fedc" train $data $every $clock --algorithm $alg --rounds 6 --threads 1 --out "$out/$dir-6"
  for th in 1 2; do
    expect 0 "done: 3 rounds" -- "$fedc" train $data $every $clock --algorithm $alg --rounds 3 --threads 1 \
      --out "$out/$dir-r$th"
    [ "$(meta "$out/$dir-r$th" async.in_flight)" -gt 0 ] && ok || bad "$alg: no client in flight at the checkpoint"
    expect 0 "done: 3 rounds" -- "$fedc" train $data $every $clock --algorithm $alg --rounds 6 --threads $th \
      --out "$out/$dir-r$th" --resume
    same "$out/$dir-6" "$out/$dir-r$th" && ok || bad "$alg: resumed on $th threads, another model"
    [ "$(steps_of "$out/$dir-6")" = "$(steps_of "$out/$dir-r$th")" ] && ok || bad "$alg: resumed on $th threads, other losses or times"
  done
done
# A checkpoint that lost its clients in flight is refused, naming what.
LC_ALL=C sed 's/"async.dispatched"/"async.dispatchex"/' "$out/fedbuff_--set_buffer_2-r1/checkpoint.safetensors" \
  >"$out/cut.safetensors" && mv "$out/cut.safetensors" "$out/fedbuff_--set_buffer_2-r1/checkpoint.safetensors"
expect 1 "has no \"async.dispatched\"" -- "$fedc" train $data $every $clock --algorithm fedbuff --set buffer=2 \
  --rounds 8 --threads 1 --out "$out/fedbuff_--set_buffer_2-r1" --resume
expect 1 "fedasync is asynchronous: --sampling poisson, --round-deadline" -- "$fedc" train $data $run \
  --algorithm fedasync --clock speed=1 --round-deadline 5 --out "$out/e1"
expect 2 "staleness must be in [0, 2]" -- "$fedc" train $data $run --algorithm fedbuff --set staleness=3
expect 2 "fedasync has no hyperparameter \"buffer\"" -- "$fedc" train $data $run --algorithm fedasync --set buffer=2

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
