"""What each rank of test_distributed.py runs (in a process of its own,
spawned by torch.multiprocessing, ranks meeting over gloo)."""

from __future__ import annotations

import datetime

import torch
import torch.distributed as dist

import optgen
from support import (F32, NANOCHAT, SOURCE, TinyGPT, nanochat_param_groups,
                     rank_backward)

STEPS, SAVED_AT = 40, 20


def error_of(function) -> str:
    try:
        function()
    except Exception as error:  # what the rank reports back
        return f"{type(error).__name__}: {error}"
    return ""


def train(rank: int, size: int, store: str, out: str) -> None:
    """Trains the tiny GPT on this rank's part of every batch, saving the
    optimizer's state_dict and the model after step SAVED_AT; then checks
    what must fail on every rank together."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=size,
                            timeout=datetime.timedelta(seconds=60))
    result: dict = {"losses": []}
    # A spec that does not distribute its step is refused.
    result["undistributed"] = error_of(lambda: optgen.Optimizer(
        TinyGPT().named_parameters(), spec=SOURCE / "examples" / "adamw.opt"))

    model = TinyGPT()
    opt = optgen.Optimizer(nanochat_param_groups(model), spec=NANOCHAT,
                           defines=F32, names=model.named_parameters())
    result["state_bytes"] = opt.state_bytes()
    for step in range(STEPS):
        result["losses"].append(rank_backward(model, step, rank, size))
        opt.step()
        if step + 1 == SAVED_AT:
            result["saved_state"] = opt.state_dict()
            result["saved_model"] = {k: v.clone() for k, v in model.state_dict().items()}
    result["model"] = model.state_dict()

    # One rank without a gradient: no rank steps, each says why.
    rank_backward(model, STEPS, rank, size)
    if rank == size - 1:
        model.lm_head.weight.grad = None
    result["missing"] = error_of(opt.step)
    torch.save(result, out)
    dist.destroy_process_group()


def fail_in_step(rank: int, size: int, store: str) -> None:
    """Steps once; then the last rank's all-gathers fail inside the next
    step, where the other ranks wait for it."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=size,
                            timeout=datetime.timedelta(seconds=60))
    model = TinyGPT()
    opt = optgen.Optimizer(nanochat_param_groups(model), spec=NANOCHAT,
                           defines=F32, names=model.named_parameters())
    for step in range(2):
        rank_backward(model, step, rank, size)
        if step == 1 and rank == size - 1:
            def broken(*args, **kwargs):
                raise RuntimeError("the network is down")
            dist.all_gather = broken
        opt.step()
