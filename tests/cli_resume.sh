#!/bin/sh
# fedc train interrupted and resumed, and its failures: a run killed between a
# round's metrics row and its checkpoint (FEDC_FAULT=metrics:R, a SIGKILL at that
# point) resumes to the metrics of an uninterrupted run; resumes that change the
# model are refused with the differences named; a finished run says so; a
# diverging run stops naming the round and keeps its last checkpoint; the file-size
# limit (ulimit -f) and a memory limit (ulimit -v) end the run with a message; a
# client whose data fail is dropped (or, with --strict, stops the run); a mistyped
# fault is said.
# Usage: cli_resume.sh path/to/fedc, on the heart-disease silos of $FEDC_DATA (a
# directory laid out as ../shared/data; ctest's fixture test_data makes one, with
# the real silos or small ones), else of ../shared/data. Exits 77 (skipped) without them.
set -u
fedc=$1
heart=${FEDC_DATA:-../shared/data}/heart-disease-uci
if [ ! -d $heart ]; then
  echo "SKIP: $heart is absent"
  exit 77
fi
# The server learning rate at which round 1 stays finite and round 2 overflows: the
# real silos' (a link to them, see tests/fixture_data.c) or the small ones'.
if [ -L $heart ] || [ "$heart" = ../shared/data/heart-disease-uci ]; then diverge=3e36; else diverge=3e37; fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
. "$(dirname "$0")/expect.sh"

# The metrics without their two timing figures (the last fields), which no two runs share.
untimed() {
  sed -E 's/, "examples_per_s": [^,]*, "seconds": [^}]*\}$/}/' "$1/metrics.jsonl" >"$1/jsonl.untimed"
  sed -E 's/,[^,]*,[^,]*$//' "$1/metrics.csv" >"$1/csv.untimed"
}
# same_metrics A B: both files equal but for the timings, and the curves equal.
same_metrics() {
  untimed "$1" && untimed "$2"
  cmp -s "$1/jsonl.untimed" "$2/jsonl.untimed" && cmp -s "$1/csv.untimed" "$2/csv.untimed" \
    && cmp -s "$1/curves.svg" "$2/curves.svg"
}

train() { "$fedc" train --data $heart --model heart --clients-per-round 4 --batch-size 16 --threads 1 --quiet "$@"; }

# --- killed between a round's metrics row and its checkpoint, in every evaluated round
train --rounds 6 --eval-every 2 --checkpoint-every 2 --out "$out/whole" >/dev/null || bad "the uninterrupted run failed"
for kill in 2 4 6; do
  rm -rf "$out/part"
  FEDC_FAULT=metrics:$kill train --rounds 6 --eval-every 2 --checkpoint-every 2 --out "$out/part" >/dev/null 2>&1
  [ $? = 137 ] && ok || bad "FEDC_FAULT=metrics:$kill did not kill the run"
  [ "$(grep -c . "$out/part/metrics.jsonl")" = $kill ] && ok || bad "the killed run lacks round $kill's row"
  if [ $kill = 2 ]; then # no checkpoint yet: a fresh run
    train --rounds 6 --eval-every 2 --checkpoint-every 2 --out "$out/part" >/dev/null
  else
    expect 0 "done: $((8 - kill)) rounds" -- train --rounds 6 --eval-every 2 --checkpoint-every 2 --out "$out/part" --resume
  fi
  same_metrics "$out/whole" "$out/part" && ok || bad "killed after round $kill's row: the resumed metrics differ"
done
grep -c '"round": 4,' "$out/part/metrics.jsonl" | grep -qx 1 && ok || bad "round 4's row is not there once"

# --- the same with per-client state (SCAFFOLD's c_i, APFL's personal models, in
# DIR/client_state.fcs): a resume forgets what the killed run's clients wrote after
# the checkpoint
for alg in scaffold apfl; do
  stateful() { train --algorithm $alg --rounds 6 --eval-every 1 --checkpoint-every 2 "$@"; }
  stateful --out "$out/$alg-whole" >/dev/null || bad "the uninterrupted $alg run failed"
  [ -s "$out/$alg-whole/client_state.fcs" ] && ok || bad "$alg kept no client state file"
  for kill in 4 5; do
    rm -rf "$out/$alg-part"
    FEDC_FAULT=metrics:$kill stateful --out "$out/$alg-part" >/dev/null 2>&1
    [ $? = 137 ] && ok || bad "FEDC_FAULT=metrics:$kill did not kill the $alg run"
    expect 0 "done: $((6 - (kill - 1) / 2 * 2)) rounds" -- stateful --out "$out/$alg-part" --resume
    same_metrics "$out/$alg-whole" "$out/$alg-part" && ok || bad "$alg killed after round $kill: the resumed metrics differ"
  done
done
scaffold() { train --algorithm scaffold --rounds 6 --eval-every 1 --checkpoint-every 2 "$@"; }
cp -r "$out/scaffold-whole" "$out/sc-whole1"
# 2 threads: the same bits as 1
scaffold --eval-every 1 --threads 2 --out "$out/sc-threads" >/dev/null
same_metrics "$out/sc-whole1" "$out/sc-threads" && ok || bad "SCAFFOLD on 2 threads differs from 1"
# without the clients' state a resume is refused, not continued from zeros
rm -rf "$out/sc-part"
FEDC_FAULT=metrics:4 scaffold --eval-every 1 --out "$out/sc-part" >/dev/null 2>&1
rm "$out/sc-part/client_state.fcs"
expect 1 "$out/sc-part/client_state.fcs: the clients' state that the checkpoint needs is missing" -- \
  scaffold --eval-every 1 --out "$out/sc-part" --resume
# a resume that changes a hyperparameter is refused, named
train --algorithm fedprox --rounds 2 --checkpoint-every 1 --out "$out/prox" >/dev/null
expect 1 "--set mu=0.5 (the checkpoint's: mu=0.01)" -- train --algorithm fedprox --set mu=0.5 --rounds 3 \
  --checkpoint-every 1 --out "$out/prox" --resume

# --- killed before the first row: the CSV keeps its header
rm -rf "$out/early"
FEDC_FAULT=metrics:2 train --rounds 4 --eval-every 3 --checkpoint-every 1 --out "$out/early" >/dev/null 2>&1
head -1 "$out/early/metrics.csv" | grep -q '^round,train_loss,' && ok || bad "the killed run's CSV has no header"
expect 0 "done: 3 rounds" -- train --rounds 4 --eval-every 3 --checkpoint-every 1 --out "$out/early" --resume
train --rounds 4 --eval-every 3 --checkpoint-every 1 --out "$out/early-whole" >/dev/null
same_metrics "$out/early-whole" "$out/early" && ok || bad "resumed before the first row: metrics differ"

# --- metrics.jsonl is JSON: every line parses strictly (no NaN or Infinity)
if /usr/bin/python3 -c 'import json' 2>/dev/null; then
  /usr/bin/python3 - "$out/whole/metrics.jsonl" <<'PY' && ok || bad "metrics.jsonl is not strict JSON"
import json, sys
def refuse(name): raise ValueError("non-standard JSON constant " + name)
for line in open(sys.argv[1]):
    row = json.loads(line, parse_constant=refuse)
    assert set(row) >= {"round", "train_loss", "test_loss", "dropped", "seconds"}, row
PY
fi

# --- resume: refused when what changes the model differs, the differences named
ck=$out/whole/checkpoint.safetensors
cp "$ck" "$out/ck.saved"
expect 1 "--client-lr 0.05 (the checkpoint's: 0.1), --server-opt adam" -- train --rounds 8 --eval-every 2 \
  --client-lr 0.05 --server-opt adam --out "$out/whole" --resume
ln -s "$(cd $heart && pwd)" "$out/heart" # the same files, by another path: data are compared by the path given
expect 1 "--data $out/heart (the checkpoint's: $heart)" -- "$fedc" train --data "$out/heart" --model heart \
  --clients-per-round 4 --batch-size 16 --threads 1 --quiet --rounds 8 --out "$out/whole" --resume
cmp -s "$ck" "$out/ck.saved" && ok || bad "a refused resume changed the checkpoint"
# ... and what may change is said
expect 0 "resuming $ck with --rounds 8 (the checkpoint's: 6), --threads 2 (the checkpoint's: 1)" -- \
  train --rounds 8 --eval-every 2 --checkpoint-every 2 --threads 2 --out "$out/whole" --resume
# a finished run, resumed, is complete and says so with its last metrics
expect 0 "the run is already complete (8 rounds" -- train --rounds 8 --eval-every 2 --checkpoint-every 2 \
  --threads 2 --out "$out/whole" --resume
last=$(tail -1 "$out/whole/metrics.jsonl" | sed -E 's/.*"test_accuracy": ([0-9.]*).*/\1/')
grep -q "test accuracy $(echo "$last" | awk '{printf "%.2f", 100 * $1}')%" "$out/stdout" && ok \
  || bad "the finished run does not report its last accuracy ($last)"
[ "$(grep -c . "$out/whole/metrics.jsonl")" = 8 ] && ok || bad "resuming a finished run changed its metrics"
expect 1 "is after round 8, beyond --rounds 6: resume with --rounds 8 or more" -- train --rounds 6 --eval-every 2 \
  --checkpoint-every 2 --out "$out/whole" --resume

# --- divergence: non-zero status naming the round, the last checkpoint kept
rm -rf "$out/div"
expect 1 "round 2: " -- train --rounds 4 --checkpoint-every 1 --server-lr $diverge --out "$out/div"
grep -aq '"next_round":"1"' "$out/div/checkpoint.safetensors" && ok || bad "divergence: round 1's checkpoint is not there"
expect 0 "accuracy" -- "$fedc" eval --checkpoint "$out/div/checkpoint.safetensors" --data $heart --model heart
expect 2 "--server-lr needs a number" -- train --rounds 4 --checkpoint-every 1 --server-lr 1e39 --out "$out/div1"

# --- the file-size limit: a clean error, no temporary, the previous checkpoint whole
rm -rf "$out/fs"
train --rounds 2 --checkpoint-every 1 --eval-every 10 --out "$out/fs" >/dev/null
cp "$out/fs/checkpoint.safetensors" "$out/fs.saved"
size=$(wc -c <"$out/fs/checkpoint.safetensors")
blocks=$(((size - 1) / 512)) # 512-byte blocks (POSIX sh): room for the metrics, not the checkpoint
expect 1 "the file-size limit (ulimit -f) is $((blocks * 512)) bytes" -- sh -c "ulimit -f $blocks && exec \"\$@\"" sh \
  "$fedc" train --data $heart --model heart --clients-per-round 4 --batch-size 16 --threads 1 --quiet \
  --rounds 3 --checkpoint-every 1 --eval-every 10 --out "$out/fs" --resume
[ ! -e "$out/fs/checkpoint.safetensors.tmp" ] && ok || bad "ulimit -f left checkpoint.safetensors.tmp"
cmp -s "$out/fs/checkpoint.safetensors" "$out/fs.saved" && ok || bad "ulimit -f changed the previous checkpoint"
# the metrics past the limit: EFBIG reported, not SIGXFSZ
expect 1 "cannot write the metrics: File too large" -- sh -c 'ulimit -f 1 && exec "$@"' sh \
  "$fedc" train --data $heart --model heart --clients-per-round 4 --batch-size 16 --threads 1 --quiet \
  --rounds 6 --eval-every 1 --out "$out/fs2"
# a full disk (metrics.jsonl is /dev/full): a message, not a crash
if [ -c /dev/full ]; then
  mkdir -p "$out/full" && ln -s /dev/full "$out/full/metrics.jsonl"
  expect 1 "cannot write the metrics: No space left on device" -- train --rounds 2 --out "$out/full"
fi
# and the resumed run drops the row cut short
expect 0 "done" -- train --rounds 6 --eval-every 1 --out "$out/fs2-whole"
rm -rf "$out/fs3"
FEDC_FAULT=metrics:2 train --rounds 6 --eval-every 1 --checkpoint-every 1 --out "$out/fs3" >/dev/null 2>&1
printf '{"round": 3, "train_lo' >>"$out/fs3/metrics.jsonl"
expect 0 "done: 5 rounds" -- train --rounds 6 --eval-every 1 --checkpoint-every 1 --out "$out/fs3" --resume
same_metrics "$out/fs2-whole" "$out/fs3" && ok || bad "a row cut short was kept"

# --- a failing client is dropped with a warning naming it, and counted; --strict stops
expect 0 "warning: round 2: client 1 (\"hungarian\") dropped: client \"hungarian\": cannot load its data" -- \
  env FEDC_FAULT=load:2:1 "$fedc" train --data $heart --model heart --clients-per-round 4 --batch-size 16 \
  --threads 1 --quiet --rounds 3 --eval-every 1 --out "$out/drop"
grep -q '"round": 2, .*"dropped": 1, ' "$out/drop/metrics.jsonl" && ok || bad "the dropped client is not counted"
grep -q '^1,.*,0,,[^,]*,[^,]*$' "$out/drop/metrics.csv" && ok || bad "the CSV counts a drop in round 1"
expect 1 "round 2: client \"hungarian\": cannot load its data" -- env FEDC_FAULT=load:2:1 "$fedc" train \
  --data $heart --model heart --clients-per-round 4 --batch-size 16 --threads 1 --quiet --rounds 3 --strict \
  --out "$out/drop-strict"
# a mistyped fault injects nothing, and says so once
expect 0 'fedc: FEDC_FAULT="lod:2:1": no fault "lod"' -- env FEDC_FAULT=lod:2:1 "$fedc" train --data $heart \
  --model heart --clients-per-round 4 --batch-size 16 --threads 1 --quiet --rounds 2 --strict --out "$out/typo"
[ "$(grep -c 'FEDC_FAULT' "$out/stderr")" = 1 ] && ok || bad "a mistyped fault was not said once"
# a client whose data hold a NaN (a TFF file written by h5py)
if /usr/bin/python3 -c 'import h5py, numpy' 2>/dev/null; then
  /usr/bin/python3 - "$out/nan.h5" <<'PY'
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w") as f:
    for c, name in enumerate(["f0", "f1", "f2", "f3"]):
        g = f.create_group("examples/" + name)
        pixels = (np.arange(6 * 784).reshape(6, 28, 28) * (c + 1) % 11 / 11).astype(np.float32)
        if name == "f2":
            pixels[3, 4, 5] = np.nan
        g.create_dataset("pixels", data=pixels)
        g.create_dataset("label", data=(np.arange(6) % 5).astype(np.int32))
PY
  nan="--data $out/nan.h5 --model logistic --rounds 2 --clients-per-round 4 --batch-size 2 --eval-every 1 --quiet"
  expect 0 "warning: round 1: client 2 (\"f2\") dropped: its update is not finite" -- "$fedc" train $nan --out "$out/nan"
  grep -q '"round": 2, .*"test_loss": null, .*"dropped": 2, ' "$out/nan/metrics.jsonl" && ok \
    || bad "the NaN client: no null test loss or no count of 2 drops"
  expect 1 "round 1: client 2 (\"f2\"): result \"delta/dense1/w\" has a non-finite value" -- \
    "$fedc" train $nan --out "$out/nan-strict" --strict
else
  echo "skipped the NaN-client case: no python3 with h5py"
fi

# --- a memory limit (ulimit -v, in KiB) ends the run with a message, or it fits; it
# never hangs (timeout turns a hang into status 124). Not under AddressSanitizer,
# which cannot start under a limit at all.
if sh -c 'ulimit -v 4000000 && exec "$@"' sh "$fedc" --version >/dev/null 2>&1; then
  for limit in 100000 200000 300000 500000; do
    for threads in 1 2; do
      sh -c "ulimit -v $limit && exec timeout 60 \"\$@\"" sh "$fedc" train --data $heart --model heart \
        --clients-per-round 4 --batch-size 16 --rounds 2 --threads $threads --quiet --out "$out/mem" \
        >"$out/stdout" 2>"$out/stderr"
      rc=$?
      if [ $rc = 0 ] || { [ $rc = 1 ] && grep -q "out of memory" "$out/stderr"; }; then ok
      else bad "ulimit -v $limit, --threads $threads: status $rc ($(tail -c 200 "$out/stderr"))"; fi
    done
    sh -c "ulimit -v $limit && exec timeout 60 \"\$@\"" sh "$fedc" data info $heart --format csv >"$out/stdout" 2>"$out/stderr"
    rc=$?
    if [ $rc = 0 ] || { [ $rc = 1 ] && grep -q "out of memory" "$out/stderr"; }; then ok
    else bad "ulimit -v $limit: data info: status $rc"; fi
  done
  sh -c 'ulimit -v 150000 && exec timeout 60 "$@"' sh "$fedc" train --data $heart --model heart --rounds 1 \
    --clients-per-round 4 --quiet --out "$out/mem" 2>"$out/stderr"
  [ $? = 1 ] && grep -q "out of memory: a thread cannot reserve" "$out/stderr" && ok \
    || bad "ulimit -v 150000: no message about OpenBLAS's buffer"
else
  echo "skipped the ulimit -v cases: $fedc does not start under a memory limit (AddressSanitizer?)"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
