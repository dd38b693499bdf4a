#!/bin/sh
# The modules of src/ depend one way (DESIGN.md §1, §8): a file may include its
# own module's headers and those of the modules of lower layers, never a module
# of its own layer or above. The layers are written once, here; an include that
# goes up (or sideways) fails with the file, the line and the two modules. And
# each outside library's headers are included only by the modules that may know
# it (only kernels/ knows BLAS, only deploy/ NNG and libsodium, ...), so that the
# core library links none of the optional parts' libraries.
#   sh tests/module_deps.sh [SOURCE_DIR]
set -eu
src=${1:-.}/src
[ -d "$src" ] || { echo "module_deps: no $src"; exit 1; }

# Lowest first; the modules of one line are independent of each other.
layers='core
kernels io data privacy ir
ad exec export formats
nn
fl
deploy'
# The public headers (include/fedc) each belong to the module that implements them.
owners='api:core core:core types:core robust:core
program:ir tree:ir form:ir attack:fl clock:fl
npy:io safetensors:io data:data tasks:data formats:data privacy:privacy
ad:ad exec:exec export:export nn:nn aggregate:fl fl:fl secure_sum:fl deploy:deploy'

# An outside library's header: the modules that may include it.
libraries='cblas.h:kernels mpi.h:exec zlib.h:data,fl,formats
hdf5.h:formats sqlite3.h:formats msgpack.h:formats protobuf-c:formats nng:deploy sodium.h:deploy'

layer_of() { echo "$layers" | awk -v m="$1" '{ for (i = 1; i <= NF; i++) if ($i == m) print NR }'; }

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
status=0
checked=0
for dir in "$src"/*/; do
  mod=$(basename "$dir")
  own=$(layer_of "$mod")
  if [ -z "$own" ]; then
    echo "module_deps: src/$mod is in no layer: add it to tests/module_deps.sh"
    status=1
    continue
  fi
  for f in "$dir"*; do
    [ -f "$f" ] || continue
    # "mod/x.h" (src/) and "fedc/x.h" (public) includes, as "line:kind:name"
    grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[a-z_]*/[a-z_]*\.[a-z]*"' "$f" |
      sed 's/^\([0-9]*\):[^"]*"\([a-z_]*\)\/\([a-z_]*\)\..*/\1 \2 \3/' >"$tmp" || true
    while read -r line dir2 name; do
      checked=$((checked + 1))
      if [ "$dir2" = fedc ]; then
        to=$(echo "$owners" | tr ' ' '\n' | sed -n "s/^$name:\(.*\)/\1/p")
        if [ -z "$to" ]; then
          echo "module_deps: include/fedc/$name.h has no owner: add it to tests/module_deps.sh"
          status=1
          continue
        fi
      else
        to=$dir2
      fi
      [ "$to" = "$mod" ] && continue
      theirs=$(layer_of "$to")
      if [ -z "$theirs" ] || [ "$theirs" -ge "$own" ]; then
        echo "src/$mod/$(basename "$f"):$line: $mod includes $dir2/$name ($to), which is not below it"
        status=1
      fi
    done <"$tmp"
    for lib in $libraries; do
      header=${lib%%:*}
      case ",${lib#*:}," in *",$mod,"*) continue ;; esac
      grep -n "^[[:space:]]*#[[:space:]]*include[[:space:]]*<$header" "$f" | while IFS=: read -r line rest; do
        echo "src/$mod/$(basename "$f"):$line: $mod includes <$header>, which only ${lib#*:} may know"
      done | grep . && status=1
    done
  done
done
if [ "$checked" -lt 100 ]; then
  echo "module_deps: only $checked includes read: the check read nothing useful"
  status=1
fi
[ $status = 0 ] && echo "module_deps: $checked includes, each of the module itself or one below it; outside libraries only where allowed"
exit $status
