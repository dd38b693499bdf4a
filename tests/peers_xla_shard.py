"""peers_xla_shard.py FEDC DIR: the sharded cases `peers_cases DIR shard` wrote
(case.txt's `shard=` is the `--shard` they are exported with), each exported by
`fedc program export --to stablehlo` twice, unsharded and sharded, and run by XLA:
the unsharded module on one host device, the sharded one compiled by XLA's SPMD
partitioner for 8 host devices (XLA_FLAGS=--xla_force_host_platform_device_count=8)
and run on them, its arguments placed as their mhlo.sharding says. Both must agree
with fedc's executor (tests/peers_compare.py), and the partitioned module must
reduce at least one array per aggregation by all-reduce, over each device group
case.txt's `across=` lists (a 2 x 4 mesh's rows for the groups' aggregations,
its columns for the server's) and over no other, and hold no other collective (no all-gather of
the clients' activations or filters: each device computes its own clients): the
all-reduces of the compiled HLO are counted and printed, with the devices each
one reduces over. Run by
tests/peers.sh under .peers/jax."""
import os
import re
import subprocess
import sys

DEVICES = 8
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                           " --xla_force_host_platform_device_count=%d" % DEVICES).strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax._src import sharding_impls  # noqa: E402
from jax._src.interpreters import mlir  # noqa: E402
from jax._src.lib import xla_client  # noqa: E402
from jax._src.lib.mlir import ir  # noqa: E402
from jax.extend import backend  # noqa: E402

import peers_compare  # noqa: E402
from peers_xla import run_on_xla  # noqa: E402

jax.config.update("jax_enable_x64", True)


def compile_sharded(client, devices, path):
    with mlir.make_ir_context():
        module = ir.Module.parse(open(path).read())
        if not module.operation.verify():
            raise RuntimeError("the sharded module does not verify as StableHLO")
        options = xla_client.CompileOptions()
        build = options.executable_build_options
        build.num_partitions, build.num_replicas = len(devices), 1
        build.use_spmd_partitioning = True
        build.device_assignment = xla_client.DeviceAssignment.create(np.arange(len(devices)).reshape(1, -1))
        return client.compile_and_load(module, executable_devices=xla_client.DeviceList(tuple(devices)),
                                       compile_options=options)


def run_sharded(exe, devices, inputs, shapes):
    """exe run on inputs, each placed on the devices as its parameter's sharding
    says; output k (of shapes[k]) put together from the devices' pieces as its
    sharding says."""
    device_list = xla_client.DeviceList(tuple(devices))
    args = [jax.device_put(x, sharding_impls.GSPMDSharding(device_list, s))
            for x, s in zip(inputs, exe.get_parameter_shardings())]
    pieces = exe.execute_sharded(args).disassemble_into_single_device_arrays()
    outputs = []
    for s, shape, per_device in zip(exe.get_output_shardings(), shapes, pieces):
        index = sharding_impls.GSPMDSharding(device_list, s).devices_indices_map(tuple(shape))
        out = np.zeros(shape, dtype=np.asarray(per_device[0]).dtype)
        for piece in per_device:
            out[index[list(piece.devices())[0]]] = np.asarray(piece)
        outputs.append(out)
    return outputs


def collectives(exe):
    """The all-reduces of the partitioned, optimised HLO (each with the number of
    arrays it reduces: XLA's combiner merges all-reduces into one of a tuple), and
    its other collectives (all-gather, ...)."""
    text = "\n".join(m.to_string() for m in exe.hlo_modules())
    reduces, others = [], []
    for line in text.splitlines():
        line = re.sub(r", metadata=\{.*?\}", "", line.strip())
        m = re.search(r"= .* (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(([^)]*)\)", line)
        if m and m.group(1) == "all-reduce":
            reduces.append((len(m.group(2).split(",")), line))
        elif m:
            others.append(line)
    return reduces, others


def main(fedc, directory):
    client = backend.get_backend()
    devices = client.devices()
    if len(devices) < DEVICES:
        print("peers_xla_shard: XLA gives %d host devices, not %d" % (len(devices), DEVICES))
        return 1
    devices = devices[:DEVICES]
    print("peers_xla_shard: jax %s, XLA's SPMD partitioner over %d %s devices" % (jax.__version__, DEVICES,
                                                                                     devices[0].platform))
    results = []
    for case in peers_compare.cases(fedc, directory, "s"):
        sharded = case.module.replace(".stablehlo.mlir", ".sharded.stablehlo.mlir")
        shard = case.meta["shard"]
        subprocess.run([fedc, "program", "export", case.program, "--to", "stablehlo", "--clients", str(case.clients),
                        "--shard", shard, "-o", sharded] + case.export_args, check=True)
        problems, worst = [], 0.0
        try:
            p, w, _ = peers_compare.compare(case, run_on_xla(client, devices[0], case))
            problems += ["unsharded: " + x for x in p]
            exe = compile_sharded(client, devices, sharded)
            reduces, others = collectives(exe)
            arrays = sum(n for n, _ in reduces)
            print("     %s (--shard %s over %d devices): %d all-reduce ops in the partitioned HLO, reducing %d "
                  "arrays, for its %s aggregations:" % (case.name, shard, DEVICES, len(reduces), arrays,
                                                         case.meta["aggregations"]))
            for n, line in reduces + [(0, x) for x in others]:
                op = re.search(r"(all-\S+|reduce-scatter|collective-permute)\(", line).group(1)
                groups = re.search(r"replica_groups=(\{[^=]*\}|\[[^ ]*)", line)
                print("       %s: %s%s over %s" % (line.split(" = ")[0], op, " of %d arrays" % n if n else
                                                    " of " + line.split(" = ")[1].split(" ")[0],
                                                    groups.group(1).rstrip(",") if groups else "?"))
            if arrays < int(case.meta["aggregations"]):
                problems.append("%d arrays all-reduced in the partitioned HLO, fewer than its %s aggregations"
                                % (arrays, case.meta["aggregations"]))
            if others:  # e.g. the clients' activations or filters gathered: the clients not kept per device
                problems.append("%d collectives other than all-reduce in the partitioned HLO (the aggregations "
                                "should be its only ones): %s" % (len(others), "; ".join(x[:200] for x in others[:3])))
            for over in case.meta["across"].split():  # each level's reductions over its mesh axis
                if not any("replica_groups=%s," % over in line for _, line in reduces):
                    problems.append("no all-reduce over the devices %s" % over)
            for _, line in reduces:  # and none over others (a group's sum over the whole mesh: wrong axes)
                if not any("replica_groups=%s," % over in line for over in case.meta["across"].split()):
                    problems.append("an all-reduce over devices no level of the program spans: " + line[:200])
            p2, w2, _ = peers_compare.compare(case, run_sharded(exe, devices, case.inputs, [w.shape for w in case.want]))
            problems += ["sharded: " + x for x in p2]
            worst = max(w, w2)
        except Exception as e:  # a module XLA rejects is a failure of that case
            problems.append("XLA: %s" % str(e).strip()[:2000])
        results.append((case, problems, worst, 0))
    return peers_compare.report("peers_xla_shard", results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
