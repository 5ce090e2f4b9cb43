//===- Runner.h - Building and running generated code -----------*- C++ -*-===//
//
// `optgen run` builds the generated code's runner with CMake, in entries of
// optgen's cache (Cache.h), each locked while it is built so that the ranks
// of one `mpirun optgen run` build it one at a time:
//
//   runtime-TARGET-HASH  optgen's runtime built from its sources (with the
//                        cuda component for the cuda target; the cpu one
//                        holds the emulated device) and installed
//                        there as the CMake package runners find: once per
//                        optgen version and hash of the runtime's sources,
//                        for every spec and every -D value. An installed
//                        optgen links its runners to the runtime installed
//                        with it instead, and builds none.
//   NAME-TARGET-HASH     the runner of one generated code (the hash is of
//                        its files and its runtime), configured against
//                        that package: only its own code is compiled.
//
// Each stage that has work to do (configuring and building the runtime,
// configuring and building the runner, waiting for another process's
// build) says so on stderr with the seconds elapsed; a runner that is up to
// date is neither built nor announced.
// Builds run CMAKE_BUILD_PARALLEL_LEVEL jobs, else one per core. Stamps
// record the steps that completed (configured.ok: what the build folder
// was configured with; installed.ok: a runtime's package; runner.ok: the
// runner's key, size and hash): an entry whose configure was interrupted
// is configured again, a runner that is not the one last built (cut short,
// damaged) is built again, and a cached entry whose build fails is built
// once more from its configure.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_RUNNER_H
#define OPTGEN_DRIVER_RUNNER_H

#include "dialect/OptgenDialect.h"
#include "optgen/Driver/Emission.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace optgen {

/// Runs `program` (looked up on PATH) with `args`, its output to `log` when
/// given; its exit code, or -1 after reporting why it could not run.
int execute(llvm::StringRef program, llvm::ArrayRef<std::string> args,
            std::optional<llvm::StringRef> log = std::nullopt);

/// Builds (or reuses) the runner of the generated `files`, printed for
/// `target` (a device target's code is built for the emulated device when
/// `emulated`), in `buildDir` (when empty, an entry of the cache per
/// generated code); the path of its executable, or an empty string after
/// reporting a failure (the build's output is in build.log there).
std::string buildRunner(const GeneratedFiles &files, TargetAttr target,
                        llvm::StringRef buildDir, bool emulated = false);

} // namespace optgen

#endif // OPTGEN_DRIVER_RUNNER_H
