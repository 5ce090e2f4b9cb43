//===- HostExecutor.h - Steps on the host -----------------------*- C++ -*-===//
//
// The executor of CPU code: the optimizer state, packed collective buffers,
// f32 staging of bf16 data and the rules' workspace live in host memory,
// allocated once at finalize(), never inside a step; collectives go through any host communicator (single rank,
// MPI). A unit's members are stepped one after another, each call's loops
// and matrix products using every thread.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_HOSTEXECUTOR_H
#define OPTGEN_RUNTIME_HOSTEXECUTOR_H

#include "optgen/runtime/Executor.h"

#include <memory>

namespace optgen::runtime {

std::unique_ptr<Executor> makeHostExecutor();

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_HOSTEXECUTOR_H
