"""Compiling a spec into a library this process loads.

A spec's optimizer is compiled once per (spec bytes, defines, optgen, target)
and kept in the cache: $OPTGEN_CACHE_DIR, else $XDG_CACHE_HOME/optgen, else
~/.cache/optgen (where `optgen run` keeps its runners), in its python/
folder. Each entry is built under a lock, so that processes starting
together (the ranks of one job) build it once and the others wait, and is
trusted only once its stamp says the build completed.

Where optgen is: $OPTGEN_ROOT, optgen's build folder (holding bin/optgen),
else the build folder of the `optgen` on PATH. A spec's library links that
build's runtime, whose targets the build exports for this package
(python/optgen-runtime-targets.cmake), so that compiling a spec compiles its
generated code alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Mapping

from . import capi

# Changes when what an entry holds, or how it is built, changes.
_CACHE_FORMAT = 1
_CMAKE_DIR = Path(__file__).resolve().parent / "cmake"


class BuildError(RuntimeError):
    """A spec that could not be compiled, or an optgen that was not found."""


@dataclass(frozen=True)
class Installation:
    """The optgen a spec is compiled with, and the runtime it links."""

    optgen: Path
    runtime_targets: Path


def _cache_root() -> Path:
    if os.environ.get("OPTGEN_CACHE_DIR"):
        return Path(os.environ["OPTGEN_CACHE_DIR"])
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "optgen"
    return Path.home() / ".cache" / "optgen"


def find_installation() -> Installation:
    """The optgen to compile with, and its build's runtime."""
    root = os.environ.get("OPTGEN_ROOT")
    if root:
        optgen = Path(root) / "bin" / "optgen"
        if not optgen.is_file():
            raise BuildError(
                f"OPTGEN_ROOT is '{root}', which has no bin/optgen: set it to "
                "optgen's build folder")
    else:
        found = shutil.which("optgen")
        if not found:
            raise BuildError(
                "optgen is not on PATH and OPTGEN_ROOT is not set: set "
                "OPTGEN_ROOT to optgen's build folder (the one holding "
                "bin/optgen)")
        optgen = Path(found).resolve()
    targets = optgen.parent.parent / "python" / "optgen-runtime-targets.cmake"
    if not targets.is_file():
        raise BuildError(
            f"'{optgen.parent.parent}' has no python/optgen-runtime-targets.cmake: "
            "it is not optgen's build folder, or one configured before this "
            "package; build optgen (scripts/build.sh) and point OPTGEN_ROOT "
            "at its build folder")
    return Installation(optgen, targets)


def _hash_file(hasher: "hashlib._Hash", path: Path, name: str = "") -> None:
    hasher.update(name.encode() + b"\0")
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            hasher.update(block)
    hasher.update(b"\0")


def _hash_tree(hasher: "hashlib._Hash", root: Path) -> None:
    """Every file under `root`: its path there and its bytes."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        _hash_file(hasher, path, str(path.relative_to(root)))


def _log(message: str) -> None:
    print(f"optgen: {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def _locked(entry: Path, what: str) -> Iterator[None]:
    """Holds the entry's lock; says so when another process holds it."""
    entry.mkdir(parents=True, exist_ok=True)
    with open(entry / "build.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log(f"waiting for another process building {what} in {entry}")
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _run(command: list[str], log: Path, what: str) -> None:
    with open(log, "a") as out:
        out.write("$ " + " ".join(command) + "\n")
        out.flush()
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-20:]
        raise BuildError(f"{what} failed (exit {result.returncode}); the "
                         f"last lines of {log}:\n" + "\n".join(tail))


def _generator() -> list[str]:
    return ["-G", "Ninja"] if shutil.which("ninja") else []


def _stamp(path: Path) -> str:
    """What an entry's stamp holds of the file it vouches for."""
    hasher = hashlib.sha256()
    _hash_file(hasher, path)
    return hasher.hexdigest()


def _runtime_key(installation: Installation) -> str:
    """What a library links of the runtime: the exported targets and the
    libraries they name."""
    text = installation.runtime_targets.read_text()
    hasher = hashlib.sha256(text.encode())
    for library in sorted(set(re.findall(r'IMPORTED_LOCATION\w* "([^"]+)"', text))):
        _hash_file(hasher, Path(library), library)
    return hasher.hexdigest()


@dataclass(frozen=True)
class Library:
    """A compiled spec: its shared library and the optimizer's name."""

    path: Path
    name: str

    @property
    def factory(self) -> str:
        """The C ABI's factory the generated code defines."""
        return f"optgen_new_{self.name}"


def compile_spec(spec: str | os.PathLike, defines: Mapping[str, object] = (),
                 target: str = "cpu") -> Library:
    """The library of `spec`'s optimizer, compiled with `defines` (the
    spec's constants, as `optgen compile -D`) for `target`: from the cache,
    or built (with progress on stderr) and cached."""
    spec = Path(spec)
    if not spec.is_file():
        raise BuildError(f"the spec '{spec}' is not a file")
    if target != "cpu":
        raise BuildError(
            f"target '{target}': the Python package builds the cpu target "
            "(CUDA tensors are not stepped yet)")
    defines = dict(defines)
    installation = find_installation()
    runtime_key = _runtime_key(installation)

    hasher = hashlib.sha256(f"library {_CACHE_FORMAT}\0".encode())
    hasher.update(f"capi {capi.VERSION}\0target {target}\0".encode())
    hasher.update(spec.read_bytes() + b"\0")
    for key in sorted(defines):
        hasher.update(f"-D{key}={defines[key]}\0".encode())
    _hash_file(hasher, installation.optgen)
    hasher.update(runtime_key.encode() + b"\0")
    _hash_tree(hasher, _CMAKE_DIR / "library")
    entry = _cache_root() / "python" / f"{spec.stem}-{hasher.hexdigest()[:16]}"
    stamp = entry / "library.ok"

    def found() -> Library | None:
        if not stamp.is_file():
            return None
        name, _, digest = stamp.read_text().partition("\n")
        path = entry / "build" / f"liboptgen_{name}.so"
        if path.is_file() and digest == _stamp(path):
            return Library(path, name)
        return None

    library = found()
    if library:
        return library
    shown = " ".join([str(spec)] + [f"-D {k}={v}" for k, v in sorted(defines.items())])
    with _locked(entry, f"'{shown}'"):
        library = found()
        if library:
            return library
        _log(f"compiling {shown} for this process (once: cached in {entry})")
        log = entry / "build.log"
        log.write_text("")
        generated, build = entry / "generated", entry / "build"
        shutil.rmtree(generated, ignore_errors=True)
        shutil.rmtree(build, ignore_errors=True)
        command = [str(installation.optgen), "compile", str(spec),
                   f"--target={target}", "-o", str(generated)]
        for key in sorted(defines):
            command += ["-D", f"{key}={defines[key]}"]
        _run(command, log, f"optgen compile {shown}")
        runners = sorted(generated.glob("*_runner.cpp"))
        if len(runners) != 1:
            raise BuildError(f"optgen compile wrote {len(runners)} runners "
                             f"into {generated}, not one")
        name = runners[0].name[: -len("_runner.cpp")]
        _run(["cmake", "-S", str(_CMAKE_DIR / "library"), "-B", str(build),
              *_generator(), "-DCMAKE_BUILD_TYPE=Release",
              f"-DOPTGEN_GENERATED_DIR={generated}",
              f"-DOPTGEN_OPTIMIZER={name}",
              f"-DOPTGEN_RUNTIME_TARGETS={installation.runtime_targets}"],
             log, f"configuring the library of {shown}")
        _run(["cmake", "--build", str(build)], log,
             f"building the library of {shown}")
        path = build / f"liboptgen_{name}.so"
        stamp.write_text(f"{name}\n{_stamp(path)}")
        _log(f"compiled {shown}")
        return Library(path, name)
