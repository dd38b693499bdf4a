#!/bin/sh
# fedc train --algorithm fedbn (docs/algorithms.md, "fedbn") on bn.onnx (a
# BatchNormalization of the image's channel, then a linear head; the files of
# fedc_test_onnx_train) and the small FEMNIST: each client's BatchNorm values
# (scale, bias, running statistics) are its own, its running statistics those
# computed by hand from its own batches alone; the server's stay the file's; each
# test client is evaluated with its own, not the server's (fedc eval's); the
# shared parameters are FedAvg's bits while every client is new (round 1), and
# a model without BatchNorm trains (and evaluates) as FedAvg; resuming and the thread
# count leave the bits of the model and of every client's state as they were.
# Usage: cli_fedbn.sh path/to/fedc path/to/fedc_test_onnx_train
set -u
fedc=$1
files=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

"$files" write "$out" 7 || { echo "FAIL: $files could not write the files"; exit 1; }
train() { # OUT MODEL [options]: seed 7, one batch of 16 per client and round
  run=$1 model=$2
  shift 2
  "$fedc" train --data "$out/femnist-leaf/train" --test-data "$out/femnist-leaf/test" --model "onnx:$out/$model" \
    --batch-size 16 --seed 7 --checkpoint-every 1 --quiet --out "$out/$run" "$@"
}
value() { "$files" value "$out/$1/checkpoint.safetensors" "$2"; }
bn_values() { echo "$(value "$1" bn.weight) $(value "$1" bn.bias) $(value "$1" bn.running_mean) $(value "$1" bn.running_var)"; }

expect 0 "fedbn" -- "$fedc" train --algorithms

# every client in both rounds: its running statistics by hand from its own batches
expect 0 "done: 2 rounds" -- train all bn.onnx --algorithm fedbn --rounds 2 --clients-per-round 55
expect 0 "55 clients' BatchNorm: running statistics by hand" -- \
  "$files" fedbn "$out/femnist-leaf/train" "$out/all/client_state.fcs" 2 7 16
[ "$(bn_values all)" = "1 0 0 1" ] && ok || bad "the server's BatchNorm moved: $(bn_values all)"
# each test client evaluated with its own BatchNorm: not the server's model, which fedc eval has
expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/all/checkpoint.safetensors" --data "$out/femnist-leaf/test" \
  --model "onnx:$out/bn.onnx"
server_loss=$(sed -n 's/.*: loss \([0-9.]*\),.*/\1/p' "$out/stdout")
own_loss=$(tail -n 1 "$out/all/metrics.csv" | cut -d, -f3)
awk -v a="$server_loss" -v b="$own_loss" 'BEGIN { exit !(a > 0 && b > 0 && (a - b > 1e-3 || b - a > 1e-3)) }' && ok ||
  bad "fedbn's test loss $own_loss is the server model's $server_loss"

# a server optimizer with state (Adam) leaves the server's BatchNorm and its slots of them alone
expect 0 "done: 2 rounds" -- train adam bn.onnx --algorithm fedbn --server-opt adam --server-lr 0.01 --rounds 2 \
  --clients-per-round 5
[ "$(bn_values adam) $(value adam server/opt/mu/bn.bias) $(value adam server/opt/nu/bn.weight)" = "1 0 0 1 0 0" ] &&
  [ "$(value adam server/opt/mu/fc.bias)" != 0 ] && ok || bad "fedbn's Adam moved the server's BatchNorm or its slots"

# round 1, every client new: the shared parameters are FedAvg's bits; round 2 not
for rounds in 1 2; do
  expect 0 "done: $rounds rounds" -- train avg$rounds bn.onnx --algorithm fedavg --rounds $rounds --clients-per-round 55
done
expect 0 "done: 1 rounds" -- train bn1 bn.onnx --algorithm fedbn --rounds 1 --clients-per-round 55
expect 0 "2 tensors agree (largest difference 0)" -- \
  "$files" compare "$out/avg1/checkpoint.safetensors" "$out/bn1/checkpoint.safetensors" 0 bn.
expect 1 "fc." -- "$files" compare "$out/avg2/checkpoint.safetensors" "$out/all/checkpoint.safetensors" 0 bn.

# no BatchNorm: FedAvg itself, without client state
expect 0 "done: 2 rounds" -- train dense_avg dense.onnx --algorithm fedavg --rounds 2 --clients-per-round 5
expect 0 "done: 2 rounds" -- train dense_bn dense.onnx --algorithm fedbn --rounds 2 --clients-per-round 5
same "$out/dense_avg" "$out/dense_bn" && ok || bad "fedbn without BatchNorm is not FedAvg's bits"
tail -n 1 "$out/dense_avg/metrics.csv" | cut -d, -f2-8 >"$out/m1"
tail -n 1 "$out/dense_bn/metrics.csv" | cut -d, -f2-8 >"$out/m2"
grep -q . "$out/m1" && cmp -s "$out/m1" "$out/m2" && ok || bad "fedbn without BatchNorm evaluates otherwise than FedAvg"
[ ! -e "$out/dense_bn/client_state.fcs" ] && ok || bad "fedbn without BatchNorm kept client state"

# 20 of 55 clients a round (new and returning ones): resumed, and on one thread, the same bits
expect 0 "done: 3 rounds" -- train p2 bn.onnx --algorithm fedbn --rounds 3 --clients-per-round 20 --threads 2
expect 0 "done: 2 rounds" -- train p1 bn.onnx --algorithm fedbn --rounds 2 --clients-per-round 20 --threads 2
expect 0 "done: 1 rounds" -- train p1 bn.onnx --algorithm fedbn --rounds 3 --clients-per-round 20 --threads 2 --resume
expect 0 "done: 3 rounds" -- train t1 bn.onnx --algorithm fedbn --rounds 3 --clients-per-round 20 --threads 1
"$files" records "$out/p2/client_state.fcs" 3 >"$out/r2" && grep -q ' -$' "$out/r2" && grep -q '0x' "$out/r2" && ok ||
  bad "the clients' state after 3 rounds of 20 is not some kept, some never trained"
for run in p1 t1; do
  same "$out/p2" "$out/$run" && ok || bad "$run: the model's bits differ"
  "$files" records "$out/$run/client_state.fcs" 3 >"$out/r"
  cmp -s "$out/r2" "$out/r" && ok || bad "$run: the clients' BatchNorm bits differ"
done

echo "cli_fedbn: $passed passed, $failed failed"
[ "$failed" = 0 ]
