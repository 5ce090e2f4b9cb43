#!/usr/bin/env python3
"""Joins the GPU benchmarks' RESULT lines (bench_adamw.cu with
baseline_adamw.py; bench_step.cu with baseline_step.py) into the tables
scripts/gpu-check.sh prints, and writes them as a dated section for
bench/RESULTS.md (the GPU machine's copy of the repository is discarded:
the section comes back in the check's output folder, to be appended here).

  report.py ADAMW.txt ADAMW_TORCH.txt [--step STEP.txt STEP_TORCH.txt]
            --card NAME --commit SHA --out SECTION.md
"""

import argparse
import datetime
import os


def results(path):
    """depth -> the RESULT line's fields; empty when the run left no file."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                fields = dict(kv.split("=", 1) for kv in line.split()[1:])
                rows[int(fields["depth"])] = fields
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("optgen")
    parser.add_argument("torch")
    parser.add_argument("--step", nargs=2, metavar=("OPTGEN", "TORCH"))
    parser.add_argument("--card", required=True)
    parser.add_argument("--commit", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    ours, theirs = results(args.optgen), results(args.torch)
    lines = [
        "| depth | AdamW params | optgen AdamW ms | torch.compile AdamW ms | speedup "
        "| optgen GB/s | % of copy bandwidth | host µs per step (graph) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for depth in sorted(ours):
        o, t = ours[depth], theirs.get(depth)
        ms = float(o["step_ms"])
        baseline = f"{float(t['step_ms']):.3f}" if t else "–"
        speedup = f"{float(t['step_ms']) / ms:.2f}x" if t else "–"
        lines.append(f"| {depth} | {o['params']} | {ms:.3f} | {baseline} | "
                     f"{speedup} | {o['adamw_gbs']} | {o['bandwidth_pct']}% | "
                     f"{o['host_us']} |")
    if args.step:
        ours, theirs = results(args.step[0]), results(args.step[1])
        lines += [
            "",
            "| depth | params | optgen step ms | torch.compile step ms | "
            "speedup | Polar Express GFLOP | host µs per step (graph) |",
            "|---|---|---|---|---|---|---|",
        ]
        for depth in sorted(ours):
            o, t = ours[depth], theirs.get(depth)
            ms = float(o["step_ms"])
            baseline = f"{float(t['step_ms']):.3f}" if t else "–"
            speedup = f"{float(t['step_ms']) / ms:.2f}x" if t else "–"
            lines.append(f"| {depth} | {o['params']} | {ms:.3f} | {baseline} "
                         f"| {speedup} | {o['polar_gflop']} | {o['host_us']} |")
    table = "\n".join(lines)
    print(table)
    now = datetime.datetime.now(datetime.timezone.utc)
    with open(args.out, "w") as f:
        f.write(f"## {now:%Y-%m-%d %H:%M} UTC: the GPU step on {args.card} "
                f"(scripts/gpu-check.sh, commit {args.commit})\n\n")
        f.write("optgen's CUDA for examples/adamw.opt against nanochat's "
                "AdamW under torch.compile, on nanochat's AdamW parameters; "
                "copy bandwidth measured in the same run; then the whole "
                "step (examples/nanochat.opt, compute bf16) against "
                "nanochat's step under torch.compile (bf16 Polar Express). "
                "Targets (issue 8): the whole step 2x faster at d12 and d20; "
                "AdamW at 85% or more of the copy bandwidth; host cost under "
                "50 µs.\n\n")
        f.write(table + "\n")


if __name__ == "__main__":
    main()
