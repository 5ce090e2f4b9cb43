"""A torch.optim.Optimizer whose step is an optgen spec, compiled.

    import optgen
    opt = optgen.Optimizer(param_groups, spec="examples/nanochat.opt",
                           defines={"compute": "f32"})

`params` is either nanochat's `param_groups` list, each group naming the
rule that updates it (`kind`) with that rule's hyperparameters by their
names in the spec, or `model.named_parameters()`, which the spec's own
groups bind by name and shape. See python/README.md.
"""

from __future__ import annotations

import difflib
import math
import os
from typing import Any, Iterable, Mapping

import torch
import torch.distributed as dist

from . import capi
from .build import compile_spec
from .distributed import TorchCollectives, wrap

_CODES = {torch.float32: capi.F32, torch.bfloat16: capi.BF16,
          torch.float16: capi.F16, torch.float64: capi.F64,
          torch.int64: capi.I64}
_TORCH = {code: dtype for dtype, code in _CODES.items()}
_SOURCE = "the state_dict"


def _view(tensor: torch.Tensor) -> capi.Tensor:
    """The C ABI's view of a CPU tensor's memory."""
    return capi.Tensor.of(tensor.data_ptr(), _CODES[tensor.dtype], capi.HOST,
                          tuple(tensor.shape))


def _copy(data: int, dtype: int, shape: tuple) -> torch.Tensor:
    """A tensor of its own with the runtime's elements at `data`."""
    count = math.prod(shape)
    return wrap(data, count, _TORCH[dtype]).clone().reshape(shape)


class Optimizer(torch.optim.Optimizer):
    """The optimizer `spec` describes, stepping these parameters.

    Args:
      params: nanochat's param_groups (a list of dicts: "kind", the rule;
        "params", its tensors; any of the rule's hyperparameters by their
        names in the spec), or (name, tensor) pairs such as
        model.named_parameters(), which the spec's groups bind.
      spec: the .opt file.
      defines: the spec's constants to set (optgen compile -D), e.g.
        {"compute": "f32"}.
      names: (name, tensor) pairs naming param_groups' tensors (in errors
        and checkpoints); unnamed ones are "param_groups[G].params[K]".
      distributed: whether to share the step with the ranks of
        `process_group` (ZeRO-2, gradients averaged): by default when
        torch.distributed is initialized with more than one rank.
      process_group: the ranks (default: the default group).
      skip_nonfinite: a step with a NaN or an infinity in any gradient, on
        any rank, changes nothing and is counted (skipped_steps()).
    """

    def __init__(self, params: Iterable, spec: str | os.PathLike, *,
                 defines: Mapping[str, Any] | None = None,
                 names: Iterable[tuple[str, torch.Tensor]] | None = None,
                 distributed: bool | None = None, process_group=None,
                 skip_nonfinite: bool = False):
        params = list(params)
        if not params:
            raise ValueError("optgen.Optimizer got no parameters")
        library = compile_spec(spec, defines or {}, "cpu")
        self._native = capi.Native(capi.load(str(library.path)),
                                   library.factory)
        self._spec = self._native.spec()
        self._rules = {rule["name"]: rule for rule in self._spec["rules"]}
        self._spec_path = str(spec)
        if skip_nonfinite:
            self._native.skip_nonfinite()
        self._collectives = self._communicate(distributed, process_group)

        # Registered with their own memory for gradients: step() binds
        # .grad as it is then, every time.
        self._params: list[list] = []  # [name, tensor, bound pointers]
        self._name_of: dict[int, str] = {}
        explicit = isinstance(params[0], dict)
        if explicit:
            groups, self._group_names = self._explicit_groups(params, names)
        else:
            self._register_named(params)
        self._native.finalize()
        if not explicit:
            groups, self._group_names = self._spec_groups()
        self._adding = True
        super().__init__(groups, {})
        self._adding = False
        self._pushed: list[dict[str, list[float]]] = [
            {} for _ in self.param_groups]

    # ----- construction -----------------------------------------------------

    def _communicate(self, distributed, process_group):
        available = dist.is_available() and dist.is_initialized()
        if distributed is None:
            distributed = available and dist.get_world_size(process_group) > 1
        if not distributed:
            return None
        if not available:
            raise RuntimeError("optgen.Optimizer(distributed=True) needs "
                               "torch.distributed initialized")
        collectives = TorchCollectives(process_group)
        if collectives.size > 1 and self._spec["distribution"] == "none":
            raise ValueError(
                f"the spec '{self._spec_path}' does not distribute its step "
                f"(it has no `distribute zero2`), so its {collectives.size} "
                "ranks would each step their own gradients and drift apart: "
                "add `distribute zero2 { small_numel = 1024 }` to it, or "
                "average the gradients yourself and pass distributed=False")
        self._native.set_collectives(collectives.table)
        return collectives

    def _tensor_of(self, tensor, what: str) -> torch.Tensor:
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{what} is a {type(tensor).__name__}, not a tensor")
        if tensor.device.type != "cpu":
            raise ValueError(
                f"{what} is on {tensor.device}: optgen's Python package steps "
                "CPU tensors (its CUDA target is not wired here yet)")
        if tensor.dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"{what} is {tensor.dtype}; optgen steps float32 "
                             "and bfloat16 parameters")
        if not tensor.is_contiguous():
            raise ValueError(f"{what} is not contiguous")
        return tensor

    def _register(self, name: str, tensor: torch.Tensor, group: str | None):
        view = _view(tensor)
        # The gradient's place is held by the parameter's own memory until
        # the first step binds .grad.
        self._native.add_parameter(name, view, view, group)
        self._params.append([name, tensor, None])
        self._name_of[id(tensor)] = name

    def _register_named(self, pairs: list) -> None:
        for k, pair in enumerate(pairs):
            if (not isinstance(pair, tuple) or len(pair) != 2 or
                    not isinstance(pair[0], str)):
                raise TypeError(
                    f"parameter {k} is not a (name, tensor) pair: pass "
                    "model.named_parameters() (the spec's groups bind them by "
                    "name), or param_groups whose 'kind' names a rule")
            name, tensor = pair
            self._register(name, self._tensor_of(tensor, f"parameter '{name}'"),
                           None)

    def _hyper_values(self, rule: dict, hyper: dict, value, where: str):
        """`value` as set_hyper takes it, or TypeError saying what is wrong."""
        what = f"{where}'s '{hyper['name']}' (rule '{rule['name']}')"
        if isinstance(value, torch.Tensor):
            value = value.tolist()
        values = list(value) if isinstance(value, (tuple, list)) else [value]
        if len(values) != hyper["size"] or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool)
                for v in values):
            shape = ("a number" if hyper["size"] == 1 else
                     f"{hyper['size']} numbers")
            raise TypeError(f"{what} is {value!r}; it takes {shape}")
        if hyper["int"] and any(math.isfinite(v) and float(v) != int(v)
                                for v in values):
            raise TypeError(f"{what} is {value!r}; it takes whole numbers")
        return [float(v) for v in values]

    def _explicit_groups(self, groups: list, names) -> tuple[list, list]:
        named = {id(tensor): name for name, tensor in (names or ())}
        torch_groups, group_names = [], []
        for g, group in enumerate(groups):
            where = f"param_groups[{g}]"
            if not isinstance(group, dict):
                raise TypeError(f"{where} is a {type(group).__name__}; groups "
                                "are all dicts, or none is")
            kind = group.get("kind")
            if kind not in self._rules:
                raise ValueError(
                    f"{where} has kind {kind!r}: it names the rule of "
                    f"'{self._spec_path}' that updates its parameters, one of "
                    f"{', '.join(sorted(self._rules))}")
            rule = self._rules[kind]
            known = {hyper["name"]: hyper for hyper in rule["hypers"]}
            members = group.get("params", ())
            members = [members] if isinstance(members, torch.Tensor) else list(members)
            self._native.add_group(where, kind)
            torch_group = {"kind": kind}
            for key in group:
                if key in ("kind", "params") or key in known:
                    continue
                # A key the rule does not read stays in the group, as torch's
                # optimizers keep it (schedulers add 'initial_lr'); one that
                # nearly spells a hyperparameter is a typo, and the runtime
                # says so with the rule's hyperparameters.
                if difflib.get_close_matches(key, known, n=1, cutoff=0.8):
                    self._native.hyper(where, key)
                torch_group[key] = group[key]
            for name, hyper in known.items():
                if name in group:
                    self._native.set_hyper(
                        where, name,
                        self._hyper_values(rule, hyper, group[name], where))
                    torch_group[name] = group[name]
                elif hyper["default"] is not None:
                    default = self._native.hyper(where, name)
                    torch_group[name] = (tuple(default) if hyper["size"] > 1
                                         else self._plain(hyper, default[0]))
                # Without a default, finalize() says which group lacks it.
            tensors = []
            for k, member in enumerate(members):
                if isinstance(member, tuple) and len(member) == 2:
                    name, tensor = member
                else:
                    tensor = member
                    name = named.get(id(tensor), f"{where}.params[{k}]")
                tensors.append(self._tensor_of(tensor, f"parameter '{name}'"))
                self._register(name, tensor, where)
            torch_group["params"] = tensors
            torch_groups.append(torch_group)
            group_names.append(where)
        return torch_groups, group_names

    @staticmethod
    def _plain(hyper: dict, value: float):
        return int(value) if hyper["int"] else value

    def _spec_groups(self) -> tuple[list, list]:
        """After finalize(): a param group per spec group that holds any."""
        members: dict[str, list] = {}
        for name, tensor, _ in self._params:
            members.setdefault(self._native.group_of(name), []).append(tensor)
        torch_groups, group_names = [], []
        for group in self._spec["groups"]:
            if group["name"] not in members:
                continue
            rule = self._rules[group["rule"]]
            torch_group = {"group": group["name"], "kind": rule["name"]}
            for hyper in rule["hypers"]:
                values = self._native.hyper(group["name"], hyper["name"])
                torch_group[hyper["name"]] = (
                    tuple(values) if hyper["size"] > 1
                    else self._plain(hyper, values[0]))
            torch_group["params"] = members[group["name"]]
            torch_groups.append(torch_group)
            group_names.append(group["name"])
        return torch_groups, group_names

    def add_param_group(self, param_group: dict) -> None:
        if not getattr(self, "_adding", False):
            raise RuntimeError(
                "optgen.Optimizer plans its parameters when it is made: "
                "add_param_group() afterwards is not supported; make a new "
                "optimizer with every group")
        super().add_param_group(param_group)

    # ----- stepping ---------------------------------------------------------

    def _push_hypers(self) -> None:
        for index, group in enumerate(self.param_groups):
            name = self._group_names[index]
            rule = self._rules[group["kind"]]
            for hyper in rule["hypers"]:
                if hyper["name"] not in group:
                    continue
                values = self._hyper_values(rule, hyper, group[hyper["name"]],
                                            f"param group {index} ('{name}')")
                if self._pushed[index].get(hyper["name"]) != values:
                    self._native.set_hyper(name, hyper["name"], values)
                    self._pushed[index][hyper["name"]] = values

    def _bind_gradients(self) -> None:
        missing = [name for name, tensor, _ in self._params if tensor.grad is None]
        if self._collectives is not None:
            # Every rank steps, or none: one rank alone would wait forever
            # in the step's collectives.
            count = torch.tensor([len(missing)], dtype=torch.int64)
            dist.all_reduce(count, op=dist.ReduceOp.MAX,
                            group=self._collectives.group)
            if count.item() and not missing:
                raise RuntimeError(
                    "another rank has a parameter without a gradient (.grad "
                    "is None) and cannot step, so no rank steps")
        if missing:
            raise RuntimeError(
                f"parameter '{missing[0]}' has no gradient (.grad is None): "
                "optgen steps every parameter it was given, at every step; "
                "leave out the parameters that get no gradient")
        for entry in self._params:
            name, tensor, bound = entry
            # Its memory may have been replaced since (p.data = ...): a
            # view the step cannot write as it is (expanded, transposed) is
            # refused, as at registration.
            self._tensor_of(tensor, f"parameter '{name}'")
            grad = tensor.grad
            if (grad.dtype != tensor.dtype or grad.shape != tensor.shape or
                    grad.device != tensor.device):
                raise ValueError(
                    f"the gradient of '{name}' is {grad.dtype} "
                    f"{list(grad.shape)} on {grad.device}; the parameter is "
                    f"{tensor.dtype} {list(tensor.shape)} on {tensor.device}")
            if not grad.is_contiguous():
                raise ValueError(f"the gradient of '{name}' is not contiguous")
            pointers = (tensor.data_ptr(), grad.data_ptr())
            if pointers != bound:
                self._native.rebind(name, _view(tensor), _view(grad))
                entry[2] = pointers

    @torch.no_grad()
    def step(self, closure=None):
        """One step with the gradients in .grad now."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        if len(self._pushed) != len(self.param_groups):
            raise RuntimeError("the optimizer's param_groups were replaced; "
                               "optgen.Optimizer keeps the groups it was made "
                               "with")
        self._push_hypers()
        self._bind_gradients()
        self._native.step()
        return loss

    # ----- checkpoints ------------------------------------------------------

    def _ordered(self) -> list[str]:
        """The parameters' names in param_groups' order (state_dict's
        indices)."""
        return [self._name_of[id(p)] for group in self.param_groups
                for p in group["params"]]

    def state_dict(self) -> dict:
        """torch's format: "state" (per parameter index, "step" and the
        rule's states by their names in the spec) and "param_groups"; and
        "optgen", the checkpoint's metadata (spec, plan, fingerprints),
        which load_state_dict checks. Under torch.distributed every rank
        calls it and gets all of the state."""
        metadata, tensors = self._native.export_state(_copy)
        state = {}
        for index, name in enumerate(self._ordered()):
            entry = {"step": tensors.pop(f"step/{name}")}
            prefix = f"state/{name}/"
            for key in [k for k in tensors if k.startswith(prefix)]:
                entry[key[len(prefix):]] = tensors.pop(key)
            state[index] = entry
        groups, start = [], 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = list(range(start, start + len(group["params"])))
            start += len(group["params"])
            groups.append(packed)
        return {"state": state, "param_groups": groups, "optgen": metadata}

    def load_state_dict(self, state_dict: dict) -> None:
        """A state_dict() of an optgen.Optimizer of the same spec and
        parameters, saved at any number of ranks (every rank calls it): the
        runtime checks it as it checks a checkpoint file (its checksum
        too: not a bit of it may change), its param_groups are checked as
        the hyperparameters they set, and only then do param_groups take
        its hyperparameters, as torch's optimizers do."""
        if "optgen" not in state_dict:
            raise ValueError(f"{_SOURCE} has no 'optgen' entry: it is not one "
                             "of optgen.Optimizer's")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"{_SOURCE} has {len(saved_groups)} param groups, "
                             f"this optimizer {len(self.param_groups)}")
        # Everything is checked before anything changes: the groups first,
        # whose hyperparameters the next step applies.
        for index, (saved, group) in enumerate(zip(saved_groups, self.param_groups)):
            where = f"param group {index} of {_SOURCE}"
            if not isinstance(saved, dict) or "params" not in saved:
                raise ValueError(f"{where} is not a param group (a dict with "
                                 "'params')")
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(
                    f"{where} has {len(saved['params'])} parameters, this "
                    f"optimizer's {len(group['params'])}")
            for key in ("kind", "group"):
                if key in group and saved.get(key) != group[key]:
                    raise ValueError(f"{where} has {key} {saved.get(key)!r}, "
                                     f"this optimizer's {group[key]!r}")
            rule = self._rules[group["kind"]]
            for hyper in rule["hypers"]:
                if hyper["name"] in saved:
                    self._native.check_hyper(
                        self._group_names[index], hyper["name"],
                        self._hyper_values(rule, hyper, saved[hyper["name"]],
                                           where))
        views, kept = {}, []
        for index, name in enumerate(self._ordered()):
            for key, value in state_dict["state"].get(index, {}).items():
                # As it was saved (the checksum covers every byte).
                tensor = torch.as_tensor(value).detach().cpu().contiguous()
                if tensor.dtype not in _CODES:
                    raise ValueError(f"{_SOURCE}'s '{key}' of parameter "
                                     f"'{name}' is {tensor.dtype}")
                kept.append(tensor)
                label = f"step/{name}" if key == "step" else f"state/{name}/{key}"
                views[label] = _view(tensor)
        self._native.import_state(state_dict["optgen"], views, _SOURCE)
        for saved, group in zip(saved_groups, self.param_groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self._pushed = [{} for _ in self.param_groups]

    # ----- what the runtime knows -------------------------------------------

    def describe_plan(self) -> str:
        """Per bucket: its group, rule, shape and parameters."""
        return self._native.describe_plan()

    def skipped_steps(self) -> int:
        """Steps skipped for non-finite gradients (skip_nonfinite=True)."""
        return self._native.skipped_steps()

    def global_value(self, name: str) -> float:
        """The value the last step gave the spec's global `name` (`global
        grad_norm(p, g) = ...`), the same on every rank."""
        return self._native.global_value(name)

    def state_bytes(self) -> int:
        """Bytes of optimizer state this rank holds."""
        return self._native.state_bytes()
