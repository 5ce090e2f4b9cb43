"""The Python package's tests: optgen.Optimizer with PyTorch (Debian's
python3-torch is enough). ctest runs them (test/python/CMakeLists.txt) with
the package's sources on PYTHONPATH, OPTGEN_ROOT at the build folder and a
cache of compiled specs of the build's own."""

import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed (scripts/install-deps.sh "
    "installs Debian's python3-torch)")
# The same results whatever the machine: the tests compare runs bit for bit.
torch.set_num_threads(1)
