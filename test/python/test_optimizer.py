"""optgen.Optimizer in one process: a tiny GPT-like model trained with
nanochat's param_groups (its loss falls); the spec's own groups from
named_parameters(); state_dict() round trips; lr and momentum changes
between steps and torch.optim.lr_scheduler; zero_grad(set_to_none=True);
and the errors a user meets. Runs are compared bit for bit: each is the same
computation unless what the test changes changes it."""

from __future__ import annotations

import io

import pytest
import torch

import optgen
from support import (F32, NANOCHAT, SOURCE, TinyGPT, averaged_backward,
                     nanochat_param_groups)


def make(model, **kwargs):
    return optgen.Optimizer(nanochat_param_groups(model), spec=NANOCHAT,
                            defines=F32, names=model.named_parameters(),
                            **kwargs)


def train(model, opt, steps, first=0, set_to_none=True, before_step=None):
    """Steps `first` .. `first + steps - 1`, each gradient a new tensor (as
    after zero_grad(set_to_none=True)) or, with set_to_none False, in the
    memory of the first step's (as after zero_grad(set_to_none=False));
    the losses."""
    losses, kept = [], None
    for step in range(first, first + steps):
        losses.append(averaged_backward(model, step, 1))
        if not set_to_none:
            fresh = [p.grad for p in model.parameters()]
            kept = kept or [g.clone() for g in fresh]
            for p, g, memory in zip(model.parameters(), fresh, kept):
                memory.zero_().add_(g)
                p.grad = memory
        if before_step:
            before_step(step)
        opt.step()
    return losses


def same(a, b) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(),
                                                 b.state_dict().values()))


def test_the_loss_of_a_tiny_gpt_falls():
    model = TinyGPT()
    losses = train(model, make(model), 40)
    assert losses[-1] < 0.1 * losses[0], losses


def test_a_new_gradient_tensor_each_step_steps_as_one_in_place():
    a, b = TinyGPT(), TinyGPT()
    opt_a, opt_b = make(a), make(b)
    train(a, opt_a, 5, set_to_none=True)
    train(b, opt_b, 5, set_to_none=False)
    assert same(a, b)
    # zero_grad(set_to_none=True) left no gradient: stepping is an error
    # that names the parameter.
    opt_a.zero_grad(set_to_none=True)
    with pytest.raises(RuntimeError, match="parameter 'lm_head.weight' has "
                       r"no gradient \(.grad is None\)"):
        opt_a.step()


def test_the_state_dict_round_trips():
    model, resumed = TinyGPT(), TinyGPT()
    opt = make(model)
    train(model, opt, 6)
    saved = io.BytesIO()
    torch.save(opt.state_dict(), saved)
    resumed.load_state_dict(model.state_dict())
    saved.seek(0)
    opt_resumed = make(resumed)
    opt_resumed.load_state_dict(torch.load(saved))
    train(model, opt, 4, first=6)
    train(resumed, opt_resumed, 4, first=6)
    assert same(model, resumed)

    # torch's format: per parameter index its step and the rule's states.
    state = opt.state_dict()
    assert sorted(state) == ["optgen", "param_groups", "state"]
    assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert int(state["state"][0]["step"]) == 10
    muon = state["param_groups"][2]
    assert muon["kind"] == "muon" and muon["momentum"] == 0.95
    assert sorted(state["state"][muon["params"][0]]) == [
        "momentum_buffer", "second_momentum_buffer", "step"]
    # A state that does not fit is refused, saying what differs.
    other = optgen.Optimizer([dict(kind="adamw", params=[torch.nn.Parameter(
        torch.zeros(3, 3))], lr=0.1)], spec=NANOCHAT, defines=F32)
    with pytest.raises(ValueError, match="has 5 param groups, this optimizer 1"):
        other.load_state_dict(state)
    broken = opt.state_dict()
    del broken["state"][1]["exp_avg"]
    with pytest.raises(optgen.OptgenError, match="the state_dict is refused: it "
                       "has no state 'exp_avg' for parameter "
                       "'transformer.wte.weight'"):
        opt.load_state_dict(broken)


def test_lr_and_momentum_change_between_steps():
    # A scheduler's lr is the one each step uses.
    scheduled, by_hand, fixed = TinyGPT(), TinyGPT(), TinyGPT()
    opt_scheduled, opt_by_hand, opt_fixed = make(scheduled), make(by_hand), make(fixed)
    scheduler = torch.optim.lr_scheduler.LambdaLR(opt_scheduled,
                                                  lambda step: 0.5 ** step)
    initial = [g["lr"] for g in opt_by_hand.param_groups]

    def halve(step):
        for group, lr in zip(opt_by_hand.param_groups, initial):
            group["lr"] = lr * 0.5 ** step
    for step in range(4):
        train(scheduled, opt_scheduled, 1, first=step)
        scheduler.step()
    train(by_hand, opt_by_hand, 4, before_step=halve)
    train(fixed, opt_fixed, 4)
    assert same(scheduled, by_hand)
    assert not same(scheduled, fixed)

    # nanochat's momentum warmup: Muon's momentum set before a step is
    # the one it steps with.
    warm, cold = TinyGPT(), TinyGPT()
    opt_warm = make(warm)
    groups = nanochat_param_groups(cold)
    for group in groups:
        if group["kind"] == "muon":
            group["momentum"] = 0.85
    opt_cold = optgen.Optimizer(groups, spec=NANOCHAT, defines=F32)
    for group in opt_warm.param_groups:
        if group["kind"] == "muon":
            group["momentum"] = 0.85
    train(warm, opt_warm, 3)
    train(cold, opt_cold, 3)
    assert same(warm, cold)


def test_the_specs_groups_bind_named_parameters():
    spec_bound, listed = TinyGPT(), TinyGPT()
    opt = optgen.Optimizer(spec_bound.named_parameters(), spec=NANOCHAT,
                           defines=F32)
    # nanochat.opt's groups, with the values the spec gives them.
    assert [(g["group"], g["kind"], len(g["params"])) for g in opt.param_groups] == [
        ("lm_head", "adamw", 1), ("embeddings", "adamw", 1),
        ("matrices", "muon", 12)]
    assert opt.param_groups[2]["beta2"] == pytest.approx(0.9)
    assert opt.param_groups[2]["ns_steps"] == 5
    # The same as nanochat's param_groups with those values.
    values = [{k: v for k, v in g.items() if k not in ("params", "group")}
              for g in opt.param_groups]
    groups = [dict(values[0], params=[("head", listed.lm_head.weight)]),
              dict(values[1], params=[listed.transformer["wte"].weight]),
              dict(values[2], params=list(listed.transformer["h"].parameters()))]
    opt_listed = optgen.Optimizer(groups, spec=NANOCHAT, defines=F32)
    # A (name, tensor) pair names its parameter.
    assert "param_groups[0]  adamw  [32, 32]   1      head\n" in opt_listed.describe_plan()
    train(spec_bound, opt, 3)
    train(listed, opt_listed, 3)
    assert same(spec_bound, listed)


def test_skipped_steps_change_nothing():
    model = TinyGPT()
    opt = make(model, skip_nonfinite=True)
    averaged_backward(model, 0, 1)
    model.lm_head.weight.grad[0, 0] = float("nan")
    before = [p.clone() for p in model.parameters()]
    opt.step()
    assert opt.skipped_steps() == 1
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), before))


def test_errors_say_what_to_do():
    model = TinyGPT()
    with pytest.raises(ValueError, match="param_groups\\[0\\] has kind 'adam': "
                       "it names the rule of '.*nanochat.opt' that updates its "
                       "parameters, one of adamw, muon"):
        optgen.Optimizer([dict(kind="adam", params=[model.lm_head.weight])],
                         spec=NANOCHAT, defines=F32)
    with pytest.raises(optgen.OptgenError, match="group 'param_groups\\[0\\]' "
                       "\\(rule 'adamw'\\) has no hyperparameter 'beta'; its "
                       "hyperparameters are lr, betas, eps, weight_decay"):
        optgen.Optimizer([dict(kind="adamw", params=[model.lm_head.weight],
                               lr=0.1, beta=0.9)], spec=NANOCHAT, defines=F32)
    with pytest.raises(TypeError, match="param_groups\\[0\\]'s 'betas' \\(rule "
                       "'adamw'\\) is 0.9; it takes 2 numbers"):
        optgen.Optimizer([dict(kind="adamw", params=[model.lm_head.weight],
                               lr=0.1, betas=0.9)], spec=NANOCHAT, defines=F32)
    with pytest.raises(optgen.OptgenError, match="'param_groups\\[0\\]', which "
                       "does not set 'lr'"):
        optgen.Optimizer([dict(kind="adamw", params=[model.lm_head.weight])],
                         spec=NANOCHAT, defines=F32)
    with pytest.raises(optgen.OptgenError, match="'extra.bias'"):
        optgen.Optimizer([("extra.bias", torch.nn.Parameter(torch.zeros(4)))],
                         spec=NANOCHAT, defines=F32)
    with pytest.raises(TypeError, match="pass model.named_parameters\\(\\)"):
        optgen.Optimizer(model.parameters(), spec=NANOCHAT, defines=F32)
    with pytest.raises(optgen.BuildError, match="-D compute=f7:1:40: error: unknown name 'f7'"):
        optgen.Optimizer(model.named_parameters(), spec=NANOCHAT,
                         defines={"compute": "f7"})
    opt = make(model)
    with pytest.raises(RuntimeError, match="add_param_group\\(\\) afterwards "
                       "is not supported"):
        opt.add_param_group(dict(kind="adamw", params=[torch.nn.Parameter(
            torch.zeros(2))], lr=0.1))
    opt.param_groups[0]["betas"] = (0.9, "0.95")
    averaged_backward(model, 0, 1)
    with pytest.raises(TypeError, match="param group 0 \\('param_groups\\[0\\]'\\)"
                       "'s 'betas' \\(rule 'adamw'\\) is \\(0.9, '0.95'\\)"):
        opt.step()


def test_the_spec_is_compiled_once_per_process_and_cached():
    first = optgen.compile_spec(NANOCHAT, F32)
    assert optgen.compile_spec(NANOCHAT, F32) == first
    assert optgen.compile_spec(SOURCE / "examples" / "nanochat.opt",
                               {"compute": "bf16"}) != first
