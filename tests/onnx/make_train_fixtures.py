"""Writes what PyTorch computes on the ResNet block of tests/onnx/ in training mode
(model.train()), for tests/test_onnx_torch.c's check of BatchNormalization's
training form (fedc_onnx_options.batchnorm_training, docs/onnx.md).

    python make_train_fixtures.py OUT_DIR [--full]

It makes the module make_fixtures.py exported (same seeds, same widths), checks
that its parameters are the initializers of OUT_DIR/resnet_block.onnx, and writes
OUT_DIR/resnet_block_train.safetensors: the batch "x" and "labels", torch's
train-mode "logits" (normalised by the batch's statistics), "grad/<param>":
autograd's gradients of the mean cross-entropy, and "update/<buffer>": each
BatchNorm's running_mean and running_var after that forward pass (momentum 0.1,
the variance unbiased).
"""

import argparse
import os

import numpy as np
import onnx
import onnx.numpy_helper
import torch

from make_fixtures import models, randomise, reference, write_safetensors

NAME = "resnet_block"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--full", action="store_true", help="the published widths")
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    names = list(models(args.full))
    module, x, labels = models(args.full)[NAME]
    randomise(module, 100 + names.index(NAME))
    exported = onnx.load(os.path.join(args.out, NAME + ".onnx"))
    state = module.state_dict()
    for init in exported.graph.initializer:
        want = state[init.name].numpy()
        if not np.array_equal(onnx.numpy_helper.to_array(init), want):
            raise SystemExit(f"{init.name} of {NAME}.onnx is not this module's: run make_fixtures.py first")
    module.train()
    logits, grads = reference(module, x, labels)
    tensors = {"x": x.numpy().astype(np.float32), "labels": labels.numpy().astype(np.int32), "logits": logits}
    tensors.update({"grad/" + k: v for k, v in grads.items()})
    tensors.update({"update/" + k: v.numpy().copy() for k, v in module.state_dict().items()
                    if k.endswith(".running_mean") or k.endswith(".running_var")})
    write_safetensors(os.path.join(args.out, NAME + "_train.safetensors"), tensors)
    print(f"{NAME} (train mode): logits {list(logits.shape)}, {len(tensors) - 3} gradients and updates")


if __name__ == "__main__":
    main()
