#!/usr/bin/env python3
"""The PyTorch baseline for bench/bench_step.cpp: nanochat's MuonAdamW step.

The same math as examples/nanochat.opt (nanochat/optim.py at a9d0a86, as
the reference MATH.md describes it), written as nanochat writes it, on the
CPU with fp32 compute (the spec's `-D compute=f32`):

- two step functions, as nanochat's adamw_step_fused and muon_step_fused:
  AdamW for one parameter; Muon for a group of same-shape matrices stacked
  K x m x n (torch.stack of the parameters and gradients, batched matmuls,
  copied back with torch._foreach_copy_): momentum, Nesterov, MuonEq, Polar
  Express (5 iterations), Muon+, NorMuon variance reduction, cautious weight
  decay;
- the hyperparameters reach them as 0-D CPU tensors, filled before each
  call, so that changing a value never recompiles;
- --mode compile (the baseline): both functions under
  torch.compile(dynamic=False, fullgraph=True), inductor generating C++ for
  the CPU, as nanochat runs them. The two checked steps and the warm-up
  compile every shape first, so compilation is never timed (its time is
  printed). --mode eager: the same functions uncompiled.

Same parameter shapes and names, same hyperparameters (the spec's), and the
same deterministic data (splitmix64, as in bench_step.cpp), so the two
programs' results are compared (a fingerprint of the step's deltas), not only
their times.

Run with PyTorch 2.x from bench/.venv (bench/setup.sh makes it):
  bench/.venv/bin/python bench/baseline_torch.py [--mode compile|eager]
Prints one "RESULT key=value ..." line per depth, which bench/run.sh reads.
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

def nanochat_params(depth, vocab=VOCAB):
    """(name, shape, group) in bench_step.cpp's order."""
    n = 64 * depth
    defs = [("transformer.wte.weight", (vocab, n), "embeddings")]
    for i in range(depth):
        h = f"transformer.h.{i}."
        for m in ("attn.c_q", "attn.c_k", "attn.c_v", "attn.c_proj"):
            defs.append((h + m + ".weight", (n, n), "muon"))
        defs.append((h + "mlp.c_fc.weight", (4 * n, n), "muon"))
        defs.append((h + "mlp.c_proj.weight", (n, 4 * n), "muon"))
    for i in range(depth):
        if i % 2 == (depth - 1) % 2:  # nanochat's has_ve
            defs.append((f"value_embeds.{i}.weight", (vocab, n), "embeddings"))
    defs.append(("lm_head.weight", (vocab, n), "lm_head"))
    defs.append(("resid_lambdas", (depth,), "scalars"))
    defs.append(("x0_lambdas", (depth,), "scalars"))
    return defs


# --------------------------------------------------------------------------
# The optimizer
# --------------------------------------------------------------------------

def adamw_step(p, grad, exp_avg, exp_avg_sq, step_t, lr_t, beta1_t, beta2_t,
               eps_t, wd_t):
    """AdamW on one parameter, in place (MATH.md); the hyperparameters and
    the step count are 0-D tensors. Everything is fp32 here, so nanochat's
    casts to fp32 and back are identities and left out."""
    p.mul_(1 - lr_t * wd_t)
    exp_avg.lerp_(grad, 1 - beta1_t)
    exp_avg_sq.lerp_(grad.square(), 1 - beta2_t)
    bias1 = 1 - beta1_t ** step_t
    bias2 = 1 - beta2_t ** step_t
    denom = (exp_avg_sq / bias2).sqrt() + eps_t
    p.sub_(exp_avg / denom * (lr_t / bias1))


def muon_step(stacked_grads, stacked_params, momentum_buffer,
              second_momentum_buffer, momentum_t, lr_t, wd_t, beta2_t,
              ns_steps, red_dim, compute=torch.float32):
    """Muon (a9d0a86) on a K x m x n stack, in place on the stacked
    parameters and the two buffers. lr_t is already scaled by
    sqrt(max(1, m/n)); ns_steps, red_dim and compute are Python values (a
    compiled graph is specialised on them). compute is the dtype of MuonEq's
    result and Polar Express (bf16 as nanochat runs on GPUs: its statistics
    in fp32, its products bf16 with fp32 accumulation); everything after the
    iteration runs in fp32."""
    m, n = stacked_params.shape[-2:]
    # Momentum and Nesterov (the stacked gradients are a scratch copy).
    momentum_buffer.lerp_(stacked_grads, 1 - momentum_t)
    x = stacked_grads.lerp_(momentum_buffer, momentum_t).to(compute)
    # MuonEq: every row to the mean row norm.
    target = x.float().norm(dim=(-2, -1), keepdim=True) / math.sqrt(m)
    row = x.float().norm(dim=-1, keepdim=True).clamp_min(1e-6)
    x = x * (target / row).to(compute)
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
    x = x.float()
    # Muon+: the update's norm to sqrt(min(m, n)).
    x = x * (math.sqrt(min(m, n)) / x.norm(dim=(-2, -1), keepdim=True).clamp_min(1e-6))
    # NorMuon variance reduction.
    v_mean = x.square().mean(dim=red_dim, keepdim=True)
    red_size = x.size(red_dim)
    v_norm = (v_mean.sum(dim=(-2, -1), keepdim=True) * red_size).sqrt()
    second_momentum_buffer.lerp_(v_mean, 1 - beta2_t)
    step_size = second_momentum_buffer.clamp_min(1e-10).rsqrt()
    v_norm_new = (v_mean * red_size * step_size.square()).sum(dim=(-2, -1), keepdim=True).sqrt()
    x = x * (step_size * (v_norm / v_norm_new.clamp_min(1e-10)))
    # Cautious weight decay and the update.
    mask = (x * stacked_params) >= 0
    stacked_params.sub_(lr_t * x + lr_t * wd_t * stacked_params * mask)


def step_functions(mode):
    """(adamw, muon) as the mode runs them: nanochat compiles both with
    torch.compile(dynamic=False, fullgraph=True)."""
    if mode == "eager":
        return adamw_step, muon_step
    compile_ = lambda fn: torch.compile(fn, dynamic=False, fullgraph=True)
    return compile_(adamw_step), compile_(muon_step)


def scalar():
    """A 0-D CPU tensor for a hyperparameter."""
    return torch.tensor(0.0, dtype=torch.float32, device="cpu")


class MuonAdamW:
    """Groups as nanochat's setup_optimizer makes them: AdamW groups by
    name, one Muon group per distinct matrix shape."""

    def __init__(self, named, mode, compute=torch.float32):
        self.adamw_step, self.muon_step = step_functions(mode)
        self.compute = compute
        self.adamw = []  # (params, settings)
        self.muon = []   # (params, momentum_buffer, second_momentum_buffer)
        self.step_count = 0
        self.adamw_t = {k: scalar() for k in ("step", "lr", "beta1", "beta2", "eps", "wd")}
        self.muon_t = {k: scalar() for k in ("momentum", "lr", "wd", "beta2")}
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
            device = params[0].device
            self.muon.append((params, torch.zeros(k, m, n, device=device),
                              torch.zeros(smb_shape, device=device)))

    @torch.no_grad()
    def step(self):
        self.step_count += 1
        t = self.adamw_t
        for p, exp_avg, exp_avg_sq, s in self.adamw:
            t["step"].fill_(self.step_count)
            t["lr"].fill_(s["lr"])
            t["beta1"].fill_(s["betas"][0])
            t["beta2"].fill_(s["betas"][1])
            t["eps"].fill_(s["eps"])
            t["wd"].fill_(s["weight_decay"])
            self.adamw_step(p, p.grad, exp_avg, exp_avg_sq, t["step"], t["lr"],
                            t["beta1"], t["beta2"], t["eps"], t["wd"])
        t = self.muon_t
        for params, momentum_buffer, smb in self.muon:
            m, n = params[0].shape
            stacked_grads = torch.stack([p.grad for p in params])
            stacked_params = torch.stack(params)
            t["momentum"].fill_(MUON["momentum"])
            t["lr"].fill_(MUON["lr"] * math.sqrt(max(1.0, m / n)))
            t["wd"].fill_(MUON["weight_decay"])
            t["beta2"].fill_(MUON["beta2"])
            self.muon_step(stacked_grads, stacked_params, momentum_buffer, smb,
                           t["momentum"], t["lr"], t["wd"], t["beta2"],
                           MUON["ns_steps"], -1 if m >= n else -2,
                           self.compute)
            torch._foreach_copy_(params, list(stacked_params.unbind(0)))


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
# The BLAS torch calls, on the products the step performs
# --------------------------------------------------------------------------

def polar_operands(m, n):
    """The operand pairs of one Polar Express iteration on an m x n matrix,
    laid out as muon_step has them (tall: X^T X, A A, X B; otherwise
    X X^T, A A, B X), filled with small values."""
    x = torch.rand(m, n) * 0.01
    s = min(m, n)
    a = torch.rand(s, s) * 0.01
    if m > n:
        return [(x.mT, x), (a, a), (x, a)]
    return [(x, x.mT), (a, a), (a, x)]


def polar_flops(m, n):
    """The standard flops of Polar Express's products on an m x n matrix
    in one step (bench_step.cpp's polarFlops)."""
    s, l = min(m, n), max(m, n)
    return MUON["ns_steps"] * (4 * l * s * s + 2 * s ** 3)


def mm_rate(pairs, reps):
    """GFLOP/s of torch.mm over the pairs in sequence, best of `reps` (a
    ceiling, as optgen-bench's BLAS rates: neighbours only slow a run)."""
    flops = sum(2 * a.shape[0] * a.shape[1] * b.shape[1] for a, b in pairs)
    times = time_runs(2, reps, lambda: [torch.mm(a, b) for a, b in pairs])
    return flops / min(times) / 1e9


def measure(defs, steps, warmup, mode):
    """One depth at the current thread count: (full step times, AdamW step
    times, fingerprints, seconds of the first step, others' CPU share)."""
    named = make_model(defs)
    opt = MuonAdamW(named, mode)
    before = [p.clone() for _, p, _ in named]
    start = time.perf_counter()
    opt.step()  # two checked steps, as optgen-bench; compile mode compiles here
    first_s = time.perf_counter() - start
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
    adamw_opt = MuonAdamW(adamw_named, mode)
    adamw = time_runs(warmup + 2, 3 * steps, adamw_opt.step)
    del adamw_opt, adamw_named
    return full, adamw, fa, fm, first_s, others_percent(start, sample_cpu())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("compile", "eager"), default="compile",
                        help="compile: nanochat's torch.compile'd step functions "
                             "(the baseline); eager: the same functions uncompiled")
    parser.add_argument("--depths", default="2,4,6")
    parser.add_argument("--steps", type=int, default=0,
                        help="timed steps (0: 21, 11 and 7 by depth, as optgen-bench)")
    parser.add_argument("--warmup", type=int, default=2)
    cpus = len(os.sched_getaffinity(0))
    parser.add_argument("--threads", default=str(torch.get_num_threads()),
                        help="intra-op thread counts to try, comma-separated; each "
                             "depth reports the fastest (default: torch's own, one "
                             f"per core: {torch.get_num_threads()} of {cpus} CPUs here)")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",")]
    side = f"torch-{args.mode}"

    # Every shape is compiled once per depth (dynamic=False): more graphs
    # than dynamo's default limit when several depths run in one process.
    # Past the limit dynamo would fall back to eager silently; make it an
    # error instead.
    dynamo = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(dynamo, name):
            setattr(dynamo, name, 64)
    if hasattr(dynamo, "fail_on_recompile_limit_hit"):
        dynamo.fail_on_recompile_limit_hit = True

    blas = next((f.split("BLAS_INFO=")[1] for f in torch.__config__.show().split(",")
                 if "BLAS_INFO=" in f), "unknown")
    print(f"torch {torch.__version__} ({args.mode}), BLAS {blas}, CPU capability "
          f"{torch.backends.cpu.get_cpu_capability()}, intra-op threads tried: "
          f"{thread_counts}")
    print(f"torch.mm 1024^3 fp32: {mm_rate([(torch.rand(1024, 1024),) * 2], 10):.1f} "
          f"GFLOP/s (best of 10)")
    print()

    rows = []
    for depth in (int(d) for d in args.depths.split(",")):
        defs = nanochat_params(depth)
        steps = args.steps or (21 if depth <= 2 else 11 if depth <= 4 else 7)
        params = sum(math.prod(shape) for _, shape, _ in defs)
        adamw_bytes = 7 * 4 * sum(math.prod(s) for _, s, g in defs if g != "muon")
        matmul_flops = sum(polar_flops(*s) for _, s, g in defs if g == "muon")
        pairs = [pair for _, s, g in defs if g == "muon" for pair in polar_operands(*s)]
        print(f"depth {depth}: {params} params; Polar Express {matmul_flops / 1e9:.3f} GFLOP")
        best = best_adamw = None
        for threads in thread_counts:
            torch.set_num_threads(threads)
            # Inductor's C++ fixes its thread count when it compiles.
            torch._dynamo.reset()
            rate = mm_rate(pairs, 7)
            full, adamw, fa, fm, first_s, others = measure(defs, steps, args.warmup,
                                                           args.mode)
            full_ms = 1e3 * statistics.median(full)
            adamw_ms = 1e3 * statistics.median(adamw)
            # The Muon part is the difference of two medians: on a busy
            # machine it can come out negative, which says nothing.
            muon_ms = full_ms - adamw_ms
            muon_gflops = matmul_flops / (muon_ms * 1e-3) / 1e9 if muon_ms > 0 else math.nan
            print(f"  {threads} thread(s): full step ms median {full_ms:.2f} "
                  f"(min {1e3 * min(full):.2f}, max {1e3 * max(full):.2f}); "
                  f"AdamW ms median {adamw_ms:.2f} (min {1e3 * min(adamw):.2f}); "
                  f"first step {first_s:.1f} s"
                  + (" (compiling)" if args.mode == "compile" else ""))
            print(f"    Polar Express {muon_gflops:.1f} GFLOP/s over the Muon part "
                  f"(full - AdamW) against torch.mm on its products {rate:.1f} GFLOP/s "
                  f"(best of 7): {100 * muon_gflops / rate:.0f}%; other processes used "
                  f"{others:.0f}% of the CPUs"
                  + (" (noisy: rerun on a quiet machine)" if others > 10 else ""))
            if best is None or full_ms < best["full_ms"]:
                best = dict(threads=threads, full_ms=full_ms, fa=fa, fm=fm, others=others,
                            first_s=first_s, muon_gflops=muon_gflops, rate=rate)
            if best_adamw is None or adamw_ms < best_adamw[1]:
                best_adamw = (threads, adamw_ms)
        fa, fm = best["fa"], best["fm"]
        print(f"  fingerprint after 2 steps: adamw sum {fa[0]:.9e} abs {fa[1]:.9e}; "
              f"muon sum {fm[0]:.9e} abs {fm[1]:.9e}")
        rows.append((depth, params, best_adamw[1],
                     adamw_bytes / (best_adamw[1] * 1e-3) / 1e9, best_adamw[0],
                     best["full_ms"], best["threads"], best["muon_gflops"], best["rate"]))
        print(f"RESULT side={side} depth={depth} params={params} "
              f"full_ms={best['full_ms']:.3f} full_threads={best['threads']} "
              f"adamw_ms={best_adamw[1]:.3f} adamw_threads={best_adamw[0]} "
              f"adamw_sum={fa[0]:.9e} adamw_abs={fa[1]:.9e} muon_sum={fm[0]:.9e} "
              f"muon_abs={fm[1]:.9e} muon_gflops={best['muon_gflops']:.1f} "
              f"blas_gflops={best['rate']:.1f} first_step_s={best['first_s']:.1f} "
              f"others_pct={best['others']:.0f}")
        print(flush=True)

    print(f"{side}, the faster thread count per depth and part:")
    print("| depth | params | AdamW ms | AdamW GB/s | AdamW threads | full step ms | "
          "full threads | Muon GFLOP/s | torch.mm GFLOP/s (shapes) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for depth, params, adamw_ms, gbs, adamw_threads, full_ms, full_threads, mg, rate in rows:
        print(f"| {depth} | {params} | {adamw_ms:.2f} | {gbs:.1f} | {adamw_threads} | "
              f"{full_ms:.1f} | {full_threads} | {mg:.1f} | {rate:.1f} |")


if __name__ == "__main__":
    main()
