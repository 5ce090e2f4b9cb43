"""optgen.Optimizer at 2 ranks (processes over gloo): the ZeRO-2 step
averages the ranks' gradients as nanochat's DistMuonAdamW does, so the
ranks end with the same parameters, and with those of one process stepped
with the same averaged gradients; bit for bit, because the mean of two
ranks' gradients is one sum of two floats, whatever the order, and the
runtime's distributed step computes each update as one rank does. A
state_dict saved at 2 ranks holds all of the state on each and resumes at
one. A failure inside a step ends the job, never hangs it."""

from __future__ import annotations

import pytest
import torch
import torch.multiprocessing as mp

import optgen
import ranks
from support import F32, NANOCHAT, TinyGPT, averaged_backward, nanochat_param_groups

SIZE = 2


def test_two_ranks_step_as_one_process_does(tmp_path):
    outputs = [tmp_path / f"rank{r}.pt" for r in range(SIZE)]
    mp.spawn(_rank, args=(str(tmp_path / "store"), [str(o) for o in outputs]),
             nprocs=SIZE)
    results = [torch.load(o) for o in outputs]

    # One process, the gradients averaged as the ranks average them.
    model = TinyGPT()
    opt = optgen.Optimizer(nanochat_param_groups(model), spec=NANOCHAT,
                           defines=F32, names=model.named_parameters())
    for step in range(ranks.STEPS):
        averaged_backward(model, step, SIZE)
        opt.step()
    alone = model.state_dict()

    for rank, result in enumerate(results):
        losses = result["losses"]
        assert losses[-1] < 0.25 * losses[0], f"rank {rank}: {losses}"
        for name, value in alone.items():
            assert torch.equal(result["model"][name], value), \
                f"rank {rank}: '{name}' differs from one process's"
        # ZeRO-2: each rank holds a part of the state.
        assert result["state_bytes"] < opt.state_bytes()
        assert "does not distribute its step" in result["undistributed"], \
            result["undistributed"]
    assert results[0]["missing"] == (
        "RuntimeError: another rank has a parameter without a gradient (.grad "
        "is None) and cannot step, so no rank steps")
    assert results[1]["missing"].startswith(
        "RuntimeError: parameter 'lm_head.weight' has no gradient")

    # Every rank's state_dict holds all of the state, the same.
    first, second = (r["saved_state"] for r in results)
    assert first["param_groups"] == second["param_groups"]
    assert first["optgen"] == second["optgen"]
    for index, entry in first["state"].items():
        for key, value in entry.items():
            assert torch.equal(value, second["state"][index][key]), (index, key)

    # Saved at 2 ranks, resumed in one process: where the ranks ended.
    model = TinyGPT()
    model.load_state_dict(results[0]["saved_model"])
    opt = optgen.Optimizer(nanochat_param_groups(model), spec=NANOCHAT,
                           defines=F32, names=model.named_parameters())
    opt.load_state_dict(first)
    for step in range(ranks.SAVED_AT, ranks.STEPS):
        averaged_backward(model, step, SIZE)
        opt.step()
    for name, value in model.state_dict().items():
        assert torch.equal(results[0]["model"][name], value), \
            f"'{name}' resumed in one process differs from the ranks'"


def test_a_collective_that_fails_inside_a_step_ends_the_ranks(tmp_path, capfd):
    # The other ranks wait inside the step's collectives: the failing rank
    # says why and ends the job, with status 1, rather than leave them hung.
    with pytest.raises(mp.ProcessExitedException, match="exit code 1"):
        mp.spawn(ranks.fail_in_step, args=(SIZE, str(tmp_path / "store")),
                 nprocs=SIZE)
    err = capfd.readouterr().err
    assert ("optgen: error: rank 1: the caller's all_gather failed: "
            "RuntimeError: the network is down") in err, err
    assert ("rank 1 failed inside a step of optimizer 'nanochat_muon_adamw'; "
            "ending all 2 ranks") in err, err


def _rank(rank, store, outputs):
    ranks.train(rank, SIZE, store, outputs[rank])
