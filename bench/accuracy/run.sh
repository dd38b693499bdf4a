#!/bin/sh
# The accuracy benchmark (issue 5): fedc against a PyTorch implementation of the same job
# (bench/accuracy/fedavg_torch.py) on FEMNIST-LEAF, then a table of the final test accuracies
# and the training speed of each. Record the figures in docs/accuracy.md.
#
#   bench/accuracy/run.sh [ROUNDS [SEEDS]] [--fashion]
#
# ROUNDS (default 100) rounds of FedAvg for seeds 0..SEEDS-1 (default 3), then one FedAdam run
# (seed 0), each job once with fedc and once with PyTorch, alternating. --fashion adds
# Fashion-MNIST split over 100 clients by Dirichlet(0.5) with `make demo`'s settings, FedAvg and
# FedAdam, ROUNDS rounds each (long: 600,000 examples a run). Each run's log and metrics go to
# $OUT/<run> (default out/accuracy); with REUSE=1 a run whose log already ends in a result is not
# run again. Environment: FEDC (./build/fedc), PYTHON (/usr/bin/python3: Debian's python3-torch,
# see scripts/install-bench-deps), DATA (../shared/data/femnist-leaf), THREADS (2).
set -eu
cd "$(dirname "$0")/../.."

rounds=100 seeds=3 fashion=0 npos=0
for arg in "$@"; do
  case $arg in
    --fashion) fashion=1 ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "run.sh: unknown option $arg" >&2; exit 2 ;;
    *) npos=$((npos + 1))
       case $npos in 1) rounds=$arg ;; 2) seeds=$arg ;; *) echo "run.sh: too many arguments" >&2; exit 2 ;; esac ;;
  esac
done

FEDC=${FEDC:-./build/fedc}
PYTHON=${PYTHON:-/usr/bin/python3}
DATA=${DATA:-../shared/data/femnist-leaf}
THREADS=${THREADS:-2}
OUT=${OUT:-out/accuracy}
FASHION=${FASHION:-/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz}
TORCH=bench/accuracy/fedavg_torch.py
mkdir -p "$OUT"
results="$OUT/results.tsv"
if [ "${REUSE:-0}" != 1 ] || [ ! -f "$results" ]; then : >"$results"; fi

[ -x "$FEDC" ] || { echo "run.sh: $FEDC not found (make build)" >&2; exit 2; }
"$PYTHON" -c 'import torch, numpy' 2>/dev/null ||
  { echo "run.sh: $PYTHON cannot import torch and numpy (scripts/install-bench-deps)" >&2; exit 2; }

# FedAdam: Reddi et al.'s EMNIST CNN settings (client lr 10^-1.5, server lr 10^-2.5, eps 10^-4)
ADAM_FEDC="--server-opt adam --server-lr 0.0031623 --server-eps 0.0001 --client-lr 0.031623"
ADAM_TORCH="--server-opt adam --server-lr 0.0031623 --eps 0.0001 --client-lr 0.031623"

# record JOB IMPL SEED LOG: appends "job impl seed accuracy% examples/s seconds" to results.tsv
record() {
  if [ "$2" = fedc ]; then
    line=$(grep '^done:' "$4" | tail -1)
    acc=$(printf '%s' "$line" | sed -n 's/.*test accuracy \([0-9.]*\)%.*/\1/p')
  else
    line=$(grep '^done:' "$4" | tail -1)
    acc=$(sed -n 's/^final accuracy \([0-9.]*\)$/\1/p' "$4" | tail -1)
  fi
  eps=$(printf '%s' "$line" | sed -n 's/.*(\([0-9.]*\) examples\/s).*/\1/p')
  secs=$(printf '%s' "$line" | sed -n 's/.* rounds in \([0-9.]*\) s .*/\1/p')
  if [ -z "$acc" ] || [ -z "$eps" ]; then
    echo "run.sh: no result in $4" >&2
    tail -5 "$4" >&2
    exit 1
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$acc" "$eps" "$secs" >>"$results"
  echo "  -> accuracy $acc%, $eps examples/s, $secs s"
}

# run JOB IMPL SEED ARGS...: one training run, its output in $OUT/JOB-IMPL-sSEED.log
run() {
  job=$1 impl=$2 seed=$3
  shift 3
  name="$job-$impl-s$seed"
  log="$OUT/$name.log"
  if [ "${REUSE:-0}" = 1 ] && grep -q '^done:' "$log" 2>/dev/null; then
    echo "== $name: reusing $log"
    grep -q "^$job	$impl	$seed	" "$results" || record "$job" "$impl" "$seed" "$log"
    return
  fi
  if [ "$impl" = fedc ]; then
    set -- "$FEDC" train "$@" --seed "$seed" --threads "$THREADS" --out "$OUT/$name"
  else
    set -- "$PYTHON" "$TORCH" "$@" --seed "$seed" --threads "$THREADS" --out "$OUT/$name"
  fi
  echo "== $name ($(date -u +%H:%M:%S)): $*"
  "$@" >"$log" 2>&1 || { echo "run.sh: $name failed:" >&2; tail -5 "$log" >&2; exit 1; }
  record "$job" "$impl" "$seed" "$log"
}

FEMNIST_FEDC="--data $DATA/train --test-data $DATA/test --model cnn --algorithm fedavg --rounds $rounds
  --clients-per-round 10 --batch-size 20 --epochs 1 --eval-every 10"
FEMNIST_TORCH="--data $DATA/train --test-data $DATA/test --rounds $rounds --clients-per-round 10
  --batch-size 20 --epochs 1 --eval-every 10"
FASHION_FEDC="--data $FASHION --partition dirichlet:0.5 --num-clients 100 --model cnn --algorithm fedavg
  --rounds $rounds --clients-per-round 10 --batch-size 20 --epochs 1 --eval-every 10"
FASHION_TORCH="--data $FASHION --partition dirichlet:0.5 --num-clients 100 --rounds $rounds
  --clients-per-round 10 --batch-size 20 --epochs 1 --eval-every 10"

echo "accuracy benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo |
  cut -d: -f2 | sed 's/^ *//'); $("$PYTHON" -c 'import torch; print("torch", torch.__version__)'))"
echo "logs and metrics: $OUT"
s=0
while [ "$s" -lt "$seeds" ]; do
  # shellcheck disable=SC2086
  run femnist-fedavg fedc "$s" $FEMNIST_FEDC --client-lr 0.1 --server-lr 1
  # shellcheck disable=SC2086
  run femnist-fedavg torch "$s" $FEMNIST_TORCH --client-lr 0.1 --server-lr 1
  s=$((s + 1))
done
# shellcheck disable=SC2086
run femnist-fedadam fedc 0 $FEMNIST_FEDC $ADAM_FEDC
# shellcheck disable=SC2086
run femnist-fedadam torch 0 $FEMNIST_TORCH $ADAM_TORCH
if [ "$fashion" = 1 ]; then
  # shellcheck disable=SC2086
  run fashion-fedavg fedc 0 $FASHION_FEDC --client-lr 0.05 --server-lr 1
  # shellcheck disable=SC2086
  run fashion-fedavg torch 0 $FASHION_TORCH --client-lr 0.05 --server-lr 1
  # shellcheck disable=SC2086
  run fashion-fedadam fedc 0 $FASHION_FEDC $ADAM_FEDC
  # shellcheck disable=SC2086
  run fashion-fedadam torch 0 $FASHION_TORCH $ADAM_TORCH
fi

echo
echo "final test accuracy after $rounds rounds (fedc - PyTorch in points; examples/s of training)"
awk -F'\t' -v rounds="$rounds" '
  { key = $1 SUBSEP $3; acc[$2, key] = $4; eps[$2, key] = $5
    if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  function row(label, a, b, ea, eb) {
    printf "| %s | %s | %s | %s | %s | %s |\n", label, a == "" ? "-" : sprintf("%.2f%%", a),
      b == "" ? "-" : sprintf("%.2f%%", b), (a == "" || b == "") ? "-" : sprintf("%+.2f", a - b),
      ea == "" ? "-" : sprintf("%.0f", ea), eb == "" ? "-" : sprintf("%.0f", eb)
  }
  END {
    print "| run | fedc | PyTorch | fedc - PyTorch | fedc ex/s | PyTorch ex/s |"
    print "| --- | --- | --- | --- | --- | --- |"
    for (i = 1; i <= n; i++) {
      split(order[i], k, SUBSEP); job = k[1]
      if (job != last && last != "" && cnt[last] > 1) mean(last)
      a = acc["fedc", order[i]]; b = acc["torch", order[i]]
      row(job " seed " k[2], a, b, eps["fedc", order[i]], eps["torch", order[i]])
      if (a != "" && b != "") { cnt[job]++; sa[job] += a; sb[job] += b; ea[job] += eps["fedc", order[i]]; eb[job] += eps["torch", order[i]] }
      last = job
    }
    if (cnt[last] > 1) mean(last)
    if (cnt["femnist-fedavg"] > 0) {
      ma = sa["femnist-fedavg"] / cnt["femnist-fedavg"]; mb = sb["femnist-fedavg"] / cnt["femnist-fedavg"]
      printf "\nFEMNIST FedAvg, %d rounds, %d seeds: fedc mean %.2f%% (target >= 72%%: %s), PyTorch mean %.2f%%, difference %+.2f points (target within 2: %s)\n",
        rounds, cnt["femnist-fedavg"], ma, (ma >= 72 ? "met" : "NOT met"), mb, ma - mb, ((ma - mb >= -2 && ma - mb <= 2) ? "met" : "NOT met")
    }
  }
  function mean(job) {
    row("**" job " mean**", sa[job] / cnt[job], sb[job] / cnt[job], ea[job] / cnt[job], eb[job] / cnt[job])
  }
' "$results"
