# lit configuration of optgen's tests: FileCheck tests of the front end, the
# dialect, each pass and the emitted code.
import os

import lit.formats

config.name = "optgen"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".opt", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.optgen_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.optgen_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
# Variables are scoped to their CHECK-LABEL, as in Triton's tests.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

# Longest first: '%optgen-opt' must not be read as '%optgen' + '-opt'.
config.substitutions.append(("%optgen-opt", os.path.join(config.optgen_tools_dir, "optgen-opt")))
config.substitutions.append(("%optgen-translate", os.path.join(config.optgen_tools_dir, "optgen-translate")))
config.substitutions.append(("%optgen", os.path.join(config.optgen_tools_dir, "optgen")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%mlir_include", config.mlir_include_dir.split(";")[0]))
# The include folders of the runtime's components that generated CPU code
# sees, written so that `-I%runtime_include` names them all.
config.substitutions.append(("%runtime_include", " -I".join(
    os.path.join(config.optgen_src_root, "runtime", component, "include")
    for component in ("core", "cpu", "runner"))))
config.substitutions.append(("%cxx", config.cxx_compiler))
# nvcc, where CMake found one (CUDA toolkits without a GPU have it): tests of
# what the CUDA target's code compiles to say `REQUIRES: nvcc`.
if config.cuda_compiler:
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", config.cuda_compiler))
config.substitutions.append(("%cuda_runtime_include", " -I".join(
    os.path.join(config.optgen_src_root, "runtime", component, "include")
    for component in ("core", "cuda"))))
config.substitutions.append(("%examples", os.path.join(config.optgen_src_root, "examples")))
# The cache of `optgen run` that the tests share (test/CMakeLists.txt): the
# runtime built there once serves them all. No test uses the user's cache.
config.substitutions.append(("%run_cache", config.optgen_run_cache))
config.environment["OPTGEN_CACHE_DIR"] = config.optgen_run_cache
