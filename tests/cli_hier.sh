#!/bin/sh
# fedc train --algorithm hierfavg --groups N (docs/algorithms.md, "HierFAVG"; and hierfedopt) on
# synthetic data that every clone has: with group_rounds=1 it is FedAvg bit for
# bit, in one group or several (the server's weighted mean over the groups' means
# is the mean over the cohort: the math says so, and the round is built so);
# with E = 2 the groups change the model, the same bits on 1 and 2 threads and
# after a resume; the options it cannot take are refused, naming why.
# Usage: cli_hier.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 3 --clients-per-round 4 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 3 --quiet"

expect 0 "hierfavg" -- "$fedc" train --algorithms
expect 0 "--set group_rounds=X" -- "$fedc" train --algorithm hierfavg --help
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --out "$out/fedavg"
for g in 1 3 4; do
  expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --algorithm hierfavg --set group_rounds=1 \
    --groups $g --out "$out/e1-g$g"
  same "$out/fedavg" "$out/e1-g$g" && ok || bad "group_rounds=1 in $g groups is not FedAvg's bits"
  [ "$(train_losses "$out/fedavg")" = "$(train_losses "$out/e1-g$g")" ] && ok || bad "group_rounds=1, $g groups: not FedAvg's losses"
done
# Uniform weighting: the mean of the groups' means weighted by their sizes is the cohort's mean.
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --weighting uniform --out "$out/fedavg-u"
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --threads 1 --weighting uniform --algorithm hierfavg \
  --set group_rounds=1 --groups 3 --out "$out/e1-u"
same "$out/fedavg-u" "$out/e1-u" && ok || bad "uniform weighting, group_rounds=1 in 3 groups is not FedAvg's bits"

for g in 1 2; do
  expect 0 "done: 3 rounds" -- "$fedc" train $data $run --algorithm hierfavg --set group_rounds=2 --groups $g \
    --threads 1 --out "$out/e2-g$g-1"
  expect 0 "done: 3 rounds" -- "$fedc" train $data $run --algorithm hierfavg --set group_rounds=2 --groups $g \
    --threads 2 --out "$out/e2-g$g-2"
  same "$out/e2-g$g-1" "$out/e2-g$g-2" && ok || bad "group_rounds=2, $g groups: 1 and 2 threads differ"
  same "$out/e2-g$g-1" "$out/fedavg" && bad "group_rounds=2, $g groups: FedAvg's model" || ok
done
same "$out/e2-g1-1" "$out/e2-g2-1" && bad "group_rounds=2: 1 and 2 groups give the same model" || ok
# hierfedopt (each group its own --server-opt) with plain SGD at rate 1 is hierfavg bit for bit
# (tests/test_hierfedopt.c has its Adam by hand, FedAdam's bits in one group and its resume).
expect 0 "hierfedopt" -- "$fedc" train --algorithms
expect 0 "(default 1, in [1, 1000])" -- "$fedc" train --algorithm hierfedopt --help
expect 0 "done: 3 rounds" -- "$fedc" train $data $run --algorithm hierfedopt --set group_rounds=2 --groups 2 \
  --threads 1 --out "$out/opt-sgd"
same "$out/e2-g2-1" "$out/opt-sgd" && ok || bad "hierfedopt with SGD at rate 1 is not hierfavg's bits"
grep -q '"group_loss": \[[^],]*, [^],]*\]' "$out/opt-sgd/metrics.jsonl" && ok || bad "hierfedopt's metrics lack group losses"
expect 1 "apply with plain SGD groups (--server-opt sgd) and group_rounds=1 only" -- "$fedc" train $data $run \
  --algorithm hierfedopt --server-opt adam --dp-clip 1 --out "$out/x"
expect 1 "hierfedopt with group_rounds=1 has a group level of its own (@groups)" -- "$fedc" plan build $data --algorithm hierfedopt --server-opt adam \
  --clients-per-round 4 --out "$out/plan"
# Each round's metrics have each group's train loss; the round's is their mean weighted by the
# groups' examples, so it lies between the least and the greatest.
rows=$(grep -c '"group_loss": \[[^],]*, [^],]*\]' "$out/e2-g2-1/metrics.jsonl")
[ "$rows" = 3 ] && ok || bad "group_rounds=2, 2 groups: $rows of 3 metrics rows have two group losses"
sed 's/.*"train_loss": \([^,]*\),.*"group_loss": \[\([^,]*\), \([^]]*\)\].*/\1 \2 \3/' "$out/e2-g2-1/metrics.jsonl" |
  awk '{ lo = $2 < $3 ? $2 : $3; hi = $2 < $3 ? $3 : $2; if (!($1 >= lo - 1e-5 && $1 <= hi + 1e-5)) bad = 1 }
       END { exit bad }' && ok || bad "a round's train loss is not between its groups' losses"
grep -q group_loss "$out/fedavg/metrics.jsonl" && bad "fedavg's metrics have group losses" || ok
# A resume continues with the checkpoint's groups, and refuses others.
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --rounds 2 --checkpoint-every 1 --algorithm hierfavg \
  --set group_rounds=2 --groups 2 --out "$out/resumed"
expect 1 "--groups 3 (the checkpoint's: 2)" -- "$fedc" train $data $run --algorithm hierfavg --set group_rounds=2 \
  --groups 3 --out "$out/resumed" --resume
expect 0 "done: 1 rounds" -- "$fedc" train $data $run --algorithm hierfavg --set group_rounds=2 --groups 2 \
  --out "$out/resumed" --resume
same "$out/e2-g2-1" "$out/resumed" && ok || bad "a resumed run of 2 groups is not the uninterrupted run's bits"

expect 1 "--groups 9 is more groups than the training data's 8 clients" -- "$fedc" train $data $run \
  --algorithm hierfavg --groups 9 --out "$out/x"
expect 2 "group_rounds must be in [1, 1000], not 0" -- "$fedc" train $data $run --algorithm hierfavg \
  --set group_rounds=0 --out "$out/x"
expect 1 "group_rounds must be a whole number, not 1.5" -- "$fedc" train $data $run --algorithm hierfavg \
  --set group_rounds=1.5 --out "$out/x"
expect 1 "--groups: fedavg has no group level" -- "$fedc" train $data $run --groups 2 --out "$out/x"
expect 1 "--groups cannot be used with --over-select" -- "$fedc" train $data $run --algorithm hierfavg \
  --groups 2 --clock speed=lognormal:-2:1 --over-select 0.5 --out "$out/x"
expect 1 "apply with group_rounds=1 only" -- "$fedc" train $data $run --algorithm hierfavg --dp-clip 1 \
  --out "$out/x"
expect 2 "--groups needs an integer from 1" -- "$fedc" train $data $run --algorithm hierfavg --groups 0

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
