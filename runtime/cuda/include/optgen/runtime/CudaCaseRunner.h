//===- CudaCaseRunner.h - The main() of generated CUDA runners --*- C++ -*-===//
//
// A generated CUDA runner replays case files (CaseReplay.h) on its compiled
// optimizer on the GPU: the case's parameters and gradients live in host
// memory, as for the CPU runner; each parameter gets device memory, the
// gradients are copied in before each step and the parameters copied back
// after it, and the report's step times are the GPU's (CUDA events around
// the optimizer's step alone).
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDACASERUNNER_H
#define OPTGEN_RUNTIME_CUDACASERUNNER_H

#include "optgen/runtime/CaseReplay.h"
#include "optgen/runtime/CudaOptimizer.h"

#include <functional>
#include <memory>

namespace optgen::runtime {

/// The main() of a generated CUDA runner: the CPU runner's command line
/// (CaseRunner.h), replayed on a new optimizer per replay. Without a CUDA
/// device it says so and returns ExitNoDevice (CTest's SKIP_RETURN_CODE).
int cudaRunnerMain(int argc, char **argv,
                   const std::function<std::unique_ptr<CudaOptimizer>()> &make);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDACASERUNNER_H
