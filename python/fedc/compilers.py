"""Running a program's StableHLO export (Program.stablehlo, docs/export.md) on the
compilers it targets: XLA through jaxlib, or IREE (iree-compile's llvm-cpu
target and its local-task runtime), as tests/peers_xla.py and tests/peers_iree.py
do. Neither is a dependency of fedc: this Python must have them (scripts/
install-peers puts them in .peers/jax), else fedc.Error says which is missing."""
from . import _lib
from .errors import EUNSUPPORTED

# IREE demotes f64 and i64 by default (the f64 programs and Philox's 64-bit
# products need them), and its embedded linker has no libm (f64 log and cosine).
IREE_FLAGS = ["--iree-input-demote-f64-to-f32=false", "--iree-input-demote-i64-to-i32=false",
              "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-link-embedded=false"]


def _missing(compiler, what, e):
    return _lib.error(EUNSUPPORTED, "run_on(\"%s\"): this Python has no %s (%s); scripts/install-peers installs it "
                      "into .peers/jax" % (compiler, what, e))


def run_xla(text, inputs):
    try:
        import jax
        from jax._src.interpreters import mlir
        from jax._src.lib import xla_client
        from jax._src.lib.mlir import ir
        from jax.extend import backend
    except ImportError as e:
        raise _missing("xla", "jax and jaxlib", e) from None
    jax.config.update("jax_enable_x64", True)  # f64 inputs stay f64
    client = backend.get_backend()
    device = client.devices()[0]
    with mlir.make_ir_context():
        exe = client.compile_and_load(ir.Module.parse(text), executable_devices=xla_client.DeviceList((device,)),
                                      compile_options=xla_client.CompileOptions())
    out = exe.execute_sharded([jax.device_put(x, device) for x in inputs]).disassemble_into_single_device_arrays()
    return [jax.device_get(r[0]) for r in out]


def run_iree(text, inputs):
    try:
        import iree.compiler
        import iree.runtime
        import numpy as np
    except ImportError as e:
        raise _missing("iree", "iree-base-compiler and iree-base-runtime", e) from None
    vmfb = iree.compiler.compile_str(text, target_backends=["llvm-cpu"], input_type="stablehlo",
                                     extra_args=IREE_FLAGS)
    ctx = iree.runtime.SystemContext(config=iree.runtime.Config("local-task"))
    ctx.add_vm_module(iree.runtime.VmModule.copy_buffer(ctx.instance, vmfb))
    results = ctx.modules.fedc["main"](*inputs)
    if not isinstance(results, (tuple, list)):
        results = [results]
    return [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in results]


def run(compiler, text, inputs):
    """The outputs of StableHLO module `text` on `inputs` (arrays, in order) run by
    compiler "xla" or "iree"."""
    runners = {"xla": run_xla, "iree": run_iree}
    if compiler not in runners:
        raise _lib.error(EUNSUPPORTED, "run_on: compiler \"%s\": use xla or iree" % compiler)
    return runners[compiler](text, inputs)
