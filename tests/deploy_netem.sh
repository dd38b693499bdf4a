#!/bin/sh
# The deployment over bad links: the server and its clients on separate network namespaces
# ("hosts"), each host's link to the server impaired by tests/netem.py (netem's impairments in user
# space; netem_lib.sh), on a logistic model, 8 clients, 2 on each of 4 hosts, 2 rounds of all 8.
# Job 1: host 0's link delayed 50 to 450 ms (250 +- 200, reordering as it jitters), host 1's
# losing 5% of its packets, host 2's reordering 25% (the rest 50 ms late), host 3's capped at
# 3 Mbit/s: every client reports in both rounds, nothing is dropped or counted twice, and the
# model has fedc train's bits. Job 2: host 0's link (1 Mbit/s) cut for 2 s while its clients
# upload, then restored: their uploads go through and are counted once; hosts 2 and 3 partitioned
# off while they hold their round-1 tasks, until round 1 commits: given up for their missed
# heartbeats (metrics: dropped 4, missed_heartbeats 4, left_out their 4 clients), their late
# reports unwanted (the server says so when they ask to upload), back in round 2; the model has
# fedc train's bits without them in round 1.
# Every process runs under timeout. Usage: deploy_netem.sh path/to/fedc. Exits 77 (skipped)
# without python3, root (or CAP_NET_ADMIN), ip netns or TUN.
set -u
fedc=$1
. "$(dirname "$0")/deploy_lib.sh" # exits 77 without python3
. "$(dirname "$0")/netem_lib.sh"
netem_begin # exits 77 where namespaces cannot be made
netem_star 4

writers "$out/w8.json" 8
ljob="--model logistic --batch-size 2 --seed 9"
"$fedc" plan build --data "$out/w8.json" $ljob --out "$out/plan" >/dev/null && ok || bad "plan build failed"
# field METRICS KEY: KEY of each row, one a line
field() { python3 -c 'import json, sys
for l in open(sys.argv[1]): print(json.dumps(json.loads(l)[sys.argv[2]]))' "$1" "$2"; }

# job NAME [FAULT_HOST0 [FAULT_HOST2_3]]: a server on the server's namespace and clients 2i and
# 2i+1 on host i (under FEDC_FAULT=FAULT..., if given), 2 rounds of 8; their pids in $pids
job() {
  addr=tcp://10.77.0.1:$(free_port)
  timeout 120 ip netns exec "$srv_ns" "$fedc" server --plan "$out/plan" --listen "$addr" --rounds 2 \
    --clients-per-round 8 --out "$out/$1" --token t --report-deadline 60 --heartbeat 0.5 --heartbeat-timeout 8 \
    --linger 2 >"$out/$1.log" 2>&1 &
  server=$!
  pids=""
  for c in 0 1 2 3 4 5 6 7; do
    h=$((c / 2))
    eval hns=\$host_ns$h
    fault=""
    [ $h = 0 ] && fault=${2:-}
    [ $h -ge 2 ] && fault=${3:-}
    FEDC_FAULT=$fault timeout 120 ip netns exec "$hns" "$fedc" client --connect "$addr" --data "$out/w8.json" \
      --client $c --token t --timeout 30 >"$out/$1.c$c.log" 2>&1 &
    pids="$pids $!"
  done
}
# finish NAME: every client and the server ended well
finish() {
  for p in $pids; do wait $p || bad "$1: a client failed: $(cat "$out/$1".c*.log)"; done
  wait $server && ok || bad "$1: the server failed: $(cat "$out/$1.log")"
  pids="" server=""
}
# bits NAME [FAULT]: the run has fedc train's bits (FEDC_FAULT=FAULT: the clients it left out dropped)
bits() {
  FEDC_FAULT=${2:-} timeout 120 "$fedc" train --data "$out/w8.json" $ljob --rounds 2 --clients-per-round 8 \
    --checkpoint-every 2 --eval-every 0 --threads 1 --quiet --out "$out/$1.train" >/dev/null 2>&1 \
    && ok || bad "fedc train ($1) failed"
  same_bits "$out/$1/checkpoint.safetensors" "$out/$1.train/checkpoint.safetensors" && ok \
    || bad "$1: the deployed run differs from fedc train's: $(cat "$out/$1/metrics.jsonl")"
}

# job 1: delay with jitter, loss, reordering, a rate cap, one on each host's link
netem_link 0 "delay=250 jitter=200"
netem_link 1 "loss=5 delay=20"
netem_link 2 "reorder=25 delay=50"
netem_link 3 "rate=3000"
job slow
finish slow
[ "$(grep -c '"selected": 8, "reported": 8, "dropped": 0, "refused": 0, "duplicates": 0' "$out/slow/metrics.jsonl")" = 2 ] \
  && ok || bad "slow links: not all 8 reported, once each, in both rounds: $(cat "$out/slow/metrics.jsonl")"
bits slow
# the emulator did drop host 1's packets, and only those
python3 - "$out" <<'PY' && ok || bad "the links' packet counts: $(cat "$out"/stats.*)"
import sys
s = [dict(w.split("=") for w in open("%s/stats.%d" % (sys.argv[1], i)).read().split()) for i in range(4)]
sys.exit(not (int(s[1]["dropped"]) > 0 and all(int(s[i]["dropped"]) == 0 and int(s[i]["sent"]) > 0 for i in (0, 2, 3))))
PY

# job 2: a link cut mid-upload and restored; a partition of half the hosts for a round
netem_link 0 "rate=1000"
netem_link 1 ""
netem_link 2 ""
netem_link 3 ""
job cut slow:1 slow:5
held "$out/cut.c4.log" "$out/cut.c5.log" "$out/cut.c6.log" "$out/cut.c7.log"
netem_link 2 "down=1"     # within their 5 s hold: no report of theirs is through
netem_link 3 "down=1"
held "$out/cut.c0.log" "$out/cut.c1.log"
sleep 1.3                # host 0's clients: their 1 s hold over, their uploads (195 KB at 1 Mbit/s) under way
netem_link 0 "rate=1000 down=1"
sleep 2
netem_link 0 "rate=1000"
for i in $(seq 1 300); do [ -s "$out/cut/metrics.jsonl" ] && break; sleep 0.1; done # round 1 committed
netem_link 2 ""
netem_link 3 ""
finish cut
[ "$(field "$out/cut/metrics.jsonl" left_out | tr -d ' ' | tr '\n' ' ')" = "[4,5,6,7] [] " ] && ok \
  || bad "the partition: left out $(field "$out/cut/metrics.jsonl" left_out)"
[ "$(field "$out/cut/metrics.jsonl" missed_heartbeats | tr '\n' ' ')" = "4 0 " ] && ok \
  || bad "the partitioned clients were not given up for their heartbeats: $(cat "$out/cut/metrics.jsonl")"
[ "$(field "$out/cut/metrics.jsonl" duplicates | tr '\n' ' ')" = "0 0 " ] && ok \
  || bad "a report counted twice: $(cat "$out/cut/metrics.jsonl")"
for c in 4 5 6 7; do
  grep -q "client $c (slot .*) not heard from for 8 s: given up" "$out/cut.log" && ok || bad "client $c's give-up not logged: $(cat "$out/cut.log")"
done
# back on the network, each asks whether to upload its round-1 report: the server wants none
for c in 4 5 6 7; do
  grep -q "fedc client $c: round 1: the server wants no report: not an open slot of this client's" "$out/cut.c$c.log" \
    && grep -q "fedc client $c: done: 1 reports" "$out/cut.c$c.log" && ok \
    || bad "client $c, partitioned off in round 1: $(cat "$out/cut.c$c.log")"
done
for c in 0 1; do
  grep -q "fedc client $c: done: 2 reports" "$out/cut.c$c.log" && ok || bad "client $c behind the cut link: $(cat "$out/cut.c$c.log")"
done
# the cut did land on traffic: host 0's link dropped packets (it dropped none in job 1)
[ "$(sed 's/.*dropped=//' "$out/stats.0")" -gt 0 ] && ok || bad "the cut dropped nothing: $(cat "$out/stats.0")"
[ "$(replay "$out/cut/metrics.jsonl")" = "load:1:4,5,6,7" ] && ok || bad "replay: $(replay "$out/cut/metrics.jsonl")"
bits cut "$(replay "$out/cut/metrics.jsonl")"

echo "deploy_netem.sh: $passed passed, $failed failed"
[ "$failed" = 0 ]
