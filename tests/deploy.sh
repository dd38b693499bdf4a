#!/bin/sh
# fedc plan / server / client / fleet as processes on this host (tcp://127.0.0.1
# only): a deployed FedAvg run on the CNN (with dropout) ends with the bits of
# fedc train on the same clients, seeds and rounds, with every client a process of
# its own (that come a second after the server, which round 1's seconds.wait
# shows), and again with the clients as a fleet (on the heart-disease silos when
# $FEDC_DATA or ../shared/data has them, plainly and with --secure-sum), and for Mime, FedNova, FedProx, FedSGD, MimeLite, HypCluster
# (without its warm start: tests/deploy_warm.sh deploys that),
# SCAFFOLD, FedDyn, DiLoCo and APFL;
# a client without the token is refused; a client killed
# mid-round and a straggler are dropped at the deadline (fedc train's bits with that
# client dropped); a server killed and restarted continues to the bits of an
# uninterrupted run (and refuses the checkpoint under a plan built again with another
# seed); over TLS with a self-signed certificate the bits are the same, and a client that
# does not trust it gets no answer; bad command
# lines and a damaged plan exit with their messages. Every process runs under
# timeout. Usage: deploy.sh path/to/fedc. Exits 77 (skipped) without python3,
# which writes the data and compares the checkpoints.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
out=$(mktemp -d)
trap 'kill -9 $server $slow 2>/dev/null; rm -rf "$out"' EXIT
server="" slow=""
. "$(dirname "$0")/expect.sh"


# Six EMNIST-shaped writers of 3 to 8 examples (LEAF JSON).
writers "$out/tiny.json" 6

job="--model cnn --batch-size 2 --seed 5 --client-lr 0.05"
expect 0 "plan $out/plan: fedavg on cnn" -- "$fedc" plan build --data "$out/tiny.json" $job --out "$out/plan"
expect 0 "population  6" -- "$fedc" plan check "$out/plan"
timeout 120 "$fedc" train --data "$out/tiny.json" $job --rounds 2 --clients-per-round 4 --checkpoint-every 2 \
  --eval-every 0 --threads 1 --quiet --out "$out/train" >/dev/null 2>&1 && ok || bad "fedc train failed"

# every client a process of its own
port=$(free_port)
addr=tcp://127.0.0.1:$port
timeout 120 "$fedc" server --plan "$out/plan" --listen "$addr" --rounds 2 --clients-per-round 4 --out "$out/srv" \
  --token s3cret --report-deadline 60 --linger 1 >"$out/server.log" 2>&1 &
server=$!
# the clients come a second after the server listens: round 1 waits that long for its first
# client (metrics' seconds.wait), round 2 not at all (its clients' check-ins are held)
for i in $(seq 50); do grep -q listening "$out/server.log" && break; sleep 0.1; done
sleep 1
pids=""
for c in 0 1 2 3 4 5; do
  timeout 120 "$fedc" client --connect "$addr" --data "$out/tiny.json" --client $c --token s3cret --timeout 30 \
    >"$out/client$c.log" 2>&1 &
  pids="$pids $!"
done
expect 1 "the server refused: invalid token" -- timeout 60 "$fedc" client --connect "$addr" --data "$out/tiny.json" \
  --token wrong --timeout 30
for p in $pids; do wait "$p" && ok || bad "a client process failed: $(cat "$out"/client*.log)"; done
wait $server && ok || bad "the server failed: $(cat "$out/server.log")"
same_bits "$out/srv/checkpoint.safetensors" "$out/train/checkpoint.safetensors" && ok \
  || bad "the deployed CNN run's bits differ from fedc train's"
[ "$(grep -c '"selected": 4, "reported": 4, "dropped": 0' "$out/srv/metrics.jsonl")" = 2 ] && ok \
  || bad "metrics.jsonl: $(cat "$out/srv/metrics.jsonl")"
python3 -c 'import json, sys
w = [json.loads(l)["seconds"]["wait"] for l in open(sys.argv[1])]
sys.exit(not (w[0] >= 0.8 and w[1] < 0.5))' "$out/srv/metrics.jsonl" && ok \
  || bad "seconds.wait: not about 1 s in round 1 and about 0 in round 2: $(cat "$out/srv/metrics.jsonl")"
grep -q "refused client 0: invalid token" "$out/server.log" && ok || bad "the server did not log the bad token"
grep -q "fedc client 0: ready, plan $(grep -o '^hash sha256 .\{16\}' "$out/plan/plan.txt" | cut -c13-)" "$out/client0.log" \
  && ok || bad "client 0 did not say it was ready: $(cat "$out/client0.log")"
expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/srv/checkpoint.safetensors" --data "$out/tiny.json" --model cnn

# the clients as a fleet, on the heart-disease silos
heart=${FEDC_DATA:-../shared/data}/heart-disease-uci # FEDC_DATA: ctest's fixture test_data
if [ -d $heart ]; then
  # and with the secure sum's arithmetic (docs/privacy.md): the clients upload its u32 words,
  # the server sums them modulo 2^32 and decodes: fedc train's bits again
  for h in h hs; do
  hjob="--model heart --batch-size 16 --seed 3"
  [ $h = hs ] && hjob="$hjob --secure-sum 16 --secure-bound 40"
  expect 0 "fedavg on heart" -- "$fedc" plan build --data $heart $hjob --out "$out/${h}plan"
  timeout 120 "$fedc" train --data $heart $hjob --rounds 3 --clients-per-round 3 --checkpoint-every 3 --eval-every 0 \
    --threads 1 --quiet --out "$out/${h}train" >/dev/null 2>&1 && ok || bad "fedc train ($h) failed"
  addr=tcp://127.0.0.1:$(free_port)
  timeout 120 "$fedc" server --plan "$out/${h}plan" --listen "$addr" --rounds 3 --clients-per-round 3 --out "$out/${h}srv" \
    --report-deadline 60 --linger 1 >"$out/${h}server.log" 2>&1 &
  server=$!
  for i in 1 2 3 4 5 6 7 8 9 10; do [ -s "$out/${h}srv/token" ] && break; sleep 0.2; done
  expect 0 "fedc fleet: done: 4 clients, 9 reports" -- timeout 120 "$fedc" fleet --connect "$addr" --data $heart \
    --clients 4 --token-file "$out/${h}srv/token" --timeout 30
  wait $server && ok || bad "the $h server failed: $(cat "$out/${h}server.log")"
  same_bits "$out/${h}srv/checkpoint.safetensors" "$out/${h}train/checkpoint.safetensors" && ok \
    || bad "the deployed $h run's bits differ from fedc train's"
  done
else
  echo "deploy.sh: $heart is absent: the fleet on the heart silos is not run"
  skipped=1
fi

# Other algorithms, as fleets: Mime and FedNova (two exchanges a round: a client keeps its values of
# the first for the second), FedProx, FedSGD, MimeLite, HypCluster (its clusters in the server
# state), SCAFFOLD, FedDyn, DiLoCo and APFL (state kept by each client from round to round), and
# AgnosticFedAvg (each client's meta/domain, found from its EMNIST writer id; or, with
# --client-domains FILE, from the plan's domains.txt): 3 rounds of 3 of the 6 clients (so some
# client is in two rounds) end with fedc train's bits
writers "$out/emnist.json" 6 emnist # writer ids of both of EMNIST's domains, for AgnosticFedAvg's meta/domain
printf 'client_id,domain\nw0,1\nw1,0\nw2,1\nw3,1\nw4,0\nw5,0\n' >"$out/domains.csv"
for alg in mime fednova fedprox fedsgd mimelite hypcluster scaffold feddyn diloco apfl agnostic_fedavg agnostic_file; do
  ajob="--model logistic --batch-size 2 --seed 4 --algorithm $alg"
  data="$out/tiny.json"
  [ $alg = agnostic_fedavg ] && data="$out/emnist.json" # each client finds its domain from its id
  [ $alg = agnostic_file ] && ajob="--model logistic --batch-size 2 --seed 4 --algorithm agnostic_fedavg \
    --client-domains $out/domains.csv" # the plan carries the domains
  [ $alg = diloco ] && ajob="$ajob --client-opt adam --client-lr 0.01" # its replicas keep Adam's state
  [ $alg = hypcluster ] && ajob="$ajob --set kmeans_init=0" # without its warm start (deploy_warm.sh runs it)
  "$fedc" plan build --data "$data" $ajob --out "$out/$alg.plan" >/dev/null 2>&1 || bad "$alg: plan build failed"
  timeout 120 "$fedc" train --data "$data" $ajob --rounds 3 --clients-per-round 3 --checkpoint-every 3 \
    --eval-every 0 --threads 1 --quiet --out "$out/$alg.train" >/dev/null 2>&1 || bad "$alg: fedc train failed"
  addr=tcp://127.0.0.1:$(free_port)
  timeout 120 "$fedc" server --plan "$out/$alg.plan" --listen "$addr" --rounds 3 --clients-per-round 3 \
    --out "$out/$alg.srv" --token t --report-deadline 60 --linger 1 >"$out/$alg.log" 2>&1 &
  server=$!
  timeout 120 "$fedc" fleet --connect "$addr" --data "$data" --clients 6 --token t --timeout 30 \
    >>"$out/$alg.log" 2>&1 || bad "$alg: the fleet failed: $(cat "$out/$alg.log")"
  wait $server || bad "$alg: the server failed: $(cat "$out/$alg.log")"
  same_bits "$out/$alg.srv/checkpoint.safetensors" "$out/$alg.train/checkpoint.safetensors" && ok \
    || bad "$alg: the deployed run's bits differ from fedc train's"
done

# the domains were used: without the file every client of tiny.json is in domain 0, another run
timeout 120 "$fedc" train --data "$out/tiny.json" --model logistic --batch-size 2 --seed 4 --algorithm agnostic_fedavg \
  --rounds 3 --clients-per-round 3 --checkpoint-every 3 --eval-every 0 --threads 1 --quiet --out "$out/nodomains" \
  >/dev/null 2>&1 || bad "agnostic_fedavg without domains: fedc train failed"
same_bits "$out/agnostic_file.train/checkpoint.safetensors" "$out/nodomains/checkpoint.safetensors" \
  && bad "agnostic_fedavg: the domains file changed nothing" || ok
grep -q "^domains domains.txt$" "$out/agnostic_file.plan/plan.txt" && grep -q "^w3,1$" "$out/agnostic_file.plan/domains.txt" \
  && ok || bad "the plan does not carry the domains: $(cat "$out/agnostic_file.plan/plan.txt")"
sed -i 's/^w3,1$/w3,0/' "$out/agnostic_file.plan/domains.txt" # a client moved to another domain: not this plan
expect 1 "but plan.txt says" -- "$fedc" plan check "$out/agnostic_file.plan"

# Faults, on a logistic model (quick): ljob's plan, rounds of all 6 clients.
ljob="--model logistic --batch-size 2 --seed 9"
expect 0 "fedavg on logistic" -- "$fedc" plan build --data "$out/tiny.json" $ljob --out "$out/lplan"
# train_dropping C OUT: fedc train's round 1 with client C dropped (its data fail to load)
train_dropping() {
  FEDC_FAULT=load:1:$1 timeout 120 "$fedc" train --data "$out/tiny.json" $ljob --rounds 1 --clients-per-round 6 \
    --checkpoint-every 1 --eval-every 0 --threads 1 --quiet --out "$2" >/dev/null 2>&1 && ok || bad "fedc train failed"
}
# fault_run NAME SLOW_CLIENT SLOW_SECONDS: a round of 6 with a 4 s deadline, client SLOW_CLIENT slowed down
fault_run() {
  addr=tcp://127.0.0.1:$(free_port)
  timeout 120 "$fedc" server --plan "$out/lplan" --listen "$addr" --rounds 1 --clients-per-round 6 --out "$out/$1" \
    --token t --report-deadline 4 --linger 8 >"$out/$1.log" 2>&1 &
  server=$!
  pids=""
  for c in 0 1 2 3 4 5; do
    if [ $c = "$2" ]; then
      FEDC_FAULT=slow:$3 "$fedc" client --connect "$addr" --data "$out/tiny.json" --client $c --token t --timeout 30 \
        --max-seconds 60 >"$out/$1.slow.log" 2>&1 &
      slow=$!
    else
      timeout 60 "$fedc" client --connect "$addr" --data "$out/tiny.json" --client $c --token t --timeout 30 \
        >/dev/null 2>&1 &
      pids="$pids $!"
    fi
  done
}
# a client killed mid-round (after its task, before its report): the round commits without it at
# the deadline, with fedc train's bits for the round without that client
train_dropping 2 "$out/ktrain"
fault_run killed 2 60
held "$out/killed.slow.log"
kill -9 $slow
for p in $pids; do wait "$p" || bad "a client process failed"; done
wait $server && ok || bad "the server failed: $(cat "$out/killed.log")"
grep -q '"selected": 6, "reported": 5, "dropped": 1' "$out/killed/metrics.jsonl" && ok \
  || bad "metrics.jsonl: $(cat "$out/killed/metrics.jsonl")"
same_bits "$out/killed/checkpoint.safetensors" "$out/ktrain/checkpoint.safetensors" && ok \
  || bad "the run without the killed client differs from fedc train's without it"
# a straggler slower than the deadline: ignored; its late report is turned away (its ready is
# answered with a reject), and it ends when told
train_dropping 5 "$out/strain"
fault_run straggler 5 7
for p in $pids; do wait "$p" || bad "a client process failed"; done
wait $slow && ok || bad "the straggler failed: $(cat "$out/straggler.slow.log")"
wait $server && ok || bad "the server failed: $(cat "$out/straggler.log")"
grep -q '"reported": 5, "dropped": 1' "$out/straggler/metrics.jsonl" && ok || bad "straggler metrics"
grep -q "fedc client 5: round 1: the server wants no report: not an open slot" "$out/straggler.slow.log" && ok \
  || bad "the late report was not turned away: $(cat "$out/straggler.slow.log")"
same_bits "$out/straggler/checkpoint.safetensors" "$out/strain/checkpoint.safetensors" && ok \
  || bad "the run without the straggler differs from fedc train's without it"
# the server killed (SIGKILL) once round 1 is committed, and started again with the same command:
# it keeps the token it made, the fleet carries on, and the run ends with the bits of an
# uninterrupted fedc train
timeout 120 "$fedc" train --data "$out/tiny.json" $ljob --rounds 4 --clients-per-round 3 --checkpoint-every 4 \
  --eval-every 0 --threads 1 --quiet --out "$out/rtrain" >/dev/null 2>&1 && ok || bad "fedc train failed"
addr=tcp://127.0.0.1:$(free_port)
"$fedc" server --plan "$out/lplan" --listen "$addr" --rounds 4 --clients-per-round 3 --out "$out/restart" \
  --report-deadline 60 --linger 1 >>"$out/restart.log" 2>&1 &
server=$!
for i in $(seq 1 100); do [ -s "$out/restart/token" ] && break; sleep 0.05; done
# (each task held 0.3 s, so that rounds 2 to 4 cannot all commit between the poll and the kill on a
# loaded machine; the hold changes no bits)
FEDC_FAULT=slow:0.3 timeout 120 "$fedc" fleet --connect "$addr" --data "$out/tiny.json" --clients 6 \
  --token-file "$out/restart/token" --timeout 30 >"$out/rfleet.log" 2>&1 &
fleet=$!
for i in $(seq 1 500); do [ -s "$out/restart/metrics.jsonl" ] && break; sleep 0.01; done
kill -9 $server
wait $server 2>/dev/null
timeout 120 "$fedc" server --plan "$out/lplan" --listen "$addr" --rounds 4 --clients-per-round 3 --out "$out/restart" \
  --report-deadline 60 --linger 1 >>"$out/restart.log" 2>&1 && ok || bad "the restarted server failed"
grep -q "token in $out/restart/token (kept)" "$out/restart.log" && ok || bad "the restarted server made a new token"
wait $fleet && ok || bad "the fleet failed: $(cat "$out/rfleet.log")"
grep -Eq "resumed from $out/restart/checkpoint.safetensors at round [234]$" "$out/restart.log" && ok \
  || bad "the server did not resume: $(cat "$out/restart.log")"
same_bits "$out/restart/checkpoint.safetensors" "$out/rtrain/checkpoint.safetensors" && ok \
  || bad "the restarted run differs from fedc train's"
# the same job built again with another seed: the same programs (the plan's hash), other settings;
# its server refuses the checkpoint rather than go on under them, and leaves it as it was
"$fedc" plan build --data "$out/tiny.json" --model logistic --batch-size 2 --seed 10 --out "$out/lplan10" >/dev/null \
  && ok || bad "plan build (seed 10) failed"
[ "$(grep '^hash' "$out/lplan10/plan.txt")" = "$(grep '^hash' "$out/lplan/plan.txt")" ] && ok \
  || bad "the seed changed the programs' hash: this check no longer tests the settings"
cp "$out/restart/checkpoint.safetensors" "$out/restart.kept"
expect 1 "under other settings" -- timeout 60 "$fedc" server --plan "$out/lplan10" \
  --listen "tcp://127.0.0.1:$(free_port)" --rounds 5 --clients-per-round 3 --out "$out/restart"
cmp -s "$out/restart/checkpoint.safetensors" "$out/restart.kept" && ok || bad "the refused checkpoint was changed"

# TLS (tls+tcp://) with a self-signed certificate made here: the fleet verifies the server with it
# and gets the bits of the uninterrupted run above; a client that trusts another certificate, or
# none, gets no answer
if command -v openssl >/dev/null; then
  for name in server other; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=127.0.0.1" \
      -addext "subjectAltName=DNS:127.0.0.1,IP:127.0.0.1" -keyout "$out/$name.key" -out "$out/$name.pem" 2>/dev/null
  done
  addr=tls+tcp://127.0.0.1:$(free_port)
  timeout 120 "$fedc" server --plan "$out/lplan" --listen "$addr" --rounds 4 --clients-per-round 3 --out "$out/tls" \
    --token t --tls-cert "$out/server.pem" --tls-key "$out/server.key" --report-deadline 60 --linger 1 \
    >"$out/tls.log" 2>&1 &
  server=$!
  expect 1 "no connection to or answer from the server at $addr within 2000 ms" -- timeout 60 "$fedc" client \
    --connect "$addr" --data "$out/tiny.json" --token t --tls-ca "$out/other.pem" --timeout 2
  expect 1 "a TLS address needs the certificate to verify the server with (--tls-ca)" -- "$fedc" client \
    --connect "$addr" --data "$out/tiny.json" --token t
  expect 0 "fedc fleet: done: 6 clients, 12 reports" -- timeout 120 "$fedc" fleet --connect "$addr" \
    --data "$out/tiny.json" --clients 6 --token t --tls-ca "$out/server.pem" --timeout 30
  wait $server && ok || bad "the TLS server failed: $(cat "$out/tls.log")"
  same_bits "$out/tls/checkpoint.safetensors" "$out/rtrain/checkpoint.safetensors" && ok \
    || bad "the run over TLS differs from fedc train's"
  expect 1 "a TLS address needs a certificate and its key (--tls-cert, --tls-key)" -- "$fedc" server \
    --plan "$out/lplan" --listen "$addr" --rounds 1 --clients-per-round 1 --out "$out/tls2"
  expect 1 "TLS options need a tls+tcp:// address" -- "$fedc" server --plan "$out/lplan" \
    --listen "tcp://127.0.0.1:$(free_port)" --rounds 1 --clients-per-round 1 --out "$out/tls3" \
    --tls-cert "$out/server.pem" --tls-key "$out/server.key"
else
  echo "deploy.sh: openssl is absent: TLS is not tested"
fi

# bad command lines and a damaged plan
expect 2 "needs --plan, --listen, --rounds, --clients-per-round and --out" -- "$fedc" server --plan "$out/plan"
expect 2 "unknown option '--bogus'" -- "$fedc" client --connect "$addr" --data x --bogus 1
expect 2 "and no --clients (that is fedc fleet's)" -- "$fedc" client --connect "$addr" --data x --clients 3
expect 2 "--clients needs" -- "$fedc" fleet --connect "$addr" --data x --clients 0
expect 2 "needs --out PLAN" -- "$fedc" plan build --data "$out/tiny.json"
printf 'client_id,domain\nw0,1\n' >"$out/domains1.csv"
expect 1 "no domain for client \"w1\"" -- "$fedc" plan build --data "$out/tiny.json" \
  --algorithm agnostic_fedavg --client-domains "$out/domains1.csv" --out "$out/agnostic"
sed -i 's/^setting seed 5$/setting seed 6/' "$out/plan/plan.txt"
expect 0 "seed        6" -- "$fedc" plan check "$out/plan"
printf 'x' >>"$out/plan/0_client_work.fedc"
expect 1 "but plan.txt says" -- "$fedc" plan check "$out/plan"
expect 1 "plan.txt: cannot open" -- "$fedc" plan check "$out/none"
expect 1 "cannot open" -- timeout 60 "$fedc" server --plan "$out/none" --listen "tcp://127.0.0.1:$(free_port)" \
  --rounds 1 --clients-per-round 1 --out "$out/s2"

echo "deploy.sh: $passed passed, $failed failed"
[ "$failed" = 0 ] || exit 1
[ -z "${skipped:-}" ] || exit 77 # not all run: SKIP, not a pass
