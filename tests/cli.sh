#!/bin/sh
# The fedc command line: program check/print/grad/run on files in tests/data, exit
# codes and messages for bad input and bad usage. Usage: cli.sh path/to/fedc
set -u
fedc=$1
data=tests/data
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# expect STATUS NEEDLE -- command...: exit status and a substring of stdout+stderr
expect() {
  want=$1 needle=$2
  shift 3
  "$@" >"$out/stdout" 2>"$out/stderr"
  got=$?
  if [ "$got" != "$want" ]; then bad "$* exited $got, expected $want"; cat "$out/stderr" >&2; return; fi
  if ! cat "$out/stdout" "$out/stderr" | grep -qF -- "$needle"; then bad "$*: output lacks '$needle'"; return; fi
  ok
}

expect 0 "fedc 0" -- "$fedc" --version
expect 0 "program check FILE" -- "$fedc" --help
expect 2 "usage" -- "$fedc"
expect 2 "unknown command 'frobnicate'" -- "$fedc" frobnicate
expect 0 "ok (8 operations, 4 inputs, 1 outputs)" -- "$fedc" program check $data/logistic.fedc
expect 1 "line 4, column 54: declared type f32[4,3] but matmul gives f32[4,2]" -- "$fedc" program check $data/bad_type.fedc
expect 1 "cannot open" -- "$fedc" program check $data/missing.fedc
expect 2 "unknown subcommand" -- "$fedc" program explode $data/logistic.fedc

# print is canonical: printing the printed program gives the same text.
"$fedc" program print $data/logistic.fedc >"$out/once" && "$fedc" program print - <"$out/once" >"$out/twice" \
  && cmp -s "$out/once" "$out/twice" && ok || bad "print is not a fixed point"
grep -q '^%7 = reduce_mean(%6) {axes=\[0\], keepdims=0} : f32\[\]$' "$out/once" && ok || bad "print lost the reduction"

# grad prints a program with the gradients as outputs, which itself checks.
expect 0 'output "grad_w"' -- "$fedc" program grad $data/logistic.fedc --of loss --wrt w,b
"$fedc" program grad $data/logistic.fedc --of loss --wrt w,b >"$out/grad.fedc"
expect 0 "3 outputs" -- "$fedc" program check "$out/grad.fedc"
expect 1 "no input \"nope\"" -- "$fedc" program grad $data/logistic.fedc --of loss --wrt nope
expect 1 "only f32 and f64 inputs have gradients" -- "$fedc" program grad $data/logistic.fedc --of loss --wrt labels
expect 2 "needs FILE, --of OUTPUT and --wrt" -- "$fedc" program grad $data/logistic.fedc --of loss

# run: the .npy inputs are written byte by byte here (not with fedc's writer, which
# is what is under test). npy FILE DESCR SHAPE DATA writes a version 1.0 file whose
# header is padded with spaces and '\n' to 64 bytes; DATA is printf escapes.
npy() {
  dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  hlen=$(( (10 + ${#dict} + 1 + 63) / 64 * 64 - 10 ))
  {
    printf '\223NUMPY\001\000'
    printf "\\$(printf %03o $((hlen % 256)))\\$(printf %03o $((hlen / 256)))"
    printf "%-$((hlen - 1))s\n" "$dict"
    printf "$4"
  } >"$1"
}
Z='\000\000\000\000' ONE='\000\000\200\077' M1='\000\000\200\277' HALF='\000\000\000\077'
MHALF='\000\000\000\277' TWO='\000\000\000\100' I1='\001\000\000\000'
npy "$out/x.npy" '<f4' '(4, 3)' "$ONE$Z$Z$Z$ONE$Z$Z$Z$ONE$ONE$ONE$ONE" # [[1,0,0],[0,1,0],[0,0,1],[1,1,1]]
npy "$out/labels.npy" '<i4' '(4,)' "$Z$I1$I1$Z"                         # [0,1,1,0]
npy "$out/w.npy" '<f4' '(3, 2)' "$ONE$M1$HALF$HALF$M1$TWO"              # [[1,-1],[.5,.5],[-1,2]]
npy "$out/b.npy" '<f4' '(2,)' "$HALF$MHALF"                             # [.5,-.5]
# logits = x @ w + b = [[1.5,-1.5],[1,0],[-.5,1.5],[1,1]], so the mean cross-entropy
# is (log(1+e^-3) + log(1+e) + log(1+e^-2) + log 2) / 4 = 0.54548105767...
set -- "$fedc" program run $data/logistic.fedc --input x="$out/x.npy" --input labels="$out/labels.npy" \
  --input w="$out/w.npy"
expect 0 "loss: f32[] = 0.54548" -- "$@" --input b="$out/b.npy" --out "$out/run/deep"
[ "$(wc -c <"$out/run/deep/loss.npy")" -eq 132 ] && ok || bad "run did not write a 132-byte loss.npy"
expect 0 "-> $out/run/deep/loss.npy" -- "$@" --input b="$out/b.npy" --out "$out/run/deep"
expect 0 "loss: f32[] = 0.54548" -- "$@" --input b="$out/b.npy" --out "$out/run" --reference --threads 2
(cd "$out" && "$fedc" program run "$OLDPWD/$data/logistic.fedc" --input x=x.npy --input labels=labels.npy \
  --input w=w.npy --input b=b.npy >/dev/null) && [ -f "$out/loss.npy" ] && ok || bad "run did not default to ."
expect 1 'input "b" (f32[2]) is missing: give it with --input b=PATH.npy' -- "$@"
expect 1 "input \"x\" from $out/w.npy: expected f32[4,3], got f32[3,2]" -- \
  "$fedc" program run $data/logistic.fedc --input x="$out/w.npy" --input labels="$out/labels.npy" \
  --input w="$out/w.npy" --input b="$out/b.npy"
expect 1 "input \"labels\" from $out/x.npy: expected i32[4], got f32[4,3]" -- \
  "$fedc" program run $data/logistic.fedc --input x="$out/x.npy" --input labels="$out/x.npy" \
  --input w="$out/w.npy" --input b="$out/b.npy"
expect 1 'the program has no input "nope"; its inputs are "x", "labels", "w", "b"' -- \
  "$@" --input b="$out/b.npy" --input nope="$out/b.npy"
expect 1 "cannot open $out/none.npy" -- "$@" --input b="$out/none.npy"
expect 1 "not a .npy file (bad magic" -- "$@" --input b=$data/logistic.fedc
expect 2 "unexpected argument '--frobnicate'" -- "$@" --input b="$out/b.npy" --frobnicate
expect 2 "--clients needs an integer from 1" -- "$@" --input b="$out/b.npy" --clients many
expect 2 'input "w" is given twice' -- "$@" --input w="$out/w.npy"
expect 2 "--input needs NAME=PATH.npy, not 'b'" -- "$@" --input b
expect 2 "--out needs a value" -- "$@" --input b="$out/b.npy" --out

# A federated program: a @clients input is [clients, ...] in its file, the cohort
# size comes from it unless --clients says otherwise, and outputs follow suit.
cat >"$out/fed.fedc" <<'END'
fedc program
%0 = input "y" : f32[2]@clients
%1 = mean(%0) : f32[2]@server
%2 = input "s" : f32[]@server
%3 = broadcast(%2) : f32[]@clients
output "m" = %1
output "each" = %3
END
npy "$out/y.npy" '<f4' '(3, 2)' "$ONE$TWO$Z$ONE$HALF$MHALF" # 3 clients: [1,2],[0,1],[.5,-.5]
npy "$out/s.npy" '<f4' '()' "$HALF"
expect 0 "each: f32[]@clients = [0.5, 0.5, 0.5] -> $out/fed/each.npy" -- \
  "$fedc" program run "$out/fed.fedc" --input y="$out/y.npy" --input s="$out/s.npy" --out "$out/fed"
[ "$(wc -c <"$out/fed/m.npy")" -eq 136 ] && ok || bad "run did not write m.npy as f32[2]"
expect 1 'input "y" from '"$out/y.npy"': expected f32[4,2] (4 clients of f32[2]@clients), got f32[3,2]' -- \
  "$fedc" program run "$out/fed.fedc" --input y="$out/y.npy" --input s="$out/s.npy" --clients 4

# check lists a federated program's segments; jvp prints the forward-mode program.
expect 0 "segments: aggregate %1, broadcast %3" -- "$fedc" program check "$out/fed.fedc"
expect 0 'output "tangent_loss"' -- "$fedc" program jvp $data/logistic.fedc --wrt w,b
"$fedc" program jvp $data/logistic.fedc --wrt w >"$out/jvp.fedc"
expect 0 "ok (" -- "$fedc" program check "$out/jvp.fedc"
expect 2 "needs FILE, --wrt" -- "$fedc" program jvp $data/logistic.fedc

# data info: a LEAF file written here (exact figures), the real datasets in
# ../shared/data when they are there, and files that are not datasets.
cat >"$out/tiny.json" <<'END'
{"users": ["a", "b", "c"], "num_samples": [1, 2, 4],
 "user_data": {"a": {"x": [[0, 1]], "y": [0]}, "b": {"x": [[1, 1], [2, 2]], "y": [1, 0]},
               "c": {"x": [[1, 1], [2, 2], [3, 3], [4, 4]], "y": [1, 0, 1, 1]}}}
END
expect 0 "format:   leaf (detected)" -- "$fedc" data info "$out/tiny.json"
expect 0 "examples per client: min 1, median 2, mean 2.3, max 4" -- "$fedc" data info "$out/tiny.json"
expect 0 "histogram of examples per client (4 bins)" -- "$fedc" data info "$out/tiny.json"
expect 0 "format:   leaf (given)" -- "$fedc" data info "$out/tiny.json" --format leaf
"$fedc" data info "$out/tiny.json" >"$out/info"
grep -q '^  x  *array  *f32  *\[2\]$' "$out/info" && grep -q '^  y  *array  *i32  *\[\]$' "$out/info" && ok \
  || bad "data info lacks the features of the first client"
grep -q '^ *3 - 3 *| *| 0$' "$out/info" && grep -q '^ *4 - 4 *|#\{40\}| 1$' "$out/info" && ok \
  || bad "data info's histogram is wrong"
shared=../shared/data
if [ -d $shared/femnist-leaf/train ] && [ -d $shared/heart-disease-uci ]; then
  expect 0 "clients:  56" -- "$fedc" data info $shared/femnist-leaf/train
  expect 0 "examples: 7935" -- "$fedc" data info $shared/femnist-leaf/train
  expect 0 "histogram of examples per client (10 bins)" -- "$fedc" data info $shared/femnist-leaf/train
  [ "$(grep -c '|.*| [0-9]*$' "$out/stdout")" = 10 ] && ok || bad "FEMNIST's histogram has not 10 bars"
  expect 0 "clients:  4" -- "$fedc" data info $shared/heart-disease-uci --format csv
  expect 0 "examples: 920" -- "$fedc" data info $shared/heart-disease-uci --format csv
  expect 0 "  x              array    f32   [13]" -- "$fedc" data info $shared/heart-disease-uci --format csv
else
  echo "skipped the ../shared/data cases: $shared is absent"
fi
printf 'this is not gzip' >"$out/bad.json.gz"
expect 1 "$out/bad.json.gz" -- "$fedc" data info "$out/bad.json.gz"
printf '\037\213\010\000\000\000\000\000\000\003' >"$out/cut.json.gz" # a gzip header, then nothing
expect 1 "$out/cut.json.gz" -- "$fedc" data info "$out/cut.json.gz"
printf '{"users": ["a"], "num_samples": [1], "user_data": {"a": {"x": [[1, 2]], "y": [0' >"$out/cut.json"
expect 1 "$out/cut.json" -- "$fedc" data info "$out/cut.json"
expect 1 "$out/none.json: no such file or directory" -- "$fedc" data info "$out/none.json"
expect 2 'unknown data format "bogus"' -- "$fedc" data info "$out/tiny.json" --format bogus
expect 2 "fedc data info: needs PATH" -- "$fedc" data info
expect 2 "unknown or missing subcommand 'show'" -- "$fedc" data show "$out/tiny.json"
expect 2 "unexpected argument '--frobnicate'" -- "$fedc" data info "$out/tiny.json" --frobnicate

# fedc train and fedc eval on the heart-disease silos (skipped without ../shared/data)
if [ -d ../shared/data/heart-disease-uci ]; then
  expect 0 "checkpoint: $out/run/checkpoint.safetensors" -- "$fedc" train --data ../shared/data/heart-disease-uci \
    --model heart --rounds 4 --clients-per-round 4 --batch-size 16 --eval-every 2 --checkpoint-every 2 \
    --threads 1 --quiet --out "$out/run"
  grep -q '"round": 4' "$out/run/metrics.jsonl" && ok || bad "train wrote no metrics for round 4"
  [ -s "$out/run/curves.svg" ] && ok || bad "train wrote no curves"
  # the checkpoint is a safetensors file any reader of the format understands
  if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    /usr/bin/python3 - "$out/run/checkpoint.safetensors" <<'PY' && ok || bad "checkpoint is not valid safetensors"
import json, struct, sys, numpy as np
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
w = header["dense1/w"]
assert w["dtype"] == "F32" and w["shape"] == [13, 2], w
a, b = w["data_offsets"]
x = np.frombuffer(data[8 + n + a:8 + n + b], dtype="<f4").reshape(13, 2)
assert np.isfinite(x).all() and abs(x).sum() > 0
assert header["__metadata__"]["next_round"] == "4"
PY
  fi
  # a run killed while writing a checkpoint leaves a stale temporary: resuming ignores it
  printf 'garbage' >"$out/run/checkpoint.safetensors.tmp"
  expect 0 "done: 2 rounds" -- "$fedc" train --data ../shared/data/heart-disease-uci \
    --model heart --rounds 6 --clients-per-round 4 --batch-size 16 --eval-every 2 --checkpoint-every 2 \
    --threads 1 --quiet --out "$out/run" --resume
  expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/run/checkpoint.safetensors" \
    --data ../shared/data/heart-disease-uci --model heart
  printf 'rounds = 2\nclients-per-round = 4\nmodel = heart\nquiet = true\n' >"$out/run.ini"
  expect 0 "done: 2 rounds" -- "$fedc" train --data ../shared/data/heart-disease-uci --config "$out/run.ini" \
    --out "$out/run2"
  expect 2 "9 clients per round, but the data has 4 clients" -- "$fedc" train \
    --data ../shared/data/heart-disease-uci --model heart --clients-per-round 9 --quiet --out "$out/run3"
fi
if [ -d ../shared/data/heart-disease-uci ]; then
  expect 2 "model \"cnn\" does not fit the heart task" -- "$fedc" train --data ../shared/data/heart-disease-uci \
    --quiet --out "$out/run4"
fi
expect 2 "unknown option '--frobnicate'" -- "$fedc" train --data x --frobnicate 1
expect 2 "--rounds needs an integer >= 1" -- "$fedc" train --data x --rounds zero
expect 2 "unknown algorithm \"fedfoo\" (known: fedsgd, fedavg, fedprox" -- "$fedc" train --data x --algorithm fedfoo
expect 0 "fedprox    FedProx" -- "$fedc" train --algorithms
expect 2 "no such file" -- "$fedc" train --data "$out/missing" --quiet
expect 2 "--checkpoint FILE and --data PATH are required" -- "$fedc" eval --data x
# Language models from the command line: Stack Overflow on synthetic Zipf word ranks
# and on a TFF file that h5py writes (tests/data_tff_make.py) with a vocabulary
# file; a transformer on Shakespeare snippets cut to its context of 16.
text="--rounds 2 --clients-per-round 2 --batch-size 2 --steps 2 --eval-every 1 --threads 2 --quiet"
expect 0 "done: 2 rounds" -- "$fedc" train --data synthetic:zipf:3:8:12 --test-data synthetic:zipf:2:4 \
  --model stackoverflow_lstm --vocab-size 50 $text --out "$out/so"
grep -q '"round": 2, "train_loss": [0-9.]*, "test_loss": [0-9.]*, "test_accuracy": 0\.[0-9]*[1-9]' \
  "$out/so/metrics.jsonl" && ok || bad "synthetic stackoverflow: no test accuracy for round 2"
expect 2 "bad synthetic data" -- "$fedc" train --data synthetic:zipf:3 --quiet
expect 2 "use --task stackoverflow" -- "$fedc" train --data synthetic:zipf:3:8 --task emnist --quiet
expect 2 "model \"cnn\" does not fit the stackoverflow task" -- "$fedc" train --data synthetic:zipf:3:8 --quiet
if /usr/bin/python3 -c 'import h5py' 2>/dev/null && /usr/bin/python3 tests/data_tff_make.py "$out"; then
  printf 'caf\303\251 3\ntok0 2\n0 1\n' >"$out/vocab.txt"
  expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/stackoverflow.h5" --test-data "$out/stackoverflow.h5" \
    --task stackoverflow --vocab "$out/vocab.txt" --model stackoverflow_lstm $text --out "$out/so-tff"
  grep -q '"round": 2' "$out/so-tff/metrics.jsonl" && ok || bad "TFF stackoverflow: no metrics for round 2"
  expect 2 "needs --vocab FILE" -- "$fedc" train --data "$out/stackoverflow.h5" --task stackoverflow --quiet
  expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/shakespeare.h5" --test-data "$out/shakespeare.h5" \
    --task shakespeare --model transformer:tiny $text --out "$out/sh-tf"
  grep -q '"round": 2, "train_loss": [0-9.]*, "test_loss": [0-9.]*, "test_accuracy"' "$out/sh-tf/metrics.jsonl" \
    && ok || bad "transformer on Shakespeare: no metrics for round 2"
fi

# Shakespeare from per-role text files with each role's last lines held out (--holdout).
mkdir -p "$out/roles"
for role in KING QUEEN FOOL; do
  for i in 1 2 3 4 5 6 7 8 9 10; do echo "$role speaks line $i, and it is a fine line to speak."; done \
    >"$out/roles/PLAY_$role.txt"
done
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/roles" --task shakespeare --holdout 0.2 \
  --model transformer:tiny $text --out "$out/sh-holdout"
grep -q '"round": 2, "train_loss": [0-9.]*, "test_loss": [0-9.]*, "test_accuracy"' "$out/sh-holdout/metrics.jsonl" \
  && ok || bad "--holdout: no held-out metrics for round 2"
expect 2 "--holdout and --test-data" -- "$fedc" train --data "$out/roles" --task shakespeare --holdout 0.2 \
  --test-data "$out/roles" --quiet
expect 2 "held-out fraction 1 is not in (0, 1)" -- "$fedc" train --data "$out/roles" --task shakespeare \
  --holdout 1 --quiet

printf 'rounds = zero\n' >"$out/bad.ini"
expect 2 "line 1: bad option or value" -- "$fedc" train --data x --config "$out/bad.ini"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
