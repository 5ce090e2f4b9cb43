"""nanochat's golden cases through the torch Optimizer: the case's groups are
nanochat's param_groups, bound as nanochat binds them, and each step's
gradient is a new .grad tensor. Compared with what nanochat's own optimizer
computed (expect/, the README's gates) and, for f32, with optgen's fp64
interpreter of the spec (`optgen run --interpret`), an independent second
reference; and bit for bit with the C++ runner of the same generated code,
which replays the case itself."""

from __future__ import annotations

import json
import subprocess

import pytest
import torch

import optgen
from support import (BUILD, NANOCHAT, NANOCHAT_6ED7D1D, SOURCE,
                     read_safetensors, update_error)
from check_golden import tolerance  # the README's gates

CASES = sorted((SOURCE / "test" / "golden").glob("mixed_small.*.safetensors"))


def replay(case):
    """The case replayed on optgen.Optimizer: parameters after the last
    step, initial parameters, the case's metadata and tensors."""
    metadata, tensors = read_safetensors(case)
    spec = NANOCHAT if metadata["version"] == "a9d0a86" else NANOCHAT_6ED7D1D
    initial = {k[len("param/"):]: t for k, t in tensors.items()
               if k.startswith("param/")}
    params = {name: torch.nn.Parameter(t.clone()) for name, t in initial.items()}
    groups = json.loads(metadata["groups"])
    param_groups = [dict({k: v for k, v in g.items() if k != "params"},
                         params=[params[n] for n in g["params"]])
                    for g in groups]
    opt = optgen.Optimizer(param_groups, spec=spec,
                           defines={"compute": metadata["muon_dtype"]},
                           names=params.items())
    for step in range(1, int(metadata["steps"]) + 1):
        for name, p in params.items():
            p.grad = tensors[f"grad/{step}/{name}"].clone()
        opt.step()
    return ({n: p.detach() for n, p in params.items()}, initial, metadata,
            tensors, spec)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name.split(".", 1)[1][:-12])
def test_matches_nanochat_and_the_interpreter(case, tmp_path):
    out, initial, metadata, tensors, spec = replay(case)
    exact = metadata["muon_dtype"] == "f32"
    kind = {n: g["kind"] for g in json.loads(metadata["groups"])
            for n in g["params"]}
    for name, value in out.items():
        rel = update_error(initial[name], value, tensors[f"expect/{name}"])
        limit, _ = tolerance(kind[name], list(value.shape), exact)
        assert rel < limit, f"{name}: update error {rel:.3e} against nanochat"

    # The C++ runner of the same generated code (the main build's), which
    # reads the case itself: the same bits.
    runner = BUILD / "bin" / f"golden_{metadata['muon_dtype']}_{metadata['version']}_runner"
    compiled = tmp_path / "compiled.safetensors"
    subprocess.run([str(runner), "--case", str(case), "--out", str(compiled)],
                   check=True, stdout=subprocess.DEVNULL)
    _, theirs = read_safetensors(compiled)
    for name, value in out.items():
        assert torch.equal(value, theirs[f"param/{name}"]), \
            f"{name} differs from the C++ runner's"

    if not exact:
        # Two correct bf16 implementations differ by the README's bf16
        # margins, which the comparison with nanochat gates already.
        return
    interpreted = tmp_path / "interpreted.safetensors"
    subprocess.run([str(BUILD / "bin" / "optgen"), "run", str(spec),
                    "-D", "compute=f32", "--interpret", "--case", str(case),
                    "--out", str(interpreted)],
                   check=True, stdout=subprocess.DEVNULL)
    _, reference = read_safetensors(interpreted)
    for name, value in out.items():
        rel = update_error(initial[name], value, reference[f"param/{name}"])
        assert rel < 1e-4, f"{name}: update error {rel:.3e} against the interpreter"
