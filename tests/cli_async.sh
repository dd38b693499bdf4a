#!/bin/sh
# fedc train --algorithm fedbuff|fedasync (docs/algorithms.md, "Asynchronous") on
# synthetic data that every clone has: FedBuff with K = C and no latency is FedAvg
# bit for bit; under a heavy-tailed clock the same bits on 1 and 2 threads, the
# virtual time in the metrics, and staleness that changes the model; a run resumed
# with clients in flight (on 1 or 2 threads) is the uninterrupted run, bit for bit;
# killed and resumed, the arrival log as the uninterrupted run's; --replay of a
# run's own arrival log gives its model, changed logs refused naming line and field;
# the synchronous options are refused, naming why.
# Usage: cli_async.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 3 --clients-per-round 4 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 3 --quiet"
# meta DIR KEY: a metadata value of DIR's checkpoint
meta() { LC_ALL=C head -c 200000 "$1/checkpoint.safetensors" | tr ',' '\n' | sed -n "s/.*\"$2\": *\"\([^\"]*\)\".*/\1/p" | head -1; }

expect 0 "fedbuff" -- "$fedc" train --algorithms
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --out "$out/fedavg"
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --algorithm fedbuff --out "$out/fedbuff"
same "$out/fedavg" "$out/fedbuff" && ok || bad "FedBuff with K = C and no latency is not FedAvg's bits"
[ "$(train_losses "$out/fedavg")" = "$(train_losses "$out/fedbuff")" ] && ok || bad "FedBuff's train losses are not FedAvg's"
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
# Killed after step 5's metrics (its checkpoint: step 4's) and resumed: the arrival log
# is cut back to step 4 and goes on as the uninterrupted run's.
fb="fedbuff_--set_buffer_2"
FEDC_FAULT=metrics:5 "$fedc" train $data $every $clock --algorithm fedbuff --set buffer=2 --rounds 6 --threads 2 \
  --out "$out/killed" >/dev/null 2>&1
[ "$(grep -c '"step": 5' "$out/killed/arrivals.jsonl")" = 2 ] && ok || bad "the killed run did not log step 5"
expect 0 "done: 2 rounds" -- "$fedc" train $data $every $clock --algorithm fedbuff --set buffer=2 --rounds 6 \
  --threads 1 --out "$out/killed" --resume
same "$out/$fb-6" "$out/killed" && ok || bad "killed and resumed: another model"
cmp -s "$out/$fb-6/arrivals.jsonl" "$out/killed/arrivals.jsonl" && ok || bad "killed and resumed: another arrival log"

# Replay: a run's own arrival log gives its model, with the clock or without one
# (the log is the order), and its own log again; an edited log, another model or a refusal.
model() { tensors "$1" >"$out/m.bin"; tensors "$2" >"$out/n.bin"; cmp -s -n "$(wc -c <"$out/n.bin")" "$out/m.bin" "$out/n.bin"; }
log="$out/$fb-6/arrivals.jsonl"
for how in "$clock --threads 1" "--threads 2"; do
  expect 0 "done: 6 rounds" -- "$fedc" train $data $every $how --algorithm fedbuff --set buffer=2 --rounds 6 \
    --replay "$log" --out "$out/replay"
  model "$out/$fb-6" "$out/replay" && ok || bad "replayed ($how): another model"
  cmp -s "$log" "$out/replay/arrivals.jsonl" && ok || bad "replayed ($how): another arrival log"
done
expect 0 "done: 6 rounds" -- "$fedc" train $data $every --algorithm fedasync --set alpha=0.5 --rounds 6 \
  --replay "$out/fedasync_--set_alpha_0.5-6/arrivals.jsonl" --out "$out/replay-fa"
model "$out/fedasync_--set_alpha_0.5-6" "$out/replay-fa" && ok || bad "fedasync replayed: another model"
sed '3s/"dispatch": [0-9]*/"dispatch": 40/' "$log" >"$out/swap.jsonl" # line 3 on round 10's batches
expect 0 "done: 6 rounds" -- "$fedc" train $data $every --algorithm fedbuff --set buffer=2 --rounds 6 \
  --replay "$out/swap.jsonl" --out "$out/replay-swap"
model "$out/$fb-6" "$out/replay-swap" && bad "an edited log replayed the same model" || ok
bad_log() { # bad_log SED NEEDLE: the log edited by SED is refused, naming NEEDLE
  sed "$1" "$log" >"$out/bad.jsonl"
  expect 1 "$2" -- "$fedc" train $data $every --algorithm fedbuff --set buffer=2 --rounds 6 --replay "$out/bad.jsonl" \
    --out "$out/replay-bad"
}
bad_log '3s/"version": [0-9]*, //' 'bad.jsonl line 3: no "version"'
bad_log '1s/"version": 0/"version": 1/' 'bad.jsonl line 1: "version" is 1, not an integer from 0 to 0'
bad_log '2s/"step": 1/"step": 2/' 'bad.jsonl line 2: "step" is 2, not an integer from 1 to 1'
bad_log '4s/"time": [0-9.e+]*/"time": 0/' 'bad.jsonl line 4: "time" 0 is before the last report'
bad_log '5s/"client": [0-9]*/"client": 99/' 'bad.jsonl line 5: "client" is 99, not an integer from 0 to 7'
bad_log '5s/"client": [0-9]*/"client": x/' 'bad.jsonl line 5: "client" is not a number'
expect 1 "arrivals.jsonl: 12 reports, step 7 needs 14" -- "$fedc" train $data $every --algorithm fedbuff \
  --set buffer=2 --rounds 7 --replay "$log" --out "$out/replay-long"
expect 1 "--replay is for the asynchronous algorithms" -- "$fedc" train $data $every --rounds 2 --replay "$log" \
  --out "$out/replay-fedavg"
expect 1 "differs from the checkpoint's in what changes the result: --replay none" -- "$fedc" train $data $every \
  --algorithm fedbuff --set buffer=2 --rounds 8 --out "$out/replay" --resume
expect 1 "it does not --resume" -- "$fedc" train $data $every --algorithm fedbuff --set buffer=2 --rounds 8 \
  --replay "$log" --out "$out/$fb-6" --resume

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
