#!/bin/sh
# fedc train --model onnx:FILE (docs/onnx.md) against the built-in models: ONNX
# files whose initializers are "dense"'s and "logistic"'s initial parameters
# (fedc_test_onnx_train writes them, and the small FEMNIST) train to the built-in
# models' bits, FedAvg and SCAFFOLD, 2 rounds: the same ops in the same order,
# the task's NHWC images fed to the NCHW input (one channel: the same floats), so
# the same kernels and sums. A BatchNorm trains on the batch's statistics (or frozen).
# The checkpoint names the parameters by their ONNX
# (PyTorch state_dict) names; fedc eval reads it back; --export-onnx writes them into
# a copy of the ONNX file and a safetensors file, both the checkpoint's bits. An
# output of 10 classes on the 62-class task, a sequence task and a missing file are
# refused.
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

# FedJAX's EMNIST CNN as PyTorch writes it (OIHW filters, NCHW flatten, Linear weights
# [out, in]) from "cnn"'s initial parameters ends 1 round with the built-in CNN's
# losses and accuracy (without dropout: the ONNX file's Dropout would be the identity)
expect 0 "done: 1 rounds" -- train cnn cnn --no-dropout --rounds 1
expect 0 "done: 1 rounds" -- train onnx_cnn onnx:$out/cnn.onnx --rounds 1
tail -n 1 "$out/cnn/metrics.csv" | cut -d, -f2-8 >"$out/m1"
tail -n 1 "$out/onnx_cnn/metrics.csv" | cut -d, -f2-8 >"$out/m2"
grep -q . "$out/m1" && cmp -s "$out/m1" "$out/m2" && ok || bad "the ONNX CNN's metrics differ from cnn's"

# Gemm(transB=1) on nn.Linear's [62, 784] weight: the same bits as logistic's [784, 62]
expect 0 "done: 2 rounds" -- train logistic logistic
expect 0 "done: 2 rounds" -- train gemm onnx:$out/logistic_gemm.onnx
expect 0 "2 tensors agree (largest difference 0)" -- \
  "$files" compare "$out/logistic/checkpoint.safetensors" "$out/gemm/checkpoint.safetensors" 0

expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/onnx_fedavg/checkpoint.safetensors" \
  --data "$out/femnist-leaf/test" --model onnx:$out/dense.onnx
# --export-onnx: the trained parameters in a copy of the ONNX file and, by their ONNX
# (state_dict) names, in a safetensors file, both the checkpoint's bits; from a run
# already complete (--resume), and from a fresh SCAFFOLD run that gave no
# --checkpoint-every (the last round's checkpoint is implied; its server state is not
# the model's)
expect 0 "exported: $out/dense_trained.onnx (ONNX), $out/dense_trained.safetensors" -- \
  train onnx_fedavg onnx:$out/dense.onnx --algorithm fedavg --resume --export-onnx "$out/dense_trained.onnx"
expect 0 "6 tensors agree (largest difference 0)" -- \
  "$files" compare "$out/onnx_fedavg/checkpoint.safetensors" "$out/dense_trained.safetensors" 0
grep -aq '"fc1.weight":{"dtype":"F32","shape":\[784,200\]' "$out/dense_trained.safetensors" && ok ||
  bad "dense_trained.safetensors lacks fc1.weight"
expect 0 "6 parameters" -- "$fedc" program import "$out/dense_trained.onnx" --out "$out/dt.fedc" --params "$out/dt.safetensors"
expect 0 "6 tensors agree (largest difference 0)" -- \
  "$files" compare "$out/onnx_fedavg/checkpoint.safetensors" "$out/dt.safetensors" 0
expect 0 "6 parameters" -- "$fedc" program import "$out/dense.onnx" --out "$out/d0.fedc" --params "$out/d0.safetensors"
expect 1 "fc1.weight" -- "$files" compare "$out/d0.safetensors" "$out/dt.safetensors" 0 # training moved them
expect 0 "exported: $out/gemm.onnx" -- "$fedc" train --data "$out/femnist-leaf/train" --model onnx:$out/logistic_gemm.onnx \
  --algorithm scaffold --rounds 1 --clients-per-round 3 --seed 7 --quiet --out "$out/gemm_export" --export-onnx "$out/gemm.onnx"
expect 0 "2 parameters" -- "$fedc" program import "$out/gemm.onnx" --out "$out/g.fedc" --params "$out/g.safetensors"
expect 0 "2 tensors agree (largest difference 0)" -- "$files" compare "$out/gemm.safetensors" "$out/g.safetensors" 0
expect 2 "it needs --model onnx:FILE" -- train plain dense --export-onnx "$out/x.onnx"

# BatchNormalization: trained on the batch's statistics, its running ones move from the
# file's 0 and 1 towards the pixels' and come back averaged; with --frozen-batchnorm they
# stay as they were, while the rest trains
value() { "$files" value "$out/$1/checkpoint.safetensors" "$2"; }
expect 0 "done: 2 rounds" -- train bn onnx:$out/bn.onnx
expect 0 "done: 2 rounds" -- train bn_frozen onnx:$out/bn.onnx --frozen-batchnorm
mean=$(value bn bn.running_mean) var=$(value bn bn.running_var)
awk -v m="$mean" -v v="$var" 'BEGIN { exit !(m > 0.01 && m < 1 && v > 0 && v < 0.99) }' && ok ||
  bad "the trained running statistics are mean $mean, variance $var"
[ "$(value bn_frozen bn.running_mean) $(value bn_frozen bn.running_var)" = "0 1" ] && ok ||
  bad "--frozen-batchnorm moved the running statistics"
expect 1 "bn.weight" -- "$files" compare "$out/bn/checkpoint.safetensors" "$out/bn_frozen/checkpoint.safetensors" 0
expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/bn/checkpoint.safetensors" --data "$out/femnist-leaf/test" \
  --model onnx:$out/bn.onnx

expect 1 "its output logits has 10 classes, but the task's labels have 62" -- train ten onnx:$out/ten.onnx
expect 1 "does not fit the stackoverflow task" -- "$fedc" train --data synthetic:zipf:3:8:12 --task stackoverflow \
  --model onnx:$out/dense.onnx --rounds 1 --quiet --out "$out/text"
expect 2 "cannot open" -- train absent onnx:$out/absent.onnx

echo "cli_onnx_train: $passed passed, $failed failed"
[ "$failed" = 0 ]
