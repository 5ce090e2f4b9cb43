//===- CudaTestRules.h - Hand-written rules on a CUDA device ----*- C++ -*-===//
//
// Launch functions as generated CUDA code would write them, for the CUDA
// executor's tests: SGD with momentum, clipped gradients and a learning
// rate divided by the step count, so that a step reads every hyperparameter
// (a tuple among them), the step counts, the states and the workspace; and
// repeated matrix products whose number an integer hyperparameter says, so
// that a launch decides on the host (DeviceCall::hostHypers) and multiplies
// with cuBLASLt (DeviceGemm.h). Each computes exactly what the test's host
// rule does (no fused multiply-adds; products whose sums are exact), so the
// two agree bit for bit.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_TEST_CUDATESTRULES_H
#define OPTGEN_RUNTIME_TEST_CUDATESTRULES_H

#include "optgen/runtime/DeviceCall.h"

#include <cstdint>

namespace optgen::runtime::test {

/// Where the rules' hyperparameters are (HyperSpec::offset): the learning
/// rate, the momentum and the clipping range's two ends.
constexpr int kMomentumAt = 0, kLrAt = 1, kClipAt = 2;

/// Elementwise: every member by its own element count.
void launchMomentum(const DeviceCall &call);
/// Members of one shape (rows x cols), the update through the workspace
/// (rows x cols floats per member).
void launchMomentumMatrix(const DeviceCall &call);

/// Where the repeated products' hyperparameters are: the learning rate (a
/// float, read on the device) and how many times (an int, read on the host).
constexpr int kRepeatLrAt = 0, kRepeatTimesAt = 1;

/// Members of one shape (rows x cols), each stepped `times` times as
/// param -= lr * grad @ (grad^T @ param): the products with deviceGemm on
/// the member's workspace (repeatWorkspace floats: the gradient, the
/// parameter, grad^T @ param and the update).
void launchRepeatedProducts(const DeviceCall &call);
int64_t repeatWorkspace(const int64_t *shape, int rank);

/// Launches a kernel with more threads per block than any GPU has, which
/// fails (without a GPU too), and checks it with checkLaunch().
void launchTooManyThreads();

/// The globals of the tests (GlobalsSpec::launchContribution and
/// launchFinish): per member, one thread sums the gradient's squares and
/// takes its largest magnitude in double, element by element, as the
/// tests' host version does; the finish gives their root and the maximum
/// as floats.
void launchGradStatistics(const DeviceGlobals &call);
void launchGradStatisticsFinish(const DeviceGlobals &call);

} // namespace optgen::runtime::test

#endif // OPTGEN_RUNTIME_TEST_CUDATESTRULES_H
