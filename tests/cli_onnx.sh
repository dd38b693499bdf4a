#!/bin/sh
# fedc program import (docs/onnx.md) on the ONNX models test_onnx_import writes
# (an MLP and a CNN, built through protobuf-c): the imported programs check, run
# under fedc program run to the same bits as the library's import does (whose
# values test_onnx_import checks against plain loops), --params writes the
# initializers by name and makes them inputs, and an unsupported op, a missing
# file and a bad command line are refused with the status and a message.
# Usage: cli_onnx.sh path/to/fedc path/to/test_onnx_import
set -u
fedc=$1
writer=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

FEDC_ONNX_WRITE_DIR=$out "$writer" || { echo "FAIL: $writer could not write the models"; exit 1; }

expect 0 "input x f32[3,4]" -- "$fedc" program import "$out/mlp.onnx" --out "$out/mlp.fedc" --batch 3
expect 0 "ok" -- "$fedc" program check "$out/mlp.fedc"
expect 0 "probs: f32[3,3]" -- "$fedc" program run "$out/mlp.fedc" --input x="$out/mlp_x.npy" --out "$out/mlp_out"
cmp -s "$out/mlp_out/probs.npy" "$out/mlp_probs.npy" && ok || bad "mlp: fedc program run's probs differ from the library's"
expect 0 "logits: f32[2,5]" -- sh -c "'$fedc' program import '$out/cnn.onnx' --out '$out/cnn_frozen.fedc' &&
  '$fedc' program run '$out/cnn_frozen.fedc' --input x='$out/cnn_x.npy' --out '$out/cnn_out'"
cmp -s "$out/cnn_out/logits.npy" "$out/cnn_logits.npy" && ok || bad "cnn: fedc program run's logits differ from the library's"

# --params: the initializers in a safetensors file, the program's inputs params/<name>
expect 0 "9 parameters (156 values)" -- "$fedc" program import "$out/cnn.onnx" --out "$out/cnn.fedc" --params "$out/cnn.safetensors"
grep -q 'input "params/conv1.weight" : f32\[4,2,3,3\]' "$out/cnn.fedc" && ok || bad "cnn.fedc lacks the input params/conv1.weight"
grep -aq '"bn.running_var":{"dtype":"F32","shape":\[3\]' "$out/cnn.safetensors" && ok || bad "cnn.safetensors lacks bn.running_var"

expect 1 "node 'odd_one' (Hardmax, opset 17): fedc does not import the op Hardmax" -- \
  "$fedc" program import "$out/hardmax.onnx" --out "$out/h.fedc"
[ ! -e "$out/h.fedc" ] && ok || bad "a refused import left a program behind"
expect 1 "cannot open" -- "$fedc" program import "$out/absent.onnx" --out "$out/a.fedc"
printf 'not an onnx file' >"$out/junk.onnx"
expect 1 "not an ONNX model" -- "$fedc" program import "$out/junk.onnx" --out "$out/j.fedc"
expect 2 "needs --out FILE" -- "$fedc" program import "$out/mlp.onnx"
expect 2 "--batch needs" -- "$fedc" program import "$out/mlp.onnx" --out "$out/b.fedc" --batch 0

echo "cli_onnx: $passed passed, $failed failed"
[ "$failed" = 0 ]
