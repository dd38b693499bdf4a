#!/bin/sh
# fedc train --model onnx:FILE (docs/onnx.md) against the built-in models: ONNX
# files whose initializers are "dense"'s and "logistic"'s initial parameters
# (fedc_test_onnx_train writes them, and the small FEMNIST) train to the built-in
# models' bits, FedAvg and SCAFFOLD, 2 rounds: the same ops in the same order,
# the task's NHWC images fed to the NCHW input (one channel: the same floats), so
# the same kernels and sums. The checkpoint names the parameters by their ONNX
# (PyTorch state_dict) names; fedc eval reads it back. An output of 10 classes on
# the 62-class task, a sequence task and a missing file are refused.
# Usage: cli_onnx_train.sh path/to/fedc path/to/fedc_test_onnx_train
set -u
fedc=$1
files=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

"$files" write "$out" 7 || { echo "FAIL: $files could not write the files"; exit 1; }
train() { # OUT MODEL [options]: 2 rounds on the small FEMNIST, seed 7
  run=$1 model=$2
  shift 2
  "$fedc" train --data "$out/femnist-leaf/train" --test-data "$out/femnist-leaf/test" --model "$model" \
    --rounds 2 --clients-per-round 3 --seed 7 --checkpoint-every 1 --quiet --out "$out/$run" "$@"
}

for alg in fedavg scaffold; do
  expect 0 "done: 2 rounds" -- train dense_$alg dense --algorithm $alg
  expect 0 "done: 2 rounds" -- train onnx_$alg onnx:$out/dense.onnx --algorithm $alg
  same "$out/dense_$alg" "$out/onnx_$alg" && ok || bad "$alg: the ONNX MLP's parameters differ from dense's"
  grep -aq '"fc3.weight":{"dtype":"F32","shape":\[200,62\]' "$out/onnx_$alg/checkpoint.safetensors" && ok ||
    bad "$alg: the checkpoint lacks fc3.weight (the ONNX initializer's name)"
done
# the metrics too: the losses and accuracies of the same model (not the timings)
tail -n 1 "$out/dense_fedavg/metrics.csv" | cut -d, -f2-8 >"$out/m1"
tail -n 1 "$out/onnx_fedavg/metrics.csv" | cut -d, -f2-8 >"$out/m2"
grep -q . "$out/m1" && cmp -s "$out/m1" "$out/m2" && ok || bad "the ONNX MLP's metrics differ from dense's"

# Gemm(transB=1) on nn.Linear's [62, 784] weight: the same bits as logistic's [784, 62]
expect 0 "done: 2 rounds" -- train logistic logistic
expect 0 "done: 2 rounds" -- train gemm onnx:$out/logistic_gemm.onnx
expect 0 "2 tensors agree (largest difference 0)" -- \
  "$files" compare "$out/logistic/checkpoint.safetensors" "$out/gemm/checkpoint.safetensors" 0

expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/onnx_fedavg/checkpoint.safetensors" \
  --data "$out/femnist-leaf/test" --model onnx:$out/dense.onnx
expect 1 "its output logits has 10 classes, but the task's labels have 62" -- train ten onnx:$out/ten.onnx
expect 1 "does not fit the stackoverflow task" -- "$fedc" train --data synthetic:zipf:3:8:12 --task stackoverflow \
  --model onnx:$out/dense.onnx --rounds 1 --quiet --out "$out/text"
expect 2 "cannot open" -- train absent onnx:$out/absent.onnx

echo "cli_onnx_train: $passed passed, $failed failed"
[ "$failed" = 0 ]
