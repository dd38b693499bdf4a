# What the shell tests share (sourced, after they set $out to a scratch directory):
# counters of passed and failed checks, and expect.
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# expect STATUS NEEDLE -- command...: exit status and a substring of stdout+stderr
expect() {
  want=$1 needle=$2
  shift 3
  "$@" >"$out/stdout" 2>"$out/stderr"
  got=$?
  if [ "$got" != "$want" ]; then bad "$* exited $got, expected $want"; cat "$out/stderr" >&2; return; fi
  if ! cat "$out/stdout" "$out/stderr" | grep -qF -- "$needle"; then bad "$*: output lacks '$needle'"; return; fi
  ok
}

# tensors DIR: the checkpoint's tensor bytes (after its header, whose metadata has
# the run's seconds), or a line saying it is missing; same A B: A's and B's models
# are the same bits
tensors() {
  f=$1/checkpoint.safetensors
  [ -s "$f" ] || { echo "no checkpoint in $1"; return; }
  n=$(od -An -t u8 -N8 "$f" | tr -d ' ')
  tail -c +$((n + 9)) "$f"
}
same() { tensors "$1" >"$out/a.bin"; tensors "$2" >"$out/b.bin"; cmp -s "$out/a.bin" "$out/b.bin"; }
# train_losses DIR: round and train loss of each row of DIR/metrics.csv
train_losses() { tail -n +2 "$1/metrics.csv" | cut -d, -f1-2; }
