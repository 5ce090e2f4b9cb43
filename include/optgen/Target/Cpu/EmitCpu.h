//===- EmitCpu.h - C++ for the CPU from fused optgen IR ---------*- C++ -*-===//
//
// The CPU emitter only reads the IR: passes (canonicalize, cse,
// optgen-fuse-kernels) prepare it, and this prints what it finds as a C++
// header, a source file and a CMake file that build a library linking
// optgen's runtime.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CPU_EMITCPU_H
#define OPTGEN_TARGET_CPU_EMITCPU_H

#include "dialect/OptgenDialect.h"

#include <functional>
#include <map>
#include <string>

namespace optgen {

struct CpuEmitOptions {
  /// The spec's file name, for comments.
  std::string specName;
  /// The text of line `line` of the spec (for comments), or empty.
  std::function<std::string(unsigned line)> sourceLine;
  /// Where optgen's runtime sources are, written into the CMake file as the
  /// default of OPTGEN_RUNTIME_DIR.
  std::string runtimeDir;
};

/// Emits `optimizer` as files (name -> contents): NAME.h, NAME.cpp and
/// CMakeLists.txt. Fails with a diagnostic on IR it cannot emit.
mlir::LogicalResult emitCpu(OptimizerOp optimizer,
                            const CpuEmitOptions &options,
                            std::map<std::string, std::string> &files);

} // namespace optgen

#endif // OPTGEN_TARGET_CPU_EMITCPU_H
