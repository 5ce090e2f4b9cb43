#!/usr/bin/env python3
"""The baseline of bench_step.cu: nanochat's whole optimizer step on the
GPU, under torch.compile as nanochat runs it (bench/baseline_torch.py's
MuonAdamW: AdamW and Muon step functions compiled with dynamic=False and
fullgraph=True, hyperparameters as 0-D CPU tensors, a Muon group a stack of
its same-shape matrices), with Polar Express in bf16 as nanochat computes on
GPUs. Same parameters as bench_step.cu (depths 12, 20, 26; vocab 32768).
Timed with CUDA events over 10 steps after warm-up (compilation not timed).
Prints one "RESULT ..." line per depth.

  python3 bench/gpu/baseline_step.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import baseline_torch  # noqa: E402  (one copy of the math)

VOCAB = 32768


def main():
    device = torch.device("cuda")
    print(f"baseline_step: torch {torch.__version__}, "
          f"{torch.cuda.get_device_name(device)}", flush=True)
    for depth in (12, 20, 26):
        generator = torch.Generator(device=device).manual_seed(depth)
        named = []
        for name, shape, group in baseline_torch.nanochat_params(depth, VOCAB):
            p = (torch.rand(shape, device=device, generator=generator) * 2 - 1) * 0.02
            p.grad = (torch.rand(shape, device=device, generator=generator) * 2 - 1) * 0.001
            named.append((name, p, group))
        total = sum(p.numel() for _, p, _ in named)
        opt = baseline_torch.MuonAdamW(named, "compile", compute=torch.bfloat16)
        for _ in range(3):  # compiles every shape
            opt.step()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        steps = 10
        start.record()
        for _ in range(steps):
            opt.step()
        stop.record()
        stop.synchronize()
        print(f"RESULT side=torch-compile depth={depth} params={total} "
              f"step_ms={start.elapsed_time(stop) / steps:.4f}", flush=True)
        del opt, named
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
