"""Compiles (or finds cached) every spec the Python tests use before they
run (ctest's fixture python/compile-specs), two at a time, so that the
tests time their own work and parallel tests do not all wait on one build."""

from concurrent.futures import ThreadPoolExecutor

from support import NANOCHAT, NANOCHAT_6ED7D1D, SOURCE

import optgen

SPECS = [(spec, {"compute": compute}) for spec in (NANOCHAT, NANOCHAT_6ED7D1D)
         for compute in ("f32", "bf16")]
SPECS.append((SOURCE / "examples" / "adamw.opt", {}))
SPECS.append((SOURCE / "examples" / "clip_adamw.opt", {}))

with ThreadPoolExecutor(max_workers=2) as pool:
    for library in pool.map(lambda job: optgen.compile_spec(*job), SPECS):
        print(library.path)
