//===- RankBarrier.h - Ranks of one GPU meeting on the device ---*- C++ -*-===//
//
// A barrier the in-process CUDA communicators' ranks (each on a stream of
// its own, on one GPU) meet at on the device, so that a collective captured
// in a CUDA graph synchronises the ranks whenever the graph is replayed,
// with no host involved. Its state lives in device memory: a count of the
// ranks arrived and a generation every rank's launches wait to see change,
// and, per rank, the generation it last passed.
//
//===----------------------------------------------------------------------===//

#ifndef OPTGEN_RUNTIME_CUDA_RANKBARRIER_H
#define OPTGEN_RUNTIME_CUDA_RANKBARRIER_H

#include <cuda_runtime.h>

namespace optgen::runtime {

/// In device memory, zeroed before the first meeting: shared by the ranks.
struct RankBarrierState {
  unsigned arrived;
  unsigned generation;
};

/// Enqueues on `stream` a launch that returns once every one of `ranks`
/// ranks has reached it (each with its own `passed`, in device memory,
/// zeroed before the first meeting). Returns the launch's error.
cudaError_t launchRankBarrier(RankBarrierState *shared, unsigned *passed,
                              int ranks, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_RANKBARRIER_H
