"""The command line of workload 4's peers (transformer_round_torch.py, transformer_round_drjax.py):
fedc's transformer presets (src/nn/transformer.c) and the round's sizes. Imports neither torch
nor JAX, so each peer's environment can read it."""
import argparse

# name: (layers, width, heads, context, vocabulary)
PRESETS = {"tiny": (2, 32, 2, 16, 90), "small": (6, 256, 4, 128, 10004)}


def parse(doc):
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--preset", default="small", choices=sorted(PRESETS))
    for k, v in dict(clients=64, steps=4, batch=4, rounds=2, threads=2).items():
        p.add_argument("--" + k, type=int, default=v)
    return p.parse_args()
