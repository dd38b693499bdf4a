#!/bin/sh
# A peer test (docs/export.md, docs/python.md), run under a Python of .peers/
# (scripts/install-peers). Exits 77 (ctest's SKIP), never 0, when the peers are not
# installed: `make test-peers` installs them.
#
#   peers.sh xla|iree FEDC PEERS_CASES  tests/peers_PEER.py on the cases peers_cases
#                                       writes, each exported by FEDC
#   peers.sh xla_shard FEDC PEERS_CASES the same on the sharded cases (peers_cases DIR shard),
#                                       run by XLA over 8 host devices
#   peers.sh drjax|fedjax|run_on LIBFEDC ARGS  tests/peers_PEER.py ARGS with python/fedc on LIBFEDC
#                                       (this build's libfedc.so), fedc and the peer in
#                                       one process
#   peers.sh flower LIBFEDC FEDC        the same, FEDC (the build's fedc) as its argument
set -eu
peer=$1
case $peer in
  xla|xla_shard) env=jax needs="import jax" ;;
  iree) env=jax needs="import iree.compiler, iree.runtime" ;;
  drjax) env=jax needs="import jax, drjax" ;;
  run_on) env=jax needs="import jax, iree.compiler, iree.runtime" ;;
  fedjax) env=fedjax needs="import fedjax, haiku, optax" ;;
  flower) env=flower needs="import flwr" ;;
  *) echo "peers.sh: unknown peer $peer" >&2; exit 2 ;;
esac
py=.peers/$env/bin/python
if [ ! -x "$py" ] || ! "$py" -c "$needs" 2>/dev/null; then
  echo "SKIP: $py cannot '$needs': the peers are not installed (scripts/install-peers)"
  exit 77
fi
case $peer in
  drjax|fedjax|flower|run_on)
    lib=$2
    shift 2
    PYTHONPATH=python:tests FEDC_LIBRARY=$lib exec "$py" "tests/peers_$peer.py" "$@" ;;
esac
fedc=$2 cases=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$peer" = xla_shard ]; then "$cases" "$tmp" shard; else "$cases" "$tmp"; fi
"$py" "tests/peers_$peer.py" "$fedc" "$tmp"
