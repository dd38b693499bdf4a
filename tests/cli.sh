#!/bin/sh
# The fedc command line: program check/print/grad/run on files in tests/data, train
# and eval on data written here, exit codes (0 done, 1 the work failed, 2 bad usage)
# and messages for bad input and bad usage, --help everywhere, config files.
# Usage: cli.sh path/to/fedc
set -u
fedc=$1
data=tests/data
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "fedc 0" -- "$fedc" --version
expect 0 "program check FILE" -- "$fedc" --help
expect 0 "2  bad usage" -- "$fedc" --help
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
expect 0 "loss: f32[] = 0.54548" -- "$@" --input b="$out/b.npy" --out "$out/run" --device cpu-reference
expect 0 "loss: f32[] = 0.54548" -- "$@" --input b="$out/b.npy" --out "$out/run" --device cpu --threads 2
expect 2 "--device: no device 'gpu'; the devices are cpu, cpu-reference" -- "$@" --input b="$out/b.npy" --device gpu
expect 2 "--device needs a value" -- "$@" --input b="$out/b.npy" --device
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

# split: the deployment form of a program of two exchanges (broadcast -> map ->
# mean -> server step -> broadcast -> map -> sum), every phase a program that checks.
expect 0 "two_exchanges.fedc: 2 exchanges, 9 values read by phases" -- \
  "$fedc" program split $data/two_exchanges.fedc --out "$out/split"
grep -qx '  1 server_prepare                    3 ops,    2 inputs,    2 outputs' "$out/stdout" && ok \
  || bad "split's summary lacks exchange 1's server_prepare"
grep -qx 'value "client_work/%4" f32\[2\]@clients from 0/client_work to 0/client_to_server_aggregation 1/client_work' \
  "$out/split/manifest.txt" && ok || bad "the manifest lacks the value kept on the clients"
grep -qx 'output "w" f32\[2\]@server from 1/server_prepare' "$out/split/manifest.txt" && ok \
  || bad "the manifest lacks who writes output w"
[ "$(ls "$out/split" | grep -c '\.fedc$')" -eq 10 ] && ok || bad "split did not write 10 phase files"
expect 0 "ok (5 operations, 2 inputs, 1 outputs)" -- "$fedc" program check "$out/split/0_client_work.fedc"
grep -q '@' "$out/split/0_client_work.fedc" && bad "client_work holds placed values" || ok
for f in "$out"/split/*.fedc; do
  "$fedc" program print "$f" | cmp -s - "$f" && ok || bad "$f is not in canonical form"
done
expect 1 "no @clients value" -- "$fedc" program split $data/logistic.fedc --out "$out/split2"
[ -e "$out/split2" ] && bad "a failed split made its directory" || ok
expect 2 "needs FILE" -- "$fedc" program split --out "$out/split"
expect 2 "--out needs a value" -- "$fedc" program split $data/two_exchanges.fedc --out
expect 2 "unexpected argument '--frobnicate'" -- "$fedc" program split $data/two_exchanges.fedc --frobnicate
expect 0 "fedc program split FILE [--out DIR]" -- "$fedc" program split --help

# check lists a federated program's segments; jvp prints the forward-mode program.
expect 0 "segments: aggregate %1, broadcast %3" -- "$fedc" program check "$out/fed.fedc"
expect 0 'output "tangent_loss"' -- "$fedc" program jvp $data/logistic.fedc --wrt w,b
"$fedc" program jvp $data/logistic.fedc --wrt w >"$out/jvp.fedc"
expect 0 "ok (" -- "$fedc" program check "$out/jvp.fedc"
expect 2 "needs FILE, --wrt" -- "$fedc" program jvp $data/logistic.fedc

# data info: a LEAF file written here (exact figures), the data sets of $FEDC_DATA,
# and files that are not datasets.
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
# The data sets of $FEDC_DATA (laid out as ../shared/data; ctest's fixture test_data
# makes one with the real sets, or small ones whose counts its facts.txt gives).
shared=${FEDC_DATA:-../shared/data}
fact() { sed -n "s|^$1 $2 ||p" "$shared/facts.txt" 2>/dev/null; }
if [ -d $shared/femnist-leaf/train ] && [ -d $shared/heart-disease-uci ]; then
  small=$(fact femnist-leaf/train clients)
  expect 0 "clients:  ${small:-56}" -- "$fedc" data info $shared/femnist-leaf/train
  expect 0 "examples: $(fact femnist-leaf/train examples | grep . || echo 7935)" -- "$fedc" data info $shared/femnist-leaf/train
  if [ -z "$small" ]; then
    expect 0 "histogram of examples per client (10 bins)" -- "$fedc" data info $shared/femnist-leaf/train
    [ "$(grep -c '|.*| [0-9]*$' "$out/stdout")" = 10 ] && ok || bad "FEMNIST's histogram has not 10 bars"
  fi
  expect 0 "clients:  4" -- "$fedc" data info $shared/heart-disease-uci --format csv
  expect 0 "examples: $(fact heart-disease-uci examples | grep . || echo 920)" -- "$fedc" data info $shared/heart-disease-uci --format csv
  expect 0 "  x              array    f32   [13]" -- "$fedc" data info $shared/heart-disease-uci --format csv
else
  echo "skipped the data sets' cases: $shared has not them" # by hand, without FEDC_DATA or ../shared/data
  skipped=1
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
expect 2 "unknown subcommand 'show'" -- "$fedc" data show "$out/tiny.json"
expect 2 "unexpected argument '--frobnicate'" -- "$fedc" data info "$out/tiny.json" --frobnicate

# fedc train and fedc eval on the heart-disease silos
heart=$shared/heart-disease-uci
if [ -d $heart ]; then
  expect 0 "checkpoint: $out/run/checkpoint.safetensors" -- "$fedc" train --data $heart \
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
  expect 0 "done: 2 rounds" -- "$fedc" train --data $heart \
    --model heart --rounds 6 --clients-per-round 4 --batch-size 16 --eval-every 2 --checkpoint-every 2 \
    --threads 1 --quiet --out "$out/run" --resume
  expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/run/checkpoint.safetensors" \
    --data $heart --model heart
  printf 'rounds = 2\nclients-per-round = 4\nmodel = heart\nquiet = true\n' >"$out/run.ini"
  expect 0 "done: 2 rounds" -- "$fedc" train --data $heart --config "$out/run.ini" \
    --out "$out/run2"
  expect 1 "9 clients per round, but the data has 4 clients" -- "$fedc" train \
    --data $heart --model heart --clients-per-round 9 --quiet --out "$out/run3"
fi
if [ -d $heart ]; then
  expect 1 "model \"cnn\" does not fit the heart task" -- "$fedc" train --data $heart \
    --quiet --out "$out/run4"
fi
expect 2 "unknown option '--frobnicate'" -- "$fedc" train --data x --frobnicate 1
expect 2 "--rounds needs an integer from 1 to 1000000, not 'zero'" -- "$fedc" train --data x --rounds zero
expect 2 "unknown algorithm \"fedfoo\" (known: fedsgd, fedavg, fedprox" -- "$fedc" train --data x --algorithm fedfoo
expect 0 "fedprox          FedProx" -- "$fedc" train --algorithms
expect 0 "agnostic_fedavg  AgnosticFedAvg" -- "$fedc" train --algorithms
expect 0 "--set client_delta_clip_norm=X" -- "$fedc" train --algorithm mimelite --help
expect 1 "no such file" -- "$fedc" train --data "$out/missing" --quiet
expect 2 "--checkpoint FILE and --data PATH are required" -- "$fedc" eval --data x
# Language models from the command line: Stack Overflow on synthetic Zipf word ranks
# and on a TFF file that h5py writes (tests/data_tff_make.py) with a vocabulary
# file; a transformer on Shakespeare snippets cut to its context of 16.
text="--rounds 2 --clients-per-round 2 --batch-size 2 --steps 2 --eval-every 1 --threads 2 --quiet"
expect 0 "done: 2 rounds" -- "$fedc" train --data synthetic:zipf:3:8:12 --test-data synthetic:zipf:2:4 \
  --model stackoverflow_lstm --vocab-size 50 $text --out "$out/so"
grep -q '"round": 2, "train_loss": [0-9.]*, "test_loss": [0-9.]*, "test_accuracy": 0\.[0-9]*[1-9]' \
  "$out/so/metrics.jsonl" && ok || bad "synthetic stackoverflow: no test accuracy for round 2"
# --eval-every 0: still a row every round (the training curve), the test figures
# null but at the last round, which is always evaluated
expect 0 "done: 3 rounds" -- "$fedc" train --data synthetic:zipf:3:8:12 --test-data synthetic:zipf:2:4 \
  --model stackoverflow_lstm --vocab-size 50 --rounds 3 --clients-per-round 2 --batch-size 2 --steps 2 \
  --eval-every 0 --threads 2 --quiet --out "$out/so-curve"
rows=$out/so-curve/metrics.jsonl
[ "$(grep -o '"round": [0-9]*' "$rows" | tr -d '"round: ' | tr '\n' ' ')" = '1 2 3 ' ] \
  && [ "$(grep -c '"train_loss": [0-9.]*, "test_loss": null, .*"evaluated": false, ' "$rows")" = 2 ] \
  && grep -q '^{"round": 3, "train_loss": [0-9.]*, "test_loss": [0-9.]*, .*"evaluated": true, ' "$rows" \
  && [ "$(grep -c '^[12],[0-9.]*,,,,,,0,' "$out/so-curve/metrics.csv")" = 2 ] \
  && grep -q '^3,[0-9.]*,[0-9.]*,[0-9.]*,' "$out/so-curve/metrics.csv" && ok \
  || bad "--eval-every 0: not a row per round with the test figures at the last: $(cat "$rows")"
expect 1 "bad synthetic data" -- "$fedc" train --data synthetic:zipf:3 --quiet
expect 0 "done: 2 rounds" -- "$fedc" train --data 'synthetic:zipf:4:2+lognormal(1,0.5):6' --model stackoverflow_lstm \
  --vocab-size 50 $text --out "$out/so-lognormal"
expect 1 "MIN+lognormal(MU,SIGMA)" -- "$fedc" train --data 'synthetic:zipf:4:2+lognormal(1)' --quiet
expect 1 "sigma >= 0" -- "$fedc" train --data 'synthetic:zipf:4:2+lognormal(1,-2)' --model stackoverflow_lstm --quiet
expect 1 "use --task stackoverflow" -- "$fedc" train --data synthetic:zipf:3:8 --task emnist --quiet
expect 1 "model \"cnn\" does not fit the stackoverflow task" -- "$fedc" train --data synthetic:zipf:3:8 --quiet
if /usr/bin/python3 -c 'import h5py' 2>/dev/null && /usr/bin/python3 tests/data_tff_make.py "$out"; then
  printf 'caf\303\251 3\ntok0 2\n0 1\n' >"$out/vocab.txt"
  expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/stackoverflow.h5" --test-data "$out/stackoverflow.h5" \
    --task stackoverflow --vocab "$out/vocab.txt" --model stackoverflow_lstm $text --out "$out/so-tff"
  grep -q '"round": 2' "$out/so-tff/metrics.jsonl" && ok || bad "TFF stackoverflow: no metrics for round 2"
  expect 1 "needs --vocab FILE" -- "$fedc" train --data "$out/stackoverflow.h5" --task stackoverflow --quiet
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
expect 2 "--holdout needs a number in (0, 1), not '1'" -- "$fedc" train --data "$out/roles" --task shakespeare \
  --holdout 1 --quiet

printf 'rounds = zero\n' >"$out/bad.ini"
expect 2 "$out/bad.ini:1: rounds needs an integer from 1 to 1000000, not 'zero'" -- \
  "$fedc" train --data x --config "$out/bad.ini"

# ------------------------------------------------------------------ usage --
# Every bad value of every flag of every command: a clean message that names the
# flag, the value and the valid range, and status 2. One line a case:
# STATUS|NEEDLE|ARGUMENTS (shell words after fedc; each run under a timeout, so a
# hang fails).
mkdir -p "$out/adir"
table() {
  while IFS='|' read -r want needle args; do
    [ -n "$want" ] || continue
    eval "set -- $args"
    expect "$want" "$needle" -- timeout 20 "$fedc" "$@"
  done
}
table <<END
2|--rounds needs an integer from 1 to 1000000, not '4294967297'|train --data x --rounds 4294967297
2|--rounds needs an integer from 1 to 1000000, not '0'|train --data x --rounds 0
2|--rounds needs an integer from 1 to 1000000, not '-1'|train --data x --rounds -1
2|--rounds needs an integer from 1 to 1000000, not '1.5'|train --data x --rounds 1.5
2|--rounds needs an integer from 1 to 1000000, not ' 5'|train --data x --rounds ' 5'
2|--rounds needs an integer from 1 to 1000000, not ''|train --data x --rounds ''
2|--threads needs an integer from 1 to 256, not '4294967297'|train --data x --threads 4294967297
2|--threads needs an integer from 1 to 256, not '100000'|train --data x --threads 100000
2|--threads needs an integer from 1 to 256, not '0'|train --data x --threads 0
2|--seed needs an integer from 0 to 18446744073709551615, not '18446744073709551616'|train --data x --seed 18446744073709551616
2|--seed needs an integer from 0 to 18446744073709551615, not '99999999999999999999999'|train --data x --seed 99999999999999999999999
2|--seed needs an integer from 0 to 18446744073709551615, not '-1'|train --data x --seed -1
2|--server-eps needs a number in (0, 1], not '-1'|train --data x --server-eps -1
2|--server-eps needs a number in (0, 1], not 'nan'|train --data x --server-eps nan
2|--holdout needs a number in (0, 1), not '0'|train --data x --holdout 0
2|--holdout needs a number in (0, 1), not 'inf'|train --data x --holdout inf
2|--batch-size needs an integer from 1 to 10000, not '1000000000'|train --data x --batch-size 1000000000
2|--batch-size needs an integer from 1 to 10000, not '1e9'|train --data x --batch-size 1e9
2|--clients-per-round needs an integer from 1 to 1048576, not '0'|train --data x --clients-per-round 0
2|--epochs needs an integer from 1 to 10000, not '10001'|train --data x --epochs 10001
2|--steps needs an integer from 1 to 1000000, not '0'|train --data x --steps 0
2|--vocab-size needs an integer from 1 to 1048572, not '1048573'|train --data x --vocab-size 1048573
2|--num-clients needs an integer from 1 to 1048576, not '0'|train --data x --num-clients 0
2|--eval-every needs an integer from 0 to 1000000, not '-1'|train --data x --eval-every -1
2|--eval-batch-size needs an integer from 1 to 10000, not '0'|train --data x --eval-batch-size 0
2|--eval-clients needs an integer from 0 to 1048576, not '2000000'|train --data x --eval-clients 2000000
2|--checkpoint-every needs an integer from 0 to 1000000, not 'x'|train --data x --checkpoint-every x
2|--prox-mu needs a number in [0, 1000000], not '-0.5'|train --data x --prox-mu -0.5
2|--prox-mu: fedavg has no hyperparameter "mu" (its hyperparameters: none|train --data x --prox-mu 0.5
2|--set: fedprox: mu must be in [0, 1e+06], not -1|train --data x --algorithm fedprox --set mu=-1
2|--set: fedavg has no hyperparameter "mu"|train --data x --set mu=1
2|--set: apfl has no hyperparameter "mu" (its hyperparameters: client_coefficient|train --data x --set mu=1 --algorithm apfl
2|--set: --set takes NAME=VALUE, not "mu"|train --data x --algorithm fedprox --set mu
2|--set: --set mu: "x" is not a number|train --data x --algorithm fedprox --set mu=x
2|--weighting: unknown client weighting "steps"|train --data x --weighting steps
2|--client-lr needs a number in (0, 3.402823466e+38], not '0'|train --data x --client-lr 0
2|--server-lr needs a number in (0, 3.402823466e+38], not '1e400'|train --data x --server-lr 1e400
2|--server-lr needs a number in (0, 3.402823466e+38], not '1x'|train --data x --server-lr 1x
2|--out needs a value, not ''|train --data x --out ''
2|--data needs a value, not ''|train --data ''
2|--test-data needs a value, not ''|train --data x --test-data ''
2|--vocab needs a value, not ''|train --data x --vocab ''
2|--format: unknown data format "bogus"|train --data x --format bogus
2|--task needs emnist, fashion, heart, shakespeare, stackoverflow, cifar10 or none, not 'bogus'|train --data x --task bogus
2|--partition needs iid, dirichlet:ALPHA or shards:K, not 'halves'|train --data x --partition halves
2|--partition's ALPHA in dirichlet:ALPHA needs a number in (0, 1000000], not 'x'|train --data x --partition dirichlet:x
2|--partition's K in shards:K needs an integer from 1 to 1048576, not '0'|train --data x --partition shards:0
2|--model: unknown name "bogus"|train --data x --model bogus
2|--algorithm: unknown algorithm "fedfoo"|train --data x --algorithm fedfoo
2|--client-opt: unknown optimizer "bogus"|train --data x --client-opt bogus
2|--server-opt: unknown optimizer "bogus"|train --data x --server-opt bogus
2|--checkpoint is an option of fedc eval, not of fedc train|train --data x --checkpoint c
2|--rounds needs a value|train --data x --rounds
2|unexpected argument 'stray'|train --data x stray
2|--holdout and --test-data both give the test split|train --data x --holdout 0.2 --test-data y
2|--algorithms takes no other options|train --algorithms --rounds 2
2|--config needs a value, not ''|train --data x --config ''
2|cannot open $out/none.ini: No such file or directory|train --data x --config $out/none.ini
2|$out/adir is a directory, not a file|train --data x --config $out/adir
2|/dev/zero holds a NUL byte: it is not a text file|train --data x --config /dev/zero
2|fedc eval: --checkpoint FILE and --data PATH are required (see fedc eval --help)|eval
2|--rounds is an option of fedc train, not of fedc eval|eval --checkpoint c --data x --rounds 3
2|--threads needs an integer from 1 to 256, not '100000'|eval --checkpoint c --data x --threads 100000
2|--eval-batch-size needs an integer from 1 to 10000, not '0'|eval --checkpoint c --data x --eval-batch-size 0
2|--checkpoint needs a value, not ''|eval --checkpoint '' --data x
2|--clients needs an integer from 1 to 1048576, not '0'|program run $data/logistic.fedc --clients 0
2|--threads needs an integer from 0 to 256, not '257'|program run $data/logistic.fedc --threads 257
2|--threads needs an integer from 0 to 256, not '-1'|program run $data/logistic.fedc --threads -1
2|--out needs a value, not ''|program run $data/logistic.fedc --out ''
2|--wrt needs input names separated by commas, not ''|program grad $data/logistic.fedc --of loss --wrt ''
2|--wrt needs input names separated by commas, not 'w,,b'|program grad $data/logistic.fedc --of loss --wrt w,,b
2|--wrt needs input names separated by commas, not ',w'|program jvp $data/logistic.fedc --wrt ,w
2|--wrt needs input names separated by commas, not 'w,'|program jvp $data/logistic.fedc --wrt w,
2|--wrt names input "w" twice|program grad $data/logistic.fedc --of loss --wrt w,b --wrt w
2|--of needs a value, not ''|program grad $data/logistic.fedc --of '' --wrt w
2|--wrt needs a value|program jvp $data/logistic.fedc --wrt
2|fedc program check: needs FILE|program check
2|fedc program check: unexpected argument ''|program check ''
2|fedc program check: unexpected argument 'b.fedc'|program check a.fedc b.fedc
2|fedc program print: unexpected argument '--bogus'|program print --bogus
2|fedc program: needs a subcommand|program
2|--format needs a value|data info $out/tiny.json --format
2|unexpected argument 'second'|data info $out/tiny.json second
2|fedc data: needs a subcommand|data
1|$out/adir is a directory, not a file|program check $out/adir
1|/dev/zero holds a NUL byte: it is not a text file|program check /dev/zero
END

# --help, -h wherever they stand: the command's usage on stdout, status 0, and
# nothing on stderr.
while IFS='|' read -r needle args; do
  [ -n "$needle" ] || continue
  eval "set -- $args"
  if timeout 20 "$fedc" "$@" >"$out/stdout" 2>"$out/stderr" && [ ! -s "$out/stderr" ] &&
    grep -qF -- "$needle" "$out/stdout"; then ok; else bad "fedc $args: no usage '$needle' on stdout with status 0"; fi
done <<END
usage: fedc <command>|--help
usage: fedc <command>|-h
usage: fedc train --data PATH|train --help
usage: fedc train --data PATH|train --data x --rounds 0 --help
usage: fedc eval --checkpoint FILE|eval --help
usage: fedc eval --checkpoint FILE|eval --data x -h
usage: fedc data info PATH|data --help
usage: fedc data info PATH|data info --help
usage: fedc data info PATH|data info $out/none --help
usage: fedc program SUBCOMMAND|program --help
usage: fedc program check FILE|program check --help
usage: fedc program check FILE|program check $out/none.fedc --help
usage: fedc program print FILE|program print --help
usage: fedc program grad FILE --of OUTPUT|program grad --help
usage: fedc program grad FILE --of OUTPUT|program grad $data/logistic.fedc --of loss --help
usage: fedc program jvp FILE --wrt|program jvp --help
usage: fedc program run FILE --input|program run --help
usage: fedc program run FILE --input|program run $data/logistic.fedc --input x=none.npy --help
END
"$fedc" program --help >"$out/help"
for sub in check print grad jvp run; do
  grep -q "^fedc program $sub FILE" "$out/help" && ok || bad "fedc program --help lacks $sub"
done

# --wrt takes any number of names: a program of 100 scalar inputs summed.
awk 'BEGIN { print "fedc program"; for (i = 0; i < 100; i++) printf "%%%d = input \"p%d\" : f32[]\n", i, i
  print "%100 = add(%0, %1) : f32[]"; for (i = 2; i < 100; i++) printf "%%%d = add(%%%d, %%%d) : f32[]\n", 99 + i, 98 + i, i
  print "output \"loss\" = %198" }' >"$out/p100.fedc"
names=$(awk 'BEGIN { for (i = 0; i < 100; i++) printf "%sp%d", i ? "," : "", i }')
"$fedc" program grad "$out/p100.fedc" --of loss --wrt "$names" >"$out/g100.fedc"
expect 0 "100 inputs, 101 outputs)" -- "$fedc" program check "$out/g100.fedc"
grep -q '^output "grad_p99" = ' "$out/g100.fedc" && ok || bad "grad of 100 inputs lacks grad_p99"
"$fedc" program jvp "$out/p100.fedc" --wrt "$names" >"$out/j100.fedc"
expect 0 "200 inputs" -- "$fedc" program check "$out/j100.fedc"

# ------------------------------------------------------ training, configs --
# Three CSV silos of the heart task, written here: 20 examples each.
mkdir -p "$out/silos"
for s in a b c; do
  awk -v k=${#s} 'BEGIN { for (i = 0; i < 20; i++) { l = ""; for (j = 0; j < 13; j++) l = l sprintf("%.1f,", (i * 7 + j * 3) % 11)
    print l (i % 2) } }' >"$out/silos/$s.csv"
done
heart="--data $out/silos --model heart --clients-per-round 2 --batch-size 4 --threads 1"
# a missing data file is status 1 from every command that reads data
expect 1 "$out/none: no such file or directory" -- "$fedc" data info "$out/none"
expect 1 "$out/none: no such file or directory" -- "$fedc" train --data "$out/none" --quiet
expect 1 "$out/none: no such file or directory" -- "$fedc" eval --data "$out/none" --checkpoint "$out/none.st"

# INI booleans: each spelling, read by the value it means (profile prints a table).
for word in yes no true false on off 1 0 YES Off; do
  printf 'rounds = 1\nprofile = %s\nquiet = yes\n' "$word" >"$out/bool.ini"
  "$fedc" train $heart --config "$out/bool.ini" --out "$out/bool" >"$out/stdout" 2>&1
  case $word in yes|true|on|1|YES) want=1 ;; *) want=0 ;; esac
  [ "$(grep -c 'time per op' "$out/stdout")" = $want ] && ok || bad "config profile = $word is not read as $want"
done
printf 'rounds = 1\n\nquiet = maybe\n' >"$out/bool.ini"
expect 2 "$out/bool.ini:3: quiet needs yes/no, true/false, on/off or 1/0, not 'maybe'" -- \
  "$fedc" train $heart --config "$out/bool.ini"

# resume = yes continues a 4-round run's checkpoint instead of starting over.
expect 0 "done: 4 rounds" -- "$fedc" train $heart --rounds 4 --checkpoint-every 2 --quiet --out "$out/res"
printf 'rounds = 6\nresume = yes\ncheckpoint-every = 2\n' >"$out/resume.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $heart --config "$out/resume.ini" --quiet --out "$out/res"
# (a row per round; round 4, the first run's last, was evaluated, as a fresh run's is not)
[ "$(grep -o '"round": [0-9]*' "$out/res/metrics.jsonl" | tr -d '"round: ' | tr '\n' ' ')" = '1 2 3 4 5 6 ' ] \
  && [ "$(grep -o '"evaluated": [a-z]*' "$out/res/metrics.jsonl" | sed 's/.* //' | tr '\n' ' ')" = \
       'false false false true false true ' ] && ok \
  || bad "resume = yes did not continue the metrics of rounds 1-4"
# A resume that changes the model is refused, with the same status and message,
# whether the run is complete (--rounds 6, the rounds it has done) or not (8).
for rounds in 6 8; do
  expect 1 "$out/res/checkpoint.safetensors: this run differs from the checkpoint's in what changes the result: \
--client-lr 0.5 (the checkpoint's: 0.1); resume with" -- "$fedc" train $heart --rounds $rounds --client-lr 0.5 \
    --checkpoint-every 2 --quiet --out "$out/res" --resume
done
printf 'rounds = 6\nresume = no\n' >"$out/resume.ini"
expect 0 "done: 6 rounds" -- "$fedc" train $heart --config "$out/resume.ini" --quiet --out "$out/res2"

# Hyperparameters: listed by --algorithm NAME --help, set by --set or a config file's
# "set = NAME=VALUE" lines, and recorded in the checkpoint.
expect 0 "--set mu=X  weight of the proximal term" -- "$fedc" train --algorithm fedprox --help
expect 0 "no hyperparameters of its own" -- "$fedc" train --help --algorithm fedavg
expect 2 "unknown algorithm \"nope\"" -- "$fedc" train --algorithm nope --help
printf 'algorithm = fedprox\nset = mu=0.5\nweighting = uniform\nrounds = 2\ncheckpoint-every = 2\nquiet = yes\n' >"$out/hp.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $heart --config "$out/hp.ini" --out "$out/hp"
grep -q '"config.set.mu":"mu=0.5"' "$out/hp/checkpoint.safetensors" && ok || bad "the checkpoint lacks config.set.mu"
grep -q '"config.weighting":"uniform"' "$out/hp/checkpoint.safetensors" && ok || bad "the checkpoint lacks config.weighting"

# Flags after --config win, those before it lose.
printf 'rounds = 3\nquiet = on\n' >"$out/r3.ini"
expect 0 "done: 1 rounds" -- "$fedc" train $heart --config "$out/r3.ini" --rounds 1 --out "$out/order"
expect 0 "done: 3 rounds" -- "$fedc" train $heart --rounds 1 --config "$out/r3.ini" --out "$out/order"

# An INI of 80 lines, with comments, a section, CRLF ends, a value of 300
# characters (a path: nothing cuts it) and an inline comment; then the same with
# a bad value on its last line, which is named.
long="$out/$(printf '%0150d' 0)/$(printf '%0150d' 1)"
{
  printf '# a run\r\n[train]\r\n'
  i=3
  while [ $i -le 77 ]; do printf 'seed = %d ; line %d\r\n' $i $i; i=$((i + 1)); done
  printf 'out = %s\r\nrounds = 2   # two\r\nquiet = true\r\n' "$long"
} >"$out/long.ini"
[ "$(wc -l <"$out/long.ini")" = 80 ] && ok || bad "long.ini has not 80 lines"
expect 0 "done: 2 rounds" -- "$fedc" train $heart --config "$out/long.ini"
[ -s "$long/metrics.jsonl" ] && ok || bad "the config's 300-character --out was not used"
printf 'epochs = many\n' >>"$out/long.ini"
expect 2 "$out/long.ini:81: epochs needs an integer from 1 to 10000, not 'many'" -- \
  "$fedc" train $heart --config "$out/long.ini"
# malformed lines, each named
while IFS='|' read -r needle text; do
  printf 'rounds = 1\n%s\n' "$text" >"$out/badline.ini"
  expect 2 "$out/badline.ini:2: $needle" -- "$fedc" train $heart --config "$out/badline.ini"
done <<'END'
expected 'name = value', not 'rounds 5'|rounds 5
a section header needs its closing ']'|[train
a setting needs a name before '='|= 5
unknown option 'frobnicate'|frobnicate = 1
a config file cannot read another|config = other.ini
out needs a value, not ''|out =
END

# One config file serves train and eval: each takes its own options from it (and
# refuses the other's on its command line).
printf 'model = heart\nrounds = 2\nquiet = yes\ncheckpoint = %s\n' "$out/res/checkpoint.safetensors" >"$out/both.ini"
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/silos" --config "$out/both.ini" --clients-per-round 2 \
  --out "$out/both"
# Evaluation quantiles only where there are several test clients.
expect 0 "(3 clients: p10 " -- "$fedc" eval --data "$out/silos" --config "$out/both.ini"
# program export: MLIR out, errors in their places (test_export_mlir runs the modules).
expect 0 "func.func @program" -- "$fedc" program export $data/logistic.fedc --to mlir
"$fedc" program export $data/logistic.fedc --to mlir -o "$out/logistic.mlir" && ok || bad "export -o failed"
grep -q "linalg.generic" "$out/logistic.mlir" && ok || bad "export -o wrote no linalg.generic"
expect 2 "needs --to mlir" -- "$fedc" program export $data/logistic.fedc
expect 2 "--to takes mlir or stablehlo" -- "$fedc" program export $data/logistic.fedc --to llvm
expect 0 '"stablehlo.dot_general"' -- "$fedc" program export $data/logistic.fedc --to stablehlo
expect 2 "--entry-main is for --to mlir" -- "$fedc" program export $data/logistic.fedc --to stablehlo --entry-main
expect 2 "--input is for --entry-main" -- "$fedc" program export $data/logistic.fedc --to mlir --input x=x.npy
expect 1 "cannot open" -- "$fedc" program export $data/missing.fedc --to mlir
expect 0 "program export FILE --to mlir" -- "$fedc" program export --help
expect 2 "--shard takes clients=D" -- "$fedc" program export $data/logistic.fedc --to mlir --shard devices=2
expect 1 "use 2 or more, dividing the cohort" -- "$fedc" program export $data/logistic.fedc --to mlir --shard clients=2
# the groups level: StableHLO with --groups, a groups x clients mesh with --shard groups=DG,clients=D
printf 'fedc program\n%%0 = input "w" : f32[2]@server\n%%1 = broadcast_down(%%0) : f32[2]@groups\n%%2 = sum_up(%%1) : f32[2]@server\noutput "s" = %%2\noutput "g" = %%1\n' >"$out/levels.fedc"
expect 0 'devices=[2,1,2]0,1,2,3 last_tile_dim_replicate' -- "$fedc" program export "$out/levels.fedc" --to stablehlo \
  --clients 4 --groups 2 --shard groups=2,clients=2
expect 1 "give the number of groups" -- "$fedc" program export "$out/levels.fedc" --to stablehlo --clients 4
expect 0 "-> tensor<2x2xf32>" -- "$fedc" program export "$out/levels.fedc" --to mlir --clients 4 --groups 2
expect 0 "mesh.mesh @clients_mesh(shape = 2x2)" -- "$fedc" program export "$out/levels.fedc" --to mlir --clients 4 \
  --groups 2 --shard groups=2,clients=2
expect 0 "mesh.mesh @clients_mesh(shape = 1x2)" -- "$fedc" program export "$out/levels.fedc" --to mlir --clients 4 \
  --groups 2 --shard clients=2
expect 2 "--shard takes clients=D or groups=DG,clients=D" -- "$fedc" program export "$out/levels.fedc" --to stablehlo \
  --clients 4 --groups 2 --shard groups=2
# bad input: a program that does not verify, a cohort that does not match the inputs, an input
# @main cannot hold
expect 1 "line 4, column 54: declared type f32[4,3] but matmul gives f32[4,2]" -- \
  "$fedc" program export $data/bad_type.fedc --to mlir
expect 0 "func.func @main" -- "$fedc" program export "$out/fed.fedc" --to mlir --entry-main \
  --input y="$out/y.npy" --input s="$out/s.npy"
expect 1 'input "y" from '"$out/y.npy"': expected f32[4,2] (4 clients of f32[2]@clients), got f32[3,2]' -- \
  "$fedc" program export "$out/fed.fedc" --to mlir --entry-main --input y="$out/y.npy" --input s="$out/s.npy" --clients 4
expect 1 "give the cohort's size" -- "$fedc" program export "$out/fed.fedc" --to mlir
# privacy: Opacus's known answer (its test: 7.32911117143) and its noise search
# (1.416), then usage errors; tests/test_privacy.c has the rest of the references.
p="--sampling-rate 0.04 --steps 2250 --delta 1e-5 --orders opacus --series signed"
expect 0 "epsilon: 7.329111171" -- "$fedc" privacy epsilon --noise-multiplier 1.5 $p
expect 0 "best order: 3.9" -- "$fedc" privacy epsilon --noise-multiplier 1.5 $p
expect 0 "noise multiplier: 1.416" -- "$fedc" privacy noise --epsilon 8 $p
expect 0 "epsilon: 2.922" -- "$fedc" privacy epsilon --noise-multiplier 1.12 --sampling-rate 0.004266666666666667 \
  --steps 14062 --delta 1e-5 --conversion classic --orders opacus
expect 0 "with the --also mechanisms" -- "$fedc" privacy epsilon --noise-multiplier 1.5 $p --also 0.04,10,2250
expect 0 "privacy noise --epsilon E" -- "$fedc" privacy --help
expect 2 "unknown subcommand 'spend'" -- "$fedc" privacy spend
expect 2 "needs --noise-multiplier, --sampling-rate, --steps and --delta" -- "$fedc" privacy epsilon --noise-multiplier 1
expect 2 "--sampling-rate needs a number in [0, 1], not '1.5'" -- "$fedc" privacy epsilon --noise-multiplier 1 \
  --sampling-rate 1.5 --steps 10 --delta 1e-5
expect 2 "--delta needs a number in (0, 1), not '0'" -- "$fedc" privacy epsilon --noise-multiplier 1 \
  --sampling-rate 0.1 --steps 10 --delta 0
expect 2 "an order of --orders needs a number in (1, 100000], not ''" -- "$fedc" privacy epsilon \
  --noise-multiplier 1 --sampling-rate 0.1 --steps 10 --delta 1e-5 --orders 2,,3
expect 2 "an order of --orders needs a number in (1, 100000], not '1'" -- "$fedc" privacy epsilon \
  --noise-multiplier 1 --sampling-rate 0.1 --steps 10 --delta 1e-5 --orders 1,2
expect 2 "orders[1] = 2 is not above orders[0] = 3: orders must increase" -- "$fedc" privacy epsilon \
  --noise-multiplier 1 --sampling-rate 0.1 --steps 10 --delta 1e-5 --orders 3,2
expect 2 "--conversion takes classic or improved, not 'tight'" -- "$fedc" privacy epsilon --noise-multiplier 1 \
  --sampling-rate 0.1 --steps 10 --delta 1e-5 --conversion tight
expect 2 "--also needs Q,Z,T" -- "$fedc" privacy epsilon --noise-multiplier 1 --sampling-rate 0.1 --steps 10 \
  --delta 1e-5 --also 0.1,2
expect 1 "target epsilon 1e-09 is too small" -- "$fedc" privacy noise --epsilon 1e-9 --sampling-rate 1 --steps 10 \
  --delta 1e-5 --conversion classic
# ------------------------------------------- privacy and robust aggregation --
# DP-FedAvg on the silos: the flags, their INI keys, the metrics, the checks.
dp="$heart --rounds 2 --eval-every 1 --quiet"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --dp-clip 0.5 --dp-noise 0.8 --robust-zero 100 --out "$out/dp"
grep -q '"round": 2, .*"dp_clip": 0.5, "dp_noise_stddev": 0.40*[0-9]*, "zeroed": 0, "epsilon": [0-9.]*, "delta": 0.33' \
  "$out/dp/metrics.jsonl" && ok || bad "a DP run's metrics lack its clip, noise, zeroed count or epsilon"
printf 'rounds = 2\ndp-clip = 0.5\ndp-noise = 0.8\nrobust-zero = 100\ncheckpoint-every = 2\n' >"$out/dp.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --config "$out/dp.ini" --out "$out/dp-ini"
losses() { grep -o '"train_loss": [^,]*, "test_loss": [^,]*' "$1"; }
[ "$(losses "$out/dp/metrics.jsonl")" = "$(losses "$out/dp-ini/metrics.jsonl")" ] && ok \
  || bad "the INI keys train another run than the flags"
expect 1 "--dp-noise 0.9 (the checkpoint's: 0.8)" -- "$fedc" train $dp --config "$out/dp.ini" --dp-noise 0.9 \
  --rounds 4 --resume --out "$out/dp-ini"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --dp-adaptive quantile=0.8,lr=0.5 --out "$out/dp-adaptive"
grep -q '"dp_unclipped_fraction": ' "$out/dp-adaptive/metrics.jsonl" && ok || bad "no adaptive clip in the metrics"
printf 'rounds = 2\ndp-adaptive = quantile=0.8,lr=0.5\n' >"$out/dp-adaptive.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --config "$out/dp-adaptive.ini" --out "$out/dp-adaptive-ini"
expect 2 "--dp-noise needs --dp-clip C or --dp-adaptive" -- "$fedc" train $dp --dp-noise 1
expect 2 "--dp-clip needs a number in (0, " -- "$fedc" train $dp --dp-clip 0
expect 2 "--robust-zero needs a number in (0, " -- "$fedc" train $dp --robust-zero -2
expect 2 "--dp-adaptive: quantile needs a number in [0, 1], not '2'" -- "$fedc" train $dp --dp-adaptive quantile=2
expect 2 "--dp-adaptive: unknown setting 'rate=1'" -- "$fedc" train $dp --dp-adaptive rate=1
expect 2 "is too low for the noise multiplier 1" -- "$fedc" train $dp --dp-adaptive --dp-noise 1
# at a Poisson rate the expected cohort is the rate x the clients (3 here, not --clients-per-round's 2):
# the count's stddev 0.05 x 3 allows z = 0.25, which 2 clients would not
expect 0 "done: 2 rounds" -- "$fedc" train $dp --sampling poisson:1 --dp-adaptive --dp-noise 0.25 --out "$out/dp-poisson-adaptive"
expect 1 "0.05 x 3 expected clients" -- "$fedc" train $dp --sampling poisson:1 --dp-adaptive --dp-noise 0.5
expect 2 "--dp-delta is the delta of the epsilon that --dp-noise spends" -- "$fedc" train $dp --dp-clip 1 --dp-delta 1e-5
expect 1 "mime aggregates its clients' updates itself" -- "$fedc" train $dp --algorithm mime --robust-zero 1
# Poisson client sampling: by flag and INI key; a bad rate or name refused
expect 0 "done: 2 rounds" -- "$fedc" train $dp --sampling poisson:0.5 --dp-clip 1 --dp-noise 1 --out "$out/poisson"
grep -q '"round": 2, .*"epsilon": ' "$out/poisson/metrics.jsonl" && ok || bad "a Poisson DP run reports no epsilon"
printf 'sampling = poisson\n' >"$out/poisson.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --config "$out/poisson.ini" --out "$out/poisson-ini"
expect 2 "--sampling poisson:Q's rate Q needs a number in (0, 1], not '1.5'" -- "$fedc" train $dp --sampling poisson:1.5
expect 2 "--sampling needs fixed, poisson or poisson:Q, not 'uniform'" -- "$fedc" train $dp --sampling uniform
# --rng fedjax (FedJAX's draws, docs/training.md; tests/peers_fedjax_data.py compares them with
# FedJAX's): the same run twice is the same, and another one than fedc's draws
expect 0 "done: 2 rounds" -- "$fedc" train $dp --rng fedjax --seed 3 --checkpoint-every 2 --out "$out/rng-fedjax"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --rng fedjax --seed 3 --out "$out/rng-fedjax-again"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --seed 3 --checkpoint-every 2 --out "$out/rng-counter"
[ "$(losses "$out/rng-fedjax/metrics.jsonl")" = "$(losses "$out/rng-fedjax-again/metrics.jsonl")" ] && ok \
  || bad "--rng fedjax is not the same run twice"
[ "$(losses "$out/rng-fedjax/metrics.jsonl")" != "$(losses "$out/rng-counter/metrics.jsonl")" ] && ok \
  || bad "--rng fedjax trains the run of fedc's own draws"
# a resume keeps the draws: either way round is refused (a default run's checkpoint does not record it)
expect 1 "--rng fedjax (the checkpoint's: counter)" -- "$fedc" train $dp --seed 3 --rng fedjax --rounds 4 \
  --checkpoint-every 2 --resume --out "$out/rng-counter"
expect 1 "--rng counter (the checkpoint's: fedjax)" -- "$fedc" train $dp --seed 3 --rounds 4 --checkpoint-every 2 \
  --resume --out "$out/rng-fedjax"
expect 0 "with --rounds 4 (the checkpoint's: 2)" -- "$fedc" train $dp --seed 3 --rng fedjax --rounds 4 \
  --checkpoint-every 2 --resume \
  --out "$out/rng-fedjax"
expect 1 "--rng fedjax cannot go with --sampling poisson" -- "$fedc" train $dp --rng fedjax --sampling poisson
expect 1 "--rng fedjax cannot go with a --seed of 2^32 or more" -- "$fedc" train $dp --rng fedjax --seed 4294967296
expect 2 "--rng needs counter or fedjax, not 'mt19937'" -- "$fedc" train $dp --rng mt19937
# Compression (FedJAX's quantizer, rotated or not): flag, INI key, metrics, checks.
expect 0 "done: 2 rounds" -- "$fedc" train $dp --compress uniform:8,rotate --dp-clip 1 --checkpoint-every 2 \
  --out "$out/compress"
grep -q '"round": 2, .*"compress_bits": [1-9][0-9]*, "compress_num_bits": [1-9]' "$out/compress/metrics.jsonl" && ok \
  || bad "a compressed run's metrics lack its bits"
printf 'rounds = 2\ncompress = uniform:8,rotate\ndp-clip = 1\n' >"$out/compress.ini"
expect 0 "done: 2 rounds" -- "$fedc" train $dp --config "$out/compress.ini" --out "$out/compress-ini"
[ "$(losses "$out/compress/metrics.jsonl")" = "$(losses "$out/compress-ini/metrics.jsonl")" ] && ok \
  || bad "the compress INI key trains another run than the flag"
[ "$(losses "$out/compress/metrics.jsonl")" != "$(losses "$out/dp/metrics.jsonl")" ] && ok || bad "--compress changes nothing"
expect 1 "--compress uniform:4 (the checkpoint's: uniform:8,rotate)" -- "$fedc" train $dp --compress uniform:4 \
  --dp-clip 1 --rounds 4 --resume --out "$out/compress"
expect 2 "--compress: compression 'uniform:0': BITS must be a whole number from 1 to 24" -- "$fedc" train $dp --compress uniform:0
expect 2 "BITS must be a whole number from 1 to 24 (2^BITS levels; a float32 holds 24 bits), not '40'" -- \
  "$fedc" train $dp --compress uniform:40
expect 2 "--compress: compression 'foo:8': unknown method 'foo' (there is: uniform:BITS" -- "$fedc" train $dp --compress foo:8
expect 2 "--compress: compression 'uniform:8,bogus': unknown setting 'bogus' (there is: rotate)" -- \
  "$fedc" train $dp --compress uniform:8,bogus
expect 2 "not '8x'" -- "$fedc" train $dp --compress uniform:8x
printf 'compress = uniform:\n' >"$out/bad-compress.ini"
expect 2 "bad-compress.ini:1: compress: compression 'uniform:': BITS must be" -- "$fedc" train $dp --config "$out/bad-compress.ini"
expect 1 "mime aggregates its clients' updates itself" -- "$fedc" train $dp --algorithm mime --compress uniform:8

fashion=/usr/share/datasets/fashion-mnist
if [ -f $fashion/train-images-idx3-ubyte.gz ] && [ -f $fashion/t10k-images-idx3-ubyte.gz ]; then
  expect 0 "round 1: test loss" -- "$fedc" train --data $fashion/train-images-idx3-ubyte.gz --model logistic \
    --rounds 1 --clients-per-round 2 --steps 1 --checkpoint-every 1 --out "$out/fashion"
  grep -q "p10" "$out/stdout" && bad "Fashion-MNIST's one test set printed quantiles" || ok
  expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/fashion/checkpoint.safetensors" \
    --data $fashion/t10k-images-idx3-ubyte.gz --model logistic --partition iid --num-clients 1
  grep -q "p10" "$out/stdout" && bad "an evaluation on one client printed quantiles" || ok
else
  echo "skipped the Fashion-MNIST cases: $fashion is absent"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77 # not all run: SKIP, not a pass
