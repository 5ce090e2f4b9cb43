"""What the Python package's tests share: the repository's files, golden
cases read as tensors, and a tiny GPT-like model trained with nanochat's
param_groups."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import torch

SOURCE = Path(os.environ.get("OPTGEN_SOURCE_DIR",
                             Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("OPTGEN_ROOT", SOURCE / "build"))
NANOCHAT = SOURCE / "examples" / "nanochat.opt"
NANOCHAT_6ED7D1D = SOURCE / "examples" / "nanochat_6ed7d1d.opt"
F32 = {"compute": "f32"}

# The golden cases' gates (check_golden.py) and the numeric tests' reader.
sys.path.insert(0, str(SOURCE / "test" / "golden"))
sys.path.insert(0, str(SOURCE / "test" / "numeric"))
import compare  # noqa: E402
import safetensors_io  # noqa: E402

def read_safetensors(path) -> tuple[dict, dict]:
    """A safetensors file's metadata and F32 tensors (the numeric tests'
    reader)."""
    tensors, metadata = safetensors_io.read(path)
    return metadata, {name: torch.tensor(values, dtype=torch.float32).reshape(shape)
                      for name, (shape, values) in tensors.items()}


def update_error(initial, out, expect) -> float:
    """The README's rel, as the numeric tests compute it."""
    return compare.update_error(*(t.flatten().tolist()
                                  for t in (initial, out, expect)))


# ----- a tiny GPT-like model, named as nanochat names its parameters --------

VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 32, 32, 4, 2, 16


def rms_norm(x):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.ModuleDict({
            name: torch.nn.Linear(WIDTH, WIDTH, bias=False)
            for name in ("c_q", "c_k", "c_v", "c_proj")})
        self.mlp = torch.nn.ModuleDict({
            "c_fc": torch.nn.Linear(WIDTH, 4 * WIDTH, bias=False),
            "c_proj": torch.nn.Linear(4 * WIDTH, WIDTH, bias=False)})

    def forward(self, x):
        batch, length, _ = x.shape
        h = rms_norm(x)
        q, k, v = (self.attn[n](h).view(batch, length, HEADS, -1).transpose(1, 2)
                   for n in ("c_q", "c_k", "c_v"))
        scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        mask = torch.ones(length, length, dtype=torch.bool).tril()
        attention = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        x = x + self.attn["c_proj"](attention.transpose(1, 2).reshape(batch, length, WIDTH))
        return x + self.mlp["c_proj"](torch.relu(self.mlp["c_fc"](rms_norm(x))).square())


class TinyGPT(torch.nn.Module):
    def __init__(self, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.transformer = torch.nn.ModuleDict({
            "wte": torch.nn.Embedding(VOCAB, WIDTH),
            "h": torch.nn.ModuleList([Block() for _ in range(LAYERS)])})
        self.lm_head = torch.nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, tokens, targets):
        x = self.transformer["wte"](tokens)
        for block in self.transformer["h"]:
            x = block(x)
        logits = self.lm_head(rms_norm(x))
        return torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB),
                                                 targets.reshape(-1))


def nanochat_param_groups(model: TinyGPT) -> list[dict]:
    """As nanochat's setup_optimizers makes them: AdamW for the head and the
    embedding, Muon for the blocks' matrices, one group per shape."""
    matrices = list(model.transformer["h"].parameters())
    groups = [
        dict(kind="adamw", params=[model.lm_head.weight], lr=0.004,
             betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0),
        dict(kind="adamw", params=[model.transformer["wte"].weight], lr=0.2,
             betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0),
    ]
    for shape in sorted({p.shape for p in matrices}):
        groups.append(dict(kind="muon",
                           params=[p for p in matrices if p.shape == shape],
                           lr=0.02, momentum=0.95, ns_steps=5, beta2=0.95,
                           weight_decay=0.0))
    return groups


def batch(step: int, rows: int = 8):
    """Sequences that follow t -> (5 t + 3) mod VOCAB from a start that
    depends on the step: what the model can learn in a few dozen steps."""
    generator = torch.Generator().manual_seed(1000 + step)
    start = torch.randint(0, VOCAB, (rows, 1), generator=generator)
    tokens = [start]
    for _ in range(CONTEXT):
        tokens.append((5 * tokens[-1] + 3) % VOCAB)
    sequence = torch.cat(tokens, 1)
    return sequence[:, :-1], sequence[:, 1:]


def averaged_backward(model: TinyGPT, step: int, ranks: int) -> float:
    """The gradient of `step`'s batch as `ranks` ranks average it: each
    half's (for 2) gradient computed alone, then their mean, as an
    all-reduce of 2 computes it (a sum of two floats is the same either
    way). Returns the batch's loss."""
    tokens, targets = batch(step)
    parts = []
    losses = []
    for rank in range(ranks):
        model.zero_grad(set_to_none=True)
        rows = slice(rank * len(tokens) // ranks, (rank + 1) * len(tokens) // ranks)
        loss = model(tokens[rows], targets[rows])
        loss.backward()
        losses.append(loss.item())
        parts.append([p.grad.clone() for p in model.parameters()])
    for k, p in enumerate(model.parameters()):
        total = parts[0][k]
        for part in parts[1:]:
            total = total + part[k]
        p.grad = total / ranks
    return sum(losses) / ranks


def rank_backward(model: TinyGPT, step: int, rank: int, ranks: int) -> float:
    """Rank `rank`'s own gradient of its part of `step`'s batch."""
    tokens, targets = batch(step)
    rows = slice(rank * len(tokens) // ranks, (rank + 1) * len(tokens) // ranks)
    model.zero_grad(set_to_none=True)
    loss = model(tokens[rows], targets[rows])
    loss.backward()
    return loss.item()
