//===- RankBarrier.cu - Ranks of one GPU meeting on the device ------------===//

#include "RankBarrier.h"

#include "optgen/runtime/Launch.h"

namespace optgen::runtime {

namespace {

/// One thread: the last rank to arrive starts the next generation, the
/// others wait for it. Memory before the barrier (the ranks' inputs) is
/// visible to every rank after it (the fences).
__global__ void rankBarrierKernel(RankBarrierState *shared, unsigned *passed,
                                  int ranks) {
  unsigned generation = *passed;
  __threadfence();
  if (atomicAdd(&shared->arrived, 1u) == static_cast<unsigned>(ranks) - 1) {
    atomicExch(&shared->arrived, 0u);
    __threadfence();
    atomicAdd(&shared->generation, 1u);
  } else {
    while (atomicAdd(&shared->generation, 0u) == generation)
      __nanosleep(1000);
  }
  __threadfence();
  *passed = generation + 1;
}

} // namespace

cudaError_t launchRankBarrier(RankBarrierState *shared, unsigned *passed,
                              int ranks, cudaStream_t stream) {
  launchKernel<rankBarrierKernel>(1, 1, 0, stream, shared, passed, ranks);
  return cudaGetLastError();
}

} // namespace optgen::runtime
