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
    # The checksum covers every tensor: one missing is refused.
    broken = opt.state_dict()
    del broken["state"][1]["exp_avg"]
    with pytest.raises(optgen.OptgenError, match="the state_dict is refused: it "
                       "is corrupted: it says its checksum is"):
        opt.load_state_dict(broken)


def test_a_state_dict_is_checked_before_anything_changes():
    model = TinyGPT()
    opt = make(model)
    train(model, opt, 2)
    good = opt.state_dict()

    def refused(edit, error, match):
        state = opt.state_dict()
        edit(state)
        with pytest.raises(error, match=match):
            opt.load_state_dict(state)
        assert same_state(opt.state_dict(), good)

    # A flipped bit of a state (it loaded: 0.05 -> 1.7e37), an edited
    # checksum or count of skipped steps: not what was saved.
    def flip(state):
        moment = state["state"][0]["exp_avg"]
        moment.view(torch.int32)[0, 0] ^= 1 << 30
    refused(flip, optgen.OptgenError, "is corrupted")
    refused(lambda s: s["optgen"].update(checksum="0" * 16),
            optgen.OptgenError, "is corrupted")
    refused(lambda s: s["optgen"].update(skipped_steps="5"),
            optgen.OptgenError, "is corrupted")
    # param_groups are checked as the hyperparameters the next step sets
    # (they loaded, and the step raised TypeError or KeyError).
    refused(lambda s: s["param_groups"][0].update(lr="abc"), TypeError,
            "param group 0 of the state_dict's 'lr' \\(rule 'adamw'\\) is "
            "'abc'; it takes a number")
    refused(lambda s: s["param_groups"][0].update(lr=float("nan")),
            optgen.OptgenError, "hyperparameter 'lr' of group "
            "'param_groups\\[0\\]' is nan: hyperparameters are finite numbers")
    refused(lambda s: s["param_groups"][2].update(ns_steps=-1),
            optgen.OptgenError, "'ns_steps' of group 'param_groups\\[2\\]' "
            "is -1: it counts")
    refused(lambda s: s["param_groups"][1].update(kind="nope"), ValueError,
            "param group 1 of the state_dict has kind 'nope', this "
            "optimizer's 'adamw'")
    # What was saved loads, and steps on.
    opt.load_state_dict(good)
    train(model, opt, 1, first=2)


def same_state(a, b) -> bool:
    flat = lambda d: [(i, k, v) for i, s in sorted(d["state"].items())
                      for k, v in sorted(s.items())]
    return (a["optgen"] == b["optgen"] and
            all(torch.equal(x[2], y[2]) for x, y in zip(flat(a), flat(b))))


def test_the_step_writes_only_memory_it_was_given():
    # Registered parameters are refused where two share memory: one tensor
    # twice, tied weights under two names, views that overlap (each was
    # stepped twice per step).
    w = torch.nn.Parameter(torch.zeros(4, 4))
    for pairs in ([("a", w), ("b", w)],
                  [("a", torch.nn.Parameter(w.data.view(-1)[0:8])),
                   ("b", torch.nn.Parameter(w.data.view(-1)[4:12]))]):
        groups = [dict(kind="adamw", params=pairs, lr=0.1)]
        with pytest.raises(optgen.OptgenError, match="parameter 'a' and "
                           "parameter 'b' share memory"):
            optgen.Optimizer(groups, spec=NANOCHAT, defines=F32)
    with pytest.raises(optgen.OptgenError, match="share memory"):
        optgen.Optimizer([dict(kind="adamw", params=[w, w], lr=0.1)],
                         spec=NANOCHAT, defines=F32)
    # A name the C ABI would cut at its NUL.
    with pytest.raises(ValueError, match="holds a NUL character"):
        optgen.Optimizer([dict(kind="adamw", params=[("a\0b", w)], lr=0.1)],
                         spec=NANOCHAT, defines=F32)

    # Memory replaced after registration: a view the step cannot write as
    # it is (expanded: it wrote 65535 floats past the tensor; transposed: it
    # stepped the wrong layout) is refused at the step.
    model = TinyGPT()
    opt = make(model)
    averaged_backward(model, 0, 1)
    head = model.lm_head.weight
    kept = head.data
    for replaced in (torch.zeros(1).expand(head.numel()).view(head.shape),
                     kept.t().contiguous().t()):
        head.data = replaced
        with pytest.raises(ValueError, match="parameter 'lm_head.weight' is "
                           "not contiguous"):
            opt.step()
    head.data = kept
    opt.step()


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


def test_a_group_keeps_the_keys_its_rule_does_not_read():
    # nanochat's setup_optimizer and torch's schedulers add 'initial_lr' to
    # each group: torch's optimizers keep such keys, and so does
    # optgen.Optimizer. They change nothing a step computes, a scheduler
    # resuming from them finds them, and a state_dict carries them.
    tagged, plain = TinyGPT(), TinyGPT()
    groups = nanochat_param_groups(tagged)
    for group in groups:
        group["initial_lr"] = group["lr"]
    opt_tagged = optgen.Optimizer(groups, spec=NANOCHAT, defines=F32)
    assert [g["initial_lr"] for g in opt_tagged.param_groups] == \
        [g["lr"] for g in groups]
    torch.optim.lr_scheduler.LambdaLR(opt_tagged, lambda step: 1.0,
                                      last_epoch=0)
    train(tagged, opt_tagged, 2)
    train(plain, make(plain), 2)
    assert same(tagged, plain)
    saved = opt_tagged.state_dict()
    assert [g["initial_lr"] for g in saved["param_groups"]] == \
        [g["lr"] for g in groups]


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
