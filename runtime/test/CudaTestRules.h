//===- CudaTestRules.h - Hand-written rules on a CUDA device ----*- C++ -*-===//
//
// Launch functions as generated CUDA code would write them, for the CUDA
// executor's tests: SGD with momentum, clipped gradients and a learning
// rate divided by the step count, so that a step reads every hyperparameter
// (a tuple among them), the step counts, the states and the workspace.
// Each computes exactly what the test's host rule does (no fused
// multiply-adds), so the two agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_CUDATESTRULES_H
#define OPTGEN_RUNTIME_TEST_CUDATESTRULES_H

#include "optgen/runtime/DeviceCall.h"

namespace optgen::runtime::test {

/// Where the rules' hyperparameters are (HyperSpec::offset): the learning
/// rate, the momentum and the clipping range's two ends.
constexpr int kMomentumAt = 0, kLrAt = 1, kClipAt = 2;

/// Elementwise: every member by its own element count.
void launchMomentum(const DeviceCall &call);
/// Members of one shape (rows x cols), the update through the workspace
/// (rows x cols floats per member).
void launchMomentumMatrix(const DeviceCall &call);

/// Launches a kernel with more threads per block than any GPU has, which
/// fails (without a GPU too), and checks it with checkLaunch().
void launchTooManyThreads();

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_CUDATESTRULES_H
