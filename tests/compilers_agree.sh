#!/bin/sh
# The gcc and the clang build of fedc write the same programs: the same plan (round program,
# deployment form, initial model, hash) for every algorithm and aggregator, and the same MLIR
# and StableHLO for its round. C leaves the order of a call's arguments unspecified, and gcc
# and clang evaluate them in opposite orders, so an op built inside another builder's argument
# list lands at a different place in the program, and the plan's hash differs: a plan built by
# one build would then be another plan to the other. Every builder call is its own statement;
# this test is what keeps it so.
#
# usage: tests/compilers_agree.sh GCC_FEDC CLANG_FEDC
set -u
gcc_fedc=$1 clang_fedc=$2
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3, which writes the data
for f in "$gcc_fedc" "$clang_fedc"; do
  [ -x "$f" ] || { echo "compilers_agree: no fedc at $f (build both: make build build-clang)" >&2; exit 1; }
done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"
writers "$out/tiny.json" 6
writers "$out/emnist.json" 6 emnist

# same NAME DATA OPTIONS...: both builds' plans of one job, with their rounds' MLIR and StableHLO
# beside them, are the same files, byte for byte
same() {
  name=$1 data=$2
  shift 2
  for cc in gcc clang; do
    eval fedc=\$${cc}_fedc
    dir=$out/$name.$cc
    { "$fedc" plan build --data "$data" "$@" --out "$dir" &&
      "$fedc" program export "$dir/round.fedc" --to mlir --clients 3 -o "$dir/round.mlir" &&
      "$fedc" program export "$dir/round.fedc" --to stablehlo --clients 3 -o "$dir/round.shlo"; } \
      >"$out/$name.$cc.log" 2>&1 || { bad "$name: $cc's build failed: $(cat "$out/$name.$cc.log")"; return; }
  done
  diff -r "$out/$name.gcc" "$out/$name.clang" >"$out/$name.diff" && ok \
    || bad "$name: the gcc and clang builds' programs differ: $(head -c 2000 "$out/$name.diff")"
}

base="--batch-size 2 --seed 4"
for alg in fedavg fedsgd fedprox scaffold apfl mime mimelite fednova feddyn; do
  same "$alg" "$out/tiny.json" --model logistic $base --algorithm $alg
done
same mime_adam "$out/tiny.json" --model logistic $base --algorithm mime --client-opt adam
same diloco "$out/tiny.json" --model logistic $base --algorithm diloco --client-opt adam
same hypcluster "$out/tiny.json" --model logistic $base --algorithm hypcluster --clients-per-round 3
same agnostic_fedavg "$out/emnist.json" --model logistic $base --algorithm agnostic_fedavg
same fednova_momentum "$out/tiny.json" --model logistic $base --algorithm fednova --client-opt momentum
for opt in adam yogi adagrad rmsprop nesterov; do
  same "fedopt_$opt" "$out/tiny.json" --model dense $base --server-opt $opt
done
same cnn "$out/tiny.json" --model cnn $base
same dp_adaptive "$out/tiny.json" --model logistic $base --dp-clip 0.5 --dp-adaptive
same robust "$out/tiny.json" --model logistic $base --robust-zero 2
same secure_sum "$out/tiny.json" --model logistic $base --dp-clip 0.5 --secure-sum 16

# the text models (the LSTM's and the transformer's ops), on synthetic Stack Overflow-shaped data
same lstm synthetic:zipf:3:8 --model stackoverflow_lstm --vocab-size 50 $base --steps 1
same transformer synthetic:zipf:3:8 --model transformer:tiny --vocab-size 50 $base --steps 1 --algorithm mime

# second derivatives: the forward-mode derivative of the gradient goes through the composite
# forms of gelu, layer_norm and causal attention (src/ir/decompose.c)
cat >"$out/layer.fedc" <<'EOF'
fedc program
%0 = input "x" : f32[2,4,6]
%1 = input "g" : f32[6]
%2 = input "b" : f32[6]
%3 = layer_norm(%0, %1, %2) {eps=1e-05} : f32[2,4,6]
%4 = causal_attention(%3) {heads=2} : f32[2,4,2]
%5 = gelu(%4) : f32[2,4,2]
%6 = reduce_sum(%5) {axes=[0, 1, 2], keepdims=0} : f32[]
output "s" = %6
EOF
for cc in gcc clang; do
  eval fedc=\$${cc}_fedc
  "$fedc" program grad "$out/layer.fedc" --of s --wrt x,g >"$out/grad.$cc.fedc" 2>"$out/grad.$cc.log" \
    && "$fedc" program jvp "$out/grad.$cc.fedc" --wrt x,g >"$out/grad2.$cc.fedc" 2>>"$out/grad.$cc.log" \
    || bad "second derivative: $cc failed: $(cat "$out/grad.$cc.log")"
done
cmp -s "$out/grad2.gcc.fedc" "$out/grad2.clang.fedc" && ok \
  || bad "second derivative: the gcc and clang builds' programs differ: $(diff "$out/grad2.gcc.fedc" "$out/grad2.clang.fedc" | head -20)"
echo "compilers_agree.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
