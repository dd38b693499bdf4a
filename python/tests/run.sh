#!/bin/sh
# Runs Python against the libfedc.so of a build: run.sh LIBFEDC ARGS... runs
# `python3 ARGS...` with the package at python/ and FEDC_LIBRARY=LIBFEDC, from the
# source tree. Exits 77 (ctest's SKIP) when python3, numpy or (for -m pytest)
# pytest is absent. Debian's /usr/bin/python3 is preferred: its python3-numpy and
# python3-pytest are what scripts/install-deps installs.
set -eu
lib=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
PY=""
for cand in /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c "import numpy" 2>/dev/null; then
    PY=$cand
    break
  fi
done
if [ -z "$PY" ]; then
  echo "SKIP: no python3 with numpy (apt-get install python3-numpy)"
  exit 77
fi
if [ "${1:-}" = "-m" ] && [ "${2:-}" = "pytest" ] && ! "$PY" -c "import pytest" 2>/dev/null; then
  echo "SKIP: $PY has no pytest (apt-get install python3-pytest)"
  exit 77
fi
# A sanitized libfedc.so needs its runtime loaded first; Python's own allocations
# at exit are not leaks of fedc's, so leak checking stays off.
asan=$(ldd "$lib" 2>/dev/null | sed -n 's/.*libasan[^ ]* => \([^ ]*\).*/\1/p' | head -n 1)
if [ -n "$asan" ]; then
  ubsan=$(ldd "$lib" | sed -n 's/.*libubsan[^ ]* => \([^ ]*\).*/\1/p' | head -n 1)
  LD_PRELOAD="$asan${ubsan:+ $ubsan}"
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"  # the last setting wins
  FEDC_SANITIZED=1
  export LD_PRELOAD ASAN_OPTIONS FEDC_SANITIZED
fi
PYTHONPATH="$(pwd)/python${PYTHONPATH:+:$PYTHONPATH}"
FEDC_LIBRARY=$lib
export PYTHONPATH FEDC_LIBRARY
exec "$PY" "$@"
