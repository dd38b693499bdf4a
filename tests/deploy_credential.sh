#!/bin/sh
# Per-client credentials, as processes on this host (tcp://127.0.0.1 only), on a logistic model:
# fedc server --issue-credentials writes the key and each client's credential (distinct, mode
# 0600); a server started with --credentials-key writes no token, refuses a client presenting the
# shared token or none, and a fleet whose client 4 presents client 3's credential: client 4 is
# refused at its check-in (the reason logged and in the fleet's error, counted as unauthenticated in
# metrics.jsonl), its slot given up at the deadline, and both rounds commit with fedc train's bits
# over the clients that reported (client 5 a process of its own, with --credential FILE). A token
# and a key together, a missing key and --issue-credentials without a key are refused. Every process
# runs under timeout. Usage: deploy_credential.sh path/to/fedc. Exits 77 (skipped) without python3.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
deploy_begin

writers "$out/w6.json" 6
ljob="--model logistic --batch-size 2 --seed 9"
"$fedc" plan build --data "$out/w6.json" $ljob --out "$out/p6" >/dev/null && ok || bad "plan build failed"

expect 0 "fedc server: 6 credentials in $out/creds" -- "$fedc" server --issue-credentials 6 \
  --credentials-key "$out/key" --out "$out/creds"
[ "$(stat -c %a "$out/key")" = 600 ] && ok || bad "the key's mode is $(stat -c %a "$out/key"), not 600"
for c in 0 1 2 3 4 5; do
  [ "$(stat -c %a "$out/creds/client-$c.credential")" = 600 ] && ok || bad "client $c's credential is not mode 600"
done
[ "$(ls "$out/creds" | wc -l)" = 6 ] && ok || bad "not 6 credentials: $(ls "$out/creds")"
[ "$(cat "$out"/creds/* | grep -cE '^[0-9a-f]{64}$')" = 6 ] && ok || bad "a credential is not 64 hex digits"
[ "$(cat "$out"/creds/* | sort -u | wc -l)" = 6 ] && ok || bad "two clients have the same credential"
# client 4's file holds client 3's credential
mkdir "$out/forged" && cp "$out"/creds/* "$out/forged/" && cp "$out/creds/client-3.credential" "$out/forged/client-4.credential"

addr=tcp://127.0.0.1:$(free_port)
timeout 120 "$fedc" server --plan "$out/p6" --listen "$addr" --rounds 2 --clients-per-round 6 --min-reports 5 \
  --credentials-key "$out/key" --out "$out/run" --report-deadline 8 --linger 1 >"$out/run.log" 2>&1 &
server=$!
expect 1 "the server refused: the credential is not client 5's" -- timeout 60 "$fedc" client --connect "$addr" \
  --data "$out/w6.json" --client 5 --token t --timeout 30
expect 1 "the server refused: the credential is not client 2's" -- timeout 60 "$fedc" client --connect "$addr" \
  --data "$out/w6.json" --client 2 --timeout 30
timeout 120 "$fedc" client --connect "$addr" --data "$out/w6.json" --client 5 --credential "$out/creds/client-5.credential" \
  --timeout 30 >"$out/c5.log" 2>&1 &
pids=$!
expect 1 "fleet: client 4: the server refused: the credential is not client 4's" -- timeout 120 "$fedc" fleet \
  --connect "$addr" --data "$out/w6.json" --clients 5 --credentials "$out/forged" --timeout 30
wait $pids && ok || bad "client 5 failed: $(cat "$out/c5.log")"
wait $server && ok || bad "the server failed: $(cat "$out/run.log")"
pids=""
grep -q "fedc client 5: done: 2 reports" "$out/c5.log" && ok || bad "client 5: $(cat "$out/c5.log")"
[ ! -e "$out/run/token" ] && ok || bad "a server with credentials wrote a token"
grep -q "refused client 4: the credential is not client 4's" "$out/run.log" && ok || bad "no refusal logged: $(cat "$out/run.log")"
[ "$(grep -c '"selected": 6, "reported": 5, "dropped": 1' "$out/run/metrics.jsonl")" = 2 ] && ok \
  || bad "metrics.jsonl: $(cat "$out/run/metrics.jsonl")"
python3 - "$out/run/metrics.jsonl" <<'PY' && ok || bad "unauthenticated and left out: $(cat "$out/run/metrics.jsonl")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
# the token, no credential and client 4's forged one, all in round 1; round 2 hears from no impostor
sys.exit(not ([r["unauthenticated"] for r in rows] == [3, 0] and all(r["left_out"] == [4] for r in rows)))
PY
FEDC_FAULT=$(replay "$out/run/metrics.jsonl") timeout 120 "$fedc" train --data "$out/w6.json" $ljob --rounds 2 \
  --clients-per-round 6 --checkpoint-every 2 --eval-every 0 --threads 1 --quiet --out "$out/train" >/dev/null 2>&1 && ok \
  || bad "fedc train failed"
same_bits "$out/run/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "the run without client 4 differs from fedc train's without it"

expect 1 "a token or per-client credentials (a credentials key), not both" -- "$fedc" server --plan "$out/p6" \
  --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 2 --out "$out/both" --token t \
  --credentials-key "$out/key"
expect 1 "cannot open the credentials key" -- "$fedc" server --plan "$out/p6" --listen "tcp://127.0.0.1:$(free_port)" \
  --rounds 1 --clients-per-round 2 --out "$out/nokey" --credentials-key "$out/no-such-key"
expect 2 "--issue-credentials needs --credentials-key and --out" -- "$fedc" server --issue-credentials 3 --out "$out/c3"

echo "deploy_credential.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
