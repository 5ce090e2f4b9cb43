//===- MeanKernel.cu - A sum of ranks made their mean ---------------------===//

#include "MeanKernel.h"

#include "optgen/runtime/Float16.h"
#include "optgen/runtime/Launch.h"

#include <algorithm>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 4096;

__global__ void meanOfSumF32(float *data, int64_t count, float ranks) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[i] = data[i] / ranks;
}

/// bf16 as its bits (what NCCL reduced), rounded as the host rounds.
__global__ void meanOfSumBF16(uint16_t *data, int64_t count, float ranks) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    data[i] = toBF16Bits(fromBF16Bits(data[i]) / ranks);
}

} // namespace

cudaError_t launchMeanOfSum(void *data, int64_t count, int ranks, DType dtype,
                            cudaStream_t stream) {
  if (count == 0)
    return cudaSuccess;
  unsigned blocks = static_cast<unsigned>(
      std::min((count + kThreads - 1) / kThreads, kMaxBlocks));
  float divisor = static_cast<float>(ranks);
  if (dtype == DType::BF16)
    launchKernel<meanOfSumBF16>(blocks, kThreads, 0, stream,
                                static_cast<uint16_t *>(data), count, divisor);
  else
    launchKernel<meanOfSumF32>(blocks, kThreads, 0, stream,
                               static_cast<float *>(data), count, divisor);
  return cudaGetLastError();
}

} // namespace optgen::runtime
