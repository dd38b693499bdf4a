#!/bin/sh
# fedc's ONNX import against PyTorch itself (docs/onnx.md), under .peers/torch
# (scripts/install-peers torch). Exits 77 (ctest's SKIP), never 0, without it.
#  1. tests/onnx/make_fixtures.py --full exports the seven models at their published
#     widths with this torch and records its logits and autograd's gradients;
#     test_onnx_torch checks fedc's against them (as it checks the reduced ones kept
#     in tests/onnx/ without torch), and the same at reduced widths at opsets 13, 14
#     and 18; there tests/onnx/make_train_fixtures.py records the ResNet block in train
#     mode (BatchNorm on the batch's statistics) too. --dynamo: the seven models through
#     torch.export (dynamo=True) as well, checked as test_onnx_torch's dynamo does.
#  2. The EMNIST CNN trains 2 rounds of FedAvg under fedc train --model onnx: on the
#     small FEMNIST, --export-onnx writes the trained model; tests/onnx/check_trained.py
#     loads its safetensors into the PyTorch module (load_state_dict) and that module's
#     logits equal fedc's of the exported ONNX file.
# Usage: peers_onnx_torch.sh FEDC TEST_ONNX_TORCH FEDC_TEST_ONNX_TRAIN LIBFEDC
set -u
fedc=$1 test=$2 files=$3 lib=$4
py=.peers/torch/bin/python
if [ ! -x "$py" ] || ! "$py" -c "import torch, numpy" 2>/dev/null; then
  echo "SKIP: $py cannot 'import torch, numpy': the peers are not installed (scripts/install-peers torch)"
  exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "transformer:" -- "$py" tests/onnx/make_fixtures.py "$out/full" --full --dynamo
# BatchNorm's training form (bn_training) is left out at full width (docs/onnx.md)
for m in mlp emnist_cnn cifar_cnn resnet_block char_lstm char_gru transformer dynamo write_params; do
  FEDC_ONNX_TORCH_DIR=$out/full "$test" "$m" >"$out/log" 2>&1 && ok ||
    { bad "$m: fedc's logits or gradients differ from torch's at full width"; cat "$out/log" >&2; }
done
# the other opsets, reduced: 13 to 16 write LayerNorm as ReduceMean, Sub, Pow, Sqrt and
# Div, 18 takes ReduceMean's axes as an input; torch writes no attention at 13
for opset in 13 14 18; do
  models="mlp emnist_cnn cifar_cnn resnet_block char_lstm char_gru transformer"
  [ "$opset" = 13 ] && models=${models% transformer}
  expect 0 "char_lstm:" -- "$py" tests/onnx/make_fixtures.py "$out/opset$opset" --opset $opset --only "$(echo $models | tr ' ' ,)"
  expect 0 "train mode" -- "$py" tests/onnx/make_train_fixtures.py "$out/opset$opset"
  for m in $models bn_training; do
    FEDC_ONNX_TORCH_DIR=$out/opset$opset "$test" "$m" >"$out/log" 2>&1 && ok ||
      { bad "opset $opset, $m: fedc's logits or gradients differ from torch's"; cat "$out/log" >&2; }
  done
done

"$files" write "$out" 7 >/dev/null || { echo "FAIL: $files could not write the data"; exit 1; }
expect 0 "exported: $out/trained.onnx" -- "$fedc" train --data "$out/femnist-leaf/train" \
  --test-data "$out/femnist-leaf/test" --model "onnx:$out/full/emnist_cnn.onnx" --rounds 2 --clients-per-round 3 \
  --seed 7 --quiet --out "$out/run" --export-onnx "$out/trained.onnx"
PYTHONPATH=python FEDC_LIBRARY=$lib "$py" tests/onnx/check_trained.py emnist_cnn "$out/trained.onnx" \
  "$out/trained.safetensors" "$out/full/emnist_cnn.safetensors" --full && ok ||
  bad "the exported parameters do not load into PyTorch's module as the model fedc trained"

echo "peers_onnx_torch: $passed passed, $failed failed"
[ "$failed" = 0 ]
