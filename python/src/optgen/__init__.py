"""optgen for PyTorch: an optimizer compiled from an optgen spec.

    import optgen
    opt = optgen.Optimizer(model.named_parameters(), spec="my.opt")

The spec is compiled once for this process (and cached); see
python/README.md for how optgen is found and what the optimizer does.
compile_spec() builds a spec's library ahead of time, without PyTorch.
"""

from .build import BuildError, compile_spec
from .capi import OptgenError

__all__ = ["BuildError", "OptgenError", "Optimizer", "compile_spec"]
__version__ = "0.1.0"


def __getattr__(name):
    # PyTorch is imported with the optimizer, not for compile_spec().
    if name == "Optimizer":
        from .optimizer import Optimizer
        return Optimizer
    raise AttributeError(f"module 'optgen' has no attribute '{name}'")
