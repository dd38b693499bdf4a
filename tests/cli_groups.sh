#!/bin/sh
# fedc train's groups of clients (docs/training.md, "Groups") on synthetic data
# that every clone has (8 clients, ids 0..7): --groups N is a --groups-file of the
# same contiguous ranges, bit for bit; a Dirichlet draw and sampling per level
# (--groups-per-round, --clients-per-group) give the same bits on 1 and 2
# threads, and metrics.jsonl says each round's groups and clients per group;
# drawing every group and all of each one's clients is the flat draw of every
# client; a groups file's errors name the file and the line.
# Usage: cli_groups.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 2 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 2 --quiet --algorithm hierfavg \
  --set group_rounds=2"

# --groups 2 (clients 0-3 and 4-7) and the same groups from a file, header line and all
printf 'client_id,group\n# the contiguous ranges of --groups 2\n' >"$out/two.csv"
for c in 0 1 2 3 4 5 6 7; do echo "$c,$((c / 4))"; done >>"$out/two.csv"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --threads 1 --groups 2 --out "$out/n2"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --threads 1 --groups-file "$out/two.csv" \
  --out "$out/file2"
same "$out/n2" "$out/file2" && ok || bad "--groups 2 and its groups from a file differ"
[ "$(train_losses "$out/n2")" = "$(train_losses "$out/file2")" ] && ok || bad "--groups 2 and its file: other losses"

# A Dirichlet draw: the same bits on 1 and 2 threads; each row names the round's groups
for th in 1 2; do
  expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --threads $th \
    --groups dirichlet:3:0.5 --out "$out/dir$th"
done
same "$out/dir1" "$out/dir2" && ok || bad "--groups dirichlet:3:0.5: 1 and 2 threads differ"
rows=$(grep -c '"groups": \[[0-2][^]]*\], "group_clients": \[[1-4][^]]*\], "group_loss"' "$out/dir1/metrics.jsonl")
[ "$rows" = 2 ] && ok || bad "--groups dirichlet: $rows of 2 rows name the round's groups"

# Per level: 2 of 4 groups a round, 1 client of each; the same bits on 1 and 2 threads
for th in 1 2; do
  expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads $th --groups 4 --groups-per-round 2 \
    --clients-per-group 1 --out "$out/lvl$th"
done
same "$out/lvl1" "$out/lvl2" && ok || bad "per level: 1 and 2 threads differ"
rows=$(grep -c '"groups": \[[0-3], [0-3]\], "group_clients": \[1, 1\]' "$out/lvl1/metrics.jsonl")
[ "$rows" = 2 ] && ok || bad "per level: $rows of 2 rows have 2 groups of 1 client"
same "$out/lvl1" "$out/n2" && bad "per level: the model of --groups 2's cohorts" || ok
# Every group and all their clients is the flat draw of all 8 clients, in the same order.
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 1 --groups 2 --groups-per-round 2 \
  --clients-per-group 4 --out "$out/all-lvl"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --threads 1 --groups 2 --clients-per-round 8 --out "$out/all"
same "$out/all-lvl" "$out/all" && ok || bad "every group and client per level is not the flat draw of all"

# A groups file's errors, each with the file and line
printf 'client_id,group\n0,0\n1,0\n2,1\n3,1\n4,1\n5,1\n6,1\n7,one\n' >"$out/bad-group.csv"
expect 1 "bad-group.csv:9: client \"7\": the group \"one\" is not a whole number" -- "$fedc" train $data $run \
  --clients-per-round 4 --groups-file "$out/bad-group.csv" --out "$out/x"
printf '0,0\n1,0\n2,1\n3,1\n4,1\n5,1\n6,1\n7,1\n9,0\n' >"$out/unknown.csv"
expect 1 "unknown.csv:9: client \"9\" is not a client of the training data" -- "$fedc" train $data $run \
  --clients-per-round 4 --groups-file "$out/unknown.csv" --out "$out/x"
printf '0,0\n1,0\n2,1\n3,1\n4,1\n5,1\n6,1\n' >"$out/missing.csv"
expect 1 "missing.csv: client \"7\" of the data has no line" -- "$fedc" train $data $run --clients-per-round 4 \
  --groups-file "$out/missing.csv" --out "$out/x"
printf '0,0\n1,0\n2,1\n3,1\n4,1\n5,1\n6,1\n7,1\n2,0\n' >"$out/twice.csv"
expect 1 "twice.csv:9: client \"2\" again (its first line is 3)" -- "$fedc" train $data $run --clients-per-round 4 \
  --groups-file "$out/twice.csv" --out "$out/x"
expect 1 "two.csv:7: client \"4\": the group \"1\" is not a whole number in [0, 0] (--groups)" -- "$fedc" train \
  $data $run --clients-per-round 4 --groups 1 --groups-file "$out/two.csv" --out "$out/x"

# What cannot be, refused before the run
expect 1 "--groups-per-round and --clients-per-group need groups" -- "$fedc" train $data $run --groups-per-round 2 \
  --out "$out/x"
expect 1 "--groups-per-round 5, but only 4 groups have clients" -- "$fedc" train $data $run --groups 4 \
  --groups-per-round 5 --out "$out/x"
expect 1 "cannot be used with --sampling poisson and sampling per level" -- "$fedc" train $data $run --groups 2 \
  --clients-per-group 2 --sampling poisson --out "$out/x"
expect 2 "--groups dirichlet:N:ALPHA's ALPHA" -- "$fedc" train $data $run --groups dirichlet:2:0 --out "$out/x"
expect 2 "--groups needs N or dirichlet:N:ALPHA, not 'dirichlet:2'" -- "$fedc" train $data $run --groups dirichlet:2

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
