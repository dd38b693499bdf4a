#!/bin/sh
# fedc train --aggregator (docs/privacy.md, "Byzantine-robust aggregation") on
# synthetic data that every clone has: each aggregator runs and changes the model
# from the mean's, the same bits on 1 and 2 threads, centered clipping keeps its
# centre in the checkpoint, and bad specs, cohorts too small and combinations
# that cannot work are refused with the numbers.
# Usage: cli_robust.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 2 --clients-per-round 7 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 2 --quiet"

expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 2 --out "$out/mean"
for agg in median trimmed_mean:beta=0.2 krum:f=2 multikrum:f=1,m=4 bulyan:f=1 geomed cclip:tau=0.05; do
  dir="$out/$(echo "$agg" | tr ':,=' '___')"
  expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 2 --aggregator "$agg" --out "$dir"
  [ -s "$dir/checkpoint.safetensors" ] && ! same "$out/mean" "$dir" && ok \
    || bad "--aggregator $agg: no checkpoint, or the same model as the mean's"
done
# the same bits whatever the threads
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 1 --aggregator geomed --out "$out/geomed1"
same "$out/geomed1" "$out/geomed" && ok \
  || bad "--aggregator geomed: 1 and 2 threads differ"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 1 --aggregator bulyan:f=1 --out "$out/bulyan1"
same "$out/bulyan1" "$out/bulyan_f_1" && ok \
  || bad "--aggregator bulyan:f=1: 1 and 2 threads differ"
# the same bits with a memory budget of 1 MiB (the 7 updates of the LSTM are more)
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 2 --aggregator multikrum:f=1,m=4,memory=1 --out "$out/budget"
same "$out/budget" "$out/multikrum_f_1_m_4" && ok || bad "--aggregator multikrum with memory=1: other bits"
# ALIE with the plain mean and a zeroing after it, made in the mean's store: the same bits with
# memory=1 (spilled), on 1 thread, as in memory on 2
alie="--attack alie:z=1 --attackers 0.3 --robust-zero 0.5"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 2 $alie --out "$out/alie"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 1 $alie --aggregator mean:memory=1 --out "$out/alie1"
same "$out/alie" "$out/alie1" && ! same "$out/alie" "$out/mean" && ok \
  || bad "alie with the mean: memory=1 on 1 thread is not the bits in memory on 2, or the clean mean's"
# metrics.jsonl names the clients a selecting aggregator kept, each round: Multi-Krum's
# m = 4 and Krum's one of the 7, distinct population indices; the median keeps no list
kept() { sed -n "s/.*\"round\": $2,.*\"kept\": \[\([0-9, ]*\)\].*/\1/p" "$1/metrics.jsonl" | tr ',' '\n' | tr -d ' ' | sort -un | grep -c .; }
[ "$(kept "$out/multikrum_f_1_m_4" 1)" = 4 ] && [ "$(kept "$out/multikrum_f_1_m_4" 2)" = 4 ] && ok \
  || bad "multikrum:f=1,m=4: metrics.jsonl does not name 4 kept clients in each round"
[ "$(kept "$out/krum_f_2" 2)" = 1 ] && ok || bad "krum:f=2: metrics.jsonl does not name 1 kept client"
[ "$(kept "$out/bulyan_f_1" 1)" = 5 ] && ok || bad "bulyan:f=1: metrics.jsonl does not name n - 2f = 5 kept clients"
! grep -q '"kept"' "$out/median/metrics.jsonl" && ok || bad "median: metrics.jsonl names kept clients"
# cclip's centre is server state, checkpointed by name
grep -q "aggregator/center" "$out/cclip_tau_0.05/checkpoint.safetensors" && ok || bad "cclip: no centre in the checkpoint"

# a resume continues cclip from its checkpointed centre: 1 + 1 rounds are 2 rounds' bits;
# it refuses another aggregator than the checkpoint's
one=$(echo "$run" | sed 's/--rounds 2/--rounds 1/')
expect 0 "done: 1 rounds" -- "$fedc" train $data $one --threads 2 --aggregator cclip:tau=0.05 --out "$out/resumed"
expect 0 "done: 1 rounds" -- "$fedc" train $data $run --threads 2 --aggregator cclip:tau=0.05 --resume --out "$out/resumed"
same "$out/resumed" "$out/cclip_tau_0.05" && ok || bad "cclip: resumed after round 1, not the 2 rounds' bits"
expect 1 "--aggregator median (the checkpoint's: cclip:tau=0.05,iterations=1)" -- \
  "$fedc" train $data $run --aggregator median --resume --out "$out/resumed"

# an attack: 30% of the clients send -20 times their update. It moves the mean's model
# (its test loss rises by over 1) while the median's stays within 0.5 of the clean run's.
ev="--eval-every 2 --test-data synthetic:zipf:2:4"
loss() { sed -n 's/.*"round": 2, "train_loss": [0-9.]*, "test_loss": \([0-9.]*\).*/\1/p' "$1/metrics.jsonl"; }
expect 0 "done: 2 rounds" -- "$fedc" train $data $run $ev --threads 2 --out "$out/clean"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run $ev --threads 2 --attack scale:s=-20 --attackers 0.3 \
  --out "$out/attacked"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run $ev --threads 2 --attack scale:s=-20 --attackers 0.3 \
  --aggregator median --out "$out/defended"
grep -q '"round": 2, .*"attackers": [1-9]' "$out/attacked/metrics.jsonl" && ok || bad "metrics: no attackers counted"
clean=$(loss "$out/clean") attacked=$(loss "$out/attacked") defended=$(loss "$out/defended")
awk -v c="$clean" -v a="$attacked" -v d="$defended" 'BEGIN { exit !(c > 0 && a > c + 1 && d < c + 0.5) }' && ok \
  || bad "test loss clean $clean, attacked mean $attacked, attacked median $defended"
# label_flip poisons the data: with every client an attacker, training is training on the
# flipped labels (y -> C - 1 - y; the heart task's C = 2), bit for bit; with half, it counts
# them and moves the model
mkdir -p "$out/csv" "$out/flipped"
for site in a b c d; do
  awk -v s="$site" 'BEGIN { srand(length(s) * 7 + index("abcd", s)); for (i = 0; i < 24; i++) {
    row = ""; for (j = 0; j < 13; j++) row = row sprintf("%.3f,", rand() * 2 - 1); print row (rand() < 0.4 ? 1 : 0) } }' \
    >"$out/csv/$site.csv"
  awk -F, -v OFS=, '{ $NF = 1 - $NF; print }' "$out/csv/$site.csv" >"$out/flipped/$site.csv"
done
heart="--model heart --rounds 2 --clients-per-round 4 --batch-size 4 --steps 3 --eval-every 0 --checkpoint-every 2 --quiet"
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/csv" $heart --attack label_flip --attackers 1 --out "$out/lf_all"
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/flipped" $heart --out "$out/lf_data"
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/csv" $heart --out "$out/lf_clean"
expect 0 "done: 2 rounds" -- "$fedc" train --data "$out/csv" $heart --attack label_flip --attackers 0.5 --out "$out/lf_half"
same "$out/lf_all" "$out/lf_data" && ok || bad "label_flip with every client: not the bits of training on flipped labels"
! same "$out/lf_all" "$out/lf_clean" && ok || bad "label_flip with every client: the clean model's bits"
grep -q '"round": 2, .*"attackers": [1-3][,}]' "$out/lf_half/metrics.jsonl" && ok \
  || bad "label_flip --attackers 0.5: metrics do not count 1 to 3 of the 4 clients as attackers"
expect 2 "attack label_flip takes no settings" -- "$fedc" train $data $run --attack label_flip:y=1 --attackers 0.1
expect 2 "unknown attack 'signflip'" -- "$fedc" train $data $run --attack signflip --attackers 0.1
expect 2 "--attack and --attackers FRAC (> 0) go together" -- "$fedc" train $data $run --attack sign_flip

expect 2 "unknown aggregator 'medain'" -- "$fedc" train $data $run --aggregator medain
expect 2 "krum has no setting 'beta' (it takes f=F)" -- "$fedc" train $data $run --aggregator krum:beta=0.1
expect 2 "bulyan with f = 2 needs at least 4f + 3 = 11 clients; the round has 7" -- \
  "$fedc" train $data $run --aggregator bulyan:f=2
expect 2 "krum with f = 3 needs more than 2f + 2 = 8 clients; the round has 7" -- \
  "$fedc" train $data $run --aggregator krum:f=3
expect 2 "does not combine with a DP clip" -- "$fedc" train $data $run --aggregator median --dp-clip 1

echo "cli_robust: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
