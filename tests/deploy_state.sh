#!/bin/sh
# A deployed client's state on disk (--state-dir), as processes on this host (tcp://127.0.0.1
# only), on SCAFFOLD's logistic model: client 0's process ends right after its round-1 report was
# counted (FEDC_FAULT=exit-after-report:1) and is started again with the same command. With
# --state-dir it goes on from its file, and the run ends with the bits of fedc train; without it,
# it starts again from client_init and the model differs, so the file is what carries the state.
# A state file of another plan (other programs) is refused, naming it. Every process runs under timeout.
# Usage: deploy_state.sh path/to/fedc. Exits 77 (skipped) without python3.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w6.json" 6
ljob="--model logistic --batch-size 2 --seed 9"
"$fedc" plan build --data "$out/w6.json" $ljob --algorithm scaffold --out "$out/scaf" >/dev/null && ok \
  || bad "plan build (scaffold) failed"
timeout 300 "$fedc" train --data "$out/w6.json" $ljob --algorithm scaffold --rounds 3 --clients-per-round 6 \
  --checkpoint-every 3 --eval-every 0 --threads 1 --quiet --out "$out/train" >/dev/null 2>&1 && ok \
  || bad "fedc train (scaffold) failed"

# run NAME [--state-dir DIR]: 3 rounds of all 6 clients; clients 1-5 run throughout, client 0 ends
# after its round-1 report and is started again
run() {
  name=$1
  shift
  addr=tcp://127.0.0.1:$(free_port)
  timeout 300 "$fedc" server --plan "$out/scaf" --listen "$addr" --rounds 3 --clients-per-round 6 \
    --out "$out/$name" --token t --report-deadline 60 --linger 1 >"$out/$name.log" 2>&1 &
  server=$!
  start_clients "$addr" "$out/w6.json" "$out/$name" 1 2 3 4 5
  FEDC_FAULT=exit-after-report:1 timeout 300 "$fedc" client --connect "$addr" --data "$out/w6.json" --client 0 \
    --token t --timeout 30 "$@" >"$out/${name}0a.log" 2>&1
  [ $? = 3 ] && ok || bad "client 0 did not end after its round-1 report: $(cat "$out/${name}0a.log")"
  timeout 300 "$fedc" client --connect "$addr" --data "$out/w6.json" --client 0 --token t --timeout 30 "$@" \
    >"$out/${name}0b.log" 2>&1 && ok || bad "client 0, started again, failed: $(cat "$out/${name}0b.log")"
  for p in $clients; do wait $p || bad "a client failed: $(cat "$out/$name"?.log)"; done
  wait $server && ok || bad "the server ($name) failed: $(cat "$out/$name.log")"
  [ "$(grep -c '"selected": 6, "reported": 6, "dropped": 0' "$out/$name/metrics.jsonl")" = 3 ] && ok \
    || bad "metrics ($name): $(cat "$out/$name/metrics.jsonl")"
}

run kept --state-dir "$out/state"
[ -s "$out/state/client-0.safetensors" ] && ok || bad "no state file: $(ls -l "$out/state")"
grep -q "fedc client 0: state from .*client-0.safetensors (with a counted report" "$out/kept0b.log" && ok \
  || bad "client 0 did not say it went on from its file: $(cat "$out/kept0b.log")"
same_bits "$out/kept/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "with --state-dir, the run differs from fedc train's"

run lost
same_bits "$out/lost/checkpoint.safetensors" "$out/train/checkpoint.safetensors" 2>/dev/null \
  && bad "without --state-dir the restarted client's state was not lost: the test shows nothing" || ok

# the file of another plan (SCAFFOLD's programs with batches of 3) is refused, naming the file
"$fedc" plan build --data "$out/w6.json" --model logistic --batch-size 3 --seed 9 --algorithm scaffold \
  --out "$out/other" >/dev/null && ok || bad "plan build (other) failed"
addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/other" --listen "$addr" --rounds 1 --clients-per-round 1 --out "$out/o" \
  --token t --report-deadline 5 --linger 1 >"$out/o.log" 2>&1 &
server=$!
expect 1 "client-0.safetensors: the state of another plan" -- timeout 60 "$fedc" client --connect "$addr" \
  --data "$out/w6.json" --client 0 --token t --timeout 10 --state-dir "$out/state"
kill $server 2>/dev/null
wait $server 2>/dev/null
server=""

echo "deploy_state.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
