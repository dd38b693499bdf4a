#!/bin/sh
# A peer test (docs/export.md): peers.sh PEER FEDC PEERS_CASES runs tests/peers_PEER.py
# under .peers/jax's Python (scripts/install-peers) on the cases peers_cases writes,
# each exported by FEDC. Exits 77 (ctest's SKIP), never 0, when the peers are not
# installed: `make test-peers` installs them.
set -eu
peer=$1 fedc=$2 cases=$3
py=.peers/jax/bin/python
case $peer in
  xla) needs="import jax" ;;
  iree) needs="import iree.compiler, iree.runtime" ;;
  *) echo "peers.sh: unknown peer $peer" >&2; exit 2 ;;
esac
if [ ! -x "$py" ] || ! "$py" -c "$needs" 2>/dev/null; then
  echo "SKIP: $py cannot '$needs': the peers are not installed (scripts/install-peers)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$cases" "$tmp"
"$py" "tests/peers_$peer.py" "$fedc" "$tmp"
