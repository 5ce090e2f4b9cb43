//===- Staging.cu - bf16 parameters and gradients as f32 ------------------===//

#include "Staging.h"

#include "optgen/runtime/Float16.h"
#include "optgen/runtime/Launch.h"

#include <algorithm>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 256;
/// Blocks per copy at most; each thread strides over the rest. Enough to
/// fill a GPU many times over, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 4096;
/// gridDim.y's limit: copies beyond it are strided over too.
constexpr int kMaxCopyBlocks = 65535;

/// Copy blockIdx.y (and every gridDim.y-th after it), its elements strided
/// over the blocks of x.
/// How a copy moves an element.
enum class Mode { Widen, Narrow, Copy32, Copy16 };

template <Mode M>
__global__ void convertKernel(const StagingCopy *copies, int copyCount) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int c = blockIdx.y; c < copyCount; c += gridDim.y) {
    StagingCopy copy = copies[c];
    for (int64_t i =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < copy.count; i += stride) {
      if constexpr (M == Mode::Widen)
        static_cast<float *>(copy.to)[i] =
            fromBF16Bits(static_cast<const uint16_t *>(copy.from)[i]);
      else if constexpr (M == Mode::Narrow)
        static_cast<uint16_t *>(copy.to)[i] =
            toBF16Bits(static_cast<const float *>(copy.from)[i]);
      else if constexpr (M == Mode::Copy32) // as bits: NaN payloads stay
        static_cast<uint32_t *>(copy.to)[i] =
            static_cast<const uint32_t *>(copy.from)[i];
      else
        static_cast<uint16_t *>(copy.to)[i] =
            static_cast<const uint16_t *>(copy.from)[i];
    }
  }
}

template <Mode M>
cudaError_t launchConvert(const StagingCopy *copies, int copyCount,
                          int64_t maxCount, cudaStream_t stream) {
  if (copyCount == 0 || maxCount == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(
                std::min((maxCount + kThreads - 1) / kThreads, kMaxBlocks)),
            static_cast<unsigned>(std::min(copyCount, kMaxCopyBlocks)));
  launchKernel<convertKernel<M>>(grid, kThreads, 0, stream, copies, copyCount);
  return cudaGetLastError();
}

} // namespace

cudaError_t launchStagingCopies(const StagingCopy *copies, int copyCount,
                                int64_t maxCount, DType from, DType to,
                                cudaStream_t stream) {
  if (from == DType::BF16)
    return to == DType::BF16
               ? launchConvert<Mode::Copy16>(copies, copyCount, maxCount, stream)
               : launchConvert<Mode::Widen>(copies, copyCount, maxCount, stream);
  return to == DType::BF16
             ? launchConvert<Mode::Narrow>(copies, copyCount, maxCount, stream)
             : launchConvert<Mode::Copy32>(copies, copyCount, maxCount, stream);
}

} // namespace optgen::runtime
