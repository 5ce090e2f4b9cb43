"""optgen for PyTorch: an optimizer compiled from an optgen spec.

    import optgen
    opt = optgen.Optimizer(model.named_parameters(), spec="my.opt")

The spec is compiled once for this process (and cached); see
python/README.md for how optgen is found and what the optimizer does.
"""

from .build import BuildError, compile_spec
from .capi import OptgenError
from .optimizer import Optimizer

__all__ = ["BuildError", "OptgenError", "Optimizer", "compile_spec"]
__version__ = "0.1.0"
