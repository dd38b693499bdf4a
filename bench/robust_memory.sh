#!/bin/sh
# Peak memory of a `fedc train` round with a robust aggregator (issue 38): by
# default the coordinate median over a cohort of C clients with no budget (every
# update held) and with memory=MB (the rest spilled to a temporary file), against
# the mean, which streams. Each client's update streams into the aggregator's
# store as the client finishes (docs/privacy.md, "Byzantine-robust aggregation"),
# so with a budget the peak is the mean's plus the budget; without one it grows by
# an update a client. ALIE and IPM are made in that store, for the mean too: with
# ATTACK=alie, compare mean against mean:memory=MB. The model is
# stackoverflow_lstm with a vocabulary of 2,000 (an update of about 10 MB), on
# synthetic Stack Overflow-like data, or with MODEL=cnn the CIFAR-10 CNN (6.5 MB)
# on synthetic images; one round of one step.
#
#   bench/robust_memory.sh [clients...]      (default 100)
#   ATTACK=alie MODEL=cnn AGGREGATORS="mean mean:memory=64" bench/robust_memory.sh 100 200
#
# Environment: FEDC (./build/fedc), MB (the budget, 8), OUT (a temporary directory), ATTACK
# (an attack for every run, e.g. alie or ipm, made by 20% of the clients; none by default),
# MODEL (stackoverflow_lstm or cnn), AGGREGATORS (the --aggregator specs, one column each;
# default "mean median median:memory=MB").
# Needs GNU time (/usr/bin/time: Debian's time, scripts/install-bench-deps).
set -eu
cd "$(dirname "$0")/.."
FEDC=${FEDC:-./build/fedc}
MB=${MB:-8}
MODEL=${MODEL:-stackoverflow_lstm}
AGGREGATORS=${AGGREGATORS:-"mean median median:memory=$MB"}
[ -x /usr/bin/time ] || { echo "robust_memory.sh: needs /usr/bin/time (Debian: time)" >&2; exit 2; }
out=${OUT:-$(mktemp -d)}
[ $# -gt 0 ] || set -- 100
attack=
[ -z "${ATTACK:-}" ] || attack="--attack $ATTACK --attackers 0.2"
peak() { # AGGREGATOR CLIENTS: the run's peak RSS in MiB, and its seconds
  rm -rf "$out/run"
  if [ "$MODEL" = cnn ]; then task="--data synthetic:cifar10:$(($2 * 2)):4 --model cnn"
  else task="--data synthetic:zipf:$(($2 * 2)):4 --model stackoverflow_lstm --vocab-size 2000"; fi
  /usr/bin/time -f '%M %e' -o "$out/rss" "$FEDC" train $task --rounds 1 --clients-per-round "$2" --batch-size 4 \
    --steps 1 --eval-every 0 --threads 2 --quiet --aggregator "$1" $attack --out "$out/run" >/dev/null 2>"$out/err" ||
    { cat "$out/err" >&2; exit 1; }
  awk '{ printf "%d | %.1f", $1 / 1024, $2 }' "$out/rss"
}
header="| clients |" rule="| --- |"
for agg in $AGGREGATORS; do header="$header $agg: peak RSS (MiB) | s |" rule="$rule --- | --- |"; done
echo "$header"
echo "$rule"
for n in "$@"; do
  row="| $n |"
  for agg in $AGGREGATORS; do row="$row $(peak "$agg" "$n") |"; done
  echo "$row"
done
