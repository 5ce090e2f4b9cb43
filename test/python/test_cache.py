"""The cache of compiled specs: processes that start together (the ranks of
a job) build an entry once, the others waiting for it; an entry whose
library is not the one its build left is built again; an entry is built
from the bytes it is cached under; a cache that cannot be used is a
BuildError."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

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


def test_an_entry_is_built_from_the_bytes_it_is_cached_under(tmp_path, monkeypatch):
    # The spec edited after its bytes were hashed (here: as the build
    # starts) must not be what is cached under them; the entry builds its
    # own copy of the hashed bytes.
    monkeypatch.setenv("OPTGEN_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "edited.opt"
    spec.write_text(SPEC.read_text())
    run = optgen.build._run

    def editing(command, log, what):
        if "configuring" in what:
            spec.write_text(SPEC.read_text().replace("optimizer adamw",
                                                     "optimizer adamw_edited"))
        run(command, log, what)
    monkeypatch.setattr(optgen.build, "_run", editing)
    assert optgen.compile_spec(spec).name == "adamw"


def test_a_cache_that_cannot_be_used_is_a_build_error(tmp_path, monkeypatch):
    # A relative OPTGEN_CACHE_DIR is the folder it names from here (CMake,
    # building in it, read it from its own folders and failed).
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPTGEN_CACHE_DIR", "relative/cache")
    assert optgen.build._cache_root() == tmp_path / "relative" / "cache"
    # A file where the cache's folder would be: a BuildError naming it, not
    # an OSError's traceback.
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv("OPTGEN_CACHE_DIR", str(tmp_path / "file"))
    with pytest.raises(optgen.BuildError, match="optgen's cache '.*file' cannot "
                       "be used: .*set OPTGEN_CACHE_DIR to a folder this "
                       "process can write"):
        optgen.compile_spec(SPEC)
