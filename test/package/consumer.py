"""optgen installed, as a project of its own uses it (README.md, "Using the
generated optimizer"): consumer.py --build BUILD --source SOURCES

1. `cmake --install BUILD --prefix TMP/prefix` installs the tools, the
   runtime's headers and archives and the CMake package optgen, and
   nothing else (none of the compiler's archives, no tests).
2. examples/consumer (a copy), configured against that prefix with no build
   type, builds: the installed optgen compiles its spec, the generated code
   is compiled optimised and position-independent, and both programs (the
   optimizer as a static and as a shared library) link the installed
   archives, step, and end where their own double-precision reference
   does.
3. With the copy's spec edited (lr 0.1 -> 0.05), the build compiles the
   spec again: the programs match the reference for the new lr, and no
   longer the old one.
4. The installed optgen's `optgen run` builds its runner against the
   installed runtime: its cache gets the runner and no runtime.
5. The runtime is compiled -O3 whatever the build type: configured from its
   sources (OPTGEN_RUNTIME_DIR, as a generated CMakeLists.txt allows) in a
   Debug build, every runtime source and the generated code are.
6. Where the install has the cuda component: the CUDA code optgen
   generates builds on the package (find_package(optgen COMPONENTS cuda)),
   and its runner runs (or says that there is no GPU, 77).

Prints each check and `N passed, M failed`."""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "numeric"))
from checks import Checks  # noqa: E402

# Everything an install may hold, relative to its prefix.
INSTALLED = [
    r"bin/optgen(-opt|-translate)?",
    r"include/optgen/runtime/\w+\.h",
    r"include/optgen/emu/(Device|cuda-headers/(cuda_runtime|cuda_bf16|cuda_fp16"
    r"|cublasLt|nccl))\.h",
    r"lib/liboptgen_runtime_(core|cpu|mpi|runner|capi|cuda|nccl|cuda_emu"
    r"|cuda_emulated|nccl_emulated)\.a",
    r"lib/cmake/optgen/(optgenConfig|optgenConfigVersion|optgenTargets(-\w+)?"
    r"|OptgenDependencies|OptgenOptimizer)\.cmake",
]
REQUIRED = ["bin/optgen", "bin/optgen-opt", "include/optgen/runtime/Optimizer.h",
            "lib/liboptgen_runtime_core.a", "lib/liboptgen_runtime_cpu.a",
            "lib/liboptgen_runtime_runner.a", "lib/cmake/optgen/optgenConfig.cmake",
            "lib/cmake/optgen/optgenConfigVersion.cmake"]


def run(command, **kwargs):
    return subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, **kwargs)


def optimised(command):
    """Whether a compile command's last -O flag is -O3."""
    levels = [arg for arg in shlex.split(command) if re.fullmatch(r"-O\w*", arg)]
    return bool(levels) and levels[-1] == "-O3"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    check = Checks()

    with tempfile.TemporaryDirectory() as tmp:
        prefix = f"{tmp}/prefix"
        done = run(["cmake", "--install", args.build, "--prefix", prefix])
        installed = sorted(os.path.relpath(os.path.join(d, f), prefix)
                           for d, _, files in os.walk(prefix) for f in files)
        check("cmake --install succeeds", done.returncode == 0, done.stdout)
        stray = [f for f in installed
                 if not any(re.fullmatch(pattern, f) for pattern in INSTALLED)]
        check("it installs only the tools, the runtime and its package",
              not stray, f"also {stray}")
        missing = [f for f in REQUIRED if f not in installed]
        check("it installs optgen, the runtime's archives and the package",
              not missing, f"missing {missing}")

        # 2. The consumer, as its own project.
        project, build = f"{tmp}/consumer", f"{tmp}/consumer-build"
        shutil.copytree(f"{args.source}/examples/consumer", project)
        done = run(["cmake", "-S", project, "-B", build, "-G", "Ninja",
                    f"-DCMAKE_PREFIX_PATH={prefix}", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"])
        check("examples/consumer configures against the install, no build type",
              done.returncode == 0 and "CMAKE_BUILD_TYPE:STRING=\n"
              in open(f"{build}/CMakeCache.txt").read(), done.stdout)
        done = run(["cmake", "--build", build, "--verbose"])
        log = done.stdout
        check("it builds", done.returncode == 0, log[-3000:])
        check("the installed optgen compiles its spec",
              f"{prefix}/bin/optgen compile {project}/momentum.opt --target=cpu" in log, log[-3000:])
        links = [line for line in log.splitlines() if " -o consumer " in line]
        check("the program links the installed runtime's archives",
              len(links) == 1 and all(f"{prefix}/lib/liboptgen_runtime_{c}.a" in links[0]
                                      for c in ("core", "cpu", "runner")), links)
        check("no runtime source is compiled", "runtime/core/lib" not in log, log[-3000:])
        with open(f"{build}/compile_commands.json") as f:
            commands = json.load(f)
        generated = [c["command"] for c in commands
                     if c["file"].endswith("consumer_momentum.cpp")]
        check("the generated code is compiled -O3, position-independent, without "
              "contractions",
              len(generated) == 2 and all(optimised(c) and "-fPIC" in c and
                                          "-ffp-contract=off" in c for c in generated),
              generated)
        for program in ("consumer", "consumer_shared"):
            done = run([f"{build}/{program}"])
            check(f"{program} steps to the reference (lr 0.1)", done.returncode == 0,
                  done.stdout)

        # 3. An edited spec is compiled again.
        spec = f"{project}/momentum.opt"
        with open(spec) as f:
            text = f.read()
        with open(spec, "w") as f:
            f.write(text.replace("hyper lr = 0.1,", "hyper lr = 0.05,"))
        done = run(["cmake", "--build", build, "--verbose"])
        check("after an edit of the spec, the build compiles it again",
              done.returncode == 0 and f"optgen compile {spec}" in done.stdout,
              done.stdout[-3000:])
        for program in ("consumer", "consumer_shared"):
            new = run([f"{build}/{program}", "--lr", "0.05"])
            old = run([f"{build}/{program}", "--lr", "0.1"])
            check(f"{program} steps with the edited spec's lr",
                  new.returncode == 0 and old.returncode == 1, new.stdout + old.stdout)

        # 4. `optgen run` of the installed optgen links the installed runtime.
        case, cache = f"{tmp}/case.st", f"{tmp}/cache"
        subprocess.run([sys.executable, f"{args.source}/test/numeric/make_case.py", case,
                        "w=8x4", "b=8", "--steps", "2", "--seed", "3"], check=True)
        done = run([f"{prefix}/bin/optgen", "run", spec, "--case", case],
                   env=dict(os.environ, OPTGEN_CACHE_DIR=cache))
        entries = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
        check("the installed optgen run builds a runner on the installed runtime",
              done.returncode == 0 and "runtime" not in done.stdout and len(entries) == 1
              and entries[0].startswith("consumer_momentum-cpu-"),
              f"{done.stdout[-3000:]}\ncache: {entries}")

        # 5. The runtime from its sources, in a Debug build.
        generated_dir, debug = f"{tmp}/generated", f"{tmp}/debug-build"
        subprocess.run([f"{prefix}/bin/optgen", "compile", spec, "--target=cpu",
                        "-o", generated_dir], check=True)
        done = run(["cmake", "-S", generated_dir, "-B", debug, "-G", "Ninja",
                    "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                    f"-DOPTGEN_RUNTIME_DIR={args.source}/runtime", "-DOPTGEN_RUNTIME_CUDA=OFF"])
        check("a generated CMakeLists.txt configures on the runtime's sources",
              done.returncode == 0, done.stdout[-3000:])
        if done.returncode == 0:
            with open(f"{debug}/compile_commands.json") as f:
                commands = json.load(f)
            runtime = [c for c in commands if "/runtime/" in c["file"]]
            slow = [c["file"] for c in commands if not optimised(c["command"])]
            check("in a Debug build, the runtime and the generated code are compiled -O3",
                  len(runtime) > 10 and not slow, f"not -O3: {slow}")

        # 6. Generated CUDA on the package's cuda component (nvcc), and 7.
        # on its emulated device (no GPU, no CUDA toolkit): each builds, and
        # its runner runs (on the emulated device: replays the case).
        devices = [("cuda", [], "generated CUDA builds on the package's cuda component",
                    "its runner runs, or says there is no GPU", (0, 77)),
                   ("cuda_emulated", ["-DOPTGEN_CUDA_EMULATED=ON"],
                    "generated CUDA builds on the package's emulated device",
                    "its runner replays the case on the emulated device", (0,))]
        for component, options, builds, runs, statuses in devices:
            if f"lib/liboptgen_runtime_{component}.a" not in installed:
                continue
            cuda_dir, cuda_build = f"{tmp}/generated-{component}", f"{tmp}/{component}-build"
            subprocess.run([f"{prefix}/bin/optgen", "compile", spec, "--target=cuda",
                            "-o", cuda_dir], check=True)
            done = run(["cmake", "-S", cuda_dir, "-B", cuda_build, "-G", "Ninja",
                        f"-DCMAKE_PREFIX_PATH={prefix}", "-DOPTGEN_BUILD_RUNNER=ON",
                        *options])
            if done.returncode == 0:
                done = run(["cmake", "--build", cuda_build])
            check(builds, done.returncode == 0, done.stdout[-3000:])
            if done.returncode == 0:
                done = run([f"{cuda_build}/consumer_momentum_runner", "--case", case])
                check(runs, done.returncode in statuses, done.stdout[-3000:])

    sys.exit(check.summary())


if __name__ == "__main__":
    main()
