//===- EmitCpu.h - C++ for the CPU from executable optgen IR ----*- C++ -*-===//
//
// The CPU printer only reads the IR: passes (canonicalize, cse,
// optgen-fuse-kernels, the executable stage) prepare it, and this prints
// each rule's step and the globals as C++ loops and BLAS calls; the rest of
// the files (header, tables, runner, CMake) are the host code every target
// shares (Target/Host/HostCode.h).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CPU_EMITCPU_H
#define OPTGEN_TARGET_CPU_EMITCPU_H

#include "optgen/Target/Host/HostCode.h"

#include <map>
#include <string>

namespace optgen {

/// Emits `optimizer`, lowered for a host target, as files (name ->
/// contents): NAME.h, NAME.cpp, NAME_runner.cpp and CMakeLists.txt. Fails
/// with a diagnostic on IR it cannot emit.
mlir::LogicalResult emitCpu(OptimizerOp optimizer, const EmitOptions &options,
                            std::map<std::string, std::string> &files);

} // namespace optgen

#endif // OPTGEN_TARGET_CPU_EMITCPU_H
