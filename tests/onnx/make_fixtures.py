"""Writes the PyTorch models of tests/test_onnx_torch.c as torch.onnx.export writes
them, with what PyTorch computes on them (docs/onnx.md, "Models from PyTorch").

    python make_fixtures.py OUT_DIR [--full]

For each model NAME it writes OUT_DIR/NAME.onnx (and with --dynamo NAME_dynamo.onnx,
the same module through PyTorch's torch.export-based exporter) and OUT_DIR/NAME.safetensors, the
latter holding a fixed batch "x" (and "labels", int32), torch's "logits" on it, and
"grad/<param>": autograd's gradient of the mean softmax cross-entropy of the
logits against the labels with respect to every parameter, by its state_dict name
(the names the exporter gives the initializers). Without --full the widths are
reduced so that the fixtures kept in tests/onnx/ stay small; --full builds the
models at their published widths (tests/peers_onnx_torch.sh runs that live).

The export keeps the state_dict names: do_constant_folding=False (folding would
write a transposed Linear weight or a sliced LSTM weight as a new, unnamed
initializer) and training=PRESERVE on a module in eval mode (EVAL would fold each
BatchNormalization into the convolution before it). The models are made from a
fixed seed and run on CPU, so the files are the same on every run of one torch.
"""

import argparse
import json
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

OPSET = 17  # --opset N: another of fedc's (13 to 18)


class MLP(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, 62)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class ConvDropout(nn.Module):
    """FedJAX's EMNIST CNN (fedjax/models/emnist.py, ConvDropoutModule; fedc's "cnn")
    and pfl's CIFAR-10 CNN: two VALID 3x3 convolutions, a 2x2 max pool, dropout 0.25,
    a dense layer, dropout 0.5, the logits."""

    def __init__(self, channels, side, c1, c2, dense, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, c1, 3)
        self.conv2 = nn.Conv2d(c1, c2, 3)
        self.drop1 = nn.Dropout(0.25)
        flat = ((side - 4) // 2) ** 2 * c2
        self.dense1 = nn.Linear(flat, dense)
        self.drop2 = nn.Dropout(0.5)
        self.dense2 = nn.Linear(dense, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = torch.flatten(self.drop1(x), 1)
        return self.dense2(self.drop2(F.relu(self.dense1(x))))


class ResBlock(nn.Module):
    """A ResNet basic block with BatchNorm (its running statistics), then a global
    average pool and a linear head."""

    def __init__(self, width, classes):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.bn0 = nn.BatchNorm2d(width)
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.fc = nn.Linear(width, classes)

    def forward(self, x):
        h = F.relu(self.bn0(self.stem(x)))
        y = F.relu(self.bn1(self.conv1(h)))
        y = self.bn2(self.conv2(y))
        y = F.relu(y + h)
        return self.fc(F.adaptive_avg_pool2d(y, 1).flatten(1))


class CharRNN(nn.Module):
    """A character model: an embedding, a recurrent layer (nn.LSTM or nn.GRU, named `lstm` or
    `gru`, as its state_dict names are), logits at every step."""

    def __init__(self, cell, vocab, embed, hidden):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.cell = cell.__name__.lower()
        setattr(self, self.cell, cell(embed, hidden, batch_first=True))
        self.out = nn.Linear(hidden, vocab)

    def forward(self, x):
        h, _ = getattr(self, self.cell)(self.embed(x))
        return self.out(h)


class Transformer(nn.Module):
    """A 2-layer nn.TransformerEncoder (post-norm, GELU) over a token embedding and a
    learned position embedding, its mean over positions classified."""

    def __init__(self, vocab, steps, width, heads, ff, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.pos = nn.Parameter(torch.randn(steps, width) * 0.1)
        layer = nn.TransformerEncoderLayer(width, heads, ff, dropout=0.1, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        h = self.encoder(self.embed(x) + self.pos)
        return self.head(h.mean(dim=1))


def models(full):
    """name -> (module, input x, labels) at full or reduced widths."""
    g = torch.Generator().manual_seed(5)
    batch = 4
    img = lambda c, s: torch.rand(batch, c, s, s, generator=g)
    tokens = lambda v, t: torch.randint(0, v, (batch, t), generator=g)
    labels = lambda k, *shape: torch.randint(0, k, (batch, *shape), generator=g)
    w = (lambda full_w, small_w: full_w if full else small_w)
    out = {}
    torch.manual_seed(1)
    out["mlp"] = (MLP(w(200, 16)), img(1, 28), labels(62))
    out["emnist_cnn"] = (ConvDropout(1, 28, w(32, 4), w(64, 8), w(128, 16), 62), img(1, 28), labels(62))
    out["cifar_cnn"] = (ConvDropout(3, 32, w(32, 4), w(64, 8), w(128, 16), 10), img(3, 32), labels(10))
    out["resnet_block"] = (ResBlock(w(64, 8), 10), img(3, w(32, 8)), labels(10))
    out["char_lstm"] = (CharRNN(nn.LSTM, w(86, 20), w(8, 8), w(256, 12)), tokens(w(86, 20), 6), labels(w(86, 20), 6))
    out["transformer"] = (Transformer(w(100, 20), 6, w(64, 16), 4 if full else 2, w(256, 32), 5),
                          tokens(w(100, 20), 6), labels(5))
    # last, so that adding it left the random draws of the models above unchanged
    out["char_gru"] = (CharRNN(nn.GRU, w(86, 20), w(8, 8), w(256, 12)), tokens(w(86, 20), 6), labels(w(86, 20), 6))
    return out


def randomise(module, seed):
    """Every parameter moved off its initial value by a little noise, and BatchNorm's
    running statistics away from 0 and 1, so that a wrong normalisation shows in the
    logits. It also makes every parameter's values its own: the exporter writes
    parameters of equal values (a fresh LayerNorm's ones, the zero biases of the
    attention, each layer of nn.TransformerEncoder) as one initializer under one
    name, as it would for a model freshly made."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.02)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(n, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(n, generator=g) + 0.5)
            m.bias.data.copy_(torch.randn(n, generator=g) * 0.1)


def write_safetensors(path, tensors):
    """tensors (name -> numpy array) as a safetensors file, written by hand so that
    only numpy is needed (the format: an 8-byte header length, a JSON header, the
    bytes)."""
    header, blobs, offset = {}, [], 0
    codes = {np.dtype("float32"): "F32", np.dtype("int32"): "I32"}
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        data = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": codes[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def reference(module, x, labels):
    """torch's logits and autograd's gradients of the mean cross-entropy."""
    module.zero_grad()
    logits = module(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
    loss.backward()
    grads = {name: p.grad.detach().numpy().copy() for name, p in module.named_parameters()}
    return logits.detach().numpy(), grads


def export(module, x, path, opset, dynamo=False):
    if dynamo:  # the torch.export-based exporter, PyTorch's default from 2.9
        torch.onnx.export(module, (x,), path, opset_version=max(opset, 18), dynamo=True, external_data=False,
                          input_names=["x"], output_names=["logits"],
                          dynamic_shapes=({0: torch.export.Dim("batch")},))
        return
    torch.onnx.export(module, (x,), path, opset_version=opset, input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch"}}, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.PRESERVE, dynamo=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--full", action="store_true", help="the published widths")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--opset", type=int, default=OPSET)
    ap.add_argument("--dynamo", action="store_true",
                    help="also write NAME_dynamo.onnx, the same module through torch.export (opset 18)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    for i, (name, (module, x, labels)) in enumerate(models(args.full).items()):
        if args.only and name not in args.only.split(","):
            continue
        randomise(module, 100 + i)
        module.eval()
        # with gradients on, as here, nn.TransformerEncoderLayer takes its composite path
        # (under no_grad its fused kernel has no ONNX form)
        export(module, x, os.path.join(args.out, name + ".onnx"), args.opset)
        if args.dynamo:
            export(module, x, os.path.join(args.out, name + "_dynamo.onnx"), args.opset, dynamo=True)
        logits, grads = reference(module, x, labels)
        tensors = {"x": x.numpy().astype(np.float32) if x.is_floating_point() else x.numpy().astype(np.int32),
                   "labels": labels.numpy().astype(np.int32), "logits": logits}
        tensors.update({"grad/" + k: v for k, v in grads.items()})
        write_safetensors(os.path.join(args.out, name + ".safetensors"), tensors)
        print(f"{name}: {sum(g.size for g in grads.values())} parameters, logits {list(logits.shape)}")


if __name__ == "__main__":
    main()
