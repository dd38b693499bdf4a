#!/bin/sh
# fedc train under the virtual clock (docs/training.md, "Time") on synthetic data
# that every clone has: a clock that takes no time changes no bit; known speeds
# from a trace file drop exactly the clients past --round-deadline (the same model
# as any other way of keeping those clients) and over-selection keeps the first K;
# metrics count the drops and the virtual time; the same bits on 1 and 2 threads
# and after a resume; bad options are refused, naming them.
# Usage: cli_clock.sh path/to/fedc
set -u
fedc=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

data="--data synthetic:zipf:8:8:12 --model stackoverflow_lstm --vocab-size 50"
run="--rounds 2 --batch-size 2 --steps 2 --eval-every 0 --checkpoint-every 2 --quiet --threads 1"

# column DIR N: the N-th field of metrics.csv's rows, one a line
column() { tail -n +2 "$1/metrics.csv" | cut -d, -f"$2" | tr '\n' ' '; }

# Every client takes 2 steps: client i of sp.csv reports at 2 × (i + 1) / 2 = i + 1 seconds.
printf 'client_id,seconds_per_step\n0,0.5\n1,1\n2,1.5\n3,2\n4,2.5\n5,3\n6,3.5\n7,4\n' >"$out/sp.csv"
# The same four fastest (0 to 3) at other times; and the four slowest fastest.
printf '0,0.05\n1,0.1\n2,0.15\n3,0.2\n4,10\n5,10\n6,10\n7,10\n' >"$out/fast.csv"
printf '0,9\n1,9\n2,9\n3,9\n4,1\n5,1\n6,1\n7,1\n' >"$out/slow.csv"

expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --out "$out/plain"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --clock speed=0 --out "$out/zero"
same "$out/plain" "$out/zero" && ok || bad "a clock that takes no time changed the model"
[ "$(column "$out/zero" 8-9)" = "0,0 0,0 " ] && ok || bad "no time, no drops: $(column "$out/zero" 8-9)"
[ "$(column "$out/plain" 9)" = "  " ] && ok || bad "without --clock the time column is not empty: $(column "$out/plain" 9)"
grep -q '"time"' "$out/plain/metrics.jsonl" && bad "metrics.jsonl has a time without --clock" || ok
grep -q '"dropped": 0, "time": 0,' "$out/zero/metrics.jsonl" && ok || bad "metrics.jsonl lacks the time"

# --round-deadline 4: clients 0-3 report by then, 4-7 are dropped; each round lasts the deadline.
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 8 --clock "speed=trace:$out/sp.csv" \
  --round-deadline 4 --out "$out/deadline"
[ "$(column "$out/deadline" 8-9)" = "4,4 8,8 " ] && ok || bad "deadline: dropped,time $(column "$out/deadline" 8-9)"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 8 --clock "speed=trace:$out/fast.csv" \
  --round-deadline 1 --out "$out/fast"
same "$out/deadline" "$out/fast" && ok || bad "the same clients kept, a different model"
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 8 --clock "speed=trace:$out/slow.csv" \
  --round-deadline 4 --out "$out/slow"
same "$out/deadline" "$out/slow" && bad "other clients kept, the same model" || ok
# Over-selection: 4 wanted, 8 selected, the first 4 (0-3) kept: the deadline's model; the round
# ends at the 4th report (4 s).
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 4 --over-select 1 \
  --clock "speed=trace:$out/sp.csv" --out "$out/over"
[ "$(column "$out/over" 8-9)" = "4,4 8,8 " ] && ok || bad "over-selection: dropped,time $(column "$out/over" 8-9)"
same "$out/deadline" "$out/over" && ok || bad "over-selection kept other clients than the deadline"
# Without a deadline every client reports: the round lasts the slowest (8 s).
expect 0 "done: 2 rounds" -- "$fedc" train $data $run --clients-per-round 8 --clock "speed=trace:$out/sp.csv" \
  --out "$out/all"
[ "$(column "$out/all" 8-9)" = "0,8 0,16 " ] && ok || bad "no deadline: dropped,time $(column "$out/all" 8-9)"

# Heavy tails, availability and a network: the same bits and times on 1 and 2 threads and resumed.
clock="speed=lognormal:0:1,bandwidth=lognormal:11:1,availability=bernoulli:0.7"
tail="--clients-per-round 3 --over-select 0.5 --round-deadline 6 --clock $clock --batch-size 2 --steps 2 --quiet"
expect 0 "done: 4 rounds" -- "$fedc" train $data $tail --rounds 4 --eval-every 0 --threads 1 --checkpoint-every 4 \
  --out "$out/t1"
expect 0 "done: 4 rounds" -- "$fedc" train $data $tail --rounds 4 --eval-every 0 --threads 2 --checkpoint-every 4 \
  --out "$out/t2"
same "$out/t1" "$out/t2" && ok || bad "1 and 2 threads differ under the clock"
[ "$(column "$out/t1" 8-9)" = "$(column "$out/t2" 8-9)" ] && ok || bad "1 and 2 threads: other drops or times"
expect 0 "done: 2 rounds" -- "$fedc" train $data $tail --rounds 2 --eval-every 0 --threads 1 --checkpoint-every 2 \
  --out "$out/resumed"
expect 0 "done: 2 rounds" -- "$fedc" train $data $tail --rounds 4 --eval-every 0 --threads 1 --checkpoint-every 4 \
  --out "$out/resumed" --resume
same "$out/t1" "$out/resumed" && ok || bad "resumed under the clock: another model"
[ "$(column "$out/t1" 8-9)" = "$(column "$out/resumed" 8-9)" ] && ok || bad "resumed: other drops or times"
expect 1 "differs from the checkpoint's in what changes the result: --clock speed=1" -- "$fedc" train $data $tail --rounds 5 --eval-every 0 --threads 1 --out "$out/resumed" \
  --resume --clock speed=1

# Bad options.
expect 2 "--clock speed takes" -- "$fedc" train $data --clock speed=fast
expect 2 "unknown item 'sped=1'" -- "$fedc" train $data --clock sped=1
expect 1 "--round-deadline needs --clock" -- "$fedc" train $data $run --round-deadline 3 --out "$out/e1"
expect 1 "--over-select needs --clock" -- "$fedc" train $data $run --over-select 0.3 --out "$out/e2"
expect 1 "do not go together" -- "$fedc" train $data $run --clock speed=1 --sampling poisson --out "$out/e3"
printf '0,1\n1,1\n' >"$out/short.csv"
expect 1 "has no line for client \"2\"" -- "$fedc" train $data $run --clock "speed=trace:$out/short.csv" --out "$out/e4"
expect 1 "cannot open" -- "$fedc" train $data $run --clock "speed=trace:$out/none.csv" --out "$out/e5"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
