//===- RankMeanKernel.cu - The mean over ranks on a device ----------------===//

#include "RankMeanKernel.h"

#include "optgen/runtime/Launch.h"
#include "optgen/runtime/RankMean.h"

#include <algorithm>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

template <typename T>
__global__ void rankMeanKernel(RankSources sources, int ranks, int64_t offset,
                               int64_t count, T *out) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    auto at = [&](int r) {
      return static_cast<const T *>(sources.at[r])[offset + i];
    };
    if constexpr (sizeof(T) == 4)
      out[i] = rankMeanF32(at, ranks);
    else
      out[i] = rankMeanBF16(at, ranks);
  }
}

} // namespace

cudaError_t launchRankMean(const RankSources &sources, int ranks,
                           int64_t offset, int64_t count, DType dtype,
                           void *out, cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  unsigned blocks = static_cast<unsigned>(
      std::min((count + kThreads - 1) / kThreads, kMaxBlocks));
  if (dtype == DType::BF16)
    launchKernel<rankMeanKernel<uint16_t>>(blocks, kThreads, 0, stream,
                                           sources, ranks, offset, count,
                                           static_cast<uint16_t *>(out));
  else
    launchKernel<rankMeanKernel<float>>(blocks, kThreads, 0, stream, sources,
                                        ranks, offset, count,
                                        static_cast<float *>(out));
  return cudaGetLastError();
}

} // namespace optgen::runtime
