//===- DeviceReduce.h - Deterministic reductions in a block -----*- C++ -*-===//
//
// Generated CUDA kernels reduce (sums, norms, means, maxima) in a fixed
// order: each thread folds its elements in the order it visits them, and a
// block combines its threads' values along a fixed tree, never with atomics,
// so that a step's results do not depend on how the GPU schedules it.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_DEVICEREDUCE_H
#define OPTGEN_RUNTIME_DEVICEREDUCE_H

#include <cuda_runtime.h>

namespace optgen::runtime {

/// How two partial results combine.
struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
/// As the CPU target's std::max: a NaN in `b` is skipped.
struct Max {
  __device__ float operator()(float a, float b) const { return a < b ? b : a; }
};

/// `value` of every thread of the block combined along a fixed tree over
/// shared memory; every thread receives the result. Every thread of the
/// block calls it (it synchronises the block); `Threads` is the block's
/// size, a power of two.
template <int Threads, typename Combine>
__device__ float blockReduce(float value, Combine combine) {
  static_assert(Threads > 0 && (Threads & (Threads - 1)) == 0,
                "a block reduces over a power of two threads");
  __shared__ float shared[Threads];
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int width = Threads / 2; width > 0; width /= 2) {
    if (static_cast<int>(threadIdx.x) < width)
      shared[threadIdx.x] =
          combine(shared[threadIdx.x], shared[threadIdx.x + width]);
    __syncthreads();
  }
  float result = shared[0];
  // The next call of this instance reuses the array.
  __syncthreads();
  return result;
}

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_DEVICEREDUCE_H
