#!/bin/sh
# Peak memory of `fedc train` with per-client state (SCAFFOLD's c_i) from 1,000 to 100,000
# clients (issue 15: flat, <= 1.1x), against the same job with FedAvg, which keeps none: the
# difference is what the state costs in memory. The data are synthetic Stack Overflow-like token
# sequences (synthetic:zipf, 4 examples a client, held in memory: the part of the peak that grows
# with the clients, the same for both algorithms); the model transformer:tiny with a vocabulary
# of 100 (a small model: 31,408-byte records); 20 rounds of 10 clients.
#
#   bench/client_state_train.sh [clients...]      (default 1000 10000 100000)
#
# Environment: FEDC (./build/fedc), OUT (a temporary directory). Needs GNU time (/usr/bin/time:
# Debian's time, scripts/install-bench-deps).
set -eu
cd "$(dirname "$0")/.."
FEDC=${FEDC:-./build/fedc}
[ -x /usr/bin/time ] || { echo "client_state_train.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
[ $# -gt 0 ] || set -- 1000 10000 100000
peak() { # ALG CLIENTS: the run's peak RSS in KiB
  rm -rf "$out/run"
  /usr/bin/time -f '%M' -o "$out/rss" "$FEDC" train --data "synthetic:zipf:$2:4" --model transformer:tiny \
    --vocab-size 100 --algorithm "$1" --rounds 20 --clients-per-round 10 --batch-size 4 --eval-every 0 \
    --eval-clients 10 --threads 1 --quiet --out "$out/run" >/dev/null
  cat "$out/rss"
}
echo "| clients | fedavg peak RSS (MiB) | scaffold peak RSS (MiB) | scaffold - fedavg (MiB) | client_state.fcs apparent / on disk |"
echo "| --- | --- | --- | --- | --- |"
first=""
for n in "$@"; do
  a=$(peak fedavg "$n")
  s=$(peak scaffold "$n")
  size=$(du -h --apparent-size "$out/run/client_state.fcs" | cut -f1)/$(du -h "$out/run/client_state.fcs" | cut -f1)
  d=$((s - a))
  [ -n "$first" ] || first=$d
  awk -v n="$n" -v a="$a" -v s="$s" -v d="$d" -v f="$first" -v size="$size" \
    'BEGIN { printf "| %s | %.1f | %.1f | %.1f (%.2fx the first) | %s |\n", n, a / 1024, s / 1024, d / 1024, d / f, size }'
done
[ -n "${OUT:-}" ] || rm -rf "$out"
