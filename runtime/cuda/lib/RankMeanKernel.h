//===- RankMeanKernel.h - The mean over ranks on a device -------*- C++ -*-===//

#ifndef OPTGEN_RUNTIME_CUDA_RANKMEANKERNEL_H
#define OPTGEN_RUNTIME_CUDA_RANKMEANKERNEL_H

#include "optgen/runtime/CudaInProcessCommunicator.h"
#include "optgen/runtime/Tensor.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace optgen::runtime {

/// Every rank's buffer, by rank.
struct RankSources {
  const void *at[kMaxInProcessRanks];
};

/// Enqueues out[i] = the mean over `ranks` (RankMean.h) of sources.at[r]
/// [offset + i], for `count` elements of `dtype` (F32 or BF16). Returns
/// the launch's error.
cudaError_t launchRankMean(const RankSources &sources, int ranks,
                           int64_t offset, int64_t count, DType dtype,
                           void *out, cudaStream_t stream);

} // namespace optgen::runtime

#endif // OPTGEN_RUNTIME_CUDA_RANKMEANKERNEL_H
