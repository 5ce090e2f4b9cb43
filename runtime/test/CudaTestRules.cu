//===- CudaTestRules.cu - Hand-written rules on a CUDA device -------------===//

#include "CudaTestRules.h"

#include "optgen/runtime/CudaOptimizer.h"

#include <algorithm>

namespace optgen::runtime::test {

namespace {

/// Member blockIdx.y: its elements (numels[m], or `numel` for all when
/// numels is null) strided over the blocks of x. With a workspace, the
/// update goes through the member's slice of it.
__global__ void momentumKernel(DeviceCall call, int64_t numel) {
  int m = blockIdx.y;
  int64_t count = call.numels ? call.numels[m] : numel;
  float *param = call.params[m];
  const float *grad = call.grads[m];
  float *velocity = call.states[m]; // state 0 of member m
  float *scratch =
      call.workspace ? call.workspace + m * call.workspacePerMember : nullptr;
  float momentum = static_cast<float>(call.hypers[kMomentumAt]);
  float lo = static_cast<float>(call.hypers[kClipAt]);
  float hi = static_cast<float>(call.hypers[kClipAt + 1]);
  float scale = __fdiv_rn(static_cast<float>(call.hypers[kLrAt]),
                          static_cast<float>(call.steps[m]));
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = maximum(lo, minimum(hi, grad[i]));
    float v = __fadd_rn(__fmul_rn(momentum, velocity[i]), g);
    velocity[i] = v;
    float update = __fmul_rn(scale, v);
    if (scratch) {
      scratch[i] = update;
      update = scratch[i];
    }
    param[i] = __fsub_rn(param[i], update);
  }
}

void launch(const DeviceCall &call, int64_t numel) {
  constexpr int threads = 128;
  dim3 grid(static_cast<unsigned>(std::min<int64_t>(
                (call.maxNumel + threads - 1) / threads, 256)),
            static_cast<unsigned>(call.members));
  momentumKernel<<<grid, threads, 0, call.stream>>>(call, numel);
}

__global__ void emptyKernel() {}

} // namespace

void launchTooManyThreads() {
  emptyKernel<<<1, 4096>>>();
  checkLaunch("emptyKernel");
}

void launchMomentum(const DeviceCall &call) { launch(call, 0); }

void launchMomentumMatrix(const DeviceCall &call) {
  // A rule of one shape goes by rows x cols, not by numels.
  DeviceCall byShape = call;
  byShape.numels = nullptr;
  launch(byShape, call.rows * call.cols);
}

} // namespace optgen::runtime::test
