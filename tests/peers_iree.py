"""peers_iree.py FEDC DIR: every case peers_cases wrote to DIR, exported by
`fedc program export --to stablehlo`, compiled by IREE's iree-compile for the
llvm-cpu target (StableHLO input) and run by IREE's runtime (local-task) on the
case's inputs; its outputs compared with fedc's executor's
(tests/peers_compare.py). Run by tests/peers.sh under .peers/jax
(scripts/install-peers)."""
import importlib.metadata
import sys

import iree.compiler
import iree.runtime
import numpy as np

import peers_compare


# IREE demotes f64 and i64 to 32 bits unless told not to: fedc's f64 programs and the
# Philox stream's 64-bit products need them whole. IREE's embedded linker has no libm,
# so f64 log and cosine (random_normal's Box-Muller) are left undefined: the system's
# linker links the dispatches against libm instead.
FLAGS = ["--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false",
         "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-link-embedded=false"]


# What IREE cannot compile, by case: the words its error must hold. IREE 3.13 has no
# lowering of a padded stablehlo.select_and_scatter (max pooling's gradient with pads:
# "failed to legalize operation 'stablehlo.select_and_scatter' that was explicitly
# marked illegal"); an unpadded one, as in the EMNIST CNN's round, compiles. A case
# listed here that IREE compiles fails, to be compared instead.
REJECTED = {
    "conv2d SAME stride 2, pools, and their gradients": "failed to legalize operation 'stablehlo.select_and_scatter'",
    "conv2d VALID, pools, and their gradients": "failed to legalize operation 'stablehlo.select_and_scatter'",
}


def run_on_iree(case):
    vmfb = iree.compiler.compile_file(case.module, target_backends=["llvm-cpu"], input_type="stablehlo",
                                      extra_args=FLAGS)
    ctx = iree.runtime.SystemContext(config=iree.runtime.Config("local-task"))
    ctx.add_vm_module(iree.runtime.VmModule.copy_buffer(ctx.instance, vmfb))
    results = ctx.modules.fedc["main"](*case.inputs)
    if not isinstance(results, (tuple, list)):
        results = [results]
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in results]


def main(fedc, directory):
    print("peers_iree: iree-base-compiler %s, llvm-cpu, local-task" % importlib.metadata.version("iree-base-compiler"))
    results = []
    for case in peers_compare.cases(fedc, directory):
        try:
            got = run_on_iree(case)
        except Exception as e:  # a module IREE rejects is a failure of that case, unless listed
            said = str(e).strip()
            if case.name in REJECTED and REJECTED[case.name] in said:
                print("known: IREE rejects %s: %s" % (case.name, REJECTED[case.name]))
                continue
            results.append((case, ["IREE: %s" % said[:2000]], 0.0, 0))
            continue
        if case.name in REJECTED:
            results.append((case, ["IREE compiles it now: remove it from REJECTED"], 0.0, 0))
        else:
            results.append((case,) + peers_compare.compare(case, got))
    return peers_compare.report("peers_iree", results)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
