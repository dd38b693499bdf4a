#!/bin/sh
# Peak memory of a `fedc train` round with a robust aggregator (issue 38): the
# coordinate median over a cohort of C clients with no budget (every update held)
# and with memory=MB (the rest spilled to a temporary file), against the mean,
# which streams. Each client's update streams into the aggregator's store as the
# client finishes (docs/privacy.md, "Byzantine-robust aggregation"), so with a
# budget the peak is the mean's plus the budget; without one it grows by an update
# a client. The model is stackoverflow_lstm with a vocabulary of 2,000 (an update
# of about 10 MB), on synthetic Stack Overflow-like data; one round of one step.
#
#   bench/robust_memory.sh [clients...]      (default 100)
#
# Environment: FEDC (./build/fedc), MB (the budget, 8), OUT (a temporary directory), ATTACK
# (an attack for every run, e.g. alie or ipm, made by 20% of the clients; none by default).
# Needs GNU time (/usr/bin/time: Debian's time, scripts/install-bench-deps).
set -eu
cd "$(dirname "$0")/.."
FEDC=${FEDC:-./build/fedc}
MB=${MB:-8}
[ -x /usr/bin/time ] || { echo "robust_memory.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
[ $# -gt 0 ] || set -- 100
attack=
[ -z "${ATTACK:-}" ] || attack="--attack $ATTACK --attackers 0.2"
peak() { # AGGREGATOR CLIENTS: the run's peak RSS in MiB, and its seconds
  rm -rf "$out/run"
  /usr/bin/time -f '%M %e' -o "$out/rss" "$FEDC" train --data "synthetic:zipf:$(($2 * 2)):4" \
    --model stackoverflow_lstm --vocab-size 2000 --rounds 1 --clients-per-round "$2" --batch-size 4 --steps 1 \
    --eval-every 0 --threads 2 --quiet --aggregator "$1" $attack --out "$out/run" >/dev/null
  awk '{ printf "%d | %.1f", $1 / 1024, $2 }' "$out/rss"
}
echo "| clients | mean: peak RSS (MiB) | s | median, no budget (MiB) | s | median:memory=$MB (MiB) | s |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for n in "$@"; do
  echo "| $n | $(peak mean "$n") | $(peak median "$n") | $(peak "median:memory=$MB" "$n") |"
done
