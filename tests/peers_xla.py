"""peers_xla.py FEDC DIR: every case peers_cases wrote to DIR, exported by
`fedc program export --to stablehlo`, parsed by jaxlib's MLIR context (which
verifies StableHLO), compiled by XLA for the CPU and run on the case's inputs; its
outputs compared with fedc's executor's (tests/peers_compare.py). Run by
tests/peers.sh under .peers/jax (scripts/install-peers)."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import jax  # noqa: E402
from jax._src.interpreters import mlir  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax.extend import backend  # noqa: E402

import peers_compare  # noqa: E402

jax.config.update("jax_enable_x64", True)  # f64 inputs stay f64


def run_on_xla(client, device, case):
    with mlir.make_ir_context():
        module = ir.Module.parse(open(case.module).read())
        if not module.operation.verify():
            raise RuntimeError("the module does not verify as StableHLO")
        exe = client.compile_and_load(module, executable_devices=xla_client.DeviceList((device,)),
                                      compile_options=xla_client.CompileOptions())
    args = [jax.device_put(x, device) for x in case.inputs]
    results = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    return [jax.device_get(r[0]) for r in results]


def main(fedc, directory):
    client = backend.get_backend()
    device = client.devices()[0]
    print("peers_xla: jax %s, XLA on %s" % (jax.__version__, device))
    results = []
    for case in peers_compare.cases(fedc, directory):
        try:
            results.append((case,) + peers_compare.compare(case, run_on_xla(client, device, case)))
        except Exception as e:  # a module XLA rejects is a failure of that case
            results.append((case, ["XLA: %s" % str(e).strip()[:2000]], 0.0, 0))
    return peers_compare.report("peers_xla", results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
