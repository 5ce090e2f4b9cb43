"""The cache of compiled specs: processes that start together (the ranks of
a job) build an entry once, the others waiting for it; an entry whose
library is not the one its build left is built again."""

from __future__ import annotations

import os
import subprocess
import sys

import optgen
from support import SOURCE

SPEC = SOURCE / "examples" / "adamw.opt"
COMPILE = f"import optgen; print(optgen.compile_spec({str(SPEC)!r}).path)"


def test_processes_build_an_entry_once_and_rebuild_a_broken_one(tmp_path, monkeypatch):
    environment = dict(os.environ, OPTGEN_CACHE_DIR=str(tmp_path))
    first = subprocess.Popen([sys.executable, "-c", COMPILE], env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    # The second starts once the first is compiling (after it installed
    # optgen's build folder into this cache).
    before = []
    while not before or not before[-1].startswith("optgen: compiling "):
        before.append(first.stderr.readline())
        assert before[-1], before
    second = subprocess.run([sys.executable, "-c", COMPILE], env=environment,
                            capture_output=True, text=True, check=True)
    out, err = first.communicate()
    assert first.returncode == 0, err
    assert second.stdout == out
    assert "optgen: waiting for another process building" in second.stderr
    assert "compiling" not in second.stderr, second.stderr

    # A library cut short is not trusted: it is built again.
    library = out.strip()
    with open(library, "r+b") as f:
        f.truncate(1000)
    monkeypatch.setenv("OPTGEN_CACHE_DIR", str(tmp_path))
    assert str(optgen.compile_spec(SPEC).path) == library
    assert os.path.getsize(library) > 1000
