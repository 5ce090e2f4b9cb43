//===- HostExecutor.h - Steps on the host -----------------------*- C++ -*-===//
//
// The executor of CPU code: the optimizer state, packed collective buffers, f32
// staging of bf16 data and the rules' workspace live in host memory, allocated
// once at finalize(), never inside a step; collectives go through any host
// communicator (single rank, MPI). The matrices of a bucket (a unit whose
// members run one rule that is not elementwise) are stepped as a batch, in
// parallel across its members on OpenMP's threads, each call with its own
// workspace and, with the OpenMP build of OpenBLAS, each product on its call's
// thread; the results are those of stepping them one at a time. Other units'
// members are stepped one after another, each call's loops and products using
// every thread.
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
