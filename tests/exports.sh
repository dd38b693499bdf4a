#!/bin/sh
# The shared library exports exactly its documented API: every symbol libfedc.so
# defines is declared with FEDC_API in include/fedc/*.h, and every FEDC_API
# declaration is exported. Internals (fedc__*, static) never leak, so a user
# cannot come to depend on them.
#   sh tests/exports.sh build/libfedc.so include/fedc
set -eu
lib=$1
inc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v nm >/dev/null; then echo "SKIP: nm not found"; exit 77; fi
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ && $3 !~ /^_/ {print $3}' | sort -u >"$tmp/exported"
# The name a FEDC_API line declares: the identifier before "(" (a function) or
# before ";" / "[" (a variable).
grep -h 'FEDC_API' "$inc"/*.h | grep -v '#define' |
  sed -n 's/.*[^a-zA-Z0-9_]\(fedc_[a-zA-Z0-9_]*\) *[(;[].*/\1/p' | sort -u >"$tmp/declared"

status=0
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/extra"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
if [ -s "$tmp/extra" ]; then
  echo "exported but not declared with FEDC_API in $inc (make them static, fedc__, or document them):"
  sed 's/^/  /' "$tmp/extra"
  status=1
fi
if [ -s "$tmp/missing" ]; then
  echo "declared with FEDC_API but not exported by $lib:"
  sed 's/^/  /' "$tmp/missing"
  status=1
fi
n=$(wc -l <"$tmp/exported")
if [ "$n" -lt 100 ]; then echo "only $n symbols exported: the check read nothing useful"; status=1; fi
[ $status = 0 ] && echo "exports: $n symbols, each declared with FEDC_API"
exit $status
