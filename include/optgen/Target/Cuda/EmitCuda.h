//===- EmitCuda.h - CUDA C++ from executable optgen IR ----------*- C++ -*-===//
//
// The CUDA printer, the CPU printer's peer: it only reads executable IR
// (the passes have decided buffers, accumulators and the hyperparameter
// layout) and prints a header, a .cu source and a CMake file that build a
// library linking the runtime's cuda component. The host code is every
// target's (Target/Host/HostCode.h); the kernels and their launches are
// this printer's.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_TARGET_CUDA_EMITCUDA_H
#define OPTGEN_TARGET_CUDA_EMITCUDA_H

#include "optgen/Target/Host/HostCode.h"

#include <map>
#include <string>

namespace optgen {

/// Emits `optimizer` as files (name -> contents): NAME.h, NAME.cu and
/// CMakeLists.txt. Fails with a diagnostic at the op it cannot print.
mlir::LogicalResult emitCuda(OptimizerOp optimizer,
                             const EmitOptions &options,
                             std::map<std::string, std::string> &files);

} // namespace optgen

#endif // OPTGEN_TARGET_CUDA_EMITCUDA_H
