#!/bin/sh
# The fedc command line: program check/print/grad on files in tests/data, exit
# codes and messages for bad input and bad usage. Usage: cli.sh path/to/fedc
set -u
fedc=$1
data=tests/data
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
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

expect 0 "fedc 0" -- "$fedc" --version
expect 0 "program check FILE" -- "$fedc" --help
expect 2 "usage" -- "$fedc"
expect 2 "unknown command 'frobnicate'" -- "$fedc" frobnicate
expect 0 "ok (8 operations, 4 inputs, 1 outputs)" -- "$fedc" program check $data/logistic.fedc
expect 1 "line 4, column 54: declared type f32[4,3] but matmul gives f32[4,2]" -- "$fedc" program check $data/bad_type.fedc
expect 1 "cannot open" -- "$fedc" program check $data/missing.fedc
expect 2 "unknown subcommand" -- "$fedc" program explode $data/logistic.fedc

# print is canonical: printing the printed program gives the same text.
"$fedc" program print $data/logistic.fedc >"$out/once" && "$fedc" program print - <"$out/once" >"$out/twice" \
  && cmp -s "$out/once" "$out/twice" && ok || bad "print is not a fixed point"
grep -q '^%7 = reduce_mean(%6) {axes=\[0\], keepdims=0} : f32\[\]$' "$out/once" && ok || bad "print lost the reduction"

# grad prints a program with the gradients as outputs, which itself checks.
expect 0 'output "grad_w"' -- "$fedc" program grad $data/logistic.fedc --of loss --wrt w,b
"$fedc" program grad $data/logistic.fedc --of loss --wrt w,b >"$out/grad.fedc"
expect 0 "3 outputs" -- "$fedc" program check "$out/grad.fedc"
expect 1 "no input \"nope\"" -- "$fedc" program grad $data/logistic.fedc --of loss --wrt nope
expect 1 "only f32 and f64 inputs have gradients" -- "$fedc" program grad $data/logistic.fedc --of loss --wrt labels
expect 2 "needs FILE, --of OUTPUT and --wrt" -- "$fedc" program grad $data/logistic.fedc --of loss

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
