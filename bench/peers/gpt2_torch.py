"""fedc's transformer language model (src/nn/transformer.c: pre-LN GPT-2 blocks, GELU tanh,
learned positions, untied head, no dropout) in PyTorch, for the benches that time it against
fedc: bench/transformer_step_torch.py (one training step) and bench/peers/transformer_round_torch.py
(a FedAvg round). Runs on Debian's PyTorch 1.13 as on PyTorch 2 (attention written out: 1.13
has no fused scaled_dot_product_attention)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(s, width, heads, context):
        super().__init__()
        s.h = heads
        s.ln1, s.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        s.qkv, s.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        s.fc, s.fc2 = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)
        s.register_buffer("causal", torch.tril(torch.ones(context, context)))

    def forward(s, x):
        b, t, c = x.shape
        q, k, v = s.qkv(s.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, s.h, c // s.h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // s.h))
        att = F.softmax(att.masked_fill(s.causal[:t, :t] == 0, float("-inf")), dim=-1)
        y = att @ v
        x = x + s.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + s.fc2(F.gelu(s.fc(s.ln2(x)), approximate="tanh"))


class LM(nn.Module):
    """forward(x, y): the mean cross-entropy of the next-token logits, PAD (0) ignored."""

    def __init__(s, layers, width, heads, context, vocab):
        super().__init__()
        s.vocab = vocab
        s.wte, s.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        s.blocks = nn.ModuleList([Block(width, heads, context) for _ in range(layers)])
        s.lnf, s.head = nn.LayerNorm(width), nn.Linear(width, vocab, bias=False)

    def forward(s, x, y):
        h = s.wte(x) + s.wpe(torch.arange(x.shape[1]))
        for blk in s.blocks:
            h = blk(h)
        logits = s.head(s.lnf(h))
        return F.cross_entropy(logits.view(-1, s.vocab), y.view(-1), ignore_index=0)
