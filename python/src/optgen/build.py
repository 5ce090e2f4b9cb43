"""Compiling a spec into a library this process loads.

A spec's optimizer is compiled once per (spec bytes, defines, optgen, target)
and kept in the cache: $OPTGEN_CACHE_DIR, else $XDG_CACHE_HOME/optgen, else
~/.cache/optgen (where `optgen run` keeps its runners), in its python/
folder. Each entry is built under a lock, so that processes starting
together (the ranks of one job) build it once and the others wait, and is
trusted only once its stamp says the build completed.

Where optgen is: $OPTGEN_ROOT, else the prefix of the `optgen` on PATH:
either an installed optgen (`cmake --install`: bin/optgen and the CMake
package lib/cmake/optgen), whose package a spec's library is built on, or
optgen's build folder, which is first installed into the cache (once per
optgen binary and runtime archives) and used as installed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
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
    """An installed optgen: its prefix, what identifies it."""

    prefix: Path
    identity: str

    @property
    def optgen(self) -> Path:
        return self.prefix / "bin" / "optgen"


def _cache_root() -> Path:
    """The cache, as an absolute path: CMake, which builds in it, would
    read a relative one from its own folders."""
    if os.environ.get("OPTGEN_CACHE_DIR"):
        root = Path(os.environ["OPTGEN_CACHE_DIR"])
    elif os.environ.get("XDG_CACHE_HOME"):
        root = Path(os.environ["XDG_CACHE_HOME"]) / "optgen"
    else:
        root = Path.home() / ".cache" / "optgen"
    return root.absolute()


@contextlib.contextmanager
def _using_cache() -> Iterator[None]:
    """A cache that cannot be used (read-only, a file where its folder
    should be) is a BuildError that names it, not an OSError's traceback."""
    try:
        yield
    except OSError as error:
        raise BuildError(
            f"optgen's cache '{_cache_root()}' cannot be used: {error} (set "
            "OPTGEN_CACHE_DIR to a folder this process can write)") from error


def find_installation() -> Installation:
    """The installed optgen to compile with (a build folder installed into
    the cache first)."""
    root = os.environ.get("OPTGEN_ROOT")
    if root:
        root = Path(root)
        if not (root / "bin" / "optgen").is_file():
            raise BuildError(
                f"OPTGEN_ROOT is '{root}', which has no bin/optgen: set it to "
                "optgen's install prefix or its build folder")
    else:
        found = shutil.which("optgen")
        if not found:
            raise BuildError(
                "optgen is not on PATH and OPTGEN_ROOT is not set: set "
                "OPTGEN_ROOT to optgen's install prefix (cmake --install) or "
                "its build folder")
        root = Path(found).resolve().parent.parent
    if (root / "lib" / "cmake" / "optgen" / "optgenConfig.cmake").is_file():
        return Installation(root, _identity(root / "bin" / "optgen",
                                            root / "lib"))
    if (root / "CMakeCache.txt").is_file():
        return _install(root)
    raise BuildError(
        f"'{root}' is neither an installed optgen (no "
        "lib/cmake/optgen/optgenConfig.cmake) nor optgen's build folder (no "
        "CMakeCache.txt)")


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


def _identity(optgen: Path, archives: Path) -> str:
    """What a library built on an optgen is made of: the compiler and the
    runtime's archives under `archives`."""
    hasher = hashlib.sha256(f"optgen {_CACHE_FORMAT}\0".encode())
    _hash_file(hasher, optgen, "optgen")
    for archive in sorted(archives.rglob("liboptgen_runtime_*.a")):
        _hash_file(hasher, archive, archive.name)
    return hasher.hexdigest()


def _install(build: Path) -> Installation:
    """optgen's build folder, installed into the cache (`cmake --install`)
    once per optgen binary and runtime archives."""
    identity = _identity(build / "bin" / "optgen", build / "runtime")
    with _using_cache():
        return _installed(build, identity)


def _installed(build: Path, identity: str) -> Installation:
    entry = _cache_root() / "python" / f"optgen-{identity[:16]}"
    prefix, stamp = entry / "prefix", entry / "installed.ok"
    installation = Installation(prefix, identity)
    if stamp.is_file() and stamp.read_text() == identity:
        return installation
    with _locked(entry, f"an install of '{build}'"):
        if stamp.is_file() and stamp.read_text() == identity:
            return installation
        _log(f"installing optgen's build folder {build} into {prefix}")
        shutil.rmtree(prefix, ignore_errors=True)
        log = entry / "install.log"
        log.write_text("")
        _run(["cmake", "--install", str(build), "--prefix", str(prefix)], log,
             f"installing optgen's build folder '{build}'")
        stamp.write_text(identity)
    return installation


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
    # Read once: the entry is built from these bytes (a copy in it), so
    # that an edit of the spec meanwhile cannot be cached under them.
    try:
        source = spec.read_bytes()
    except OSError as error:
        raise BuildError(f"the spec '{spec}' cannot be read: {error}") from error
    with _using_cache():
        return _compiled(spec, source, defines, target, installation)


def _compiled(spec: Path, source: bytes, defines: dict, target: str,
              installation: Installation) -> Library:
    hasher = hashlib.sha256(f"library {_CACHE_FORMAT}\0".encode())
    hasher.update(f"capi {capi.VERSION}\0target {target}\0".encode())
    hasher.update(source + b"\0")
    for key in sorted(defines):
        hasher.update(f"-D{key}={defines[key]}\0".encode())
    hasher.update(installation.identity.encode() + b"\0")
    _hash_tree(hasher, _CMAKE_DIR / "library")
    entry = _cache_root() / "python" / f"{spec.stem}-{hasher.hexdigest()[:16]}"
    stamp = entry / "library.ok"

    def found() -> Library | None:
        if not stamp.is_file():
            return None
        name, _, digest = stamp.read_text().partition("\n")
        path = entry / "build" / "liboptgen_python.so"
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
        build = entry / "build"
        shutil.rmtree(build, ignore_errors=True)
        # The bytes that were hashed, under the spec's own name (which the
        # generated files cite).
        copy = entry / "spec" / spec.name
        copy.parent.mkdir(exist_ok=True)
        copy.write_bytes(source)
        _run(["cmake", "-S", str(_CMAKE_DIR / "library"), "-B", str(build),
              *_generator(), "-DCMAKE_BUILD_TYPE=Release",
              f"-DCMAKE_PREFIX_PATH={installation.prefix}",
              f"-DOPTGEN_SPEC={copy}",
              "-DOPTGEN_DEFINES=" + ";".join(f"{k}={v}" for k, v in sorted(defines.items()))],
             log, f"configuring the library of {shown}")
        _run(["cmake", "--build", str(build)], log, f"compiling {shown}")
        # The generated files name the optimizer (as its factory does).
        runners = sorted((build / "optgen_python").glob("*_runner.cpp"))
        if len(runners) != 1:
            raise BuildError(f"optgen wrote {len(runners)} runners into "
                             f"{build / 'optgen_python'}, not one")
        name = runners[0].name[: -len("_runner.cpp")]
        path = build / "liboptgen_python.so"
        stamp.write_text(f"{name}\n{_stamp(path)}")
        _log(f"compiled {shown}")
        return Library(path, name)
