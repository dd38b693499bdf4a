#!/bin/sh
# A shared library exports exactly its documented API: every symbol it defines
# is declared with FEDC_API in its headers of include/fedc, and every such
# declaration is exported. Internals (fedc__*, static) never leak, so a user
# cannot come to depend on them; the one exception, checked here too, is
# libfedc's FEDC_INTERNAL_API (fedc/api.h): the internals that fedc's optional
# libraries call, declared in src/ headers only.
#   sh tests/exports.sh build/libfedc.so SOURCE_DIR "--except formats.h deploy.h"
#       libfedc: the headers of include/fedc but those, and src/'s FEDC_INTERNAL_API
#   sh tests/exports.sh build/libfedc_formats.so SOURCE_DIR formats.h
#       a part's library: the FEDC_API declarations of its header alone
set -eu
lib=$1
srcdir=$2
headers=$3
inc=$srcdir/include/fedc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v nm >/dev/null; then echo "SKIP: nm not found"; exit 77; fi
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDRBVW]$/ && $3 !~ /^_/ {print $3}' | sort -u >"$tmp/exported"

case $headers in
  --except*)
    : >"$tmp/files"
    for h in "$inc"/*.h; do
      case " ${headers#--except} " in *" $(basename "$h") "*) ;; *) echo "$h" >>"$tmp/files" ;; esac
    done
    find "$srcdir/src" -name '*.h' >>"$tmp/files"
    min=100 ;;
  *)
    for h in $headers; do echo "$inc/$h"; done >"$tmp/files"
    min=1 ;;
esac
# The name a FEDC_API (or FEDC_INTERNAL_API) line declares: the identifier before
# "(" (a function) or before ";" / "[" (a variable).
xargs cat <"$tmp/files" | grep -E 'FEDC_(INTERNAL_)?API' | grep -v '#define' |
  sed -n 's/.*[^a-zA-Z0-9_]\(fedc_[a-zA-Z0-9_]*\) *[(;[].*/\1/p' | sort -u >"$tmp/declared"

status=0
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/extra"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
if [ -s "$tmp/extra" ]; then
  echo "exported by $lib but not declared with FEDC_API in its headers (make them static, fedc__, or document them):"
  sed 's/^/  /' "$tmp/extra"
  status=1
fi
if [ -s "$tmp/missing" ]; then
  echo "declared with FEDC_API in its headers but not exported by $lib:"
  sed 's/^/  /' "$tmp/missing"
  status=1
fi
n=$(wc -l <"$tmp/exported")
if [ "$n" -lt "$min" ]; then echo "only $n symbols exported: the check read nothing useful"; status=1; fi
[ $status = 0 ] && echo "exports: $n symbols of $(basename "$lib"), each declared with FEDC_API"
exit $status
