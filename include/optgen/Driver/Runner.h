//===- Runner.h - Building and running generated code -----------*- C++ -*-===//
//
// `optgen run --target=cpu` builds the generated code's runner with CMake,
// once per generated code: in a directory named by a hash of the files
// under the user's cache, locked so that the ranks of one `mpirun optgen
// run` build it one at a time, and configured only when it is new. Stamps
// record the steps that completed (configured.ok; runner.ok, the runner's
// size and hash): an entry whose configure was interrupted is configured
// again, a runner that is not the one last built (cut short, damaged) is
// built again, and a cached entry whose build fails is rebuilt once from
// its configure.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_DRIVER_RUNNER_H
#define OPTGEN_DRIVER_RUNNER_H

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

/// Builds (or reuses) the runner of the generated `files` in `buildDir`
/// (when empty, a directory per generated code under the user's cache);
/// the path of its executable, or an empty string after reporting a
/// failure (the build's output is in build.log there).
std::string buildRunner(const GeneratedFiles &files, llvm::StringRef buildDir);

} // namespace optgen

#endif // OPTGEN_DRIVER_RUNNER_H
