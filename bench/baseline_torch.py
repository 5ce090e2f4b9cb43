#!/usr/bin/python3
"""The PyTorch baseline for bench/bench_step.cpp: nanochat's MuonAdamW step.

The same math as examples/nanochat.opt (nanochat/optim.py at a9d0a86, as
described in the reference MATH.md), written as nanochat writes it but in
eager PyTorch on the CPU, with fp32 compute to match the optgen f32 variant:

- AdamW per parameter with in-place torch ops (nanochat's adamw_step_fused
  without torch.compile);
- Muon per group of same-shape matrices, stacked K x m x n as nanochat does
  (torch.stack of the parameters and gradients, batched matmuls, copy back):
  momentum, Nesterov, MuonEq, Polar Express (5 iterations), Muon+, NorMuon
  variance reduction, cautious weight decay.

Same parameter shapes and names, same hyperparameters (the spec's), and the
same deterministic data (splitmix64, as in bench_step.cpp), so the two
programs' results are compared (a fingerprint of the step's deltas), not only
their times.

Run with Debian's interpreter, /usr/bin/python3 (python3-torch). Prints one
"RESULT key=value ..." line per depth, which bench/run.sh reads.
"""

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import torch

VOCAB = 8192

# Polar Express coefficients (a, b, c), one row per iteration.
POLAR_EXPRESS = [
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
]

# The spec's groups and settings (examples/nanochat.opt).
ADAMW_GROUPS = {
    "lm_head": dict(lr=0.004, betas=(0.8, 0.96), eps=1e-10, weight_decay=0.01),
    "embeddings": dict(lr=0.2, betas=(0.8, 0.995), eps=1e-10, weight_decay=0.001),
    "scalars": dict(lr=0.005, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0),
}
MUON = dict(lr=0.02, momentum=0.95, ns_steps=5, beta2=0.9, weight_decay=0.0)


# --------------------------------------------------------------------------
# Deterministic data, bit-identical to bench_step.cpp's fillUniform
# --------------------------------------------------------------------------

def splitmix64(x):
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def uniform(shape, seed, scale):
    n = math.prod(shape)
    index = np.arange(n, dtype=np.uint64) + np.uint64(seed << 32)
    bits = splitmix64(index) >> np.uint64(40)  # 24 bits
    unit = bits.astype(np.float32) * np.float32(1.0 / 16777216.0) - np.float32(0.5)
    return torch.from_numpy((np.float32(2.0 * scale) * unit).reshape(shape))


# --------------------------------------------------------------------------
# nanochat's parameters, as bench_step.cpp's nanochatParams
# --------------------------------------------------------------------------

def nanochat_params(depth):
    """(name, shape, group) in bench_step.cpp's order."""
    n = 64 * depth
    defs = [("transformer.wte.weight", (VOCAB, n), "embeddings")]
    for i in range(depth):
        h = f"transformer.h.{i}."
        for m in ("attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj"):
            defs.append((h + m + ".weight", (n, n), "muon"))
        defs.append((h + "mlp.c_fc.weight", (4 * n, n), "muon"))
        defs.append((h + "mlp.c_proj.weight", (n, 4 * n), "muon"))
    for i in range(depth):
        if i % 2 == (depth - 1) % 2:  # nanochat's has_ve
            defs.append((f"value_embeds.{i}.weight", (VOCAB, n), "embeddings"))
    defs.append(("lm_head.weight", (VOCAB, n), "lm_head"))
    defs.append(("resid_lambdas", (depth,), "scalars"))
    defs.append(("x0_lambdas", (depth,), "scalars"))
    return defs


# --------------------------------------------------------------------------
# The optimizer
# --------------------------------------------------------------------------

def adamw_step(p, grad, exp_avg, exp_avg_sq, step, lr, betas, eps, weight_decay):
    """nanochat's adamw_step_fused, eager (Python floats for the scalars)."""
    beta1, beta2 = betas
    p.mul_(1 - lr * weight_decay)
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.lerp_(grad.square(), 1 - beta2)
    bias1 = 1 - beta1 ** step
    bias2 = 1 - beta2 ** step
    denom = (exp_avg_sq / bias2).sqrt() + eps
    step_size = lr / bias1
    p.add_(exp_avg / denom, alpha=-step_size)


def muon_step(stacked_grads, stacked_params, momentum_buffer,
              second_momentum_buffer, lr, momentum, ns_steps, beta2,
              weight_decay):
    """nanochat's muon_step_fused at a9d0a86 with fp32 compute, eager, on a
    K x m x n stack."""
    m, n = stacked_params.shape[-2:]
    red_dim = -1 if m >= n else -2
    # Nesterov momentum.
    momentum_buffer.lerp_(stacked_grads, 1 - momentum)
    x = stacked_grads.lerp(momentum_buffer, momentum)
    # MuonEq: equal row norms.
    target = x.norm(dim=(-2, -1), keepdim=True) / math.sqrt(m)
    row = x.norm(dim=-1, keepdim=True).clamp_min(1e-6)
    x = x * (target / row)
    # Polar Express.
    x = x / (x.norm(dim=(-2, -1), keepdim=True) * 1.01 + 1e-6)
    for a, b, c in POLAR_EXPRESS[:ns_steps]:
        if m > n:
            A = x.mT @ x
            B = b * A + c * (A @ A)
            x = a * x + x @ B
        else:
            A = x @ x.mT
            B = b * A + c * (A @ A)
            x = a * x + B @ x
    # Muon+: fix the update's norm.
    x = x * (math.sqrt(min(m, n)) / x.norm(dim=(-2, -1), keepdim=True).clamp_min(1e-6))
    # NorMuon variance reduction.
    v_mean = x.square().mean(dim=red_dim, keepdim=True)
    red_size = x.size(red_dim)
    v_norm = (v_mean.sum(dim=(-2, -1), keepdim=True) * red_size).sqrt()
    second_momentum_buffer.lerp_(v_mean, 1 - beta2)
    step_size = second_momentum_buffer.clamp_min(1e-10).rsqrt()
    v_norm_new = (v_mean * red_size * step_size.square()).sum(dim=(-2, -1), keepdim=True).sqrt()
    x = x * (step_size * v_norm / v_norm_new.clamp_min(1e-10))
    # Cautious weight decay and the update.
    lr_eff = lr * math.sqrt(max(1.0, m / n))
    mask = (x * stacked_params) >= 0
    stacked_params.sub_(lr_eff * x + lr_eff * weight_decay * stacked_params * mask)


class MuonAdamW:
    """Groups as nanochat's setup_optimizer makes them: AdamW groups by
    name, one Muon group per distinct matrix shape."""

    def __init__(self, named):
        self.adamw = []  # (params, settings)
        self.muon = []   # (params, momentum_buffer, second_momentum_buffer)
        self.step_count = 0
        by_group = {}
        for _, p, group in named:
            by_group.setdefault(group, []).append(p)
        for group, settings in ADAMW_GROUPS.items():
            for p in by_group.get(group, []):
                self.adamw.append((p, torch.zeros_like(p), torch.zeros_like(p), settings))
        matrices = by_group.get("muon", [])
        for shape in sorted({tuple(p.shape) for p in matrices}):
            params = [p for p in matrices if tuple(p.shape) == shape]
            k, (m, n) = len(params), shape
            smb_shape = (k, m, 1) if m >= n else (k, 1, n)
            self.muon.append((params, torch.zeros(k, m, n), torch.zeros(smb_shape)))

    @torch.no_grad()
    def step(self):
        self.step_count += 1
        for p, exp_avg, exp_avg_sq, s in self.adamw:
            adamw_step(p, p.grad, exp_avg, exp_avg_sq, self.step_count,
                       s["lr"], s["betas"], s["eps"], s["weight_decay"])
        for params, momentum_buffer, smb in self.muon:
            stacked_grads = torch.stack([p.grad for p in params])
            stacked_params = torch.stack(params)
            muon_step(stacked_grads, stacked_params, momentum_buffer, smb,
                      MUON["lr"], MUON["momentum"], MUON["ns_steps"],
                      MUON["beta2"], MUON["weight_decay"])
            for p, updated in zip(params, stacked_params.unbind(0)):
                p.copy_(updated)


def make_model(defs):
    """Parameters with gradients; parameter i uses streams 2i and 2i+1."""
    named = []
    for i, (name, shape, group) in enumerate(defs):
        p = uniform(shape, 2 * i, 0.02)
        p.grad = uniform(shape, 2 * i + 1, 1.0)
        named.append((name, p, group))
    return named


def fingerprint(named, before, muon):
    total, absolute = 0.0, 0.0
    for (_, p, group), p0 in zip(named, before):
        if (group == "muon") != muon:
            continue
        delta = p.double() - p0.double()
        total += delta.sum().item()
        absolute += delta.abs().sum().item()
    return total, absolute


def sample_cpu():
    """(wall, busy seconds of all CPUs from /proc/stat, this process's CPU
    seconds), as bench_step.cpp's sampleCpu."""
    with open("/proc/stat") as stat:
        fields = [float(x) for x in stat.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    own = os.times()
    return (time.perf_counter(), (user + nice + system + irq + softirq + steal) / tick,
            own.user + own.system)


def others_percent(start, end):
    """The share of the CPUs other processes used between two samples."""
    wall = end[0] - start[0]
    others = (end[1] - start[1]) - (end[2] - start[2])
    return max(0.0, 100.0 * others / (wall * os.cpu_count()))


def time_runs(warmup, reps, body):
    for _ in range(warmup):
        body()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        body()
        times.append(time.perf_counter() - start)
    return times


# --------------------------------------------------------------------------
# The BLAS torch really calls
# --------------------------------------------------------------------------

def loaded_blas():
    """The BLAS / LAPACK libraries mapped into this process: Debian's torch
    calls libblas.so.3, which the alternatives system points at OpenBLAS or
    at the (~40x slower) reference BLAS."""
    libs = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if "blas" in path or "lapack" in path:
                libs.add(os.path.realpath(path))
    return sorted(libs)


def matmul_rate(size=1024, reps=10):
    a = torch.rand(size, size)
    b = torch.rand(size, size)
    times = time_runs(2, reps, lambda: torch.mm(a, b))
    return 2.0 * size ** 3 / statistics.median(times) / 1e9


def measure(defs, steps, warmup):
    """One depth at the current thread count: (full step times, AdamW step
    times, fingerprints, others' CPU share)."""
    named = make_model(defs)
    opt = MuonAdamW(named)
    before = [p.clone() for _, p, _ in named]
    opt.step()  # two checked steps, as optgen-bench
    opt.step()
    fa = fingerprint(named, before, muon=False)
    fm = fingerprint(named, before, muon=True)
    del before
    start = sample_cpu()
    full = time_runs(warmup, steps, opt.step)
    if not all(torch.isfinite(p).all() for _, p, _ in named):
        sys.exit("baseline_torch: non-finite parameters")
    del opt, named

    adamw_named = make_model([d for d in defs if d[2] != "muon"])
    adamw_opt = MuonAdamW(adamw_named)
    adamw = time_runs(warmup + 2, 3 * steps, adamw_opt.step)
    del adamw_opt, adamw_named
    return full, adamw, fa, fm, others_percent(start, sample_cpu())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="2,4,6")
    parser.add_argument("--steps", type=int, default=0,
                        help="timed steps (0: 21, 11 and 7 by depth, as optgen-bench)")
    parser.add_argument("--warmup", type=int, default=2)
    cpus = len(os.sched_getaffinity(0))
    parser.add_argument("--threads", default=f"{cpus},1" if cpus > 1 else "1",
                        help="intra-op thread counts to try, comma-separated; each "
                             "depth reports the fastest (default: every CPU, as "
                             "optgen-bench's OpenMP, and 1, torch's default here)")
    args = parser.parse_args()
    # Debian's torch starts with 1 intra-op thread on this machine, while
    # OpenMP (optgen-bench) takes every core. Neither is always faster: its
    # OpenMP threads and OpenBLAS's own threads share 2 cores, and whichever
    # spins slows the other down. So both are timed, and the baseline is the
    # faster of the two: the one a user would pick.
    default_threads = torch.get_num_threads()
    thread_counts = [int(t) for t in args.threads.split(",")]

    gflops = matmul_rate()
    print(f"torch {torch.__version__}, intra-op threads tried: {thread_counts} "
          f"(torch's default here: {default_threads}); "
          f"BLAS libraries loaded: {', '.join(loaded_blas()) or 'none'}")
    print(f"torch.mm 1024^3 fp32: {gflops:.1f} GFLOP/s (median of 10)")
    if gflops < 20:
        print("WARNING: this is not an optimised BLAS (the reference BLAS runs "
              "at ~3 GFLOP/s); the baseline would be meaningless", file=sys.stderr)
    print()

    rows = []
    for depth in (int(d) for d in args.depths.split(",")):
        defs = nanochat_params(depth)
        steps = args.steps or (21 if depth <= 2 else 11 if depth <= 4 else 7)
        params = sum(math.prod(shape) for _, shape, _ in defs)
        adamw_bytes = 7 * 4 * sum(math.prod(s) for _, s, g in defs if g != "muon")
        print(f"depth {depth}: {params} params")
        best = best_adamw = None
        for threads in thread_counts:
            torch.set_num_threads(threads)
            full, adamw, fa, fm, others = measure(defs, steps, args.warmup)
            full_ms = 1e3 * statistics.median(full)
            adamw_ms = 1e3 * statistics.median(adamw)
            print(f"  {threads} thread(s): full step ms median {full_ms:.2f} "
                  f"(min {1e3 * min(full):.2f}, max {1e3 * max(full):.2f}); "
                  f"AdamW ms median {adamw_ms:.2f} (min {1e3 * min(adamw):.2f}); "
                  f"other processes used {others:.0f}% of the CPUs"
                  + (" (noisy: rerun on a quiet machine)" if others > 10 else ""))
            if best is None or full_ms < best[1]:
                best = (threads, full_ms, fa, fm, others)
            if best_adamw is None or adamw_ms < best_adamw[1]:
                best_adamw = (threads, adamw_ms)
        threads, full_ms, fa, fm, others = best
        print(f"  fingerprint after 2 steps: adamw sum {fa[0]:.9e} abs {fa[1]:.9e}; "
              f"muon sum {fm[0]:.9e} abs {fm[1]:.9e}")
        rows.append((depth, params, best_adamw[1],
                     adamw_bytes / (best_adamw[1] * 1e-3) / 1e9, best_adamw[0],
                     full_ms, threads))
        print(f"RESULT side=torch depth={depth} params={params} full_ms={full_ms:.3f} "
              f"full_threads={threads} adamw_ms={best_adamw[1]:.3f} "
              f"adamw_threads={best_adamw[0]} adamw_sum={fa[0]:.9e} "
              f"adamw_abs={fa[1]:.9e} muon_sum={fm[0]:.9e} muon_abs={fm[1]:.9e} "
              f"mm_gflops={gflops:.1f} others_pct={others:.0f}")
        print(flush=True)

    print("The faster thread count per depth and part:")
    print("| depth | params | AdamW ms | AdamW GB/s | AdamW threads | full step ms | full threads |")
    print("|---|---|---|---|---|---|---|")
    for depth, params, adamw_ms, gbs, adamw_threads, full_ms, full_threads in rows:
        print(f"| {depth} | {params} | {adamw_ms:.2f} | {gbs:.1f} | {adamw_threads} | "
              f"{full_ms:.1f} | {full_threads} |")


if __name__ == "__main__":
    main()
