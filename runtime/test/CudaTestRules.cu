//===- CudaTestRules.cu - Hand-written rules on a CUDA device -------------===//

#include "CudaTestRules.h"

#include "optgen/runtime/CudaOptimizer.h"
#include "optgen/runtime/Error.h"

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
  launchKernel<momentumKernel>(grid, threads, 0, call.stream, call, numel);
}

__global__ void emptyKernel() {}

__global__ void gradStatisticsKernel(DeviceGlobals call) {
  int m = static_cast<int>(threadIdx.x);
  if (m >= call.members)
    return;
  double squares = 0, peak = -INFINITY;
  const float *grad = call.grads[m];
  for (int64_t i = 0; i < call.numels[m]; ++i) {
    double g = grad[i];
    squares = __dadd_rn(squares, __dmul_rn(g, g));
    peak = peak < fabs(g) ? fabs(g) : peak;
  }
  call.memberPartials[2 * m] = squares;
  call.memberPartials[2 * m + 1] = peak;
}

__global__ void gradStatisticsFinishKernel(DeviceGlobals call) {
  call.globals[0] = sqrtf(static_cast<float>(call.partials[0]));
  call.globals[1] = static_cast<float>(call.partials[1]);
}

/// Where a member's matrices are in its workspace, in floats: the
/// gradient, the parameter (rows x cols each), grad^T @ param (cols x cols)
/// and the update (rows x cols).
struct RepeatSlots {
  int64_t size; ///< rows x cols
  int64_t grad, param, product, update, end;
  RepeatSlots(int64_t rows, int64_t cols)
      : size(rows * cols), grad(0), param(size), product(2 * size),
        update(product + cols * cols), end(update + size) {}
};

/// Member blockIdx.y's gradient and parameter into its workspace (Gather),
/// or its parameter back from there: the executor's pointer tables are
/// device memory, which the host cannot give deviceGemm.
template <bool Gather>
__global__ void moveKernel(DeviceCall call, RepeatSlots slots) {
  int m = blockIdx.y;
  float *slot = call.workspace + m * call.workspacePerMember;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < slots.size; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (Gather) {
      slot[slots.grad + i] = call.grads[m][i];
      slot[slots.param + i] = call.params[m][i];
    } else {
      call.params[m][i] = slot[slots.param + i];
    }
  }
}

/// param -= lr * update in member blockIdx.y's workspace: the float
/// hyperparameter is read here, on the device, never by the launch.
__global__ void descendKernel(DeviceCall call, RepeatSlots slots) {
  float *slot = call.workspace + blockIdx.y * call.workspacePerMember;
  float lr = static_cast<float>(call.hypers[kRepeatLrAt]);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < slots.size; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    slot[slots.param + i] =
        __fsub_rn(slot[slots.param + i], __fmul_rn(lr, slot[slots.update + i]));
}

} // namespace

void launchGradStatistics(const DeviceGlobals &call) {
  launchKernel<gradStatisticsKernel>(1, 1024, 0, call.stream, call);
}

void launchGradStatisticsFinish(const DeviceGlobals &call) {
  launchKernel<gradStatisticsFinishKernel>(1, 1, 0, call.stream, call);
}



void launchTooManyThreads() {
  launchKernel<emptyKernel>(1, 4096, 0, nullptr);
  checkLaunch("emptyKernel");
}

void launchMomentum(const DeviceCall &call) { launch(call, 0); }

void launchMomentumMatrix(const DeviceCall &call) {
  // A rule of one shape goes by rows x cols, not by numels.
  DeviceCall byShape = call;
  byShape.numels = nullptr;
  launch(byShape, call.rows * call.cols);
}

int64_t repeatWorkspace(const int64_t *shape, int) {
  return RepeatSlots(shape[0], shape[1]).end;
}

void launchRepeatedProducts(const DeviceCall &call) {
  if (!call.blas)
    throw Error("a rule of matrices was given no DeviceBlas");
  int64_t rows = call.rows, cols = call.cols;
  int64_t stride = call.workspacePerMember;
  RepeatSlots slots(rows, cols);
  auto at = [&](int64_t slot, int64_t slotRows, int64_t slotCols) {
    return DeviceMatrices{call.workspace + slot, slotRows, slotCols, stride};
  };
  DeviceMatrices grad = at(slots.grad, rows, cols);
  DeviceMatrices param = at(slots.param, rows, cols);
  DeviceMatrices product = at(slots.product, cols, cols);
  DeviceMatrices update = at(slots.update, rows, cols);
  constexpr int threads = 128;
  dim3 grid(static_cast<unsigned>((slots.size + threads - 1) / threads),
            static_cast<unsigned>(call.members));
  launchKernel<moveKernel<true>>(grid, threads, 0, call.stream, call, slots);
  checkLaunch("moveKernel");
  int times = static_cast<int>(call.hostHypers[kRepeatTimesAt]);
  for (int t = 0; t < times; ++t) {
    deviceGemm(*call.blas, grad, true, param, false, 1.0f, nullptr, 0.0f,
               product, call.members, call.stream, "grad^T @ param");
    deviceGemm(*call.blas, grad, false, product, false, 1.0f, nullptr, 0.0f,
               update, call.members, call.stream, "grad @ product");
    launchKernel<descendKernel>(grid, threads, 0, call.stream, call, slots);
    checkLaunch("descendKernel");
  }
  launchKernel<moveKernel<false>>(grid, threads, 0, call.stream, call, slots);
  checkLaunch("moveKernel");
}

} // namespace optgen::runtime::test
