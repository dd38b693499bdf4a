#!/bin/sh
# The core library needs BLAS, zlib, pthreads and libm (and MPI when built with
# it), never the libraries of the optional parts: HDF5, SQLite and msgpack are
# libfedc_formats's, NNG and libsodium libfedc_deploy's (DESIGN.md §8). Reads
# the NEEDED entries of libfedc.so, and ldd's whole list where ldd runs, so that
# neither a direct nor an indirect dependency slips in.
#   sh tests/core_deps.sh build/libfedc.so
set -eu
lib=$1
if ! command -v readelf >/dev/null; then echo "SKIP: readelf not found"; exit 77; fi
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
if [ -z "$needed" ]; then echo "core_deps: $lib needs nothing: the check read nothing useful"; exit 1; fi
all=$needed
if command -v ldd >/dev/null && ldd "$lib" >/dev/null 2>&1; then
  all="$all
$(ldd "$lib" | awk '{print $1}')"
fi
status=0
for part in hdf5 sqlite msgpack nng sodium; do
  found=$(echo "$all" | grep -i "$part" | sort -u | tr '\n' ' ')
  if [ -n "$found" ]; then
    echo "core_deps: $lib needs $found: $part belongs to an optional part, not to the core library"
    status=1
  fi
done
echo "$needed" | grep -q blas || { echo "core_deps: $lib does not name BLAS: the check read the wrong library"; status=1; }
[ $status = 0 ] && echo "core_deps: $lib needs $(echo "$needed" | tr '\n' ' ')and none of hdf5, sqlite, msgpack, nng, sodium"
exit $status
