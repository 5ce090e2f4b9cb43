#!/usr/bin/env python3
"""The baseline of bench_adamw.cu: nanochat's AdamW on the GPU, under
torch.compile as nanochat runs it.

The same parameters (nanochat's AdamW groups at depths 12, 20 and 26:
embeddings, value embeddings on alternate layers, lm_head, scalars; vocab
32768, n_embd = 64 * depth), each stepped by bench/baseline_torch.py's
adamw_step (nanochat's adamw_step_fused, from MATH.md) compiled with
torch.compile(dynamic=False, fullgraph=True), hyperparameters as 0-D CPU
tensors filled before each call. Timed with CUDA events over 20 steps after
warm-up (compilation not timed). Prints one "RESULT ..." line per depth.

  python3 bench/gpu/baseline_adamw.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from baseline_torch import adamw_step, nanochat_params  # noqa: E402  (one copy)

VOCAB = 32768


def main():
    device = torch.device("cuda")
    step_fn = torch.compile(adamw_step, dynamic=False, fullgraph=True)
    hyper = {k: torch.tensor(0.0, dtype=torch.float32) for k in
             ("step", "lr", "beta1", "beta2", "eps", "wd")}
    print(f"baseline_adamw: torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(device)}")
    for depth in (12, 20, 26):
        generator = torch.Generator(device=device).manual_seed(depth)
        tensors = []
        for _, shape, group in nanochat_params(depth, VOCAB):
            if group == "muon":
                continue
            p = torch.rand(shape, device=device, generator=generator) * 2 - 1
            g = (torch.rand(shape, device=device, generator=generator) * 2 - 1) * 0.01
            tensors.append((p, g, torch.zeros_like(p), torch.zeros_like(p)))
        total = sum(p.numel() for p, _, _, _ in tensors)

        def step(count):
            hyper["step"].fill_(count)
            hyper["lr"].fill_(1e-3)
            hyper["beta1"].fill_(0.8)
            hyper["beta2"].fill_(0.95)
            hyper["eps"].fill_(1e-10)
            hyper["wd"].fill_(0.01)
            for p, g, m, v in tensors:
                step_fn(p, g, m, v, hyper["step"], hyper["lr"], hyper["beta1"],
                        hyper["beta2"], hyper["eps"], hyper["wd"])

        for s in range(1, 4):
            step(s)
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        steps = 20
        start.record()
        for s in range(4, 4 + steps):
            step(s)
        stop.record()
        stop.synchronize()
        step_ms = start.elapsed_time(stop) / steps
        gbs = 28.0 * total / (step_ms * 1e-3) / 1e9
        print(f"RESULT side=torch-compile depth={depth} params={total} "
              f"step_ms={step_ms:.4f} adamw_gbs={gbs:.1f}", flush=True)
        del tensors
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
