"""The parameters `fedc train --export-onnx OUT.onnx` wrote, back in PyTorch
(tests/peers_onnx_torch.sh; docs/onnx.md):

    python check_trained.py NAME OUT.onnx OUT.safetensors REFERENCE.safetensors [--full]

NAME is a model of make_fixtures.py. OUT.safetensors loads into the module with
load_state_dict: every parameter and BatchNorm statistic is there under its
state_dict name, in its shape (only num_batches_tracked, which an eval-mode export
never reads, may be missing), and training changed them. The module so loaded
computes on REFERENCE's batch the logits that fedc computes from OUT.onnx (fedc's
Python package, on the libfedc of FEDC_LIBRARY): the exported ONNX file and the
state_dict are the same trained model. Prints "N passed, M failed"."""

import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fedc  # noqa: E402
from make_fixtures import models  # noqa: E402

passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def read_safetensors(path):
    """name -> numpy array, through fedc's reader (fedc.safetensors)."""
    with open(path, "rb") as f:
        return fedc.safetensors.decode(f.read())


def main():
    name, onnx_path, state_path, ref_path = sys.argv[1:5]
    full = "--full" in sys.argv[5:]
    module, _, _ = models(full)[name]
    initial = {k: v.detach().clone() for k, v in module.state_dict().items()}
    state = {k: torch.from_numpy(v.copy()) for k, v in read_safetensors(state_path).items()}
    result = module.load_state_dict(state, strict=False)
    check(not result.unexpected_keys, f"keys torch's module does not have: {result.unexpected_keys}")
    check(all(k.endswith("num_batches_tracked") for k in result.missing_keys),
          f"state_dict keys missing from {state_path}: {result.missing_keys}")
    changed = [k for k in state if not torch.equal(state[k], initial[k])]
    check(len(changed) > 0, "training changed no parameter")
    module.eval()
    ref = read_safetensors(ref_path)
    x = ref["x"]
    with torch.no_grad():
        tx = torch.from_numpy(x.astype(np.int64) if x.dtype == np.int32 else x.copy())
        want = module(tx).numpy()
    program, params = fedc.import_onnx(onnx_path, batch=x.shape[0])
    check(sorted(params) == sorted(state), "the exported ONNX file's initializers are not the state_dict's names")
    for k in params:
        check(np.array_equal(params[k], state[k].numpy()), f"{k}: the ONNX file's value differs from the safetensors'")
    got = program.run(x=x, **{"params/" + k: v for k, v in params.items()})["logits"]
    err = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1))
    check(err <= 1e-5, f"fedc's logits of the exported file differ from the loaded module's by {err:.3g} (relative)")
    print(f"check_trained {name}: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
