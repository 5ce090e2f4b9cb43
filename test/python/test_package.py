"""The package as a user installs it: a wheel built from python/ with the
ecosystem's tools (pip and setuptools, offline), installed into a folder of
its own, from which a fresh interpreter compiles a spec and steps, on an
installed optgen (the prefix this build folder was installed into)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import optgen.build
from support import SOURCE


def test_the_wheel_installs_and_steps(tmp_path):
    # Built from a copy: a build leaves files in the folder it builds.
    project = tmp_path / "project"
    shutil.copytree(SOURCE / "python", project,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info",
                                                  "build"))
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    subprocess.run(pip + ["wheel", "--no-deps", "--no-build-isolation",
                          "--no-index", "-w", str(wheels), str(project)],
                   check=True, stdout=subprocess.DEVNULL)
    (wheel,) = wheels.glob("optgen-*.whl")
    subprocess.run(pip + ["install", "--no-deps", "--no-index", "--target",
                          str(site), str(wheel)],
                   check=True, stdout=subprocess.DEVNULL)
    program = (
        "import optgen, torch\n"
        "w = torch.nn.Parameter(torch.ones(4, 3))\n"
        f"opt = optgen.Optimizer([('w', w)], spec={str(SOURCE / 'examples' / 'adamw.opt')!r})\n"
        "w.grad = torch.ones(4, 3)\n"
        "opt.step()\n"
        "print(optgen.__file__)\n"
        "print(float(w[0, 0]))\n")
    installed = optgen.build.find_installation().prefix
    assert (installed / "lib" / "cmake" / "optgen" / "optgenConfig.cmake").is_file()
    environment = dict(os.environ, PYTHONPATH=str(site),
                       OPTGEN_ROOT=str(installed))
    ran = subprocess.run([sys.executable, "-c", program], env=environment,
                         check=True, capture_output=True, text=True)
    where, value = ran.stdout.split()
    assert where.startswith(str(site))
    # AdamW's first step moves by lr (1e-3) against the gradient, after
    # the decay: 1 * (1 - 1e-3 * 0.01) - 1e-3.
    assert abs(float(value) - (1 - 1e-5 - 1e-3)) < 1e-6, value
