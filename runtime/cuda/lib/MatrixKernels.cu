//===- MatrixKernels.cu - Elementwise maps over matrices ------------------===//

#include "MatrixKernels.h"

#include "optgen/runtime/CudaCheck.h"
#include "optgen/runtime/DeviceGemm.h"
#include "optgen/runtime/Error.h"
#include "optgen/runtime/Float16.h"

#include <algorithm>
#include <string>

namespace optgen::runtime {

namespace {

constexpr int kThreads = 256;
/// Blocks per member at most; each thread strides over the rest (as the
/// staging kernels do): enough to fill a GPU, few enough to launch cheaply.
constexpr int64_t kMaxBlocks = 4096;
/// gridDim.y's limit: members beyond it are strided over too.
constexpr int kMaxMemberBlocks = 65535;

/// What the map writes for each element `x` of src.
enum class Map { Copy, Scale, Zero, RoundBF16, RoundF16 };

/// Member blockIdx.y (and every gridDim.y-th after it), its elements
/// strided over the blocks of x. Each element is read and written by one
/// thread, so dst may be src's memory.
template <Map Op>
__global__ void mapKernel(float *dst, int64_t dstStride, const float *src,
                          int64_t srcStride, float factor, int64_t count,
                          int batch) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int m = blockIdx.y; m < batch; m += gridDim.y) {
    float *to = dst + m * dstStride;
    // Zero has no source (null): no pointer is formed from it.
    const float *from = Op == Map::Zero ? nullptr : src + m * srcStride;
    for (int64_t i =
             static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
         i < count; i += step) {
      // A copy moves the bits: a multiplication by 1 would make a NaN's
      // payload the GPU's canonical one.
      if constexpr (Op == Map::Copy)
        to[i] = from[i];
      else if constexpr (Op == Map::Scale)
        to[i] = factor * from[i];
      else if constexpr (Op == Map::Zero)
        to[i] = 0.0f;
      else if constexpr (Op == Map::RoundBF16)
        to[i] = roundToBF16(from[i]);
      else
        to[i] = roundToF16(from[i]);
    }
  }
}

template <Map Op>
cudaError_t launchMap(float *dst, int64_t dstStride, const float *src,
                      int64_t srcStride, float factor, int64_t count, int batch,
                      cudaStream_t stream) {
  if (count == 0 || batch == 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(
                std::min((count + kThreads - 1) / kThreads, kMaxBlocks)),
            static_cast<unsigned>(std::min(batch, kMaxMemberBlocks)));
  mapKernel<Op><<<grid, kThreads, 0, stream>>>(dst, dstStride, src, srcStride,
                                               factor, count, batch);
  return cudaGetLastError();
}

/// "copying 3 members of 35 floats, 40 apart", what deviceCopy and
/// deviceRound say of their work, should it fail.
std::string describeMembers(const char *doing, int64_t count, int64_t stride,
                            int batch) {
  return std::string(doing) + " " + std::to_string(batch) + " member" +
         (batch == 1 ? "" : "s") + " of " + std::to_string(count) +
         " floats, " + std::to_string(stride) + " apart";
}

/// Throws Error unless `batch` members of `count` floats `stride` apart
/// are distinct memory.
void checkMembers(const char *doing, int64_t count, int64_t stride, int batch) {
  if (count < 0 || batch < 0 || (batch > 1 && stride < count))
    throw Error(describeMembers(doing, count, stride, batch) +
                ": members must be distinct memory, none of a negative size");
}

} // namespace

cudaError_t launchScaled(float *dst, int64_t dstStride, const float *src,
                         int64_t srcStride, float factor, int64_t count,
                         int batch, cudaStream_t stream) {
  return src ? launchMap<Map::Scale>(dst, dstStride, src, srcStride, factor,
                                     count, batch, stream)
             : launchMap<Map::Zero>(dst, dstStride, nullptr, 0, 0.0f, count,
                                    batch, stream);
}

void deviceCopy(float *dst, const float *src, int64_t count, int64_t stride,
                int batch, cudaStream_t stream) {
  const char *doing = "copying";
  checkMembers(doing, count, stride, batch);
  cudaError_t result = launchMap<Map::Copy>(dst, stride, src, stride, 1.0f,
                                            count, batch, stream);
  if (result != cudaSuccess)
    throwCudaError(result, "the kernel's launch",
                   describeMembers(doing, count, stride, batch));
}

void deviceRound(float *data, int64_t count, int64_t stride, int batch,
                 DType to, cudaStream_t stream) {
  const char *doing = "rounding";
  if (to != DType::BF16 && to != DType::F16)
    throw Error(describeMembers(doing, count, stride, batch) + " to " +
                std::string(dtypeName(to)) + ": floats round to BF16 or F16");
  checkMembers(doing, count, stride, batch);
  cudaError_t result =
      to == DType::BF16 ? launchMap<Map::RoundBF16>(data, stride, data, stride,
                                                    1.0f, count, batch, stream)
                        : launchMap<Map::RoundF16>(data, stride, data, stride,
                                                   1.0f, count, batch, stream);
  if (result != cudaSuccess)
    throwCudaError(result, "the kernel's launch",
                   describeMembers(doing, count, stride, batch) + " to " +
                       std::string(dtypeName(to)));
}

} // namespace optgen::runtime
