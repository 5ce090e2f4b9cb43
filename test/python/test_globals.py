"""A spec's globals from PyTorch: examples/clip_adamw.opt (AdamW behind
Optax's clip_by_global_norm) steps as torch.optim.AdamW on gradients
clipped here by the norm torch computes, and global_value() reports that
norm, on a step the clip acts on and on one it does not."""

from __future__ import annotations

import pytest
import torch

import optgen
from support import SOURCE

CLIP_ADAMW = SOURCE / "examples" / "clip_adamw.opt"


def model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(),
                               torch.nn.Linear(24, 3))


def gradients(net, step, scale):
    torch.manual_seed(100 + step)
    x = torch.randn(32, 12)
    net.zero_grad(set_to_none=True)
    (scale * net(x).square().mean()).backward()


@pytest.mark.parametrize("scale", [1000.0, 1e-3])
def test_clipped_adamw_is_torchs_adamw_on_clipped_gradients(scale):
    ours, theirs = model(), model()
    opt = optgen.Optimizer(ours.named_parameters(), spec=CLIP_ADAMW)
    # The spec's groups: biases without decay, the rest with 0.01.
    reference = torch.optim.AdamW(
        [{"params": [p for n, p in theirs.named_parameters() if n.endswith(".bias")],
          "weight_decay": 0.0},
         {"params": [p for n, p in theirs.named_parameters()
                     if not n.endswith(".bias")], "weight_decay": 0.01}],
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    max_norm = 1.0
    for step in range(5):
        gradients(ours, step, scale)
        gradients(theirs, step, scale)
        grads = [p.grad for p in theirs.parameters()]
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()
        if norm >= max_norm:  # optax: where(norm < max_norm, g, g / norm * max_norm)
            for g in grads:
                g.mul_(max_norm / norm)
        opt.step()
        reference.step()
        assert opt.global_value("grad_norm") == pytest.approx(norm, rel=1e-5)
    clipped = scale > 1
    assert (norm >= max_norm) == clipped
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), name


def test_an_unknown_global_is_an_error_naming_it():
    net = model()
    opt = optgen.Optimizer(net.named_parameters(), spec=CLIP_ADAMW)
    gradients(net, 0, 1.0)
    opt.step()
    with pytest.raises(optgen.OptgenError, match="grad_nrom"):
        opt.global_value("grad_nrom")
